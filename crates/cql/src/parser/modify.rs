//! INSERT, UPDATE, DELETE and BATCH.

use super::Parser;
use crate::ast::{
    Assignment, Batch, BatchKind, Conditions, Delete, DeleteTarget, Insert, Literal, Statement,
    Term, Update, Using,
};
use crate::error::{ParseErrorKind, Result};
use crate::lexer::{Punct, Tok};

const ONLY_X_PLUS: &str = "Only expressions of the form X = X + <value> are supported.";
const ONLY_PREPEND: &str = "Only expressions of the form X = <value> + X are supported.";

impl Parser<'_> {
    pub(super) fn insert(&mut self) -> Result<Insert> {
        self.expect_kw("insert")?;
        self.expect_kw("into")?;
        let table = self.qualified_name()?;
        let mut insert = Insert {
            table,
            columns: Vec::new(),
            values: Vec::new(),
            json: None,
            json_default_unset: false,
            using: Using::default(),
            conditions: Conditions::None,
        };
        if self.eat_kw("json") {
            // Only a string literal or a bind marker, as in Cassandra's grammar.
            if !matches!(
                self.peek(),
                Tok::Str(_) | Tok::Punct(Punct::Question | Punct::Colon)
            ) {
                return Err(self.expecting("a JSON string or a bind marker after JSON"));
            }
            insert.json = Some(self.term()?);
            if self.eat_kw("default") {
                insert.json_default_unset = self.eat_kw("unset");
                if !insert.json_default_unset {
                    self.expect_kw("null")?;
                }
            }
        } else {
            self.expect_punct(Punct::LParen)?;
            insert.columns = self.ident_list()?;
            self.expect_punct(Punct::RParen)?;
            self.expect_kw("values")?;
            self.expect_punct(Punct::LParen)?;
            insert.values.push(self.term()?);
            while self.eat_punct(Punct::Comma) {
                insert.values.push(self.term()?);
            }
            self.expect_punct(Punct::RParen)?;
            if insert.columns.len() != insert.values.len() {
                return Err(self.invalid("Unmatched column names/values"));
            }
        }
        let mut seen_using = false;
        loop {
            if insert.conditions == Conditions::None && self.eat_kw("if") {
                self.expect_kw("not")?;
                self.expect_kw("exists")?;
                insert.conditions = Conditions::IfNotExists;
            } else if !seen_using && self.eat_kw("using") {
                insert.using = self.using_clause()?;
                seen_using = true;
            } else {
                return Ok(insert);
            }
        }
    }

    pub(super) fn update(&mut self) -> Result<Update> {
        self.expect_kw("update")?;
        let table = self.qualified_name()?;
        let using = if self.eat_kw("using") {
            self.using_clause()?
        } else {
            Using::default()
        };
        self.expect_kw("set")?;
        let mut assignments = vec![self.assignment()?];
        while self.eat_punct(Punct::Comma) {
            let next = self.assignment()?;
            if let Some(column) = assignments.iter().find_map(|a| incompatible(a, &next)) {
                let message = format!("Multiple incompatible setting of column {column}");
                return Err(self.error_here(ParseErrorKind::Syntax, message));
            }
            assignments.push(next);
        }
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let conditions = if self.eat_kw("if") {
            self.conditions(true)?
        } else {
            Conditions::None
        };
        Ok(Update {
            table,
            using,
            assignments,
            where_clause,
            conditions,
        })
    }

    fn assignment(&mut self) -> Result<Assignment> {
        let column = self.ident()?;
        if self.eat_punct(Punct::Dot) {
            let field = self.ident()?;
            self.expect_punct(Punct::Eq)?;
            let value = self.term()?;
            return Ok(Assignment::SetField {
                column,
                field,
                value,
            });
        }
        if self.eat_punct(Punct::LBracket) {
            let key = self.term()?;
            self.expect_punct(Punct::RBracket)?;
            self.expect_punct(Punct::Eq)?;
            let value = self.term()?;
            return Ok(Assignment::SetElement { column, key, value });
        }
        if self.eat_punct(Punct::PlusEq) {
            return Ok(Assignment::Add {
                column,
                value: self.term()?,
            });
        }
        if self.eat_punct(Punct::MinusEq) {
            return Ok(Assignment::Remove {
                column,
                value: self.term()?,
            });
        }
        self.expect_punct(Punct::Eq)?;
        if self.is_ident_at(0) && !self.is_function_call_at(0) {
            let other = self.ident()?;
            let continues = self.is_punct(Punct::Plus)
                || self.is_punct(Punct::Minus)
                || matches!(self.peek(), Tok::Integer(s) | Tok::Float(s) if s.starts_with('-'));
            if !continues {
                // A bare column is not a value.
                return Err(self.no_viable());
            }
            if other != column {
                return Err(self.invalid(ONLY_X_PLUS));
            }
            if self.eat_punct(Punct::Plus) {
                return Ok(Assignment::Add {
                    column,
                    value: self.term()?,
                });
            }
            if self.eat_punct(Punct::Minus) {
                return Ok(Assignment::Remove {
                    column,
                    value: self.term()?,
                });
            }
            // `c = c -1` lexes the `-1` as one negative number.
            let negative = match self.peek().clone() {
                Tok::Integer(s) => s.strip_prefix('-').map(|v| Literal::Integer(v.into())),
                Tok::Float(s) => s.strip_prefix('-').map(|v| Literal::Float(v.into())),
                _ => None,
            };
            if let Some(lit) = negative {
                self.pos += 1;
                return Ok(Assignment::Remove {
                    column,
                    value: Term::Literal(lit),
                });
            }
            return Err(self.invalid(ONLY_X_PLUS));
        }
        let value = self.term()?;
        if self.eat_punct(Punct::Plus) {
            let other = self.ident()?;
            if other != column {
                return Err(self.invalid(ONLY_PREPEND));
            }
            return Ok(Assignment::Prepend { column, value });
        }
        Ok(Assignment::Set { column, value })
    }

    pub(super) fn delete(&mut self) -> Result<Delete> {
        self.expect_kw("delete")?;
        let mut targets = Vec::new();
        if !self.is_kw("from") {
            loop {
                let column = self.ident()?;
                let field = if self.eat_punct(Punct::Dot) {
                    Some(self.ident()?)
                } else {
                    None
                };
                let element = if field.is_none() && self.eat_punct(Punct::LBracket) {
                    let key = self.term()?;
                    self.expect_punct(Punct::RBracket)?;
                    Some(key)
                } else {
                    None
                };
                targets.push(DeleteTarget {
                    column,
                    element,
                    field,
                });
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
        }
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let mut using = Using::default();
        if self.eat_kw("using") {
            self.expect_kw("timestamp")?;
            using.timestamp = Some(self.int_value()?);
        }
        self.expect_kw("where")?;
        let where_clause = self.where_clause()?;
        let conditions = if self.eat_kw("if") {
            self.conditions(true)?
        } else {
            Conditions::None
        };
        Ok(Delete {
            table,
            targets,
            using,
            where_clause,
            conditions,
        })
    }

    pub(super) fn batch(&mut self) -> Result<Batch> {
        self.expect_kw("begin")?;
        let kind = if self.eat_kw("unlogged") {
            BatchKind::Unlogged
        } else if self.eat_kw("counter") {
            BatchKind::Counter
        } else {
            BatchKind::Logged
        };
        self.expect_kw("batch")?;
        let using = if self.eat_kw("using") {
            self.using_clause()?
        } else {
            Using::default()
        };
        if using.ttl.is_some() {
            return Err(self.invalid("Global TTL on the BATCH statement is not supported."));
        }
        let mut statements = Vec::new();
        loop {
            let statement = if self.is_kw("insert") {
                Statement::Insert(self.insert()?)
            } else if self.is_kw("update") {
                Statement::Update(self.update()?)
            } else if self.is_kw("delete") {
                Statement::Delete(self.delete()?)
            } else if self.is_kw("apply") {
                self.pos += 1;
                self.expect_kw("batch")?;
                return Ok(Batch {
                    kind,
                    using,
                    statements,
                });
            } else {
                return Err(self.expecting("INSERT, UPDATE, DELETE or APPLY BATCH"));
            };
            statements.push(statement);
            self.eat_punct(Punct::Semi);
        }
    }
}

/// The column two assignments of one UPDATE both set in ways that cannot
/// be combined (Cassandra's rule, checked as it parses): `c = v` with
/// anything else on `c`, or one field of a user type set twice. Several
/// element sets, appends, prepends and removals of one collection are
/// fine.
fn incompatible<'a>(earlier: &'a Assignment, next: &Assignment) -> Option<&'a str> {
    fn column(a: &Assignment) -> &str {
        match a {
            Assignment::Set { column, .. }
            | Assignment::SetElement { column, .. }
            | Assignment::Add { column, .. }
            | Assignment::Prepend { column, .. }
            | Assignment::Remove { column, .. }
            | Assignment::SetField { column, .. } => column,
        }
    }
    let name = column(earlier);
    if name != column(next) {
        return None;
    }
    let clash = match (earlier, next) {
        (Assignment::Set { .. }, _) | (_, Assignment::Set { .. }) => true,
        (Assignment::SetField { field: a, .. }, Assignment::SetField { field: b, .. }) => a == b,
        _ => false,
    };
    clash.then_some(name)
}
