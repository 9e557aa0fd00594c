//! The CQL lexer: text to tokens, pulled one at a time so that a statement
//! the parser gives up on early (an unsupported one) never has its tail
//! lexed.
//!
//! Rules follow Cassandra's `Lexer.g`: unquoted identifiers are
//! `[a-zA-Z][a-zA-Z0-9_]*` and lower-cased; quoted identifiers keep case
//! and escape `"` as `""`; strings are `'...'` (escape `''`) or `$$...$$`;
//! numbers, uuids, blobs and durations are scanned in `literal.rs`.
//! Keywords are not tokens of their own: the parser matches them against
//! lower-cased identifiers, which is what makes unreserved keywords usable
//! as names.

mod literal;
#[cfg(test)]
mod tests;

use crate::error::{ParseError, ParseErrorKind};

/// Punctuation and operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Punct {
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Dot,
    /// `..`, between the bounds of a collection slice (`m['a'..'c']`).
    Range,
    Star,
    /// `/`, division.
    Slash,
    /// `%`, remainder.
    Percent,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    PlusEq,
    MinusEq,
    Colon,
    Question,
}

impl Punct {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Punct::LParen => "(",
            Punct::RParen => ")",
            Punct::LBracket => "[",
            Punct::RBracket => "]",
            Punct::LBrace => "{",
            Punct::RBrace => "}",
            Punct::Comma => ",",
            Punct::Semi => ";",
            Punct::Dot => ".",
            Punct::Range => "..",
            Punct::Star => "*",
            Punct::Slash => "/",
            Punct::Percent => "%",
            Punct::Eq => "=",
            Punct::Ne => "!=",
            Punct::Lt => "<",
            Punct::Le => "<=",
            Punct::Gt => ">",
            Punct::Ge => ">=",
            Punct::Plus => "+",
            Punct::Minus => "-",
            Punct::PlusEq => "+=",
            Punct::MinusEq => "-=",
            Punct::Colon => ":",
            Punct::Question => "?",
        }
    }
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// Unquoted identifier or keyword, lower-cased.
    Ident(String),
    /// `"..."`, case kept, `""` unescaped.
    QuotedIdent(String),
    Str(String),
    Integer(String),
    Float(String),
    Uuid([u8; 16]),
    Blob(Vec<u8>),
    Duration(String),
    Punct(Punct),
    /// The lexer failed here; the error is kept by the [`Lexer`].
    Error,
    Eof,
}

/// A token with its position in the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    /// Byte range in the source text.
    pub start: usize,
    pub end: usize,
    /// 1-based line.
    pub line: usize,
    /// 0-based column in characters.
    pub column: usize,
}

/// Pull lexer over one query text.
pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    column: usize,
    error: Option<ParseError>,
}

