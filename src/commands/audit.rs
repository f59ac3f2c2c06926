//! `gpassk audit`: the arguments and the printing of [`crate::analysis::audit`], and the exit
//! status (`--fail-outside`).

use super::{MetricFilter, OutFormat};
use crate::analysis::audit::{read_published, AuditInput};
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
    after_help = "Examples:\n  gpassk audit results/<run> --published datasets/published/gpassk_paper_v5.csv\n  gpassk audit results/<run> --published table.csv --benchmark LiveMathBench-202412 --model-map qwen7b=Qwen2.5-7B-Instruct"
)]
pub struct AuditArgs {
    /// The run directory to audit.
    pub run_dir: PathBuf,
    /// The published table (`source,benchmark,model,metric,value`, values in percent).
    #[arg(long)]
    pub published: PathBuf,
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
    let published = read_published(&args.published)?;
    let map = parse_model_map(&args.model_map)?;
    let results =
        load_run(&RunDir::at(&args.run_dir), &super::stderr_notes()).map_err(bad_input)?;
    let input = AuditInput {
        run_dir: &args.run_dir,
        results: &results,
        published_path: &args.published,
        published: &published,
        benchmark: args.benchmark.as_deref(),
        map: &map,
    };
    let report = input.report(|m| args.filter.keeps(m), args.format.into())?;
    let width = terminal_width();
    if TableFormat::from(args.format).is_human() {
        println!("{}", wrap(&report.title, width, ""));
        print!("{}", report.body);
        for n in &report.notes {
            println!("{}", wrap(n, width, "  "));
        }
    } else {
        print!("{}", report.body);
        for n in &report.notes {
            eprintln!("{}", wrap(n, width, "  "));
        }
    }
    if args.fail_outside && report.outside > 0 {
        eprintln!(
            "--fail-outside: {} of {} values outside their intervals",
            report.outside, report.shown
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
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
