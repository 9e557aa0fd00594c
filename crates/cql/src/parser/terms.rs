//! Terms: literals, bind markers, collection and tuple literals, function
//! calls, `(type) term` casts, unary minus and arithmetic (`+ - * / %`,
//! with `* / %` binding tighter, all left-associative, as in Cassandra's
//! `termAddition` / `termMultiplication`).

use super::Parser;
use crate::ast::{ArithOp, Literal, Term};
use crate::error::Result;
use crate::keywords::is_reserved;
use crate::lexer::{Punct, Tok};

/// Identifiers that are literals in term position.
fn literal_word(word: &str) -> Option<Literal> {
    match word {
        "true" => Some(Literal::Boolean(true)),
        "false" => Some(Literal::Boolean(false)),
        "null" => Some(Literal::Null),
        "nan" => Some(Literal::Float("NaN".into())),
        "infinity" => Some(Literal::Float("Infinity".into())),
        _ => None,
    }
}

impl Parser<'_> {
    /// A bind marker (`?` or `:name`) if one is next; it is numbered now.
    pub(super) fn try_bind(&mut self) -> Result<Option<Term>> {
        if self.eat_punct(Punct::Question) {
            self.binds.push(None);
        } else if self.eat_punct(Punct::Colon) {
            let name = self.ident()?;
            self.binds.push(Some(name));
        } else {
            return Ok(None);
        }
        Ok(Some(Term::Bind(self.binds.len() - 1)))
    }

    /// True if a function call `name(` or `ks.name(` starts `n` tokens ahead.
    pub(super) fn is_function_call_at(&mut self, n: usize) -> bool {
        let named = match self.tok_at(n) {
            Tok::Ident(s) => !is_reserved(s) || s == "token",
            Tok::QuotedIdent(_) => true,
            _ => false,
        };
        if !named {
            return false;
        }
        if self.is_punct_at(n + 1, Punct::LParen) {
            return true;
        }
        self.is_punct_at(n + 1, Punct::Dot)
            && self.is_ident_at(n + 2)
            && self.is_punct_at(n + 3, Punct::LParen)
    }

    /// The name of a function call; `is_function_call_at(0)` must hold.
    /// A keyspace-qualified name is joined as `ks.name`.
    pub(super) fn function_name(&mut self) -> Result<String> {
        let mut name = match self.advance().tok {
            Tok::Ident(s) | Tok::QuotedIdent(s) => s,
            _ => return Err(self.expecting("function name")),
        };
        if self.eat_punct(Punct::Dot) {
            name = format!("{name}.{}", self.ident()?);
        }
        Ok(name)
    }

    /// A term, arithmetic included.
    pub(super) fn term(&mut self) -> Result<Term> {
        let mut left = self.term_product()?;
        let mut levels = 0;
        let out = loop {
            // `v + c` in `SET c = v + c` is a list prepend, not an addition:
            // a name after `+` (not a call) ends the term.
            let op = if self.is_punct(Punct::Plus) && !self.is_plain_name_at(1) {
                ArithOp::Add
            } else if self.is_punct(Punct::Minus) {
                ArithOp::Sub
            } else {
                break Ok(left);
            };
            // Each operator is one nesting level, which bounds the depth
            // of the tree a long chain builds.
            if let Err(e) = self.enter() {
                break Err(e);
            }
            levels += 1;
            self.pos += 1;
            match self.term_product() {
                Ok(right) => left = operation(op, left, right),
                Err(e) => break Err(e),
            }
        };
        for _ in 0..levels {
            self.leave();
        }
        out
    }

    /// `group (('*' | '/' | '%') group)*`
    fn term_product(&mut self) -> Result<Term> {
        let mut left = self.simple_term()?;
        let mut levels = 0;
        let out = loop {
            let Some(op) = self.product_operator() else {
                break Ok(left);
            };
            if let Err(e) = self.enter() {
                break Err(e);
            }
            levels += 1;
            self.pos += 1;
            match self.simple_term() {
                Ok(right) => left = operation(op, left, right),
                Err(e) => break Err(e),
            }
        };
        for _ in 0..levels {
            self.leave();
        }
        out
    }

    /// `*`, `/` or `%` if one is next (not consumed).
    pub(super) fn product_operator(&mut self) -> Option<ArithOp> {
        match self.peek() {
            Tok::Punct(Punct::Star) => Some(ArithOp::Mul),
            Tok::Punct(Punct::Slash) => Some(ArithOp::Div),
            Tok::Punct(Punct::Percent) => Some(ArithOp::Mod),
            _ => None,
        }
    }

    /// Whether the token at `n` is a name that cannot start a term.
    fn is_plain_name_at(&mut self, n: usize) -> bool {
        let word = match self.tok_at(n) {
            Tok::Ident(w) => literal_word(w).is_none(),
            Tok::QuotedIdent(_) => true,
            _ => false,
        };
        word && self.is_ident_at(n) && !self.is_function_call_at(n)
    }

    /// A term without arithmetic at its top: a literal, a marker, a
    /// collection, a cast, a call, a parenthesised term or a negation.
    pub(super) fn simple_term(&mut self) -> Result<Term> {
        if let Some(bind) = self.try_bind()? {
            return Ok(bind);
        }
        let lit = match self.peek().clone() {
            Tok::Str(s) => Literal::String(s),
            Tok::Integer(s) => Literal::Integer(s),
            Tok::Float(s) => Literal::Float(s),
            Tok::Uuid(u) => Literal::Uuid(u),
            Tok::Blob(b) => Literal::Blob(b),
            Tok::Duration(d) => Literal::Duration(d),
            Tok::Ident(w) if literal_word(&w).is_some() => {
                literal_word(&w).unwrap_or(Literal::Null)
            }
            Tok::Punct(Punct::LBracket) => return self.nested(Self::list_literal),
            Tok::Punct(Punct::LBrace) => return self.nested(Self::brace_literal),
            Tok::Punct(Punct::LParen) => return self.nested(Self::paren_term),
            Tok::Punct(Punct::Minus) => return self.nested(Self::negation),
            _ if self.is_function_call_at(0) => return self.nested(Self::function_call),
            _ => return Err(self.no_viable()),
        };
        self.pos += 1;
        Ok(Term::Literal(lit))
    }

    /// Runs `f` one nesting level deeper.
    pub(super) fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.enter()?;
        let out = f(self);
        self.leave();
        out
    }

    /// `term, term, ...` up to (not including) `close`; may be empty.
    fn terms_until(&mut self, close: Punct) -> Result<Vec<Term>> {
        let mut out = Vec::new();
        if self.is_punct(close) {
            return Ok(out);
        }
        loop {
            out.push(self.term()?);
            if !self.eat_punct(Punct::Comma) {
                return Ok(out);
            }
        }
    }

    fn list_literal(&mut self) -> Result<Term> {
        self.expect_punct(Punct::LBracket)?;
        let items = self.terms_until(Punct::RBracket)?;
        self.expect_punct(Punct::RBracket)?;
        Ok(Term::List(items))
    }

    /// `{}` (empty map), `{a, b}` (set), `{k: v, ...}` (map) or
    /// `{field: v, ...}` (user type: a name, not a term, before the colon).
    fn brace_literal(&mut self) -> Result<Term> {
        self.expect_punct(Punct::LBrace)?;
        if self.eat_punct(Punct::RBrace) {
            return Ok(Term::Map(Vec::new()));
        }
        if self.is_field_name_at(0) && self.is_punct_at(1, Punct::Colon) {
            return self.user_type_literal();
        }
        let first = self.term()?;
        if self.eat_punct(Punct::Colon) {
            let mut entries = vec![(first, self.term()?)];
            while self.eat_punct(Punct::Comma) {
                let k = self.term()?;
                self.expect_punct(Punct::Colon)?;
                entries.push((k, self.term()?));
            }
            self.expect_punct(Punct::RBrace)?;
            return Ok(Term::Map(entries));
        }
        let mut items = vec![first];
        while self.eat_punct(Punct::Comma) {
            items.push(self.term()?);
        }
        self.expect_punct(Punct::RBrace)?;
        Ok(Term::Set(items))
    }

    /// Whether the token at `n` is a name (not a literal word or a call).
    fn is_field_name_at(&mut self, n: usize) -> bool {
        match self.tok_at(n).clone() {
            Tok::Ident(w) => literal_word(&w).is_none() && self.is_ident_at(n),
            Tok::QuotedIdent(_) => true,
            _ => false,
        }
    }

    /// After `{`: `field: term, ...}`.
    fn user_type_literal(&mut self) -> Result<Term> {
        let mut fields = Vec::new();
        loop {
            let name = self.ident()?;
            self.expect_punct(Punct::Colon)?;
            fields.push((name, self.term()?));
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RBrace)?;
        Ok(Term::UserType(fields))
    }

    /// `(type) term` or a tuple `(a, b, ...)`. A name right after `(` that
    /// is not a literal word or a function call can only be a type.
    fn paren_term(&mut self) -> Result<Term> {
        let is_cast = match self.tok_at(1).clone() {
            Tok::Ident(w) => literal_word(&w).is_none() && !self.is_function_call_at(1),
            Tok::QuotedIdent(_) => !self.is_function_call_at(1),
            _ => false,
        };
        self.expect_punct(Punct::LParen)?;
        if is_cast {
            let ty = self.cql_type()?;
            self.expect_punct(Punct::RParen)?;
            let term = self.simple_term()?;
            return Ok(Term::Cast {
                ty,
                term: Box::new(term),
            });
        }
        let mut items = vec![self.term()?];
        while self.eat_punct(Punct::Comma) {
            items.push(self.term()?);
        }
        self.expect_punct(Punct::RParen)?;
        // `(1 + 2)` groups an operation; other single terms stay tuples.
        if items.len() == 1 && matches!(items[0], Term::Operation { .. }) {
            return Ok(items.remove(0));
        }
        Ok(Term::Tuple(items))
    }

    /// `- term`: folded into the literal for numbers, NaN and Infinity.
    fn negation(&mut self) -> Result<Term> {
        self.expect_punct(Punct::Minus)?;
        let folded = match self.peek().clone() {
            Tok::Integer(s) if !s.starts_with('-') => Some(Literal::Integer(format!("-{s}"))),
            Tok::Float(s) if !s.starts_with('-') => Some(Literal::Float(format!("-{s}"))),
            Tok::Ident(w) if w == "nan" => Some(Literal::Float("-NaN".into())),
            Tok::Ident(w) if w == "infinity" => Some(Literal::Float("-Infinity".into())),
            _ => None,
        };
        if let Some(lit) = folded {
            self.pos += 1;
            return Ok(Term::Literal(lit));
        }
        Ok(Term::Negate(Box::new(self.simple_term()?)))
    }

    fn function_call(&mut self) -> Result<Term> {
        let name = self.function_name()?;
        self.expect_punct(Punct::LParen)?;
        let args = self.terms_until(Punct::RParen)?;
        self.expect_punct(Punct::RParen)?;
        Ok(Term::FunctionCall { name, args })
    }
}

fn operation(op: ArithOp, left: Term, right: Term) -> Term {
    Term::Operation {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}
