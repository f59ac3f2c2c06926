//! `gpassk plan --from RUN --detect D`: the arguments and the printing of
//! [`crate::analysis::planner`], and the exit status (1 when no design within the dataset reaches
//! the power).

use super::MetricFilter;
use crate::analysis::planner::{plan, render, Request};
use crate::error::{BadInput, ExitStatus};
use crate::report::TableFormat;
use crate::rundir::RunDir;
use crate::scoring::load_scored;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk plan --from results/<run> --detect 5\n  gpassk plan --from results/<run> --detect 3 --power 0.9 --metric G-Pass@16_1.0\n  gpassk plan --from results/<run> --detect 5 --format json\n\nExit status: 0 with a design that reaches the power within the dataset's problems, 1 without one, 2 on bad input."
)]
pub struct PlanArgs {
    /// A scored run directory to plan from: its counts, prices and tested family.
    #[arg(long, value_name = "RUN")]
    pub from: PathBuf,
    /// The change to detect, in percentage points (0 < D < 100).
    #[arg(long, value_name = "D")]
    pub detect: f64,
    /// The power wanted: the chance that compare flags a change of D (0 < P < 1).
    #[arg(long, value_name = "P", default_value_t = crate::stats::power::POWER)]
    pub power: f64,
    /// Plan for this model only (default: every model of the run).
    #[arg(long)]
    pub model: Option<String>,
    /// The problems a design may use (default: the run's dataset).
    #[arg(long, value_name = "N")]
    pub max_problems: Option<usize>,
    /// table (text) or json.
    #[arg(long, value_enum, default_value = "table")]
    pub format: PlanFormat,
    /// Plan for these metrics of the tested family only (Holm still counts the whole family).
    #[command(flatten)]
    pub filter: MetricFilter,
}

/// `--format` of `plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    Table,
    Json,
}

pub fn run(args: PlanArgs) -> Result<ExitStatus> {
    if !(args.detect.is_finite() && args.detect > 0.0 && args.detect < 100.0) {
        return Err(BadInput(format!(
            "--detect {}: give the change in percentage points, above 0 and below 100",
            args.detect
        ))
        .into());
    }
    if !(args.power.is_finite() && args.power > 0.0 && args.power < 1.0) {
        return Err(BadInput(format!(
            "--power {}: give a probability above 0 and below 1 (e.g. 0.8)",
            args.power
        ))
        .into());
    }
    if args.max_problems == Some(0) {
        return Err(BadInput("--max-problems 0: give at least one problem".into()).into());
    }
    let dir = RunDir::at(&args.from);
    let notes = super::stderr_notes();
    let results = load_scored(&dir, &notes)?;
    // The dataset's problems as the run recorded them, never fewer than it scored.
    let scored = (results.models.iter())
        .map(|m| m.problems.len())
        .max()
        .unwrap_or(0);
    let recorded = results.manifest.as_ref().map_or(0, |m| m.dataset.problems);
    let available = args.max_problems.unwrap_or(recorded.max(scored));
    let request = Request {
        change: args.detect / 100.0,
        power: args.power,
        available,
        model: args.model.clone(),
    };
    let family = results.tested_family();
    if !args.filter.metric.is_empty() && !family.iter().any(|m| args.filter.keeps(m)) {
        return Err(BadInput(format!(
            "--metric {}: not in the tested family ({}); compare never flags other metrics",
            args.filter.metric.join(","),
            family
                .iter()
                .map(crate::report::metric_label)
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    let plans = plan(&results, &request, &|m| args.filter.keeps(m))?;
    let format = match args.format {
        PlanFormat::Table => TableFormat::Table,
        PlanFormat::Json => TableFormat::Json,
    };
    print!("{}", render(&plans, &request, format)?);
    Ok(if plans.iter().all(|p| p.recommended.is_some()) {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
