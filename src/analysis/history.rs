//! Run history: the runs of one results folder in date order, what changed between neighbours
//! (served model, system fingerprint, config, prompt, grader, dataset, coverage), the previous
//! comparable run of a run, and the history table: per dataset, model and headline metric, every
//! run's value with its interval and the difference from the run before with `compare`'s test.

use crate::analysis::compare::{compare, Compared, Comparison};
use crate::analysis::trend::{html_page, Point, Series, Trend};
use crate::error::BadInput;
use crate::metrics::MetricKind;
use crate::report::{metric_label, Cell, Interval, Tabular};
use crate::rundir::difference::Difference;
use crate::rundir::manifest::{Manifest, ModelManifest};
use crate::rundir::record::read_records;
use crate::rundir::RunDir;
use crate::scoring::{load_run, RunResults};
use crate::util::{printable, short};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One run directory found under a results folder.
#[derive(Debug, Clone)]
pub struct RunEntry {
    pub dir: RunDir,
    pub manifest: Manifest,
}

/// The run directories directly under `root` (those holding a manifest.json), oldest first by
/// `created_at`, then by name; a directory whose manifest cannot be read is listed in the second
/// vector with the reason, so one broken run never hides the others.
pub fn discover(root: &Path) -> Result<(Vec<RunEntry>, Vec<String>), BadInput> {
    let found = RunDir::runs_under(root).map_err(|e| {
        BadInput(format!(
            "{}: cannot read the results folder: {e}",
            root.display()
        ))
    })?;
    let skipped = found.skipped;
    let mut runs: Vec<RunEntry> = (found.runs.into_iter())
        .map(|(dir, manifest)| RunEntry { dir, manifest })
        .collect();
    runs.sort_by(|a, b| {
        (a.manifest.created_at.as_str(), &a.dir).cmp(&(b.manifest.created_at.as_str(), &b.dir))
    });
    Ok((runs, skipped))
}

/// The latest run under `run`'s parent folder that started before it from the same config
/// (config hash and task) on the same dataset content: the baseline of `compare --baseline
/// previous`.
pub fn previous_run(run: &Path) -> Result<Option<PathBuf>, BadInput> {
    let this = RunDir::at(run).read_manifest()?;
    let parent = match run.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let (runs, _) = discover(parent)?;
    let me = std::fs::canonicalize(run).ok();
    Ok(runs
        .into_iter()
        .filter(|r| std::fs::canonicalize(r.dir.path()).ok() != me)
        .filter(|r| r.manifest.created_at < this.created_at)
        .rfind(|r| {
            !r.manifest.differences(&this).iter().any(|d| {
                matches!(
                    d,
                    Difference::ConfigHash(_) | Difference::Task(_) | Difference::Dataset(_)
                )
            })
        })
        .map(|r| r.dir.path().to_path_buf()))
}

/// What changed for one model between two runs: served model or system fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub what: &'static str,
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Share of the later run's answered samples that came from a name or fingerprint the earlier
    /// run never saw; `None` when it cannot be counted.
    pub share: Option<f64>,
}

impl Drift {
    /// `served model: a → b (100.0% of samples)`.
    pub fn describe(&self) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.join(", ")
            }
        };
        let share = self
            .share
            .map_or_else(String::new, |s| format!(" ({:.1}% of samples)", 100.0 * s));
        format!(
            "{}: {} → {}{share}",
            self.what,
            list(&self.before),
            list(&self.after)
        )
    }
}

