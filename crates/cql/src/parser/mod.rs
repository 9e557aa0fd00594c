//! Recursive-descent parser from tokens to [`crate::ast`].
//!
//! The parser pulls tokens from the lexer on demand and never backtracks:
//! every choice is made by looking at most a few tokens ahead, so bind
//! markers can be numbered as they are met, which is their order in the
//! text. Submodules hold one statement family each; this file holds the
//! token cursor, error construction and the statement dispatch.

mod auth;
mod class_types;
mod ddl;
mod describe;
mod modify;
mod properties;
mod relations;
mod select;
mod terms;
mod types;
mod user_types;

use crate::ast::{Parsed, QualifiedName, Statement};
use crate::error::{ParseError, ParseErrorKind, Result};
use crate::keywords::is_reserved;
use crate::lexer::{Lexer, Punct, Tok, Token};
use varve_types::CqlType;

/// Deepest nesting of terms, types and selectors accepted (each `(`, `[`,
/// `{`, `<`, function call, cast or unary minus is one level). Deeper
/// input is a syntax error, which bounds the parser's stack use.
pub const MAX_NESTING_DEPTH: usize = 64;

/// How many tokens before the offending one an error message quotes.
const ERROR_CONTEXT_TOKENS: usize = 10;

/// Parses exactly one CQL statement, with an optional trailing `;`.
pub fn parse(text: &str) -> Result<Parsed> {
    let mut p = Parser::new(text);
    let statement = p.statement()?;
    if !matches!(statement, Statement::Unsupported(_)) {
        p.eat_punct(Punct::Semi);
        p.expect_eof()?;
    }
    Ok(Parsed {
        statement,
        bind_markers: p.binds,
    })
}

/// Parses a CQL type name such as `frozen<map<text, int>>`.
pub fn parse_type(text: &str) -> Result<CqlType> {
    let mut p = Parser::new(text);
    let ty = p.cql_type()?;
    p.expect_eof()?;
    Ok(ty)
}

