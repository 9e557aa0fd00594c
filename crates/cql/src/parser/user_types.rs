//! CREATE TYPE, ALTER TYPE and DROP TYPE. The type name may not be a
//! native type's name (Cassandra's grammar refuses `CREATE TYPE text`).

use super::Parser;
use crate::ast::{AlterType, AlterTypeOp, CreateType, QualifiedName, Statement};
use crate::error::Result;
use crate::lexer::{Punct, Tok};

impl Parser<'_> {
    /// After `CREATE TYPE`.
    pub(super) fn create_type(&mut self) -> Result<Statement> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.type_name()?;
        self.expect_punct(Punct::LParen)?;
        let mut fields = Vec::new();
        loop {
            let field = self.ident()?;
            fields.push((field, self.cql_type()?));
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        Ok(Statement::CreateType(CreateType {
            name,
            if_not_exists,
            fields,
        }))
    }

    /// After `ALTER TYPE`.
    pub(super) fn alter_type(&mut self) -> Result<Statement> {
        let if_exists = self.if_exists()?;
        let name = self.type_name()?;
        let op = if self.eat_kw("add") {
            let if_not_exists = self.if_not_exists()?;
            let field = self.ident()?;
            AlterTypeOp::Add {
                if_not_exists,
                field,
                ty: self.cql_type()?,
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
            AlterTypeOp::Rename { if_exists, renames }
        } else if self.eat_kw("alter") {
            self.ident()?;
            self.expect_kw("type")?;
            self.cql_type()?;
            AlterTypeOp::AlterField
        } else {
            return Err(self.expecting("ADD, RENAME or ALTER"));
        };
        Ok(Statement::AlterType(AlterType {
            name,
            if_exists,
            op,
        }))
    }

    /// After `DROP TYPE`.
    pub(super) fn drop_type(&mut self) -> Result<Statement> {
        let if_exists = self.if_exists()?;
        let name = self.type_name()?;
        Ok(Statement::DropType { name, if_exists })
    }

    /// `name` or `keyspace.name`, where the name is not a native type's.
    fn type_name(&mut self) -> Result<QualifiedName> {
        let dotted = self.is_punct_at(1, Punct::Dot);
        let at = if dotted { 2 } else { 0 };
        if let Tok::Ident(w) = self.tok_at(at).clone() {
            if super::types::is_native_name(&w) {
                if dotted {
                    self.pos += 2;
                }
                return Err(self.no_viable());
            }
        }
        self.qualified_name()
    }
}
