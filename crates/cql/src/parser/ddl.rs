//! Schema statements: keyspaces, tables, TRUNCATE (types are in
//! `user_types`), and the CREATE / ALTER
//! / DROP forms of features Varve does not implement, which become
//! [`Statement::Unsupported`] without parsing the rest of the text.

use super::Parser;
use crate::ast::{
    AlterKeyspace, AlterTable, AlterTableOp, ColumnDef, CreateKeyspace, CreateTable, Order,
    Statement,
};
use crate::error::Result;
use crate::lexer::{Punct, Tok};

/// The unsupported feature named by the object keyword after
/// CREATE / ALTER / DROP, if it is one.
fn unsupported_object(p: &mut Parser<'_>) -> Option<Statement> {
    let feature = if p.is_kw("index") || (p.is_kw("custom") && p.is_kw_at(1, "index")) {
        "secondary indexes"
    } else if p.is_kw("materialized") {
        "materialized views"
    } else if p.is_kw("function") || p.is_kw("aggregate") {
        "user-defined functions"
    } else if p.is_kw("trigger") {
        "triggers"
    } else {
        return None;
    };
    Some(Statement::Unsupported(feature.into()))
}

/// Partition and clustering columns of one PRIMARY KEY declaration.
type PrimaryKey = (Vec<String>, Vec<String>);

