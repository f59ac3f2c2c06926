//! `gpassk history <results dir>`: every run of each dataset in date order, per model and headline
//! metric with intervals, the difference from the run before with `compare`'s paired test, and
//! markers where the served model, fingerprint, settings or coverage changed.

use crate::analysis::compare::{compare, Compared};
use crate::analysis::history::{
    discover, drift, html_page, partial, setting_changes, Point, RunEntry, Series, Trend,
};
use crate::error::{BadInput, ExitStatus};
use crate::metrics::MetricKind;
use crate::report::{metric_label, wrap, Cell, TableFormat, Tabular};
use crate::rundir::RunDir;
use crate::scoring::{load_run, RunResults};
use crate::util::printable;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// `--format` of `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    Table,
    Md,
    Html,
    Csv,
    Json,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk history results\n  gpassk history results --model gpt-4o --format html > history.html\n  gpassk history results --dataset aime24 --format csv"
)]
pub struct HistoryArgs {
    /// The results folder whose run directories are listed.
    pub dir: PathBuf,
    /// Only this model (by the name in the config).
    #[arg(long)]
    pub model: Option<String>,
    /// Only runs of this dataset (its name as the manifest records it, or the file name).
    #[arg(long)]
    pub dataset: Option<String>,
    /// table (fits the terminal), md, html (trend plots), csv or json (raw fractions in [0, 1]).
    #[arg(long, value_enum, default_value = "table")]
    pub format: HistoryFormat,
}

/// One loaded run with what changed since the run before it (per model).
struct Loaded {
    entry: RunEntry,
    results: RunResults,
    /// Against the previous run of the same dataset; `None` for the first.
    compared: Option<Compared>,
    run_changes: Vec<String>,
}

fn dataset_matches(entry: &RunEntry, want: &str) -> bool {
    let name = &entry.manifest.dataset.name;
    name == want
        || std::path::Path::new(name)
            .file_stem()
            .is_some_and(|s| s.to_string_lossy() == want)
}

/// Loads and scores the runs of one dataset in order, pairing each with the one before. A run
/// that cannot be scored (a corrupt checkpoint, a dataset edited or gone) is skipped with one
/// warning naming it, as an unreadable manifest is: one broken run never hides the others.
fn load_series(entries: Vec<RunEntry>) -> Vec<Loaded> {
    let mut out: Vec<Loaded> = Vec::new();
    for entry in entries {
        let results = match load_run(&RunDir::at(&entry.dir)) {
            Ok(r) => r,
            Err(e) => {
                let why = crate::error::render(&e);
                eprintln!(
                    "warning: skipped {}: {}",
                    printable(&entry.dir.display().to_string()),
                    printable(&why)
                );
                continue;
            }
        };
        let (compared, run_changes) = match out.last() {
            Some(prev) => {
                let changes = setting_changes(&prev.entry.manifest, &entry.manifest);
                let same_data = prev.results.dataset_sha256 == results.dataset_sha256;
                (same_data.then(|| compare(&prev.results, &results)), changes)
            }
            None => (None, Vec::new()),
        };
        out.push(Loaded {
            entry,
            results,
            compared,
            run_changes,
        });
    }
    out
}

/// The headline metrics of a run: its config's `metrics`, else every overall estimate.
fn headline(r: &RunResults) -> Vec<MetricKind> {
    if !r.shown.is_empty() {
        return r.shown.clone();
    }
    let mut all: Vec<MetricKind> = Vec::new();
    for e in r.models.iter().flat_map(|m| &m.estimates) {
        if e.subset.is_none() && !all.contains(&e.metric) {
            all.push(e.metric.clone());
        }
    }
    all
}

/// Every change marker of one model in run `i` of a series.
fn changes_of(series: &[Loaded], i: usize, model: &str) -> Vec<String> {
    let l = &series[i];
    let mut out = l.run_changes.clone();
    if i > 0 {
        out.extend(
            drift(&series[i - 1].entry, &l.entry, model)
                .iter()
                .map(|d| d.describe()),
        );
    }
    out.extend(partial(&l.entry.manifest, model));
    out
}

