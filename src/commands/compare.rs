//! `gpassk compare <run A> <run B>`: the arguments and the printing of
//! [`crate::analysis::compare`], and the exit status (`--fail-on-regression`, `--fail-on-drift`).

use super::{MetricFilter, OutFormat};
use crate::analysis::compare::{
    check_dataset, compare, drift_lines, folder_entry, nothing_compared, regressions, render,
    setting_differences, unmatched_models, verdicts, Comparison, Look,
};
use crate::analysis::history::{
    previous_run, sibling_run, stored_entry, stored_previous, RunEntry,
};
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::rundir::RunDir;
use crate::scoring::{load_run, RunResults};
use crate::util::printable;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk compare results/<old> results/<new>\n  gpassk compare results/<old> results/<new> --metric Pass@16,G-Pass@16_1.0 --format md\n  gpassk compare results/<old> results/<new> --fail-on-regression 5 --format json\n  gpassk compare --baseline previous results/<new> --fail-on-regression 5 --fail-on-drift\n  gpassk compare --db sqlite:results/gpassk.db --baseline previous <run id>"
)]
pub struct CompareArgs {
    /// The baseline run directory (with `--baseline`: the run to check); with --db, a run id.
    pub run_a: PathBuf,
    /// The run compared with it.
    #[arg(required_unless_present = "baseline")]
    pub run_b: Option<PathBuf>,
    /// `previous`: compare the one run given with the latest earlier run of the same config on
    /// the same dataset in its results folder (or the database; for cron). A run id: that run,
    /// beside the one given in its results folder (or in the database).
    #[arg(long, value_name = "previous|RUN_ID", conflicts_with = "run_b")]
    pub baseline: Option<String>,
    /// Read the runs from this results database (sqlite:PATH or postgres://USER@HOST/DB): the
    /// runs are given by id, and the A and B lines name them by id (a folder run by its path).
    #[arg(long)]
    pub db: Option<String>,
    #[command(flatten)]
    pub password: super::PasswordEnv,
    /// Exit 1 when the served model or system fingerprint of a model changed between the runs.
    #[arg(long)]
    pub fail_on_drift: bool,
    /// Exit 1 when a flagged drop (B below A) exceeds this many percentage points.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// table (fits the terminal), md (to paste into a PR), json or csv (raw fractions in [0, 1]).
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutFormat,
    /// Rows shown: Holm's correction always runs over the whole tested family (the headline
    /// metrics, the config's `metrics`, of every model), so a filter never changes a p-value or
    /// a flag; other rows are exploratory. --fail-on-regression checks the shown family rows.
    #[command(flatten)]
    pub filter: MetricFilter,
    /// Show the exploratory rows too (every other metric and k the runs computed, never
    /// flagged); by default the table holds the tested family, or what --metric/--k name.
    #[arg(long)]
    pub all: bool,
}

/// One of the two runs: its scored results, its entry for the drift check, and its name in
/// the output (the directory as given, or a stored run's id).
struct Side {
    results: RunResults,
    entry: RunEntry,
    name: String,
}

/// `--fail-on-regression` must be a number of percentage points ≥ 0.
fn check_threshold(args: &CompareArgs) -> Result<(), BadInput> {
    match args.fail_on_regression {
        Some(p) if !(p.is_finite() && p >= 0.0) => Err(BadInput(format!(
            "--fail-on-regression {p}: give a number of percentage points ≥ 0"
        ))),
        _ => Ok(()),
    }
}

pub fn run(args: CompareArgs) -> Result<ExitStatus> {
    check_threshold(&args)?;
    let [a, b] = match &args.db {
        None => folder_sides(&args)?,
        Some(db) => stored_sides(&args, &mut super::open_store(db, &args.password)?)?,
    };
    let names = [a.name.as_str(), b.name.as_str()];
    let (a_entry, b_entry) = (&a.entry, &b.entry);
    let (a, b) = (&a.results, &b.results);
    check_dataset(a, b)?;
    for note in unmatched_models(a, b, names) {
        eprintln!("{note}");
    }
    // The family is the config's, declared before the data: a filter narrows what is shown,
    // never the correction, so it cannot make a flag easier to get.
    let headline = b.tested_family();
    let in_family =
        |m: &crate::metrics::MetricKind| headline.iter().any(|h| h.identity() == m.identity());
    let compared = compare(a, b, &in_family);
    if compared.rows.is_empty() {
        return Err(nothing_compared(a, b, names).into());
    }
    let differences = setting_differences(a, b);
    for d in &differences {
        eprintln!("WARNING: the runs differ: {d}");
    }
    let format: crate::report::TableFormat = args.format.into();
    // People get the tested family unless they ask for more; machines every row.
    let whole = args.all || !args.filter.is_empty() || !format.is_human();
    let shown: Vec<&Comparison> = (compared.rows.iter())
        .filter(|c| args.filter.keeps(&c.kind) && (whole || c.in_family))
        .collect();
    if shown.is_empty() {
        return Err(BadInput(
            "--metric/--k: no compared metric matches (names as in the reports, e.g. Pass@16, G-Pass@16_0.5)".into(),
        )
        .into());
    }
    let drift = drift_lines([a_entry, b_entry], b);
    let (verdicts, shared_drift) = verdicts(a, b, &compared, &drift);
    let notes = notes_under(&shared_drift, &differences);
    let look = Look {
        width: crate::util::terminal_width(),
        paint: super::stdout_paint(),
        all: args.all,
        filtered: !args.filter.is_empty(),
    };
    print!(
        "{}",
        render(names, &compared, &verdicts, &shown, &notes, format, look)?
    );
    let drifted: Vec<String> = (shared_drift.into_iter())
        .chain((verdicts.iter()).flat_map(|v| v.drift.iter().map(|d| format!("{}: {d}", v.model))))
        .collect();
    exit_status(&args, &shown, &drifted)
}

