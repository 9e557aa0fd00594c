//! The report generator: reads a run directory written by `varve stress` or
//! `varve bench` (docs/format/run-directory.md) and writes `report.md`,
//! `report.html` and `charts/*.svg`; or compares two runs side by side.
//!
//! Invariants: input files are untrusted, so every problem is an [`Error`]
//! naming the file (and line), never a panic; all text from files is escaped
//! before it goes into HTML, SVG or Markdown; no chart line has more than
//! [`MAX_POINTS_PER_LINE`] points. The charts are our own SVG, no plotting
//! crate. This crate depends on no other Varve crate: it reads files only.

pub mod charts;
pub mod compare;
pub mod cpu;
pub mod csv;
pub mod error;
pub mod load;
pub mod model;
pub mod output;
pub mod scale;
pub mod svg;
pub mod tables;

use std::path::Path;

pub use error::{Error, Result};
pub use load::load_run;
pub use model::{Event, IntervalRow, MemoryRow, OpStats, Phase, Run, ServerRow, Summary};
pub use output::{ChartFile, Rendered};
pub use scale::MAX_POINTS_PER_LINE;

/// File stem of a single-run report (`report.md`, `report.html`).
pub const REPORT_STEM: &str = "report";
/// File stem of a comparison (`compare.md`, `compare.html`), so comparing
/// into a run directory does not overwrite that run's own report.
pub const COMPARE_STEM: &str = "compare";

/// Renders the report of a loaded run into `out_dir`, or into the run's
/// directory when `out_dir` is `None`.
pub fn render(run: &Run, out_dir: Option<&Path>) -> Result<Rendered> {
    let doc = output::Document {
        stem: REPORT_STEM,
        title: format!("Varve report: {} ({})", run.label(), run.dir_name()),
        metadata: tables::metadata(run),
        tables: tables::phase_tables(run)
            .into_iter()
            .chain(tables::memory_table(run))
            .collect(),
        charts: charts::run_charts(run),
    };
    output::write(&doc, out_dir.unwrap_or(&run.dir))
}

/// Loads the run in `dir` and renders it (into `dir` when `out_dir` is `None`).
pub fn render_dir(dir: &Path, out_dir: Option<&Path>) -> Result<Rendered> {
    render(&load_run(dir)?, out_dir)
}

/// Compares two loaded runs (B relative to A) into `out_dir`.
pub fn compare_runs(a: &Run, b: &Run, out_dir: &Path) -> Result<Rendered> {
    let (la, lb) = compare::labels(a, b);
    let doc = output::Document {
        stem: COMPARE_STEM,
        title: format!("Varve comparison: {la} vs {lb}"),
        metadata: compare::compare_metadata(a, b),
        tables: compare::compare_tables(a, b),
        charts: charts::compare_charts(a, &la, b, &lb),
    };
    output::write(&doc, out_dir)
}

/// `varve report A B`: loads both runs and compares them into `out_dir`.
pub fn compare(a_dir: &Path, b_dir: &Path, out_dir: &Path) -> Result<Rendered> {
    compare_runs(&load_run(a_dir)?, &load_run(b_dir)?, out_dir)
}