pub(crate) struct Parser<'a> {
    text: &'a str,
    lexer: Lexer<'a>,
    tokens: Vec<Token>,
    pos: usize,
    binds: Vec<Option<String>>,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            lexer: Lexer::new(text),
            tokens: Vec::new(),
            pos: 0,
            binds: Vec::new(),
            depth: 0,
        }
    }

    // ---- token cursor -------------------------------------------------

    fn token_at(&mut self, n: usize) -> &Token {
        while self.tokens.len() <= self.pos + n {
            let t = self.lexer.next_token();
            self.tokens.push(t);
        }
        &self.tokens[self.pos + n]
    }

    fn tok_at(&mut self, n: usize) -> &Tok {
        &self.token_at(n).tok
    }

    fn peek(&mut self) -> &Tok {
        self.tok_at(0)
    }

    /// Consumes and returns the current token. Never moves past the end.
    fn advance(&mut self) -> Token {
        let t = self.token_at(0).clone();
        if !matches!(t.tok, Tok::Eof | Tok::Error) {
            self.pos += 1;
        }
        t
    }

    fn is_kw_at(&mut self, n: usize, kw: &str) -> bool {
        matches!(self.tok_at(n), Tok::Ident(s) if s == kw)
    }

    fn is_kw(&mut self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let found = self.is_kw(kw);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect_kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.expecting(&kw.to_ascii_uppercase()))
        }
    }

    fn is_punct_at(&mut self, n: usize, p: Punct) -> bool {
        matches!(self.tok_at(n), Tok::Punct(q) if *q == p)
    }

    fn is_punct(&mut self, p: Punct) -> bool {
        self.is_punct_at(0, p)
    }

    fn eat_punct(&mut self, p: Punct) -> bool {
        let found = self.is_punct(p);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect_punct(&mut self, p: Punct) -> Result<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.expecting(&format!("'{}'", p.as_str())))
        }
    }

    fn expect_eof(&mut self) -> Result<()> {
        if matches!(self.peek(), Tok::Eof) {
            Ok(())
        } else {
            Err(self.expecting("EOF"))
        }
    }

    /// True if the token `n` ahead can be used as a name.
    fn is_ident_at(&mut self, n: usize) -> bool {
        match self.tok_at(n) {
            Tok::Ident(s) => !is_reserved(s),
            Tok::QuotedIdent(_) => true,
            _ => false,
        }
    }

    /// A name: an unquoted non-reserved identifier or a quoted one.
    fn ident(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Ident(s) if !is_reserved(&s) => {
                self.pos += 1;
                Ok(s)
            }
            Tok::QuotedIdent(s) => {
                self.pos += 1;
                Ok(s)
            }
            Tok::Ident(s) => {
                let hint = format!(
                    "identifier ({} is a reserved keyword; quote it as \"{s}\" to use it as a name)",
                    s.to_ascii_uppercase()
                );
                Err(self.expecting(&hint))
            }
            _ => Err(self.expecting("identifier")),
        }
    }

    /// `name` or `keyspace.name`.
    fn qualified_name(&mut self) -> Result<QualifiedName> {
        let first = self.ident()?;
        if self.eat_punct(Punct::Dot) {
            let name = self.ident()?;
            Ok(QualifiedName {
                keyspace: Some(first),
                name,
            })
        } else {
            Ok(QualifiedName {
                keyspace: None,
                name: first,
            })
        }
    }

    /// `name, name, ...` (at least one).
    fn ident_list(&mut self) -> Result<Vec<String>> {
        let mut out = vec![self.ident()?];
        while self.eat_punct(Punct::Comma) {
            out.push(self.ident()?);
        }
        Ok(out)
    }

    /// `IF EXISTS`, consumed if present.
    fn if_exists(&mut self) -> Result<bool> {
        if self.eat_kw("if") {
            self.expect_kw("exists")?;
            return Ok(true);
        }
        Ok(false)
    }

    /// `IF NOT EXISTS`, consumed if present.
    fn if_not_exists(&mut self) -> Result<bool> {
        if self.eat_kw("if") {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            return Ok(true);
        }
        Ok(false)
    }

    // ---- nesting limit ------------------------------------------------

    fn enter(&mut self) -> Result<()> {
        if self.depth >= MAX_NESTING_DEPTH {
            return Err(self.syntax_error(format!(
                "nesting too deep: more than {MAX_NESTING_DEPTH} levels"
            )));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---- errors -------------------------------------------------------

    fn token_text(&self, t: &Token) -> String {
        match t.tok {
            Tok::Eof => "<EOF>".to_string(),
            _ => self.text.get(t.start..t.end).unwrap_or("").to_string(),
        }
    }

    /// An error of `kind` at the current token. If the lexer failed there,
    /// its error wins: it is the real cause.
    fn error_here(&mut self, kind: ParseErrorKind, message: String) -> ParseError {
        let t = self.token_at(0).clone();
        if t.tok == Tok::Error {
            if let Some(e) = self.lexer.error() {
                return e.clone();
            }
        }
        ParseError::new(kind, message, t.line, t.column)
    }

    /// A syntax error at the current token, with Cassandra-style context:
    /// `(SELECT * [FROM]...)`.
    fn syntax_error(&mut self, message: String) -> ParseError {
        let t = self.token_at(0).clone();
        let from = self.pos.saturating_sub(ERROR_CONTEXT_TOKENS);
        let mut context = String::new();
        if from > 0 {
            context.push_str("...");
        }
        for before in &self.tokens[from..self.pos] {
            context.push_str(&self.token_text(before));
            context.push(' ');
        }
        context.push_str(&format!("[{}]", self.token_text(&t)));
        if t.tok != Tok::Eof {
            context.push_str("...");
        }
        self.error_here(ParseErrorKind::Syntax, format!("{message} ({context})"))
    }

    fn current_text(&mut self) -> String {
        let t = self.token_at(0).clone();
        self.token_text(&t)
    }

    /// `mismatched input 'x' expecting <what>`
    fn expecting(&mut self, what: &str) -> ParseError {
        let found = self.current_text();
        self.syntax_error(format!("mismatched input '{found}' expecting {what}"))
    }

    /// `no viable alternative at input 'x'`
    fn no_viable(&mut self) -> ParseError {
        let found = self.current_text();
        self.syntax_error(format!("no viable alternative at input '{found}'"))
    }

    fn unsupported(&mut self, message: impl Into<String>) -> ParseError {
        self.error_here(ParseErrorKind::Unsupported, message.into())
    }

    fn invalid(&mut self, message: impl Into<String>) -> ParseError {
        self.error_here(ParseErrorKind::Invalid, message.into())
    }

    // ---- statements ---------------------------------------------------

    fn statement(&mut self) -> Result<Statement> {
        let Tok::Ident(word) = self.peek().clone() else {
            return Err(self.no_viable());
        };
        match word.as_str() {
            "select" => self.select().map(Statement::Select),
            "insert" => self.insert().map(Statement::Insert),
            "update" => self.update().map(Statement::Update),
            "delete" => self.delete().map(Statement::Delete),
            "begin" => self.batch().map(Statement::Batch),
            "use" => {
                self.pos += 1;
                self.ident().map(Statement::Use)
            }
            "create" => self.create(),
            "alter" => self.alter(),
            "drop" => self.drop_statement(),
            "truncate" => self.truncate(),
            "describe" | "desc" => self.describe(),
            "grant" | "revoke" => {
                self.pos += 1;
                self.grant_or_revoke(word == "grant")
            }
            "list" => {
                self.pos += 1;
                self.list()
            }
            _ => Err(self.no_viable()),
        }
    }
}
