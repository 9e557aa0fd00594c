//! `WITH name = value AND ...` properties of keyspaces and tables.
//! Map values are rendered to text pairs the way Cassandra stores them:
//! strings unquoted, numbers and booleans as written.

use super::Parser;
use crate::ast::PropertyValue;
use crate::error::Result;
use crate::lexer::{Punct, Tok};

impl Parser<'_> {
    /// `prop AND prop ...` (at least one).
    pub(super) fn properties(&mut self) -> Result<Vec<(String, PropertyValue)>> {
        let mut out = Vec::new();
        loop {
            self.push_property(&mut out)?;
            if !self.eat_kw("and") {
                return Ok(out);
            }
        }
    }

    /// Parses `name = value` and appends it, rejecting a repeated name.
    pub(super) fn push_property(&mut self, out: &mut Vec<(String, PropertyValue)>) -> Result<()> {
        let name = self.ident()?;
        if out.iter().any(|(n, _)| *n == name) {
            return Err(self.syntax_error(format!("Multiple definition for property {name}")));
        }
        self.expect_punct(Punct::Eq)?;
        let value = self.property_value()?;
        out.push((name, value));
        Ok(())
    }

    fn property_value(&mut self) -> Result<PropertyValue> {
        if self.is_punct(Punct::LBrace) {
            return self.property_map();
        }
        if let Some(text) = self.constant_text()? {
            let value = match self.tokens[self.pos - 1].tok.clone() {
                Tok::Str(s) => PropertyValue::String(s),
                Tok::Ident(_) => PropertyValue::Boolean(text == "true"),
                _ => PropertyValue::Number(text),
            };
            return Ok(value);
        }
        if self.is_ident_at(0) {
            return Ok(PropertyValue::Identifier(self.ident()?));
        }
        Err(self.expecting("property value"))
    }

    /// A string, number or boolean rendered to text, if one is next.
    fn constant_text(&mut self) -> Result<Option<String>> {
        let negative = self.is_punct(Punct::Minus)
            && matches!(self.tok_at(1), Tok::Integer(_) | Tok::Float(_));
        if negative {
            self.pos += 1;
        }
        let sign = if negative { "-" } else { "" };
        let text = match self.peek().clone() {
            Tok::Str(s) => s,
            Tok::Integer(s) | Tok::Float(s) => format!("{sign}{s}"),
            Tok::Ident(w) if w == "true" || w == "false" => w,
            _ => return Ok(None),
        };
        self.pos += 1;
        Ok(Some(text))
    }

    pub(super) fn property_map(&mut self) -> Result<PropertyValue> {
        self.expect_punct(Punct::LBrace)?;
        let mut entries = Vec::new();
        if self.eat_punct(Punct::RBrace) {
            return Ok(PropertyValue::Map(entries));
        }
        loop {
            let Some(key) = self.constant_text()? else {
                return Err(self.expecting("string, number or boolean"));
            };
            self.expect_punct(Punct::Colon)?;
            let Some(value) = self.constant_text()? else {
                return Err(self.expecting("string, number or boolean"));
            };
            entries.push((key, value));
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RBrace)?;
        Ok(PropertyValue::Map(entries))
    }
}
