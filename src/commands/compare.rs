//! `gpassk compare <run A> <run B>`: the arguments and the printing of
//! [`crate::analysis::compare`], and the exit status (`--fail-on-regression`, `--fail-on-drift`).

use super::{MetricFilter, OutFormat};
use crate::analysis::compare::{
    check_dataset, compare, drift_lines, nothing_compared, regressions, render,
    setting_differences, unmatched_models, verdicts, Comparison,
};
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::rundir::RunDir;
use crate::scoring::load_run;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk compare results/<old> results/<new>\n  gpassk compare results/<old> results/<new> --metric Pass@16,G-Pass@16_1.0 --format md\n  gpassk compare results/<old> results/<new> --fail-on-regression 5 --format json\n  gpassk compare --baseline previous results/<new> --fail-on-regression 5 --fail-on-drift"
)]
pub struct CompareArgs {
    /// The baseline run directory (with `--baseline previous`: the run to check).
    pub run_a: PathBuf,
    /// The run compared with it.
    #[arg(required_unless_present = "baseline")]
    pub run_b: Option<PathBuf>,
    /// `previous`: compare the one run given with the latest earlier run of the same config on
    /// the same dataset in its results folder (for cron).
    #[arg(long, value_parser = ["previous"], conflicts_with = "run_b")]
    pub baseline: Option<String>,
    /// Exit 1 when the served model or system fingerprint of a model changed between the runs.
    #[arg(long)]
    pub fail_on_drift: bool,
    /// Exit 1 when a flagged drop (B below A) exceeds this many percentage points.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// table (fits the terminal), md (to paste into a PR), json or csv (raw fractions in [0, 1]).
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutFormat,
    /// Rows shown and tested: the tested family is the headline metrics (the config's `metrics`)
    /// that pass these filters, or the filtered rows when none of them is a headline metric;
    /// other shown rows are exploratory. --fail-on-regression checks the shown family rows.
    #[command(flatten)]
    pub filter: MetricFilter,
}

pub fn run(args: CompareArgs) -> Result<ExitStatus> {
    if let Some(p) = args.fail_on_regression {
        if !(p.is_finite() && p >= 0.0) {
            return Err(BadInput(format!(
                "--fail-on-regression {p}: give a number of percentage points ≥ 0"
            ))
            .into());
        }
    }
    let (run_a, run_b) = resolve_runs(&args)?;
    let runs = [run_a.as_path(), run_b.as_path()];
    let a = load_run(&RunDir::at(&run_a), &super::stderr_notes()).map_err(bad_input)?;
    let b = load_run(&RunDir::at(&run_b), &super::stderr_notes()).map_err(bad_input)?;
    check_dataset(&a, &b)?;
    for note in unmatched_models(&a, &b, runs) {
        eprintln!("{note}");
    }
    let headline = b.tested_family();
    let narrowed = headline.iter().any(|m| args.filter.keeps(m));
    let in_family = |m: &crate::metrics::MetricKind| {
        args.filter.keeps(m) && (!narrowed || headline.iter().any(|h| h.identity() == m.identity()))
    };
    let compared = compare(&a, &b, &in_family);
    if compared.rows.is_empty() {
        return Err(nothing_compared(&a, &b, runs).into());
    }
    let differences = setting_differences(&a, &b);
    for d in &differences {
        eprintln!("WARNING: the runs differ: {d}");
    }
    let shown: Vec<&Comparison> = compared
        .rows
        .iter()
        .filter(|c| args.filter.keeps(&c.kind))
        .collect();
    if shown.is_empty() {
        return Err(BadInput(
            "--metric/--k: no compared metric matches (names as in the reports, e.g. Pass@16, G-Pass@16_0.5)".into(),
        )
        .into());
    }
    let drift = drift_lines(runs, &a, &b)?;
    let verdicts = verdicts(&a, &b, &compared, &drift);
    print!(
        "{}",
        render(
            runs,
            &compared,
            &verdicts,
            &shown,
            &differences,
            args.format.into()
        )?
    );
    let failed = args
        .fail_on_regression
        .map_or_else(Vec::new, |p| regressions(&shown, p));
    let drifted = args.fail_on_drift && !drift.is_empty();
    if drifted {
        for (model, d) in &drift {
            eprintln!("drift: {model}: {d}");
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "regression beyond {} points in {} of the rows:\n{}",
            args.fail_on_regression.unwrap_or_default(),
            failed.len(),
            failed.join("\n")
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(if drifted {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Runs A and B: the two given, or with `--baseline previous` the previous comparable run and
/// the one given.
fn resolve_runs(args: &CompareArgs) -> Result<(PathBuf, PathBuf)> {
    match (&args.baseline, &args.run_b) {
        (None, Some(b)) => Ok((args.run_a.clone(), b.clone())),
        (Some(_), None) => match crate::analysis::history::previous_run(&args.run_a)? {
            Some(prev) => {
                eprintln!("baseline: {}", prev.display());
                Ok((prev, args.run_a.clone()))
            }
            None => Err(BadInput(format!(
                "--baseline previous: no earlier run of the same config on the same dataset \
                 beside {}",
                args.run_a.display()
            ))
            .into()),
        },
        _ => Err(BadInput("give two runs, or one run with --baseline previous".into()).into()),
    }
}
