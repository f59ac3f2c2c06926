//! `gpassk audit`: the arguments and the printing of [`crate::analysis::audit`] (what the verdicts
//! rest on, sources and warnings, before the table), and the exit status (`--fail-outside`).

use super::{MetricFilter, OutFormat};
use crate::analysis::audit::{AuditInput, AuditReport};
use crate::analysis::published::{default_sources, read_sources};
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::report::{wrap, TableFormat};
use crate::rundir::RunDir;
use crate::scoring::load_run;
use crate::util::terminal_width;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk audit results/<run> --benchmark AIME2025   (the shipped sources: paper, README, leaderboard)\n  gpassk audit results/<run> --published datasets/published/gpassk_paper_v5.csv\n  gpassk audit results/<run> --published table.csv --benchmark LiveMathBench-202412 --model-map qwen7b=Qwen2.5-7B-Instruct"
)]
pub struct AuditArgs {
    /// The run directory to audit.
    pub run_dir: PathBuf,
    /// A published source, repeatable: a CSV (`source,benchmark,model,metric,value`, percent), a
    /// README's Markdown tables (.md) or a leaderboard results.json. Default: the shipped paper
    /// tables, GPassK README and leaderboard (datasets/published/).
    #[arg(long, value_name = "FILE")]
    pub published: Vec<PathBuf>,
    /// The benchmark name in that table (guessed from the dataset name when omitted).
    #[arg(long)]
    pub benchmark: Option<String>,
    /// Map a run model name to a published model name: `run=published` (repeatable).
    #[arg(
        long = "model-map",
        value_name = "RUN=PUBLISHED",
        value_delimiter = ','
    )]
    pub model_map: Vec<String>,
    /// table (fits the terminal), md (to paste into a PR), json or csv (raw values).
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutFormat,
    #[command(flatten)]
    pub filter: MetricFilter,
    /// Exit 1 when any shown value is outside its interval (for CI).
    #[arg(long)]
    pub fail_outside: bool,
}

pub fn run(args: AuditArgs) -> Result<ExitStatus> {
    let paths = if args.published.is_empty() {
        default_sources()
    } else {
        args.published.clone()
    };
    let published = read_sources(&paths).map_err(bad_input)?;
    let map = parse_model_map(&args.model_map)?;
    let results =
        load_run(&RunDir::at(&args.run_dir), &super::stderr_notes()).map_err(bad_input)?;
    let input = AuditInput {
        run_dir: &args.run_dir,
        results: &results,
        published: &published,
        benchmark: args.benchmark.as_deref(),
        map: &map,
    };
    let report = input.report(|m| args.filter.keeps(m), args.format.into())?;
    print_report(&report, TableFormat::from(args.format).is_human());
    if args.fail_outside && report.outside > 0 {
        eprintln!(
            "--fail-outside: {} of {} values outside their intervals",
            report.outside, report.shown
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}

/// What the verdicts rest on (sources, warnings, contested values), then the table and its notes;
/// machine formats keep stdout to the table.
fn print_report(report: &AuditReport, human: bool) {
    let width = terminal_width();
    let lines =
        |ls: &[String]| -> String { ls.iter().map(|l| wrap(l, width, "  ") + "\n").collect() };
    let before = [
        wrap(&report.title, width, "") + "\n",
        lines(&report.sources),
        lines(&report.warnings),
        lines(&report.contested),
    ];
    if human {
        print!("{}{}{}", before.concat(), report.body, lines(&report.notes));
    } else {
        eprint!("{}", before[2..].concat());
        print!("{}", report.body);
        eprint!("{}", lines(&report.notes));
    }
}

fn parse_model_map(entries: &[String]) -> Result<Vec<(String, String)>> {
    let mut map = Vec::new();
    for entry in entries {
        let (r, p) = entry.split_once('=').ok_or_else(|| {
            BadInput(format!(
                "--model-map {entry:?}: expected RUN=PUBLISHED, e.g. qwen7b=Qwen2.5-7B-Instruct"
            ))
        })?;
        map.push((r.trim().to_string(), p.trim().to_string()));
    }
    Ok(map)
}
