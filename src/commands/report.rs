//! `gpassk report <run dir> [--format F] [--out FILE]`: one output format of a run.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::report::{self, Format};
use crate::rundir::RunDir;
use crate::scoring::load_run;
use crate::util::write_atomic;
use clap::builder::TypedValueParser;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpassk report results/<run>\n  gpassk report results/<run> --format html --out report.html\n  gpassk report results/<run> --format csv > metrics.csv"
)]
pub struct ReportArgs {
    /// The run directory (holding manifest.json and checkpoints/).
    pub run_dir: PathBuf,
    /// table (terminal), csv (metrics.csv), per-problem (per_problem.csv), json (metrics.json),
    /// md (report.md) or html (report.html).
    #[arg(long, default_value = "table", value_parser = format_parser())]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// With `--format table`: every metric with its exact interval bounds, whatever the width.
    #[arg(long)]
    pub wide: bool,
}

fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    clap::builder::PossibleValuesParser::new(Format::NAMES)
        .map(|name: String| Format::from_name(&name).expect("a listed name"))
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitStatus> {
    if let Some(out) = &args.out {
        check_out(&args.run_dir, out)?;
    }
    let results =
        load_run(&RunDir::at(&args.run_dir), &super::stderr_notes()).map_err(bad_input)?;
    let bytes = match args.format {
        Format::Table => {
            let width = crate::util::terminal_width();
            let text = report::terminal_table(&results, args.wide);
            let text = text + &report::failures_block(&results, width);
            // INCOMPLETE stands out on a terminal (never in a file written with --out).
            let paint = match args.out {
                Some(_) => crate::util::Paint::off(),
                None => super::stdout_paint(),
            };
            paint.marks(&text).into_bytes()
        }
        f => f.exporter().export(&results)?,
    };
    match &args.out {
        Some(path) => write_atomic(path, &bytes)
            .map_err(|e| BadInput::new(format!("--out {}: cannot write: {e}", path.display())))?,
        None => crate::util::write_stdout(&bytes)?,
    }
    Ok(ExitStatus::Success)
}

/// Refuses an `--out` inside the run directory other than one of its report files: the manifest,
/// checkpoints, judge verdicts and lock are the run's data, not output.
fn check_out(run_dir: &Path, out: &Path) -> Result<(), BadInput> {
    let Ok(run) = run_dir.canonicalize() else {
        return Ok(()); // loading the run reports a missing directory
    };
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let resolved = out.canonicalize().ok().or_else(|| {
        let dir = parent.unwrap_or(Path::new(".")).canonicalize().ok()?;
        Some(dir.join(out.file_name()?))
    });
    let Some(rel) = resolved.as_deref().and_then(|p| p.strip_prefix(&run).ok()) else {
        return Ok(());
    };
    let report_file = Format::ALL
        .iter()
        .any(|f| rel == Path::new(f.exporter().file_name()));
    if report_file {
        return Ok(());
    }
    Err(BadInput::new(format!(
        "--out {}: is inside run directory {} and would overwrite the run's own data; write the report elsewhere",
        out.display(),
        run_dir.display()
    )))
}
