//! Everything one statement execution needs: the schema snapshot, bound
//! values, the keyspace in effect, timestamps and collected warnings.

use crate::api::{BoundValue, QueryOptions};
use crate::error::{QueryError, Result};
use std::sync::Arc;
use varve_schema::{Schema, Table};

/// The execution context of one statement.
pub struct Ctx<'a> {
    pub schema: Arc<Schema>,
    /// The role granted every permission on what the statement creates
    /// (CassandraAuthorizer and a login), as Cassandra grants its creator.
    pub creator: Option<String>,
    /// Bound values in marker order (named values already placed).
    pub values: Vec<BoundValue>,
    /// The keyspace for unqualified names (per-query v5 keyspace, else USE).
    pub keyspace: Option<String>,
    pub opts: &'a QueryOptions,
    /// Write timestamp in microseconds (client-supplied or server clock).
    pub timestamp_micros: i64,
    /// "now" in seconds for TTL and deletion times.
    pub now_seconds: i32,
    pub warnings: Vec<String>,
    /// Set by SELECT ... ALLOW FILTERING while its WHERE is analysed.
    pub allow_filtering: bool,
    /// Set by a SELECT of a real table: `Some(true)` when it read one
    /// partition by key (a metrics `read`), `Some(false)` for scans and
    /// several partitions (`range_slice`).
    pub read_shape: Option<bool>,
}

impl<'a> Ctx<'a> {
    /// The keyspace a name refers to.
    pub fn keyspace_of(&self, explicit: &Option<String>) -> Result<String> {
        match explicit.as_ref().or(self.keyspace.as_ref()) {
            Some(k) => Ok(k.clone()),
            None => Err(QueryError::Invalid(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename".into(),
            )),
        }
    }

    /// Finds a table; the error matches Cassandra's.
    pub fn table(&self, name: &varve_cql::ast::QualifiedName) -> Result<Arc<Table>> {
        let ks = self.keyspace_of(&name.keyspace)?;
        let keyspace = self
            .schema
            .keyspace(&ks)
            .ok_or_else(|| QueryError::Invalid(format!("Keyspace {ks} does not exist")))?;
        keyspace
            .tables
            .get(&name.name)
            .cloned()
            .ok_or_else(|| QueryError::Invalid(format!("table {} does not exist", name.name)))
    }

    /// The bound value of marker `index`.
    pub fn bound(&self, index: usize) -> Result<&BoundValue> {
        self.values.get(index).ok_or_else(|| {
            QueryError::Invalid(format!(
                "There were {} markers(?) in CQL but {} bound variables",
                index + 1,
                self.values.len()
            ))
        })
    }
}

/// Places the bound values by marker order, resolving named values.
/// `spec_names` are the names of the bind specs (the marker name, or the
/// column a `?` is bound to).
pub fn order_values(spec_names: &[String], opts: &QueryOptions) -> Result<Vec<BoundValue>> {
    let markers = spec_names;
    let Some(names) = &opts.names else {
        if opts.values.len() != markers.len() {
            return Err(QueryError::Invalid(format!(
                "Invalid amount of bind variables: expected {} but got {}",
                markers.len(),
                opts.values.len()
            )));
        }
        return Ok(opts.values.clone());
    };
    let mut out = Vec::with_capacity(markers.len());
    for (i, marker) in markers.iter().enumerate() {
        let wanted = marker.clone();
        let pos = names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(&wanted))
            .ok_or_else(|| {
                QueryError::Invalid(format!(
                    "No value has been provided for bind marker {i} ({wanted})"
                ))
            })?;
        out.push(opts.values.get(pos).cloned().unwrap_or(BoundValue::Unset));
    }
    Ok(out)
}
