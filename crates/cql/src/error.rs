//! Errors from lexing and parsing CQL text.
//!
//! `Display` renders exactly what a server should send to the client:
//! syntax errors carry Cassandra's `line L:C` prefix (line 1-based,
//! column 0-based in characters, as ANTLR reports it); the other kinds are
//! plain messages, like Cassandra's InvalidRequest errors.

use std::fmt;

/// How the server should report a [`ParseError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// Malformed text: CQL error code SyntaxError (0x2000).
    Syntax,
    /// Well-formed, but names a feature Varve does not implement (for
    /// example a user-defined type): CQL error code Invalid (0x2200).
    Unsupported,
    /// Well-formed, but rejected the way Cassandra rejects it at
    /// preparation (for example two PRIMARY KEY clauses): CQL error code
    /// Invalid (0x2200).
    Invalid,
}

/// A lexing or parsing failure with the position of the offending token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub message: String,
    /// 1-based line of the offending token.
    pub line: usize,
    /// 0-based column (in characters) of the offending token.
    pub column: usize,
}

impl ParseError {
    pub(crate) fn new(
        kind: ParseErrorKind,
        message: impl Into<String>,
        line: usize,
        column: usize,
    ) -> Self {
        ParseError {
            kind,
            message: message.into(),
            line,
            column,
        }
    }

    /// True when the error maps to the CQL SyntaxError code; false when it
    /// maps to Invalid.
    pub fn is_syntax(&self) -> bool {
        self.kind == ParseErrorKind::Syntax
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ParseErrorKind::Syntax => {
                write!(f, "line {}:{} {}", self.line, self.column, self.message)
            }
            ParseErrorKind::Unsupported | ParseErrorKind::Invalid => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ParseError {}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, ParseError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_prefixes_position_for_syntax_errors_only() {
        let e = ParseError::new(
            ParseErrorKind::Syntax,
            "no viable alternative at input 'x'",
            1,
            7,
        );
        assert_eq!(e.to_string(), "line 1:7 no viable alternative at input 'x'");
        let e = ParseError::new(
            ParseErrorKind::Unsupported,
            "user types are not supported yet",
            1,
            7,
        );
        assert_eq!(e.to_string(), "user types are not supported yet");
        assert!(!e.is_syntax());
    }
}
