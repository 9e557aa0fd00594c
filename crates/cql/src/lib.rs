//! CQL text to syntax tree: lexer, parser and AST. No execution here.
//!
//! Entry points: [`parse`] for one statement and [`parse_type`] for a type
//! name. Invariants: parsing never panics on any input (property-tested);
//! nesting of terms, types and selectors is bounded by
//! [`MAX_NESTING_DEPTH`] so hostile input cannot overflow the stack.
//! This crate must not depend on storage, networking or the executor.

pub mod ast;
pub mod auth_ast;
mod error;
mod keywords;
mod lexer;
mod parser;

pub use error::{ParseError, ParseErrorKind};
pub use keywords::is_reserved;
pub use parser::{parse, parse_type, MAX_NESTING_DEPTH};
