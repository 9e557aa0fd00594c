//! Server-side DESCRIBE (`DESCRIBE` or `DESC`), as cqlsh sends it.

use super::Parser;
use crate::ast::{Describe, Statement};
use crate::error::Result;

impl Parser<'_> {
    pub(super) fn describe(&mut self) -> Result<Statement> {
        self.pos += 1; // DESCRIBE | DESC
        let word = |p: &mut Self, w: &str| p.eat_kw(w);
        let d = if word(self, "cluster") {
            Describe::Cluster
        } else if word(self, "keyspaces") {
            Describe::Keyspaces
        } else if word(self, "full") {
            self.expect_kw("schema")?;
            Describe::Schema { full: true }
        } else if word(self, "schema") {
            Describe::Schema { full: false }
        } else if self.is_kw("only") && self.is_kw_at(1, "keyspace") {
            self.pos += 2;
            Describe::Keyspace {
                name: self.optional_name()?,
                only: true,
            }
        } else if word(self, "keyspace") {
            Describe::Keyspace {
                name: self.optional_name()?,
                only: false,
            }
        } else if word(self, "tables") {
            Describe::Tables
        } else if word(self, "table") || word(self, "columnfamily") {
            Describe::Table(self.qualified_name()?)
        } else if word(self, "types") {
            Describe::Types
        } else if self.is_kw("type") && self.is_ident_at(1) {
            self.pos += 1;
            Describe::Type(self.qualified_name()?)
        } else if word(self, "functions") {
            Describe::Functions
        } else if word(self, "aggregates") {
            Describe::Aggregates
        } else if let Some(feature) = self.describe_unsupported() {
            return Ok(Statement::Unsupported(feature.into()));
        } else {
            Describe::Name(self.qualified_name()?)
        };
        if self.is_kw("with") {
            return Err(self.unsupported("DESCRIBE ... WITH INTERNALS is not supported yet"));
        }
        Ok(Statement::Describe(d))
    }

    fn optional_name(&mut self) -> Result<Option<String>> {
        if self.is_ident_at(0) {
            Ok(Some(self.ident()?))
        } else {
            Ok(None)
        }
    }

    /// `DESCRIBE INDEX x`, `DESCRIBE FUNCTION x`, ...: features we lack.
    fn describe_unsupported(&mut self) -> Option<&'static str> {
        let feature = if self.is_kw("index") {
            "secondary indexes"
        } else if self.is_kw("materialized") {
            "materialized views"
        } else if !self.is_ident_at(1) {
            return None;
        } else if self.is_kw("function") || self.is_kw("aggregate") {
            "user-defined functions"
        } else {
            return None;
        };
        Some(feature)
    }
}