fn run_name(l: &Loaded) -> String {
    l.entry.dir.file_name().map_or_else(
        || l.results.run_id.clone(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Rows of one dataset's series, and its trends (one per headline metric).
fn series_rows(
    series: &[Loaded],
    model_filter: Option<&str>,
    rows: &mut Vec<Vec<Cell>>,
    changes: &mut Vec<String>,
) -> Vec<Trend> {
    let Some(last) = series.last() else {
        return Vec::new();
    };
    let dataset = last.results.dataset.clone();
    let mut models: Vec<String> = Vec::new();
    for l in series {
        for m in &l.results.models {
            if !models.contains(&m.name) && model_filter.is_none_or(|f| f == m.name) {
                models.push(m.name.clone());
            }
        }
    }
    for model in &models {
        for (i, l) in series.iter().enumerate() {
            for c in changes_of(series, i, model) {
                changes.push(format!("{} {model}: {c}", run_name(l),));
            }
        }
    }
    let mut trends = Vec::new();
    for metric in headline(&last.results) {
        let label = metric_label(&metric);
        let mut trend = Trend {
            dataset: dataset.clone(),
            metric: label.clone(),
            series: Vec::new(),
        };
        for model in &models {
            let mut points = Vec::new();
            for (i, l) in series.iter().enumerate() {
                let est = l
                    .results
                    .models
                    .iter()
                    .find(|m| &m.name == model)
                    .and_then(|m| m.estimate(&metric, None));
                let test = l.compared.as_ref().and_then(|c| {
                    c.rows
                        .iter()
                        .find(|r| &r.model == model && r.kind == metric)
                });
                let marks = changes_of(series, i, model);
                rows.push(row(&dataset, model, &label, l, est, test, &marks));
                points.push(Point {
                    label: l.entry.manifest.created_at.chars().take(10).collect(),
                    value: est.and_then(|e| e.value),
                    ci: est.and_then(|e| e.ci),
                    changes: marks,
                });
            }
            trend.series.push(Series {
                model: model.clone(),
                points,
            });
        }
        trends.push(trend);
    }
    trends
}

/// A short tag per change marker for the table's narrow column.
fn tags(marks: &[String]) -> String {
    let mut t: Vec<&str> = marks
        .iter()
        .map(|m| m.split([':', '(']).next().unwrap_or("").trim())
        .collect();
    t.dedup();
    t.join(", ")
}

fn row(
    dataset: &str,
    model: &str,
    metric: &str,
    l: &Loaded,
    est: Option<&crate::stats::Estimate>,
    test: Option<&crate::analysis::compare::Comparison>,
    marks: &[String],
) -> Vec<Cell> {
    let value = est.and_then(|e| e.value);
    let ci = est.and_then(|e| e.ci);
    let text = match (value, ci) {
        (Some(v), Some((lo, hi))) => {
            format!("{:.1} [{:.1}, {:.1}]", 100.0 * v, 100.0 * lo, 100.0 * hi)
        }
        (Some(v), None) => format!("{:.1}", 100.0 * v),
        _ => "-".into(),
    };
    let delta = test.map(|t| t.test.delta);
    let flag = match test {
        None => String::new(),
        Some(t) if t.test.p.is_none() => "untested".into(),
        Some(t) if !t.flagged() => String::new(),
        Some(t) if t.test.delta > 0.0 => "improved".into(),
        Some(_) => "REGRESSED".into(),
    };
    let adjusted = test.and_then(|t| t.adjusted);
    vec![
        Cell::text(format!("{dataset} · {model} · {metric}")),
        Cell::text(dataset),
        Cell::text(model),
        Cell::text(metric),
        Cell::text(run_name(l)),
        Cell::text(&l.entry.manifest.created_at),
        Cell::num(value, text),
        Cell::num(ci.map(|c| c.0), String::new()),
        Cell::num(ci.map(|c| c.1), String::new()),
        Cell::num(
            delta,
            delta.map_or_else(String::new, |d| format!("{:+.1}", 100.0 * d)),
        ),
        Cell::num(
            adjusted,
            adjusted.map_or_else(String::new, |p| {
                if p < 1e-4 {
                    "<0.0001".into()
                } else {
                    format!("{p:.4}")
                }
            }),
        ),
        Cell::text(flag),
        Cell::text(tags(marks)),
    ]
}

const KEYS: [&str; 13] = [
    "series", "dataset", "model", "metric", "run", "date", "value", "ci_low", "ci_high", "delta",
    "p_holm", "flag", "changes",
];
const TITLES: [&str; 13] = [
    "series",
    "dataset",
    "model",
    "metric",
    "run",
    "date",
    "% [95% CI]",
    "ci_low",
    "ci_high",
    "Δ vs previous",
    "p (Holm)",
    "flag",
    "changes",
];

/// Why no row is shown: every run was skipped, or none has the `--model` asked for.
fn nothing_shown(args: &HistoryArgs) -> BadInput {
    match &args.model {
        None => BadInput(format!(
            "{}: no run could be read (the warnings above say why)",
            args.dir.display()
        )),
        Some(model) => BadInput(format!(
            "--model {model}: no run in {} has this model",
            args.dir.display()
        )),
    }
}

pub fn run(args: HistoryArgs) -> Result<ExitStatus> {
    let (entries, skipped) = discover(&args.dir)?;
    for s in &skipped {
        eprintln!("warning: skipped: {}", printable(s));
    }
    let mut datasets: Vec<String> = Vec::new();
    for e in &entries {
        let d = &e.manifest.dataset.name;
        if !datasets.contains(d)
            && args
                .dataset
                .as_deref()
                .is_none_or(|w| dataset_matches(e, w))
        {
            datasets.push(d.clone());
        }
    }
    if datasets.is_empty() {
        let what = args
            .dataset
            .as_deref()
            .map_or_else(String::new, |d| format!(" of dataset {d}"));
        return Err(BadInput(format!(
            "{}: no run{what} found (run directories hold a manifest.json)",
            args.dir.display()
        ))
        .into());
    }
    let (mut rows, mut changes, mut trends) = (Vec::new(), Vec::new(), Vec::new());
    for d in &datasets {
        let of: Vec<RunEntry> = entries
            .iter()
            .filter(|e| &e.manifest.dataset.name == d)
            .cloned()
            .collect();
        let series = load_series(of);
        trends.extend(series_rows(
            &series,
            args.model.as_deref(),
            &mut rows,
            &mut changes,
        ));
    }
    if rows.is_empty() {
        return Err(nothing_shown(&args).into());
    }
    let tab = Tabular {
        keys: KEYS.to_vec(),
        titles: TITLES.to_vec(),
        rows,
        machine_only: &["dataset", "model", "metric", "date", "ci_low", "ci_high"],
        group: Some("series"),
    };
    let format = match args.format {
        HistoryFormat::Html => {
            let cols: Vec<usize> = [4, 5, 1, 2, 3, 6, 9, 10, 11, 12].to_vec();
            let header: Vec<&str> = cols.iter().map(|&i| TITLES[i]).collect();
            let rows: Vec<Vec<String>> = tab
                .rows
                .iter()
                .map(|r| cols.iter().map(|&i| r[i].text.clone()).collect())
                .collect();
            print!("{}", html_page(&trends, &header, &rows, &changes));
            return Ok(ExitStatus::Success);
        }
        HistoryFormat::Table => TableFormat::Table,
        HistoryFormat::Md => TableFormat::Md,
        HistoryFormat::Csv => TableFormat::Csv,
        HistoryFormat::Json => TableFormat::Json,
    };
    let body = tab.render(format)?;
    if !format.is_human() {
        print!("{body}");
        return Ok(ExitStatus::Success);
    }
    let width = crate::util::terminal_width();
    println!(
        "{}",
        wrap(
            "Δ vs previous: percentage points against the run before (same dataset), exact \
             paired test, Holm-corrected per pair of runs",
            width,
            ""
        )
    );
    print!("{body}");
    if !changes.is_empty() {
        println!("Changes:");
        for c in &changes {
            println!("  {}", wrap(&printable(c), width.saturating_sub(2), "    "));
        }
    }
    Ok(ExitStatus::Success)
}