/// The notes under the table: the drift every model shares, then how the runs' settings differ.
fn notes_under(shared_drift: &[String], differences: &[String]) -> Vec<String> {
    let mut notes = shared_drift.to_vec();
    notes.extend(
        differences
            .iter()
            .map(|d| format!("WARNING: the runs differ: {d}")),
    );
    if !differences.is_empty() {
        notes.push("differences may come from these settings".into());
    }
    notes
}

/// Exit 1 for a regression beyond `--fail-on-regression` or, with `--fail-on-drift`, a drift.
fn exit_status(args: &CompareArgs, shown: &[&Comparison], drift: &[String]) -> Result<ExitStatus> {
    let failed = args
        .fail_on_regression
        .map_or_else(Vec::new, |p| regressions(shown, p));
    let drifted = args.fail_on_drift && !drift.is_empty();
    if drifted {
        for d in drift {
            eprintln!("drift: {d}");
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

/// Runs A and B from folders: the two given, or with `--baseline` the baseline and the one given.
fn folder_sides(args: &CompareArgs) -> Result<[Side; 2]> {
    let (run_a, run_b) = match (&args.baseline, &args.run_b) {
        (None, Some(b)) => (args.run_a.clone(), b.clone()),
        (Some(baseline), None) => {
            let found = match baseline.as_str() {
                "previous" => previous_run(&args.run_a)?,
                id => sibling_run(&args.run_a, id)?,
            };
            let Some(prev) = found else {
                return Err(no_baseline(baseline, &args.run_a.display().to_string()).into());
            };
            eprintln!("baseline: {}", prev.display());
            (prev, args.run_a.clone())
        }
        _ => return Err(BadInput("give two runs, or one run with --baseline".into()).into()),
    };
    let side = |dir: PathBuf| -> Result<Side> {
        let results = load_run(&RunDir::at(&dir), &super::stderr_notes()).map_err(bad_input)?;
        Ok(Side {
            entry: folder_entry(&dir, &results)?,
            results,
            name: dir.display().to_string(),
        })
    };
    Ok([side(run_a)?, side(run_b)?])
}

/// Runs A and B from a results database, by id, read exactly as from their folders.
fn stored_sides(args: &CompareArgs, store: &mut crate::store::Store) -> Result<[Side; 2]> {
    let given = args.run_a.to_string_lossy().into_owned();
    let (id_a, id_b) = match (&args.baseline, &args.run_b) {
        (None, Some(b)) => (given, b.to_string_lossy().into_owned()),
        (Some(baseline), None) => {
            let found = match baseline.as_str() {
                "previous" => stored_previous(store, &given)?,
                id => Some(id.to_string()),
            };
            let Some(prev) = found else {
                return Err(no_baseline(baseline, &format!("{given} in {}", store.url())).into());
            };
            eprintln!("baseline: {}", printable(&prev));
            (prev, given)
        }
        _ => return Err(BadInput("give two runs, or one run with --baseline".into()).into()),
    };
    let mut side = |id: String| -> Result<Side> {
        let Some(entry) = stored_entry(store, &id)? else {
            return Err(BadInput(format!(
                "{}: no run `{}` (gpassk store ls lists them)",
                store.url(),
                printable(&id)
            ))
            .into());
        };
        let results = entry.stored.as_ref().map(|s| s.results.clone());
        Ok(Side {
            results: results.context("a stored entry holds its results")?,
            name: id,
            entry,
        })
    };
    Ok([side(id_a)?, side(id_b)?])
}

fn no_baseline(baseline: &str, beside: &str) -> BadInput {
    match baseline {
        "previous" => BadInput(format!(
            "--baseline previous: no earlier run of the same config on the same dataset beside {beside}"
        )),
        id => BadInput(format!(
            "--baseline {}: no run of that name beside {beside}",
            printable(id)
        )),
    }
}
