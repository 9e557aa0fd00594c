//! SELECT statements and their selectors.

use super::Parser;
use crate::ast::{ArithOp, CellInfoKind, Order, Select, Selection, Selector, SelectorExpr, Term};
use crate::error::Result;
use crate::lexer::{Punct, Tok};

impl Parser<'_> {
    /// True if `JSON` / `DISTINCT` at the current token is the modifier,
    /// not a column of that name (`SELECT json FROM t`, `SELECT json, a`).
    fn is_select_modifier(&mut self, word: &str) -> bool {
        if !self.is_kw(word) {
            return false;
        }
        let column_follows = self.is_kw_at(1, "from")
            || self.is_kw_at(1, "as")
            || matches!(
                self.tok_at(1),
                Tok::Punct(Punct::Comma | Punct::LParen | Punct::LBracket | Punct::Dot)
            );
        !column_follows
    }

    pub(super) fn select(&mut self) -> Result<Select> {
        self.expect_kw("select")?;
        let json = self.is_select_modifier("json");
        if json {
            self.pos += 1;
        }
        let distinct = self.is_select_modifier("distinct");
        if distinct {
            self.pos += 1;
        }
        let selection = if self.eat_punct(Punct::Star) {
            Selection::Wildcard
        } else {
            let mut items = vec![self.selector()?];
            while self.eat_punct(Punct::Comma) {
                items.push(self.selector()?);
            }
            Selection::Items(items)
        };
        self.expect_kw("from")?;
        let table = self.qualified_name()?;
        let where_clause = if self.eat_kw("where") {
            self.where_clause()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.is_kw("group") && self.is_kw_at(1, "by") {
            self.pos += 2;
            loop {
                group_by.push(self.selector_expr()?);
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
        }
        let mut order_by = Vec::new();
        if self.eat_kw("order") {
            self.expect_kw("by")?;
            loop {
                let column = self.ident()?;
                if self.is_kw("ann") && self.is_kw_at(1, "of") {
                    // Needs a vector index (SAI), which Varve does not have.
                    return Err(
                        self.invalid("ANN ordering by vector requires the column to be indexed")
                    );
                }
                order_by.push((column, self.order()));
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
        }
        let mut per_partition_limit = None;
        if self.is_kw("per") {
            self.pos += 1;
            self.expect_kw("partition")?;
            self.expect_kw("limit")?;
            per_partition_limit = Some(self.int_value()?);
        }
        let limit = if self.eat_kw("limit") {
            Some(self.int_value()?)
        } else {
            None
        };
        let allow_filtering = self.eat_kw("allow");
        if allow_filtering {
            self.expect_kw("filtering")?;
        }
        self.scylla_using_timeout()?;
        Ok(Select {
            table,
            json,
            distinct,
            selection,
            where_clause,
            group_by,
            order_by,
            per_partition_limit,
            limit,
            allow_filtering,
        })
    }

    /// ScyllaDB's `USING TIMEOUT <duration>` at the end of a SELECT, which
    /// its drivers send once the server offers a ScyllaDB protocol
    /// extension (Varve offers `SCYLLA_LWT_ADD_METADATA_MARK`): accepted,
    /// and the node's own read timeouts apply.
    fn scylla_using_timeout(&mut self) -> Result<()> {
        if !(self.is_kw("using") && self.is_kw_at(1, "timeout")) {
            return Ok(());
        }
        self.pos += 2;
        // A literal only: a bind marker would need a value no statement
        // of Varve's has a place for.
        match self.peek().clone() {
            Tok::Duration(_) => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.expecting("a duration after USING TIMEOUT")),
        }
    }

    /// `ASC` / `DESC`, default ascending.
    pub(super) fn order(&mut self) -> Order {
        if self.eat_kw("desc") {
            Order::Desc
        } else {
            self.eat_kw("asc");
            Order::Asc
        }
    }

    fn selector(&mut self) -> Result<Selector> {
        let expr = self.selector_expr()?;
        let alias = if self.eat_kw("as") {
            Some(self.ident()?)
        } else {
            None
        };
        Ok(Selector { expr, alias })
    }

    /// A selector, arithmetic included (Cassandra's `selectionAddition`).
    fn selector_expr(&mut self) -> Result<SelectorExpr> {
        let mut left = self.selector_product()?;
        let mut levels = 0;
        let out = loop {
            let op = if self.is_punct(Punct::Plus) {
                ArithOp::Add
            } else if self.is_punct(Punct::Minus) {
                ArithOp::Sub
            } else {
                break Ok(left);
            };
            if let Err(e) = self.enter() {
                break Err(e);
            }
            levels += 1;
            self.pos += 1;
            match self.selector_product() {
                Ok(right) => left = selector_operation(op, left, right),
                Err(e) => break Err(e),
            }
        };
        for _ in 0..levels {
            self.leave();
        }
        out
    }

    /// `group (('*' | '/' | '%') group)*`
    fn selector_product(&mut self) -> Result<SelectorExpr> {
        let mut left = self.selector_group()?;
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
            match self.selector_group() {
                Ok(right) => left = selector_operation(op, left, right),
                Err(e) => break Err(e),
            }
        };
        for _ in 0..levels {
            self.leave();
        }
        out
    }

    /// `-group`, `(selector)` or a single selector.
    fn selector_group(&mut self) -> Result<SelectorExpr> {
        let number_follows = matches!(self.tok_at(1), Tok::Integer(_) | Tok::Float(_))
            || self.is_kw_at(1, "nan")
            || self.is_kw_at(1, "infinity");
        if self.is_punct(Punct::Minus) && !number_follows {
            return self.nested(|p| {
                p.pos += 1;
                Ok(SelectorExpr::Negate(Box::new(p.selector_group()?)))
            });
        }
        if self.is_punct(Punct::LParen) && !self.is_selector_cast() {
            return self.nested(|p| {
                p.pos += 1;
                let mut items = vec![p.selector_expr()?];
                while p.eat_punct(Punct::Comma) {
                    items.push(p.selector_expr()?);
                }
                p.expect_punct(Punct::RParen)?;
                if items.len() == 1 {
                    return Ok(SelectorExpr::Paren(Box::new(items.remove(0))));
                }
                // A tuple of terms; tuples of other selectors are not built.
                let mut terms = Vec::new();
                for item in items {
                    match item {
                        SelectorExpr::Term(t) => terms.push(t),
                        _ => return Err(p.invalid("Tuple selectors are not supported")),
                    }
                }
                Ok(SelectorExpr::Term(Term::Tuple(terms)))
            });
        }
        self.selector_single()
    }

    /// At `(`: whether a type hint `(type) ...` starts here (a name or a
    /// parameterised type, then `)` and something a selector starts with).
    fn is_selector_cast(&mut self) -> bool {
        if !self.is_ident_at(1) && !matches!(self.tok_at(1), Tok::Ident(_)) {
            return false;
        }
        if self.is_punct_at(2, Punct::Lt) {
            return true;
        }
        if !self.is_punct_at(2, Punct::RParen) {
            return false;
        }
        // A reserved word (`FROM`, `AS`) after `(name)` ends a selector.
        let literal_word = ["true", "false", "null", "nan", "infinity", "token"]
            .iter()
            .any(|w| self.is_kw_at(3, w));
        if self.is_ident_at(3) || literal_word {
            return true;
        }
        matches!(
            self.tok_at(3),
            Tok::Str(_)
                | Tok::Integer(_)
                | Tok::Float(_)
                | Tok::Uuid(_)
                | Tok::Blob(_)
                | Tok::Duration(_)
                | Tok::Punct(
                    Punct::LParen
                        | Punct::LBracket
                        | Punct::LBrace
                        | Punct::Question
                        | Punct::Colon
                        | Punct::Minus
                )
        )
    }

    fn selector_single(&mut self) -> Result<SelectorExpr> {
        let call = self.is_punct_at(1, Punct::LParen);
        if call && self.is_kw("count") && self.is_punct_at(3, Punct::RParen) {
            let star = self.is_punct_at(2, Punct::Star)
                || matches!(self.tok_at(2), Tok::Integer(s) if s == "1");
            if star {
                self.pos += 4;
                return Ok(SelectorExpr::CountStar);
            }
        }
        let cell_info = ["writetime", "ttl", "maxwritetime"]
            .into_iter()
            .find(|kw| self.is_kw(kw));
        if let (true, Some(kw), true) = (call, cell_info, self.is_ident_at(2)) {
            return self.nested(|p| {
                p.pos += 2;
                let column = SelectorExpr::Column(p.ident()?);
                let arg = p.selector_modifiers(column)?;
                p.expect_punct(Punct::RParen)?;
                Ok(cell_info_selector(kw, arg))
            });
        }
        if call && self.is_kw("cast") {
            return self.nested(|p| {
                p.pos += 2;
                let expr = p.selector_expr()?;
                p.expect_kw("as")?;
                // Cassandra's grammar takes a native type here, nothing else.
                let native =
                    matches!(p.peek(), Tok::Ident(name) if super::types::is_native_name(name));
                if !native {
                    return Err(p.no_viable());
                }
                let ty = p.cql_type()?;
                p.expect_punct(Punct::RParen)?;
                Ok(SelectorExpr::Cast {
                    expr: Box::new(expr),
                    ty,
                })
            });
        }
        if self.is_function_call_at(0) {
            return self.nested(|p| {
                let name = p.function_name()?;
                p.expect_punct(Punct::LParen)?;
                let mut args = Vec::new();
                if !p.is_punct(Punct::RParen) {
                    args.push(p.selector_expr()?);
                    while p.eat_punct(Punct::Comma) {
                        args.push(p.selector_expr()?);
                    }
                }
                p.expect_punct(Punct::RParen)?;
                p.selector_modifiers(SelectorExpr::FunctionCall { name, args })
            });
        }
        if self.is_ident_at(0) {
            let column = SelectorExpr::Column(self.ident()?);
            return self.selector_modifiers(column);
        }
        Ok(SelectorExpr::Term(self.simple_term()?))
    }

    /// What may follow a selector, any number of times (Cassandra's
    /// `selectorModifier`): `.field`, `[key]`, `[from..to]`, `[from..]`,
    /// `[..to]`.
    fn selector_modifiers(&mut self, mut expr: SelectorExpr) -> Result<SelectorExpr> {
        loop {
            if self.eat_punct(Punct::Dot) {
                let field = self.ident()?;
                expr = SelectorExpr::Field {
                    expr: Box::new(expr),
                    field,
                };
            } else if self.eat_punct(Punct::LBracket) {
                let expr_box = Box::new(expr);
                expr = if self.eat_punct(Punct::Range) {
                    let to = Some(self.term()?);
                    SelectorExpr::Slice {
                        expr: expr_box,
                        from: None,
                        to,
                    }
                } else {
                    let first = self.term()?;
                    if self.eat_punct(Punct::Range) {
                        let to = if self.is_punct(Punct::RBracket) {
                            None
                        } else {
                            Some(self.term()?)
                        };
                        SelectorExpr::Slice {
                            expr: expr_box,
                            from: Some(first),
                            to,
                        }
                    } else {
                        SelectorExpr::Element {
                            expr: expr_box,
                            key: first,
                        }
                    }
                };
                self.expect_punct(Punct::RBracket)?;
            } else {
                return Ok(expr);
            }
        }
    }
}

