//! CQL text to syntax tree: lexer, parser and AST. No execution here.

pub mod ast;
