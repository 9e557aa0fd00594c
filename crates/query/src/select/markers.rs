//! Bind markers in the selection: a function's or an operation's
//! argument given as `?` (or a vector literal holding markers) compiles to
//! [`Sel::Marker`], typed by the other arguments, named as Cassandra names
//! an argument (`arg1(system.similarity_cosine)`), and bound into a
//! constant at each execution (`elements::bind`).

use super::selectors::Sel;
use varve_types::CqlType;

impl Sel {
    /// This selector, with the receiver of a bare marker set to the
    /// `index`-th argument of `function` (e.g. `system._add`).
    pub(crate) fn into_argument(self, index: usize, function: &str) -> Sel {
        match self {
            Sel::Marker { term, ty, .. } => Sel::Marker {
                term,
                ty,
                receiver: format!("arg{index}({function})"),
            },
            other => other,
        }
    }

    /// This selector, a bare marker named `[selection]`, as Cassandra
    /// names a marker given to a native function (`floor(t, ?)`).
    pub(crate) fn named_in_selection(self) -> Sel {
        match self {
            Sel::Marker { term, ty, .. } => Sel::Marker {
                term,
                ty,
                receiver: "[selection]".into(),
            },
            other => other,
        }
    }

    /// Visits every marker of this selector tree.
    pub fn markers<'a>(&'a self, out: &mut Vec<&'a Sel>) {
        match self {
            Sel::Marker { .. } => out.push(self),
            Sel::Func { args, .. } => args.iter().for_each(|a| a.markers(out)),
            Sel::Cast { inner, .. }
            | Sel::Field { inner, .. }
            | Sel::Element { inner, .. }
            | Sel::Slice { inner, .. } => inner.markers(out),
            Sel::Aggregate { arg: Some(a), .. } => a.markers(out),
            _ => {}
        }
    }
}

/// Whether `term` holds a bind marker (itself, or inside a literal).
pub fn has_marker(term: &varve_cql::ast::Term) -> bool {
    use varve_cql::ast::Term;
    match term {
        Term::Bind(_) => true,
        Term::List(items) | Term::Set(items) | Term::Tuple(items) => items.iter().any(has_marker),
        Term::Cast { term, .. } | Term::Negate(term) => has_marker(term),
        _ => false,
    }
}

/// A marker to bind at execution, named as an argument by its caller.
pub fn marker(term: &varve_cql::ast::Term, ty: CqlType, shown: String) -> (Sel, String, CqlType) {
    let sel = Sel::Marker {
        term: term.clone(),
        ty: ty.clone(),
        receiver: shown.clone(),
    };
    (sel, shown, ty)
}
