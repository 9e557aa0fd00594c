//! `varve report RUN [RUN_B]`: renders a run directory (docs/format/run-directory.md) as a
//! Markdown summary, an HTML page and SVG charts; with two runs, sets them side by side
//! (ratios B/A). The work is done by `varve-report`; this module only parses the command line.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Flags of `varve report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run directory to render (written by `varve stress --out` or `varve bench`).
    pub run: PathBuf,
    /// A second run: compare RUN (A) with this one (B), e.g. Varve against Cassandra.
    pub other: Option<PathBuf>,
    /// Where to write the report (default: the first run directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let rendered = match &args.other {
        None => varve_report::render_dir(&args.run, args.out.as_deref())
            .with_context(|| format!("rendering {}", args.run.display()))?,
        Some(other) => {
            let out = args.out.clone().unwrap_or_else(|| args.run.clone());
            varve_report::compare(&args.run, other, &out).with_context(|| {
                format!("comparing {} with {}", args.run.display(), other.display())
            })?
        }
    };
    println!("{}", rendered.markdown.display());
    println!("{}", rendered.html.display());
    Ok(())
}