/// Served-model and fingerprint drift of model `name` from run `a` to run `b`.
pub fn drift(a: &RunEntry, b: &RunEntry, name: &str) -> Vec<Drift> {
    let (Some(ma), Some(mb)) = (a.manifest.models.get(name), b.manifest.models.get(name)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let served_a: Vec<String> = ma.served_models.keys().cloned().collect();
    let served_b: Vec<String> = mb.served_models.keys().cloned().collect();
    if served_a != served_b {
        let total: u64 = mb.served_models.values().sum();
        let new: u64 = mb
            .served_models
            .iter()
            .filter(|(k, _)| !ma.served_models.contains_key(*k))
            .map(|(_, v)| v)
            .sum();
        out.push(Drift {
            what: "served model",
            before: served_a,
            after: served_b,
            share: (total > 0).then(|| new as f64 / total as f64),
        });
    }
    if fingerprints(ma) != fingerprints(mb) {
        out.push(Drift {
            what: "system fingerprint",
            before: ma.system_fingerprints.clone(),
            after: mb.system_fingerprints.clone(),
            share: new_fingerprint_share(&b.dir, name, &fingerprints(ma)),
        });
    }
    out
}

fn fingerprints(m: &ModelManifest) -> BTreeSet<String> {
    m.system_fingerprints.iter().cloned().collect()
}

/// Share of a model's usable samples whose fingerprint is not in `known` (read from its
/// checkpoint); `None` when the checkpoint cannot be read or holds no usable sample.
fn new_fingerprint_share(dir: &RunDir, model: &str, known: &BTreeSet<String>) -> Option<f64> {
    let (mut total, mut new) = (0u64, 0u64);
    read_records(&dir.checkpoint(model), |r| {
        if r.usable() {
            total += 1;
            new += r
                .system_fingerprint
                .as_ref()
                .is_some_and(|f| !known.contains(f)) as u64;
        }
        Ok(())
    })
    .ok()?;
    (total > 0).then(|| new as f64 / total as f64)
}

/// The run-wide changes among the `differences` from a run to the next: config, prompt, grader
/// and dataset content.
pub fn setting_changes(differences: &[Difference]) -> Vec<String> {
    let grading = |(mode, judge): &(String, Option<String>)| {
        judge
            .as_ref()
            .map_or(mode.clone(), |j| format!("{mode}+{j}"))
    };
    let mut changes: Vec<(u8, String)> = differences
        .iter()
        .filter_map(|d| {
            let (rank, what, x, y) = match d {
                Difference::ConfigHash(c) => (0, "config hash", c.before.clone(), c.after.clone()),
                Difference::PromptHash(c) => (1, "prompt hash", c.before.clone(), c.after.clone()),
                Difference::Grader(c) => (2, "grader", grading(&c.before), grading(&c.after)),
                Difference::Dataset(c) => (3, "dataset sha256", c.before.clone(), c.after.clone()),
                _ => return None,
            };
            Some((
                rank,
                format!("{what} changed: {} → {}", short(&x), short(&y)),
            ))
        })
        .collect();
    changes.sort_by_key(|(rank, _)| *rank);
    changes.into_iter().map(|(_, c)| c).collect()
}

/// Why a model's part of a run is partial (`None` when complete): status and usable units.
fn partial(m: &Manifest, name: &str) -> Option<String> {
    let mm = m.models.get(name)?;
    let usable = mm.ok + mm.truncated;
    (!mm.status.is_complete() || usable < mm.units_planned).then(|| {
        format!(
            "partial coverage: {usable} of {} units usable (status {})",
            mm.units_planned, mm.status
        )
    })
}

/// One loaded run with what changed since the run before it (per model).
struct Loaded {
    entry: RunEntry,
    results: RunResults,
    /// Against the previous run of the same dataset; `None` for the first.
    compared: Option<Compared>,
    run_changes: Vec<String>,
}

/// Whether a run is of dataset `want`: its name as the manifest records it, or the file name.
fn dataset_matches(entry: &RunEntry, want: &str) -> bool {
    let name = &entry.manifest.dataset.name;
    name == want
        || std::path::Path::new(name)
            .file_stem()
            .is_some_and(|s| s.to_string_lossy() == want)
}

/// Loads and scores the runs of one dataset in order, pairing each with the one before. A run
/// that cannot be scored (a corrupt checkpoint, a dataset edited or gone) is skipped with one
/// warning naming it (pushed to `warnings`), as an unreadable manifest is: one broken run never
/// hides the others.
fn load_series(entries: Vec<RunEntry>, warnings: &mut Vec<String>) -> Vec<Loaded> {
    let mut out: Vec<Loaded> = Vec::new();
    let (notes, said) = crate::util::Notes::collect();
    for entry in entries {
        let loaded = load_run(&entry.dir, &notes);
        warnings.append(&mut said.lock().unwrap_or_else(|p| p.into_inner()));
        let results = match loaded {
            Ok(r) => r,
            Err(e) => {
                let why = crate::error::render(&e);
                warnings.push(format!(
                    "warning: skipped {}: {}",
                    printable(&entry.dir.display().to_string()),
                    printable(&why)
                ));
                continue;
            }
        };
        let (compared, run_changes) = match out.last() {
            Some(prev) => {
                let differences = prev.entry.manifest.differences(&entry.manifest);
                let same_data = !differences
                    .iter()
                    .any(|d| matches!(d, Difference::Dataset(_)));
                let changes = setting_changes(&differences);
                let family = results.tested_family();
                let in_family =
                    |m: &MetricKind| family.iter().any(|h| h.identity() == m.identity());
                let compared = same_data.then(|| compare(&prev.results, &results, &in_family));
                (compared, changes)
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

/// Every change marker of one model in run `i` of a series.
fn changes_of(series: &[Loaded], i: usize, model: &str) -> Vec<String> {
    let mut out = series[i].run_changes.clone();
    out.extend(model_changes(series, i, model));
    out
}

/// The change markers of one model alone in run `i`: drift and coverage.
fn model_changes(series: &[Loaded], i: usize, model: &str) -> Vec<String> {
    let l = &series[i];
    let mut out = Vec::new();
    if i > 0 {
        out.extend(
            drift(&series[i - 1].entry, &l.entry, model)
                .iter()
                .map(|d| d.describe()),
        );
    }
    let before = i.checked_sub(1).map(|j| &series[j].entry.manifest);
    out.extend(coverage_change(before, &l.entry.manifest, model));
    out
}

/// A marker where a model's coverage changed: it became partial (or its status changed), or it
/// is complete again. A model failing week after week is marked once, where it started.
fn coverage_change(before: Option<&Manifest>, now: &Manifest, name: &str) -> Option<String> {
    let status = |m: &Manifest| m.models.get(name).map(|mm| mm.status);
    let was = before
        .filter(|m| partial(m, name).is_some())
        .and_then(status);
    match (was, partial(now, name)) {
        (w, Some(why)) if w != status(now) => Some(why),
        (Some(_), None) if now.models.contains_key(name) => Some("coverage complete again".into()),
        _ => None,
    }
}

fn run_name(l: &Loaded) -> String {
    l.entry.dir.path().file_name().map_or_else(
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
    for metric in last.results.tested_family() {
        let label = metric_label(&metric);
        let mut trend = Trend {
            dataset: dataset.clone(),
            metric: label.clone(),
            series: Vec::new(),
            run_changes: series.iter().map(|l| l.run_changes.clone()).collect(),
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
                        .find(|r| &r.model == model && r.kind.identity() == metric.identity())
                });
                let marks = changes_of(series, i, model);
                rows.push(row(&dataset, model, &label, l, est, test, &marks));
                points.push(Point {
                    label: l.entry.manifest.created_at.chars().take(10).collect(),
                    value: est.and_then(|e| e.value),
                    ci: est.and_then(|e| e.ci),
                    changes: model_changes(series, i, model),
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
    test: Option<&Comparison>,
    marks: &[String],
) -> Vec<Cell> {
    let value = est.and_then(|e| e.value);
    let ci = est.and_then(|e| e.ci);
    let text = Interval::percent(value, ci).to_string();
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

/// Every dataset of `entries` in first-seen order, only those `want` matches (the name as the
/// manifest records it, or the file name) when given.
pub fn datasets(entries: &[RunEntry], want: Option<&str>) -> Vec<String> {
    let mut datasets: Vec<String> = Vec::new();
    for e in entries {
        let d = &e.manifest.dataset.name;
        if !datasets.contains(d) && want.is_none_or(|w| dataset_matches(e, w)) {
            datasets.push(d.clone());
        }
    }
    datasets
}

/// The history table's legend.
pub const LEGEND: &str = "Δ vs previous: percentage points against the run before (same dataset), \
                          exact paired test, Holm-corrected per pair of runs";

/// The history of some runs: the table (a row per dataset, model, headline metric and run), a
/// trend per dataset and headline metric, every change marker, and a warning per run skipped.
pub struct History {
    pub table: Tabular,
    pub trends: Vec<Trend>,
    pub changes: Vec<String>,
    pub warnings: Vec<String>,
}

/// The history of the runs of `entries` (oldest first, as [`discover`] lists them) of each of
/// `datasets`, only model `model` when given. Its table is empty when no run could be scored
/// or none has the model.
pub fn history(entries: &[RunEntry], datasets: &[String], model: Option<&str>) -> History {
    let (mut rows, mut changes, mut trends, mut warnings) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for d in datasets {
        let of: Vec<RunEntry> = entries
            .iter()
            .filter(|e| &e.manifest.dataset.name == d)
            .cloned()
            .collect();
        let series = load_series(of, &mut warnings);
        trends.extend(series_rows(&series, model, &mut rows, &mut changes));
    }
    let table = Tabular {
        keys: KEYS.to_vec(),
        titles: TITLES.to_vec(),
        rows,
        machine_only: &["dataset", "model", "metric", "date", "ci_low", "ci_high"],
        group: Some("series"),
    };
    History {
        table,
        trends,
        changes,
        warnings,
    }
}

impl History {
    /// The HTML page: the trend plots, the table's columns people read, and the changes.
    pub fn html(&self) -> String {
        let cols: Vec<usize> = [4, 5, 1, 2, 3, 6, 9, 10, 11, 12].to_vec();
        let header: Vec<&str> = cols.iter().map(|&i| TITLES[i]).collect();
        let rows: Vec<Vec<String>> = self
            .table
            .rows
            .iter()
            .map(|r| cols.iter().map(|&i| r[i].text.clone()).collect())
            .collect();
        html_page(&self.trends, &header, &rows, &self.changes)
    }
}
