//! A small CSV reader for the run directory's series files.
//!
//! The writer never quotes, but a label may contain commas; so a field may be
//! double-quoted (`""` inside quotes is a quote), and a table may be read with
//! "the last column takes the rest of the line" (used for `events.csv`, whose
//! last column is a free-text label). Blank lines are skipped, `\r\n` is
//! accepted. Every error carries the file and the 1-based line number; no input
//! makes this module panic.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A parsed CSV file: the header and the data rows with their line numbers.
#[derive(Debug, Clone)]
pub struct CsvTable {
    file: PathBuf,
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

/// One data row, borrowed from its table, with typed accessors that report
/// errors at the row's line.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    table: &'a CsvTable,
    line: usize,
    fields: &'a [String],
}

impl CsvTable {
    /// Parses `text`. With `last_takes_rest`, a row with more fields than the
    /// header joins the surplus into the last column (commas kept).
    pub fn parse(file: &Path, text: &str, last_takes_rest: bool) -> Result<CsvTable> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut header: Option<Vec<String>> = None;
        let mut rows = Vec::new();
        for (index, raw) in text.split('\n').enumerate() {
            let line = index + 1;
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            if raw.trim().is_empty() {
                continue;
            }
            let fields = split_line(raw).map_err(|message| Error::Csv {
                file: file.to_path_buf(),
                line,
                message,
            })?;
            match &header {
                None => {
                    let names: Vec<String> = fields.iter().map(|f| f.trim().to_string()).collect();
                    header = Some(names);
                }
                Some(names) => {
                    let fields =
                        fit_row(fields, names.len(), last_takes_rest).map_err(|message| {
                            Error::Csv {
                                file: file.to_path_buf(),
                                line,
                                message,
                            }
                        })?;
                    rows.push((line, fields));
                }
            }
        }
        let header = header.ok_or_else(|| Error::Csv {
            file: file.to_path_buf(),
            line: 1,
            message: "empty file: no header line".into(),
        })?;
        Ok(CsvTable {
            file: file.to_path_buf(),
            header,
            rows,
        })
    }

    /// The index of a column, if the header has it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The index of a column the format requires; an error at line 1 if absent.
    pub fn require(&self, name: &str) -> Result<usize> {
        self.column(name).ok_or_else(|| Error::Csv {
            file: self.file.clone(),
            line: 1,
            message: format!("missing column `{name}` in header"),
        })
    }

    pub fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |(line, fields)| Row {
            table: self,
            line: *line,
            fields,
        })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }
}

impl<'a> Row<'a> {
    pub fn line(&self) -> usize {
        self.line
    }

    fn error(&self, message: String) -> Error {
        Error::Csv {
            file: self.table.file.clone(),
            line: self.line,
            message,
        }
    }

    fn name(&self, index: usize) -> &str {
        self.table
            .header
            .get(index)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// The raw text of a field (empty if the row is short, which `parse` rules out).
    pub fn text(&self, index: usize) -> &'a str {
        self.fields.get(index).map(|s| s.trim()).unwrap_or("")
    }

    /// A required, finite number.
    pub fn f64(&self, index: usize) -> Result<f64> {
        self.opt_f64(index)?
            .ok_or_else(|| self.error(format!("column `{}` is empty", self.name(index))))
    }

    /// A finite number, or `None` if the field is empty.
    pub fn opt_f64(&self, index: usize) -> Result<Option<f64>> {
        let text = self.text(index);
        if text.is_empty() {
            return Ok(None);
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(self.error(format!(
                "column `{}`: `{}` is not a finite number",
                self.name(index),
                shorten(text)
            ))),
        }
    }

    /// An optional column: `None` if the header lacks it or the field is empty.
    pub fn maybe_f64(&self, index: Option<usize>) -> Result<Option<f64>> {
        match index {
            Some(i) => self.opt_f64(i),
            None => Ok(None),
        }
    }

    /// A required non-negative integer.
    pub fn u64(&self, index: usize) -> Result<u64> {
        let text = self.text(index);
        text.parse::<u64>().map_err(|_| {
            self.error(format!(
                "column `{}`: `{}` is not a non-negative integer",
                self.name(index),
                shorten(text)
            ))
        })
    }
}

/// Error messages quote at most this many characters of a bad field.
const QUOTED_FIELD_MAX_CHARS: usize = 40;

fn shorten(text: &str) -> String {
    if text.chars().count() <= QUOTED_FIELD_MAX_CHARS {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(QUOTED_FIELD_MAX_CHARS).collect();
        s.push('…');
        s
    }
}

fn fit_row(
    mut fields: Vec<String>,
    width: usize,
    last_takes_rest: bool,
) -> std::result::Result<Vec<String>, String> {
    if fields.len() == width {
        return Ok(fields);
    }
    if fields.len() > width && last_takes_rest && width > 0 {
        let rest = fields.split_off(width - 1).join(",");
        fields.push(rest);
        return Ok(fields);
    }
    Err(format!(
        "expected {width} fields as in the header, found {}",
        fields.len()
    ))
}

/// Splits one line into fields, honouring double quotes.
fn split_line(line: &str) -> std::result::Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if at_field_start && c == '"' {
            // Quoted field: read to the closing quote.
            loop {
                match chars.next() {
                    None => return Err("unterminated quoted field".into()),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(other) => field.push(other),
                }
            }
            match chars.next() {
                // End of line: the quoted field was the last one.
                None => break,
                Some(',') => {
                    fields.push(std::mem::take(&mut field));
                    continue;
                }
                Some(_) => return Err("text after a closing quote".into()),
            }
        }
        at_field_start = false;
        if c == ',' {
            fields.push(std::mem::take(&mut field));
            at_field_start = true;
        } else {
            field.push(c);
        }
    }
    fields.push(field);
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, rest: bool) -> Result<CsvTable> {
        CsvTable::parse(Path::new("x.csv"), text, rest)
    }

    #[test]
    fn splits_plain_and_quoted_fields() {
        assert_eq!(split_line("a,b,,c").unwrap(), vec!["a", "b", "", "c"]);
        assert_eq!(split_line("\"a,b\",c").unwrap(), vec!["a,b", "c"]);
        assert_eq!(
            split_line("\"say \"\"hi\"\"\"").unwrap(),
            vec!["say \"hi\""]
        );
        assert!(split_line("\"open").is_err());
        assert!(split_line("\"a\"b").is_err());
    }

    #[test]
    fn last_column_takes_the_rest() {
        let t = parse("t,label\n1.0,ALTER {'a': 1, 'b': 2}\n", true).unwrap();
        let row = t.rows().next().unwrap();
        assert_eq!(row.text(1), "ALTER {'a': 1, 'b': 2}");
        assert!(parse("t,label\n1.0,a,b\n", false).is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let t = parse("t,n\r\n\r\n1,2\n2,x\n", false).unwrap();
        let rows: Vec<_> = t.rows().collect();
        assert_eq!(rows[0].u64(1).unwrap(), 2);
        let err = rows[1].u64(1).unwrap_err().to_string();
        assert!(err.starts_with("x.csv:4:"), "{err}");
        let err = parse("t,n\n1\n", false).unwrap_err().to_string();
        assert!(err.contains("x.csv:2:"), "{err}");
        assert!(parse("", false).is_err());
        assert!(t
            .require("nope")
            .unwrap_err()
            .to_string()
            .contains("x.csv:1:"));
    }

    #[test]
    fn rejects_non_finite_numbers() {
        let t = parse("a\nNaN\ninf\n", false).unwrap();
        for row in t.rows() {
            assert!(row.f64(0).is_err());
        }
    }
}
