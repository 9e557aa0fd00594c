//! JSON text to a tree that keeps what Cassandra's parser (Jackson) sees:
//! an integer is an `Integer`, a `Long` or a `BigInteger` by its size, any
//! number with a point or an exponent is a `Double`; object members keep
//! their order, and a repeated key keeps its first place with its last
//! value. As Jackson's `readValue`, one value is read and anything after it
//! is ignored.

use num_bigint::BigInt;
use varve_types::literal::java_double_to_string;

/// Deepest nesting of arrays and objects read; deeper text is refused
/// before the parser's recursion could exhaust the stack (Jackson's
/// default maximum since 2.15).
pub const JSON_NESTING_DEPTH_MAX: usize = 1000;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    BigInteger(BigInt),
    Double(f64),
    Str(String),
    List(Vec<Json>),
    Map(Vec<(String, Json)>),
}

impl Json {
    /// The Java class Jackson gives this value (named in Cassandra's errors).
    pub fn class_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "Boolean",
            Json::Int(_) => "Integer",
            Json::Long(_) => "Long",
            Json::BigInteger(_) => "BigInteger",
            Json::Double(_) => "Double",
            Json::Str(_) => "String",
            Json::List(_) => "ArrayList",
            Json::Map(_) => "LinkedHashMap",
        }
    }

    /// `String.valueOf` of the Java object: `{a=1}`, `[1, a]`, `1.0E10`.
    pub fn java_text(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Int(n) => n.to_string(),
            Json::Long(n) => n.to_string(),
            Json::BigInteger(n) => n.to_string(),
            Json::Double(d) => java_double_to_string(*d),
            Json::Str(s) => s.clone(),
            Json::List(items) => {
                let parts: Vec<String> = items.iter().map(Json::java_text).collect();
                format!("[{}]", parts.join(", "))
            }
            Json::Map(entries) => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.java_text()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }
}

/// Parses the first JSON value of `text`; the error says what was wrong
/// and where.
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    if p.pos == p.s.len() {
        return Err("No content to map due to end-of-input".into());
    }
    p.value()
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while matches!(self.s.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn error(&self, what: &str) -> String {
        format!("{what} (at character {})", self.pos + 1)
    }

    fn unexpected(&self) -> String {
        match self.s.get(self.pos) {
            None => self.error("Unexpected end-of-input"),
            Some(&c) => {
                let shown = String::from_utf8_lossy(&self.s[self.pos..]);
                let c = shown.chars().next().unwrap_or(c as char);
                self.error(&format!("Unexpected character ('{c}')"))
            }
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.skip_ws();
        match self.s.get(self.pos) {
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => self.string().map(Json::Str),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.word(),
            None => Err(self.unexpected()),
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Result<Json, String>) -> Result<Json, String> {
        if self.depth == JSON_NESTING_DEPTH_MAX {
            return Err(self.error(&format!(
                "Document nesting depth exceeds the maximum allowed ({JSON_NESTING_DEPTH_MAX})"
            )));
        }
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn word(&mut self) -> Result<Json, String> {
        for (w, v) in [
            ("true", Json::Bool(true)),
            ("false", Json::Bool(false)),
            ("null", Json::Null),
        ] {
            if self.s[self.pos..].starts_with(w.as_bytes()) {
                let end = self.pos + w.len();
                if !self.s.get(end).is_some_and(|c| c.is_ascii_alphanumeric()) {
                    self.pos = end;
                    return Ok(v);
                }
            }
        }
        let token: String = String::from_utf8_lossy(&self.s[self.pos..])
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if token.is_empty() {
            return Err(self.unexpected());
        }
        Err(self.error(&format!(
            "Unrecognized token '{token}': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
        )))
    }

    fn array(&mut self) -> Result<Json, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Json::List(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::List(items));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn object(&mut self) -> Result<Json, String> {
        self.pos += 1;
        let mut entries: Vec<(String, Json)> = Vec::new();
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Json::Map(entries));
        }
        loop {
            self.skip_ws();
            if self.s.get(self.pos) != Some(&b'"') {
                return Err(format!(
                    "{}: was expecting double-quote to start field name",
                    self.unexpected()
                ));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.s.get(self.pos) != Some(&b':') {
                return Err(format!(
                    "{}: was expecting a colon to separate field name and value",
                    self.unexpected()
                ));
            }
            self.pos += 1;
            let value = self.value()?;
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key, value)),
            }
            self.skip_ws();
            match self.s.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Map(entries));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return Err(self.error("Unexpected end-of-input in a String value"));
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => self.escape(&mut out)?,
                c if c < 0x20 => {
                    return Err(self.error(&format!(
                        "Illegal unquoted character (CTRL-CHAR, code {c}): has to be escaped using backslash to be included in string value"
                    )))
                }
                c => out.push(c),
            }
        }
        // The input is a Rust string and escapes add whole characters.
        String::from_utf8(out).map_err(|_| self.error("Invalid UTF-8 in a String value"))
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let Some(&e) = self.s.get(self.pos) else {
            return Err(self.error("Unexpected end-of-input in character escape sequence"));
        };
        self.pos += 1;
        let c = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            other => {
                return Err(self.error(&format!(
                    "Unrecognized character escape '{}'",
                    other as char
                )))
            }
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .s
            .get(self.pos..self.pos + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                self.error("Unexpected character in a \\u escape: expected a hex-digit")
            })?;
        self.pos += 4;
        u32::from_str_radix(digits, 16).map_err(|e| e.to_string())
    }

    /// `\uXXXX`, with a surrogate pair read as one character.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let high = self.hex4()?;
        if (0xD800..0xDC00).contains(&high) && self.s[self.pos..].starts_with(b"\\u") {
            self.pos += 2;
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return char::from_u32(c).ok_or_else(|| self.error("Invalid surrogate pair"));
            }
        }
        char::from_u32(high).ok_or_else(|| self.error("Unpaired surrogate in a \\u escape"))
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.s.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits(self);
        if n == 0 {
            return Err(self.error("Unexpected character: expected digit for a number"));
        }
        if n > 1 && self.s[int_start] == b'0' {
            return Err(self.error("Invalid numeric value: Leading zeroes not allowed"));
        }
        let mut floating = false;
        if self.s.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            floating = true;
            if digits(self) == 0 {
                return Err(
                    self.error("Unexpected character: Decimal point not followed by a digit")
                );
            }
        }
        if matches!(self.s.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            floating = true;
            if matches!(self.s.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(
                    self.error("Unexpected character: Exponent indicator not followed by a digit")
                );
            }
        }
        // Only ASCII digits, signs, points and exponents were consumed.
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("0");
        if floating {
            return text
                .parse::<f64>()
                .map(Json::Double)
                .map_err(|e| self.error(&e.to_string()));
        }
        if let Ok(n) = text.parse::<i32>() {
            return Ok(Json::Int(n));
        }
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Json::Long(n));
        }
        text.parse::<BigInt>()
            .map(Json::BigInteger)
            .map_err(|e| self.error(&e.to_string()))
    }
}
