//! `gpassk report <run dir> [--format F] [--out FILE]`: one output format of a run.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::report::Format;
use crate::scoring::load_run;
use crate::util::write_atomic;
use std::path::PathBuf;

/// The formats `--format` offers (the report layer's [`Format`], without clap in the library).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Terminal table: per k, a row per model, percentages with 95% CIs.
    Table,
    /// metrics.csv: one tidy row per model × dataset × subset × metric × k × τ.
    Csv,
    /// per_problem.csv: one row per model × problem.
    PerProblem,
    /// metrics.json: the tidy rows, exact fractions, per-model counts and the manifest.
    Json,
    /// report.md: a Markdown write-up.
    Md,
    /// report.html: one self-contained page with inline SVG plots.
    Html,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Csv => Format::Csv,
            FormatArg::PerProblem => Format::PerProblem,
            FormatArg::Json => Format::Json,
            FormatArg::Md => Format::Md,
            FormatArg::Html => Format::Html,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run directory (holding manifest.json and checkpoints/).
    pub run_dir: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Write to this file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitStatus> {
    let results = load_run(&args.run_dir).map_err(bad_input)?;
    let bytes = Format::from(args.format).exporter().export(&results)?;
    match &args.out {
        Some(path) => write_atomic(path, &bytes)
            .map_err(|e| BadInput::new(format!("--out {}: cannot write: {e}", path.display())))?,
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&bytes)?;
        }
    }
    Ok(ExitStatus::Success)
}
