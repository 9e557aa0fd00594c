//! Writing a report: `*.md`, a self-contained `*.html` (inline CSS, SVGs
//! inlined, no external references) and `charts/*.svg`, plus [`Rendered`],
//! which lists what was written and what the HTML must contain so a browser
//! check can verify the page.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::svg::{escape, Chart};
use crate::tables::Table;

/// Where charts go, relative to the output directory.
pub const CHARTS_DIR: &str = "charts";

/// A report ready to be written.
pub struct Document<'a> {
    /// File stem: `report` or `compare`.
    pub stem: &'a str,
    pub title: String,
    pub metadata: Vec<(String, String)>,
    pub tables: Vec<Table>,
    pub charts: Vec<Chart>,
}

/// One chart written to disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartFile {
    /// Also the HTML element id, prefixed with `chart-`.
    pub id: String,
    pub title: String,
    pub path: PathBuf,
}

/// What [`crate::render`] or [`crate::compare`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub out_dir: PathBuf,
    pub markdown: PathBuf,
    pub html: PathBuf,
    pub charts: Vec<ChartFile>,
    /// Number of `<table>` elements in the HTML (metadata + one per phase).
    pub html_tables: usize,
}

impl Rendered {
    /// How many `<svg>` elements the HTML page must contain: one per chart.
    pub fn expected_svg_count(&self) -> usize {
        self.charts.len()
    }

    /// The element ids (`chart-<id>`) the HTML page must contain.
    pub fn expected_chart_ids(&self) -> Vec<String> {
        self.charts
            .iter()
            .map(|c| format!("chart-{}", c.id))
            .collect()
    }

    /// A textual check of the HTML against the expectations (counts of
    /// `<svg` and `<table` and the chart ids); a browser check should find
    /// the same numbers in the DOM.
    pub fn check_html(&self, html: &str) -> std::result::Result<(), String> {
        let svgs = html.matches("<svg").count();
        if svgs != self.expected_svg_count() {
            return Err(format!(
                "{svgs} <svg> elements, expected {}",
                self.expected_svg_count()
            ));
        }
        let tables = html.matches("<table").count();
        if tables != self.html_tables {
            return Err(format!(
                "{tables} <table> elements, expected {}",
                self.html_tables
            ));
        }
        for id in self.expected_chart_ids() {
            if !html.contains(&format!("id=\"{id}\"")) {
                return Err(format!("missing element id {id}"));
            }
        }
        Ok(())
    }
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Writes the document into `out_dir` (created if needed).
pub fn write(doc: &Document<'_>, out_dir: &Path) -> Result<Rendered> {
    let charts_dir = out_dir.join(CHARTS_DIR);
    std::fs::create_dir_all(&charts_dir).map_err(|e| Error::io(&charts_dir, e))?;
    let mut charts = Vec::new();
    let mut svgs = Vec::new();
    for chart in &doc.charts {
        let svg = chart.to_svg();
        let path = charts_dir.join(format!("{}.svg", chart.id));
        write_file(&path, &svg)?;
        charts.push(ChartFile {
            id: chart.id.clone(),
            title: chart.title.clone(),
            path,
        });
        svgs.push(svg);
    }
    let markdown = out_dir.join(format!("{}.md", doc.stem));
    write_file(&markdown, &to_markdown(doc))?;
    let html = out_dir.join(format!("{}.html", doc.stem));
    write_file(&html, &to_html(doc, &svgs))?;
    Ok(Rendered {
        out_dir: out_dir.to_path_buf(),
        markdown,
        html,
        charts,
        html_tables: 1 + doc.tables.len(),
    })
}

/// Makes text safe inside a Markdown table cell or paragraph.
pub fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            // `_` is left alone: GitHub does not emphasise inside words
            // (`cas_write`), and escaping it would clutter the raw file.
            '`' | '*' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn md_table(out: &mut String, table: &Table) {
    let _ = writeln!(out, "### {}\n", md_escape(&table.title));
    let header: Vec<String> = table.header.iter().map(|h| md_escape(h)).collect();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = (0..table.header.len())
        .map(|i| if i == 0 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for row in &table.rows {
        let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    for note in &table.notes {
        let _ = writeln!(out, "{}\n", md_escape(note));
    }
}

/// The Markdown report; charts are linked as images under `charts/`.
pub fn to_markdown(doc: &Document<'_>) -> String {
    let mut out = format!("# {}\n\n| | |\n|---|---|\n", md_escape(&doc.title));
    for (key, value) in &doc.metadata {
        let _ = writeln!(out, "| {} | {} |", md_escape(key), md_escape(value));
    }
    out.push_str("\n## Results\n\n");
    for table in &doc.tables {
        md_table(&mut out, table);
    }
    if !doc.charts.is_empty() {
        out.push_str("## Charts\n\n");
        for chart in &doc.charts {
            let title = md_escape(&chart.title);
            let _ = writeln!(
                out,
                "### {title}\n\n![{title}]({CHARTS_DIR}/{}.svg)\n",
                chart.id
            );
        }
    }
    out
}

const CSS: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1em}\
th,td{border:1px solid #ccc;padding:3px 8px}td.num{text-align:right;font-variant-numeric:tabular-nums}\
th{background:#f0f3f7}table.meta th{text-align:left}figure{margin:1em 0}\
figcaption{font-weight:bold;margin-bottom:4px}p.note{color:#555;font-size:90%}";

fn html_table(out: &mut String, table: &Table) {
    let _ = write!(
        out,
        "<h3>{}</h3>\n<table class=\"results\"><thead><tr>",
        escape(&table.title)
    );
    for h in &table.header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if i == 0 { "" } else { " class=\"num\"" };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    for note in &table.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
}

/// The HTML page; `svgs` are the charts' SVG documents, in `doc.charts` order.
pub fn to_html(doc: &Document<'_>, svgs: &[String]) -> String {
    let title = escape(&doc.title);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{CSS}</style></head><body>\n<h1>{title}</h1>\n<table class=\"meta\"><tbody>\n"
    );
    for (key, value) in &doc.metadata {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(key),
            escape(value)
        );
    }
    out.push_str("</tbody></table>\n<h2>Results</h2>\n");
    for table in &doc.tables {
        html_table(&mut out, table);
    }
    if !svgs.is_empty() {
        out.push_str("<h2>Charts</h2>\n");
    }
    for (chart, svg) in doc.charts.iter().zip(svgs) {
        let _ = write!(
            out,
            "<figure><figcaption>{}</figcaption>\n{svg}</figure>\n",
            escape(&chart.title)
        );
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_escaping() {
        assert_eq!(md_escape("a|b<script>"), "a\\|b&lt;script&gt;");
        assert_eq!(md_escape("x_y\nz*"), "x_y z\\*");
    }
}