fn selector_operation(op: ArithOp, left: SelectorExpr, right: SelectorExpr) -> SelectorExpr {
    SelectorExpr::Operation {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

/// `writetime(arg)`, `ttl(arg)` or `maxwritetime(arg)`: the long-standing
/// variants for a column and a user type field, [`SelectorExpr::CellInfo`]
/// for the rest.
fn cell_info_selector(kw: &str, arg: SelectorExpr) -> SelectorExpr {
    let kind = match kw {
        "writetime" => CellInfoKind::WriteTime,
        "ttl" => CellInfoKind::Ttl,
        _ => CellInfoKind::MaxWriteTime,
    };
    match (kind, arg) {
        (CellInfoKind::WriteTime, SelectorExpr::Column(c)) => SelectorExpr::WriteTime(c),
        (CellInfoKind::Ttl, SelectorExpr::Column(c)) => SelectorExpr::Ttl(c),
        (CellInfoKind::WriteTime | CellInfoKind::Ttl, SelectorExpr::Field { expr, field }) => {
            match *expr {
                SelectorExpr::Column(column) => SelectorExpr::FieldWriteTime {
                    column,
                    field,
                    ttl: kind == CellInfoKind::Ttl,
                },
                inner => SelectorExpr::CellInfo {
                    kind,
                    arg: Box::new(SelectorExpr::Field {
                        expr: Box::new(inner),
                        field,
                    }),
                },
            }
        }
        (kind, arg) => SelectorExpr::CellInfo {
            kind,
            arg: Box::new(arg),
        },
    }
}
