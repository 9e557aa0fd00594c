//! WHERE relations, IF conditions and USING clauses, shared by SELECT,
//! UPDATE and DELETE.

use super::Parser;
use crate::ast::{Condition, Conditions, Literal, Operator, Relation, RelationLhs, Term, Using};
use crate::error::Result;
use crate::lexer::{Punct, Tok};

impl Parser<'_> {
    /// `= != < <= > >=`, consumed if present.
    fn comparison(&mut self) -> Option<Operator> {
        let op = match self.peek() {
            Tok::Punct(Punct::Eq) => Operator::Eq,
            Tok::Punct(Punct::Ne) => Operator::Ne,
            Tok::Punct(Punct::Lt) => Operator::Lt,
            Tok::Punct(Punct::Le) => Operator::Le,
            Tok::Punct(Punct::Gt) => Operator::Gt,
            Tok::Punct(Punct::Ge) => Operator::Ge,
            _ => return None,
        };
        self.pos += 1;
        Some(op)
    }

    fn expect_comparison(&mut self) -> Result<Operator> {
        match self.comparison() {
            Some(op) => Ok(op),
            None => Err(self.expecting("one of = != < <= > >=")),
        }
    }

    /// After `IN`: a bind marker or a parenthesised, possibly empty, list.
    fn in_values(&mut self) -> Result<Term> {
        if let Some(bind) = self.try_bind()? {
            return Ok(bind);
        }
        if !self.is_punct(Punct::LParen) {
            return Err(self.expecting("'(' or bind marker"));
        }
        self.nested(|p| {
            p.pos += 1;
            let mut items = Vec::new();
            if !p.is_punct(Punct::RParen) {
                items.push(p.term()?);
                while p.eat_punct(Punct::Comma) {
                    items.push(p.term()?);
                }
            }
            p.expect_punct(Punct::RParen)?;
            Ok(Term::Tuple(items))
        })
    }

    /// `WHERE` already consumed: `relation AND relation ...`.
    pub(super) fn where_clause(&mut self) -> Result<Vec<Relation>> {
        let mut out = vec![self.relation()?];
        while self.eat_kw("and") {
            out.push(self.relation()?);
        }
        Ok(out)
    }

    fn relation(&mut self) -> Result<Relation> {
        if self.eat_punct(Punct::LParen) {
            let columns = self.ident_list()?;
            self.expect_punct(Punct::RParen)?;
            let lhs = RelationLhs::Columns(columns);
            if self.eat_kw("in") {
                return Ok(Relation {
                    lhs,
                    op: Operator::In,
                    rhs: self.in_values()?,
                });
            }
            let op = self.expect_comparison()?;
            return Ok(Relation {
                lhs,
                op,
                rhs: self.term()?,
            });
        }
        if self.is_kw("token") && self.is_punct_at(1, Punct::LParen) {
            self.pos += 2;
            let columns = self.ident_list()?;
            self.expect_punct(Punct::RParen)?;
            let op = self.expect_comparison()?;
            return Ok(Relation {
                lhs: RelationLhs::Token(columns),
                op,
                rhs: self.term()?,
            });
        }
        let column = self.ident()?;
        if self.is_punct(Punct::Dot) {
            return Err(self.unsupported("user types are not supported yet"));
        }
        if self.eat_punct(Punct::LBracket) {
            let key = self.term()?;
            self.expect_punct(Punct::RBracket)?;
            let op = self.expect_comparison()?;
            let lhs = RelationLhs::MapElement { column, key };
            return Ok(Relation {
                lhs,
                op,
                rhs: self.term()?,
            });
        }
        let lhs = RelationLhs::Column(column);
        if let Some(op) = self.comparison() {
            return Ok(Relation {
                lhs,
                op,
                rhs: self.term()?,
            });
        }
        if self.eat_kw("in") {
            return Ok(Relation {
                lhs,
                op: Operator::In,
                rhs: self.in_values()?,
            });
        }
        if self.eat_kw("contains") {
            let op = if self.eat_kw("key") {
                Operator::ContainsKey
            } else {
                Operator::Contains
            };
            return Ok(Relation {
                lhs,
                op,
                rhs: self.term()?,
            });
        }
        if self.eat_kw("like") {
            return Ok(Relation {
                lhs,
                op: Operator::Like,
                rhs: self.term()?,
            });
        }
        if self.eat_kw("is") {
            self.expect_kw("not")?;
            self.expect_kw("null")?;
            return Ok(Relation {
                lhs,
                op: Operator::IsNot,
                rhs: Term::Literal(Literal::Null),
            });
        }
        Err(self.no_viable())
    }

    /// `IF` already consumed: `EXISTS` (when `allow_exists`) or
    /// `cond AND cond ...`.
    pub(super) fn conditions(&mut self, allow_exists: bool) -> Result<Conditions> {
        if allow_exists && self.is_kw("exists") && !self.starts_condition_operator(1) {
            self.pos += 1;
            return Ok(Conditions::IfExists);
        }
        let mut out = vec![self.condition()?];
        while self.eat_kw("and") {
            out.push(self.condition()?);
        }
        Ok(Conditions::If(out))
    }

    /// True if the token `n` ahead continues a condition (`exists = 1`
    /// names a column called `exists`).
    fn starts_condition_operator(&mut self, n: usize) -> bool {
        matches!(
            self.tok_at(n),
            Tok::Punct(
                Punct::Eq
                    | Punct::Ne
                    | Punct::Lt
                    | Punct::Le
                    | Punct::Gt
                    | Punct::Ge
                    | Punct::LBracket
                    | Punct::Dot
            )
        ) || self.is_kw_at(n, "in")
            || self.is_kw_at(n, "contains")
    }

    fn condition(&mut self) -> Result<Condition> {
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
        let (op, rhs) = if let Some(op) = self.comparison() {
            (op, self.term()?)
        } else if self.eat_kw("in") {
            (Operator::In, self.in_values()?)
        } else if element.is_none() && self.eat_kw("contains") {
            let op = if self.eat_kw("key") {
                Operator::ContainsKey
            } else {
                Operator::Contains
            };
            (op, self.term()?)
        } else {
            return Err(self.no_viable());
        };
        Ok(Condition {
            column,
            element,
            field,
            op,
            rhs,
        })
    }

    /// `USING` already consumed: `TTL v AND TIMESTAMP v` in either order.
    pub(super) fn using_clause(&mut self) -> Result<Using> {
        let mut using = Using::default();
        loop {
            if self.eat_kw("ttl") {
                if using.ttl.is_some() {
                    return Err(self.invalid("Multiple definitions of TTL in USING"));
                }
                using.ttl = Some(self.int_value()?);
            } else if self.eat_kw("timestamp") {
                if using.timestamp.is_some() {
                    return Err(self.invalid("Multiple definitions of TIMESTAMP in USING"));
                }
                using.timestamp = Some(self.int_value()?);
            } else {
                return Err(self.expecting("TTL or TIMESTAMP"));
            }
            if !self.eat_kw("and") {
                return Ok(using);
            }
        }
    }

    /// An integer literal or a bind marker (LIMIT, TTL, TIMESTAMP).
    pub(super) fn int_value(&mut self) -> Result<Term> {
        if let Some(bind) = self.try_bind()? {
            return Ok(bind);
        }
        match self.peek().clone() {
            Tok::Integer(s) => {
                self.pos += 1;
                Ok(Term::Literal(Literal::Integer(s)))
            }
            _ => Err(self.expecting("integer or bind marker")),
        }
    }
}