pub(crate) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Lexer {
            text,
            pos: 0,
            line: 1,
            column: 0,
            error: None,
        }
    }

    /// The error behind a [`Tok::Error`] token.
    pub(crate) fn error(&self) -> Option<&ParseError> {
        self.error.as_ref()
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_char_at(&self, n: usize) -> Option<char> {
        self.rest().chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 0;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn bump_n(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }

    fn fail(&mut self, kind: ParseErrorKind, message: String, line: usize, column: usize) -> Tok {
        self.error = Some(ParseError::new(kind, message, line, column));
        Tok::Error
    }

    /// Skips whitespace and comments. Returns an error token for an
    /// unterminated block comment.
    fn skip_trivia(&mut self) -> Option<Tok> {
        loop {
            let rest = self.rest();
            if rest.starts_with("--") || rest.starts_with("//") {
                while let Some(c) = self.peek_char() {
                    if c == '\n' {
                        break;
                    }
                    self.bump();
                }
            } else if rest.starts_with("/*") {
                let (line, column) = (self.line, self.column);
                self.bump_n(2);
                loop {
                    if self.rest().starts_with("*/") {
                        self.bump_n(2);
                        break;
                    }
                    if self.bump().is_none() {
                        let msg = "unterminated comment: missing '*/'".to_string();
                        return Some(self.fail(ParseErrorKind::Syntax, msg, line, column));
                    }
                }
            } else if self.peek_char().is_some_and(char::is_whitespace) {
                self.bump();
            } else {
                return None;
            }
        }
    }

    /// The next token. After an error token every call returns it again.
    pub(crate) fn next_token(&mut self) -> Token {
        if self.error.is_some() {
            return self.token_here(Tok::Error);
        }
        if let Some(tok) = self.skip_trivia() {
            return self.token_here(tok);
        }
        let (start, line, column) = (self.pos, self.line, self.column);
        let tok = self.scan();
        Token {
            tok,
            start,
            end: self.pos,
            line,
            column,
        }
    }

    fn token_here(&self, tok: Tok) -> Token {
        Token {
            tok,
            start: self.pos,
            end: self.pos,
            line: self.line,
            column: self.column,
        }
    }

    fn scan(&mut self) -> Tok {
        let Some(c) = self.peek_char() else {
            return Tok::Eof;
        };
        if let Some(tok) = self.scan_literal() {
            return tok;
        }
        match c {
            'a'..='z' | 'A'..='Z' => {
                let start = self.pos;
                while self.peek_char().is_some_and(is_ident_char) {
                    self.bump();
                }
                Tok::Ident(self.text[start..self.pos].to_ascii_lowercase())
            }
            '"' => self.scan_quoted('"'),
            '\'' => self.scan_quoted('\''),
            '$' if self.rest().starts_with("$$") => self.scan_dollar_string(),
            _ => self.scan_punct(c),
        }
    }

    /// `"..."` or `'...'` with the quote doubled as its own escape.
    fn scan_quoted(&mut self, quote: char) -> Tok {
        let (line, column) = (self.line, self.column);
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None => {
                    let msg = format!("mismatched character '<EOF>' expecting '{quote}'");
                    return self.fail(ParseErrorKind::Syntax, msg, line, column);
                }
                Some(c) if c == quote => {
                    if self.peek_char() == Some(quote) {
                        self.bump();
                        out.push(quote);
                    } else {
                        break;
                    }
                }
                Some(c) => out.push(c),
            }
        }
        if quote == '\'' {
            Tok::Str(out)
        } else if out.is_empty() {
            self.fail(
                ParseErrorKind::Syntax,
                "empty quoted identifier \"\"".into(),
                line,
                column,
            )
        } else {
            Tok::QuotedIdent(out)
        }
    }

    fn scan_dollar_string(&mut self) -> Tok {
        let (line, column) = (self.line, self.column);
        self.bump_n(2);
        let start = self.pos;
        match self.rest().find("$$") {
            Some(len) => {
                let body = self.text[start..start + len].to_string();
                let chars = body.chars().count();
                self.bump_n(chars + 2);
                Tok::Str(body)
            }
            None => {
                let msg = "mismatched character '<EOF>' expecting '$$'".to_string();
                self.fail(ParseErrorKind::Syntax, msg, line, column)
            }
        }
    }

    fn scan_punct(&mut self, c: char) -> Tok {
        let next = self.peek_char_at(1);
        let (p, len) = match (c, next) {
            ('<', Some('=')) => (Punct::Le, 2),
            ('>', Some('=')) => (Punct::Ge, 2),
            ('!', Some('=')) => (Punct::Ne, 2),
            ('+', Some('=')) => (Punct::PlusEq, 2),
            ('-', Some('=')) => (Punct::MinusEq, 2),
            ('(', _) => (Punct::LParen, 1),
            (')', _) => (Punct::RParen, 1),
            ('[', _) => (Punct::LBracket, 1),
            (']', _) => (Punct::RBracket, 1),
            ('{', _) => (Punct::LBrace, 1),
            ('}', _) => (Punct::RBrace, 1),
            (',', _) => (Punct::Comma, 1),
            (';', _) => (Punct::Semi, 1),
            ('.', Some('.')) => (Punct::Range, 2),
            ('.', _) => (Punct::Dot, 1),
            ('*', _) => (Punct::Star, 1),
            ('/', _) => (Punct::Slash, 1),
            ('%', _) => (Punct::Percent, 1),
            ('=', _) => (Punct::Eq, 1),
            ('<', _) => (Punct::Lt, 1),
            ('>', _) => (Punct::Gt, 1),
            ('+', _) => (Punct::Plus, 1),
            ('-', _) => (Punct::Minus, 1),
            (':', _) => (Punct::Colon, 1),
            ('?', _) => (Punct::Question, 1),
            _ => {
                let (line, column) = (self.line, self.column);
                let msg = format!("token recognition error at: '{}'", c.escape_default());
                return self.fail(ParseErrorKind::Syntax, msg, line, column);
            }
        };
        self.bump_n(len);
        Tok::Punct(p)
    }
}