impl Parser<'_> {
    pub(super) fn create(&mut self) -> Result<Statement> {
        self.pos += 1;
        if self.eat_kw("or") {
            self.expect_kw("replace")?;
            if self.is_kw("function") || self.is_kw("aggregate") {
                return Ok(Statement::Unsupported("user-defined functions".into()));
            }
            return Err(self.expecting("FUNCTION or AGGREGATE"));
        }
        if self.eat_kw("keyspace") || self.eat_kw("schema") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.ident()?;
            self.expect_kw("with")?;
            let properties = self.properties()?;
            return Ok(Statement::CreateKeyspace(CreateKeyspace {
                name,
                if_not_exists,
                properties,
            }));
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            return self.create_table().map(Statement::CreateTable);
        }
        if self.eat_kw("type") {
            return self.create_type();
        }
        if self.is_kw("role") || self.is_kw("user") {
            let user = self.eat_kw("user");
            self.eat_kw("role");
            return self.create_role(user);
        }
        unsupported_object(self).ok_or_else(|| self.no_viable())
    }

    pub(super) fn alter(&mut self) -> Result<Statement> {
        self.pos += 1;
        if self.eat_kw("keyspace") || self.eat_kw("schema") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            self.expect_kw("with")?;
            let properties = self.properties()?;
            return Ok(Statement::AlterKeyspace(AlterKeyspace {
                name,
                if_exists,
                properties,
            }));
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            return self.alter_table().map(Statement::AlterTable);
        }
        if self.eat_kw("type") {
            return self.alter_type();
        }
        if self.is_kw("role") || self.is_kw("user") {
            let user = self.eat_kw("user");
            self.eat_kw("role");
            return self.alter_role(user);
        }
        unsupported_object(self).ok_or_else(|| self.no_viable())
    }

    pub(super) fn drop_statement(&mut self) -> Result<Statement> {
        self.pos += 1;
        if self.eat_kw("keyspace") || self.eat_kw("schema") {
            let if_exists = self.if_exists()?;
            let name = self.ident()?;
            return Ok(Statement::DropKeyspace { name, if_exists });
        }
        if self.eat_kw("table") || self.eat_kw("columnfamily") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name()?;
            return Ok(Statement::DropTable { name, if_exists });
        }
        if self.eat_kw("type") {
            return self.drop_type();
        }
        if self.eat_kw("role") || self.eat_kw("user") {
            return self.drop_role();
        }
        unsupported_object(self).ok_or_else(|| self.no_viable())
    }

    pub(super) fn truncate(&mut self) -> Result<Statement> {
        self.pos += 1;
        let _ = self.eat_kw("table") || self.eat_kw("columnfamily");
        Ok(Statement::Truncate(self.qualified_name()?))
    }

    /// `name type [STATIC]`
    fn column_def(&mut self) -> Result<ColumnDef> {
        let name = self.ident()?;
        let ty = self.cql_type()?;
        let is_static = self.eat_kw("static");
        Ok(ColumnDef {
            name,
            ty,
            is_static,
        })
    }

    fn create_table(&mut self) -> Result<CreateTable> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.qualified_name()?;
        self.expect_punct(Punct::LParen)?;
        let mut columns = Vec::new();
        let mut reversed: Vec<String> = Vec::new();
        let mut keys: Vec<PrimaryKey> = Vec::new();
        loop {
            if self.is_kw("primary") && self.is_kw_at(1, "key") {
                self.pos += 2;
                keys.push(self.primary_key_clause()?);
            } else {
                let reversed_type = matches!(
                    self.token_at(1).tok.clone(),
                    Tok::Str(t) if super::class_types::is_reversed(&t)
                );
                let def = self.column_def()?;
                if reversed_type {
                    reversed.push(def.name.clone());
                }
                if self.eat_kw("primary") {
                    self.expect_kw("key")?;
                    keys.push((vec![def.name.clone()], Vec::new()));
                }
                columns.push(def);
            }
            if !self.eat_punct(Punct::Comma) || self.is_punct(Punct::RParen) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        let (partition_key, clustering_key) = match keys.len() {
            1 => keys.remove(0),
            0 => return Err(self.invalid("No PRIMARY KEY specified (exactly one required)")),
            _ => return Err(self.invalid("Multiple PRIMARY KEYs specified (exactly one required)")),
        };
        let mut table = CreateTable {
            name,
            if_not_exists,
            columns,
            partition_key,
            clustering_key,
            clustering_order: Vec::new(),
            compact_storage: false,
            properties: Vec::new(),
        };
        if self.eat_kw("with") {
            self.table_options(&mut table)?;
        }
        // A clustering column declared as 'ReversedType(...)' is in
        // descending order when no CLUSTERING ORDER says otherwise.
        let implied = table.clustering_key.iter().any(|c| reversed.contains(c));
        if implied && table.clustering_order.is_empty() {
            table.clustering_order = table
                .clustering_key
                .iter()
                .map(|c| {
                    let order = if reversed.contains(c) {
                        Order::Desc
                    } else {
                        Order::Asc
                    };
                    (c.clone(), order)
                })
                .collect();
        }
        Ok(table)
    }

    /// After `PRIMARY KEY`: `(pk, c1, c2)` or `((pk1, pk2), c1, ...)`.
    fn primary_key_clause(&mut self) -> Result<PrimaryKey> {
        self.expect_punct(Punct::LParen)?;
        let partition = if self.eat_punct(Punct::LParen) {
            let cols = self.ident_list()?;
            self.expect_punct(Punct::RParen)?;
            cols
        } else {
            vec![self.ident()?]
        };
        let mut clustering = Vec::new();
        while self.eat_punct(Punct::Comma) {
            clustering.push(self.ident()?);
        }
        self.expect_punct(Punct::RParen)?;
        Ok((partition, clustering))
    }

    /// `WITH` consumed: `CLUSTERING ORDER BY (...)`, `COMPACT STORAGE` and
    /// `name = value`, joined by AND.
    fn table_options(&mut self, table: &mut CreateTable) -> Result<()> {
        loop {
            if self.is_kw("clustering") && self.is_kw_at(1, "order") {
                self.pos += 2;
                self.expect_kw("by")?;
                self.expect_punct(Punct::LParen)?;
                loop {
                    let column = self.ident()?;
                    let order = self.order();
                    table.clustering_order.push((column, order));
                    if !self.eat_punct(Punct::Comma) {
                        break;
                    }
                }
                self.expect_punct(Punct::RParen)?;
            } else if self.is_kw("compact") && self.is_kw_at(1, "storage") {
                self.pos += 2;
                table.compact_storage = true;
            } else {
                self.push_property(&mut table.properties)?;
            }
            if !self.eat_kw("and") {
                return Ok(());
            }
        }
    }

    /// The integer after `DROP ... USING TIMESTAMP` (a literal: DDL binds
    /// nothing).
    fn drop_timestamp(&mut self) -> Result<i64> {
        let negative = self.eat_punct(Punct::Minus);
        match self.peek().clone() {
            Tok::Integer(s) => {
                self.pos += 1;
                let text = if negative { format!("-{s}") } else { s };
                text.parse()
                    .map_err(|_| self.invalid(format!("Invalid timestamp {text}")))
            }
            _ => Err(self.expecting("an integer timestamp")),
        }
    }

    fn alter_table(&mut self) -> Result<AlterTable> {
        let if_exists = self.if_exists()?;
        let name = self.qualified_name()?;
        let op = if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists()?;
            let parens = self.eat_punct(Punct::LParen);
            let mut columns = vec![self.column_def()?];
            while self.eat_punct(Punct::Comma) {
                columns.push(self.column_def()?);
            }
            if parens {
                self.expect_punct(Punct::RParen)?;
            }
            AlterTableOp::Add {
                if_not_exists,
                columns,
            }
        } else if self.eat_kw("drop") {
            // Cassandra 5.0 parses it, and refuses it unless
            // `drop_compact_storage_enabled` (off by default).
            if self.is_kw("compact") && self.is_kw_at(1, "storage") {
                return Err(self.invalid(
                    "DROP COMPACT STORAGE is disabled. Enable in cassandra.yaml to use.",
                ));
            }
            let if_exists = self.if_exists()?;
            let parens = self.eat_punct(Punct::LParen);
            let columns = self.ident_list()?;
            if parens {
                self.expect_punct(Punct::RParen)?;
            }
            let timestamp = if self.eat_kw("using") {
                self.expect_kw("timestamp")?;
                Some(self.drop_timestamp()?)
            } else {
                None
            };
            AlterTableOp::Drop {
                if_exists,
                columns,
                timestamp,
            }
        } else if self.eat_kw("rename") {
            let if_exists = self.if_exists()?;
            let mut renames = Vec::new();
            loop {
                let from = self.ident()?;
                self.expect_kw("to")?;
                renames.push((from, self.ident()?));
                if !self.eat_kw("and") {
                    break;
                }
            }
            AlterTableOp::Rename { if_exists, renames }
        } else if self.eat_kw("alter") {
            let column = self.ident()?;
            self.expect_kw("type")?;
            AlterTableOp::AlterType {
                column,
                ty: self.cql_type()?,
            }
        } else if self.eat_kw("with") {
            AlterTableOp::With(self.properties()?)
        } else {
            return Err(self.expecting("ADD, DROP, RENAME, ALTER or WITH"));
        };
        Ok(AlterTable {
            name,
            if_exists,
            op,
        })
    }
}
