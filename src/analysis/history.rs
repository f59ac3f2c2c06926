//! Run history: the runs of one results folder in date order, what changed between neighbours
//! (served model, system fingerprint, config, prompt, grader, dataset, coverage), the previous
//! comparable run of a run, and the history table: per dataset, model and headline metric, every
//! run's value with its interval and the difference from the run before with `compare`'s test.

use crate::analysis::compare::{compare, gather, Compared, Comparison};
use crate::analysis::trend::{html_page, DatasetPage, Flag, Point, Series, Trend};
use crate::error::BadInput;
use crate::metrics::MetricKind;
use crate::report::HTML_NAME_WIDTH;
use crate::report::{
    layout, md_table, md_text, metric_label, wrap, Cell, Corner, Interval, Tabular,
};
use crate::rundir::difference::Difference;
use crate::rundir::manifest::{Manifest, ModelManifest};
use crate::rundir::RunDir;
use crate::scoring::{load_scored, RunResults};
use crate::util::{printable, short, shorten_names};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One run directory found under a results folder, or one run of a results database.
#[derive(Debug, Clone)]
pub struct RunEntry {
    pub dir: RunDir,
    pub manifest: Manifest,
    /// A stored run: its results and fingerprint counts, read from the database, not the folder.
    pub stored: Option<std::sync::Arc<Stored>>,
}

/// A run's results already at hand (read from a results database, or kept by the viewer), so
/// its history does not score it again.
#[derive(Debug)]
pub struct Stored {
    pub results: RunResults,
    /// Per model, usable samples by system fingerprint (`""` for none); None: counted in the
    /// run directory's checkpoints when a drift needs them.
    pub fingerprints:
        Option<std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>>,
}

impl RunEntry {
    /// A run directory with its manifest.
    pub fn of_dir(dir: RunDir, manifest: Manifest) -> RunEntry {
        RunEntry {
            dir,
            manifest,
            stored: None,
        }
    }

    /// The run's name: its directory's name (a stored run's is its id).
    pub fn name(&self) -> String {
        self.dir.path().file_name().map_or_else(
            || self.manifest.run_id.clone(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// The runs of a results database as history entries, oldest first (by `created_at`, then id).
pub fn stored_entries(store: &mut crate::store::Store) -> anyhow::Result<Vec<RunEntry>> {
    let mut out = Vec::new();
    for listed in store.list()? {
        out.extend(stored_entry(store, &listed.run_id)?);
    }
    Ok(out)
}

/// One run of a results database as a history entry (its name is its id); None when the
/// database does not hold it.
pub fn stored_entry(
    store: &mut crate::store::Store,
    run_id: &str,
) -> anyhow::Result<Option<RunEntry>> {
    let Some(results) = store.results(run_id)? else {
        return Ok(None);
    };
    let Some(manifest) = results.manifest.clone() else {
        return Ok(None);
    };
    let fingerprints = store.fingerprints(run_id)?;
    Ok(Some(RunEntry {
        dir: RunDir::at(run_id),
        manifest,
        stored: Some(std::sync::Arc::new(Stored {
            results,
            fingerprints: Some(fingerprints),
        })),
    }))
}

/// The id of the latest run of a results database that started before `run_id` from the same
/// config on the same dataset content: `compare --db --baseline previous`, as [`previous_run`]
/// over a folder.
pub fn stored_previous(
    store: &mut crate::store::Store,
    run_id: &str,
) -> anyhow::Result<Option<String>> {
    let Some(this) = store.manifest(run_id)? else {
        return Err(BadInput(format!(
            "{}: no run `{}` (gpassk store ls lists them)",
            store.url(),
            printable(run_id)
        ))
        .into());
    };
    let mut runs = Vec::new();
    for listed in store.list()? {
        if listed.run_id != run_id && listed.created_at < this.created_at {
            if let Some(m) = store.manifest(&listed.run_id)? {
                runs.push((listed.run_id, m));
            }
        }
    }
    Ok(previous_of(&this, &runs).cloned())
}

/// The latest of `runs` (oldest first, `this` left out) from the same config (config hash and
/// task) on the same dataset content and the same shard (none for a whole run) as `this`, started
/// before it: a merged run's shards, sampled just before it, are never its baseline.
fn previous_of<'a, T>(this: &Manifest, runs: &'a [(T, Manifest)]) -> Option<&'a T> {
    runs.iter()
        .filter(|(_, m)| m.created_at < this.created_at)
        .rfind(|(_, m)| {
            !m.differences(this).iter().any(|d| {
                matches!(
                    d,
                    Difference::ConfigHash(_)
                        | Difference::Task(_)
                        | Difference::Dataset(_)
                        | Difference::Shard(_)
                )
            })
        })
        .map(|(t, _)| t)
}

/// The whole runs of `entries` and, when it left out shard runs (`gpassk run --shard`: parts of
/// one evaluation, each over a share of the problems), the note that says so: a history of shards
/// beside their merged run would show each week several times, on a fraction of the problems.
pub fn whole_runs(entries: Vec<RunEntry>, folder: &Path) -> (Vec<RunEntry>, Option<String>) {
    let (shards, whole): (Vec<RunEntry>, Vec<RunEntry>) = entries
        .into_iter()
        .partition(|e| e.manifest.shard.is_some());
    let Some(first) = shards.first() else {
        return (whole, None);
    };
    let count = first.manifest.shard.map_or(0, |s| s.count);
    let note = format!(
        "{} shard run{} left out (parts of sharded runs; their merged runs are listed): \
         gpassk merge --shards {count} --from {} --out DIR joins them",
        shards.len(),
        if shards.len() == 1 { "" } else { "s" },
        folder.display()
    );
    (whole, Some(note))
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
        .map(|(dir, manifest)| RunEntry::of_dir(dir, manifest))
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
    let runs: Vec<(PathBuf, Manifest)> = (runs.into_iter())
        .filter(|r| std::fs::canonicalize(r.dir.path()).ok() != me)
        .map(|r| (r.dir.path().to_path_buf(), r.manifest))
        .collect();
    Ok(previous_of(&this, &runs).cloned())
}

/// The run directory named `id` (its folder name, or the run id its manifest records) beside
/// `run` in its results folder: `compare --baseline ID`.
pub fn sibling_run(run: &Path, id: &str) -> Result<Option<PathBuf>, BadInput> {
    let parent = match run.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let (runs, _) = discover(parent)?;
    Ok(runs
        .iter()
        .find(|r| r.name() == id)
        .or_else(|| runs.iter().find(|r| r.manifest.run_id == id))
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
            share: new_fingerprint_share(b, name, &fingerprints(ma)),
        });
    }
    out
}

fn fingerprints(m: &ModelManifest) -> BTreeSet<String> {
    m.system_fingerprints.iter().cloned().collect()
}

/// Share of a model's usable samples whose fingerprint is not in `known` (from the database
/// for a stored run, else its checkpoint); `None` when unreadable or no sample is usable.
fn new_fingerprint_share(run: &RunEntry, model: &str, known: &BTreeSet<String>) -> Option<f64> {
    let counts = match run.stored.as_ref().and_then(|s| s.fingerprints.as_ref()) {
        Some(f) => f.get(model).cloned()?,
        None => run.dir.fingerprint_counts(model)?,
    };
    let total: u64 = counts.values().sum();
    let new: u64 = (counts.iter())
        .filter(|(f, _)| !f.is_empty() && !known.contains(*f))
        .map(|(_, n)| n)
        .sum();
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
        // A failed model says why, whole words, bounded: a server's message can be any size.
        let why = mm.error.as_deref().map_or_else(String::new, |e| {
            format!(": {}", crate::util::clip_words(e, 160))
        });
        format!(
            "partial coverage: {usable} of {} units usable (status {}{why})",
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
        let loaded = match &entry.stored {
            Some(s) => Ok(s.results.clone()),
            None => load_scored(&entry.dir, &notes),
        };
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

/// Every change marker of one model in run `i`: the run's own, then `own` (the model's alone).
fn changes_of(series: &[Loaded], i: usize, own: &[String]) -> Vec<String> {
    let mut out = series[i].run_changes.clone();
    out.extend_from_slice(own);
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
    l.entry.name()
}

/// A label per run of a series for plots and the terminal: the date, else (two runs on one
/// day) the date and minute, else the run's name, so no two runs share a label.
fn run_labels(series: &[Loaded]) -> Vec<String> {
    let distinct = |labels: &[String]| labels.iter().collect::<BTreeSet<_>>().len() == labels.len();
    for chars in [10, 16] {
        let labels: Vec<String> = series
            .iter()
            .map(|l| {
                let at = &l.entry.manifest.created_at;
                at.chars().take(chars).collect::<String>().replace('T', " ")
            })
            .collect();
        if distinct(&labels) {
            return labels;
        }
    }
    series.iter().map(run_name).collect()
}

/// The models of a series in first-seen order, only `model_filter` when given.
fn series_models(series: &[Loaded], model_filter: Option<&str>) -> Vec<String> {
    let mut models: Vec<String> = Vec::new();
    for l in series {
        for m in &l.results.models {
            if !models.contains(&m.name) && model_filter.is_none_or(|f| f == m.name) {
                models.push(m.name.clone());
            }
        }
    }
    models
}

/// What one dataset's series adds to a [`History`].
#[derive(Default)]
struct SeriesOut {
    rows: Vec<Vec<Cell>>,
    changes: Vec<String>,
    trends: Vec<Trend>,
    models: Vec<ModelRuns>,
}

/// Rows of one dataset's series, its trends (one per headline metric) and its models' grids.
fn series_rows(series: &[Loaded], model_filter: Option<&str>, out: &mut SeriesOut) {
    let Some(last) = series.last() else {
        return;
    };
    let dataset = last.results.dataset.clone();
    let models = series_models(series, model_filter);
    let labels = run_labels(series);
    // Per model and run, what changed for the model alone: drift may read a whole checkpoint,
    // so it is worked out once, not once per metric.
    let own: Vec<Vec<Vec<String>>> = (models.iter())
        .map(|m| {
            (0..series.len())
                .map(|i| model_changes(series, i, m))
                .collect()
        })
        .collect();
    let mut grids: Vec<ModelRuns> = (models.iter().zip(&own))
        .map(|(m, own)| ModelRuns::new(series, &labels, &dataset, m, own))
        .collect();
    let short = shorten_names(&models, HTML_NAME_WIDTH);
    let first = out.trends.len();
    for metric in last.results.tested_family() {
        let label = metric_label(&metric);
        let mut trend = Trend {
            dataset: dataset.clone(),
            metric: label.clone(),
            series: Vec::new(),
            run_changes: series.iter().map(|l| l.run_changes.clone()).collect(),
            numbers: Vec::new(),
        };
        for (((model, grid), own), name) in models.iter().zip(&mut grids).zip(&own).zip(&short) {
            grid.metrics.push(label.clone());
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
                let marks = changes_of(series, i, &own[i]);
                out.rows
                    .push(row(&dataset, model, &label, l, est, test, &marks));
                grid.push(i, &label, est, test);
                points.push(Point {
                    label: labels[i].clone(),
                    value: est.and_then(|e| e.value),
                    ci: est.and_then(|e| e.ci),
                    changes: own[i].clone(),
                    flag: test.filter(|t| t.flagged()).map(|t| Flag {
                        up: t.test.delta > 0.0,
                        note: flag_note(t),
                    }),
                });
            }
            trend.series.push(Series {
                model: model.clone(),
                name: name.clone(),
                points,
            });
        }
        out.trends.push(trend);
    }
    // What happened in each run, numbered on the plots; the viewer lists it by run name.
    let grid_refs: Vec<&ModelRuns> = grids.iter().collect();
    let notes = run_notes(&grid_refs, &|m| m.to_string());
    let mut number = 0;
    let numbers: Vec<Option<usize>> = (notes.iter())
        .map(|lines| {
            (!lines.is_empty()).then(|| {
                number += 1;
                number
            })
        })
        .collect();
    for t in &mut out.trends[first..] {
        t.numbers = numbers.clone();
    }
    for (l, lines) in series.iter().zip(&notes) {
        for line in lines {
            out.changes.push(format!("{} {line}", run_name(l)));
        }
    }
    out.models.extend(grids);
}

/// One model's runs of one dataset for the terminal: a row per run, a column per headline
/// metric (its value, interval and a mark where the change from the run before is significant),
/// and notes: what changed for the model in a run, and each significant change with its size.
pub struct ModelRuns {
    pub dataset: String,
    pub model: String,
    pub runs: Vec<String>,
    pub metrics: Vec<String>,
    /// Per run, per metric.
    pub cells: Vec<Vec<String>>,
    /// The run's index and the note.
    pub notes: Vec<(usize, String)>,
    /// What changed for every model of the run (its settings), per run.
    pub run_changes: Vec<Vec<String>>,
    /// Per run, whether the model has a value of any headline metric in it.
    pub present: Vec<bool>,
}

impl ModelRuns {
    /// A model's empty grid, its notes `own` (per run, what changed for the model alone).
    fn new(
        series: &[Loaded],
        labels: &[String],
        dataset: &str,
        model: &str,
        own: &[Vec<String>],
    ) -> ModelRuns {
        let notes = (own.iter().enumerate())
            .flat_map(|(i, changes)| changes.iter().map(move |c| (i, c.clone())))
            .collect();
        ModelRuns {
            dataset: dataset.to_string(),
            model: model.to_string(),
            runs: labels.to_vec(),
            metrics: Vec::new(),
            cells: vec![Vec::new(); series.len()],
            notes,
            run_changes: series.iter().map(|l| l.run_changes.clone()).collect(),
            present: vec![false; series.len()],
        }
    }

    fn push(
        &mut self,
        run: usize,
        metric: &str,
        est: Option<&crate::stats::Estimate>,
        test: Option<&Comparison>,
    ) {
        let text = Interval::percent(est.and_then(|e| e.value), est.and_then(|e| e.ci));
        let mark = match test {
            Some(t) if t.flagged() && t.test.delta > 0.0 => " ▲",
            Some(t) if t.flagged() => " ▼",
            _ => "",
        };
        self.cells[run].push(format!("{text}{mark}"));
        self.present[run] |= est.is_some_and(|e| e.value.is_some());
        if let Some(t) = test.filter(|t| t.flagged()) {
            self.notes.push((run, format!("{metric} {}", flag_note(t))));
        }
    }

    /// The grid within `width` columns (runs as rows when that fits, else transposed), then the
    /// notes, each under its run's label.
    pub fn terminal(&self, width: usize) -> String {
        // With a mark anywhere, unmarked cells are padded as wide so the intervals stay
        // aligned whichever way the grid is laid out.
        let marked = |t: &String| t.ends_with(['▲', '▼']);
        let mut cells = self.cells.clone();
        if cells.iter().flatten().any(marked) {
            for t in cells.iter_mut().flatten().filter(|t| !marked(t)) {
                t.push_str("  ");
            }
        }
        let runs: Vec<&str> = self.runs.iter().map(String::as_str).collect();
        let corner = Corner {
            rows: "run",
            columns: "metric",
        };
        let mut out = wrap(&printable(&self.model), width, "  ");
        out.push('\n');
        out.push_str(&layout(corner, &runs, &self.metrics, &cells, width));
        let mut notes = self.notes.clone();
        notes.sort_by_key(|(run, _)| *run);
        for (run, note) in notes {
            let line = format!("  {}: {}", self.runs[run], printable(&note));
            out.push_str(&wrap(&line, width, "    "));
            out.push('\n');
        }
        out
    }
}

impl ModelRuns {
    /// The grid as Markdown that pastes into a PR: metrics as rows and runs as columns (runs as
    /// rows when there are more than a table's columns hold), then the notes as a list.
    pub fn markdown(&self) -> String {
        let mut out = format!("### {}\n\n", md_text(&self.model));
        let (header, rows): (Vec<String>, Vec<Vec<String>>) = if self.runs.len() < 8 {
            let header = std::iter::once("metric".to_string()).chain(self.runs.iter().cloned());
            let rows = (0..self.metrics.len())
                .map(|c| {
                    std::iter::once(self.metrics[c].clone())
                        .chain(self.cells.iter().map(|r| r[c].clone()))
                        .collect()
                })
                .collect();
            (header.collect::<Vec<_>>(), rows)
        } else {
            let header = std::iter::once("run".to_string()).chain(self.metrics.iter().cloned());
            let rows = self.runs.iter().zip(&self.cells).map(|(run, cells)| {
                std::iter::once(run.clone())
                    .chain(cells.iter().cloned())
                    .collect()
            });
            (header.collect(), rows.collect())
        };
        out.push_str(&md_table(&header, &rows, 1));
        let mut notes = self.notes.clone();
        notes.sort_by_key(|(run, _)| *run);
        if !notes.is_empty() {
            out.push('\n');
        }
        for (run, note) in notes {
            out.push_str(&format!(
                "- {}: {}\n",
                md_text(&self.runs[run]),
                md_text(&note)
            ));
        }
        out
    }
}

/// A flagged change as history says it: `REGRESSED -12.1 points, p (Holm) 0.0060`.
fn flag_note(t: &Comparison) -> String {
    let p = t
        .adjusted
        .map_or_else(String::new, |p| format!(", p (Holm) {}", p_text(p)));
    format!("{} {:+.1} points{p}", t.flag(), 100.0 * t.test.delta)
}

/// Per run of one dataset's grids, what happened, each once: what changed for every model (its
/// settings), a change every model with values in the run shares (`all 5 models: …`), then each
/// model's own changes and flagged changes; models named by `name`.
fn run_notes(grids: &[&ModelRuns], name: &dyn Fn(&str) -> String) -> Vec<Vec<String>> {
    let Some(first) = grids.first() else {
        return Vec::new();
    };
    (0..first.runs.len())
        .map(|i| {
            let mut lines: Vec<String> = (first.run_changes[i].iter())
                .map(|c| format!("every model: {c}"))
                .collect();
            let pairs: Vec<(String, String)> = (grids.iter())
                .flat_map(|g| {
                    (g.notes.iter())
                        .filter(move |(run, _)| *run == i)
                        .map(|(_, n)| (g.model.clone(), n.clone()))
                })
                .collect();
            let with_values: Vec<&str> = (grids.iter())
                .filter(|g| g.present[i])
                .map(|g| g.model.as_str())
                .collect();
            let (shared, own) = gather(&pairs, &with_values);
            lines.extend(shared);
            lines.extend(own.iter().map(|(m, c)| format!("{}: {c}", name(m))));
            lines
        })
        .collect()
}

fn p_text(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
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
    let flag = test.map_or("", Comparison::flag);
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

/// The legend of the terminal and Markdown views.
pub const LEGEND: &str = "% [95% CI] per run; ▲/▼: a significant change from the run \
                                   before (same dataset; exact paired test, Holm-corrected per \
                                   pair of runs), its size in the notes under the model";

/// The history of some runs: the table (a row per dataset, model, headline metric and run), a
/// trend per dataset and headline metric, a grid per dataset and model for the terminal, every
/// change marker, and a warning per run skipped.
pub struct History {
    pub table: Tabular,
    pub trends: Vec<Trend>,
    pub models: Vec<ModelRuns>,
    pub changes: Vec<String>,
    pub warnings: Vec<String>,
}

/// The history of the runs of `entries` (oldest first, as [`discover`] lists them) of each of
/// `datasets`, only model `model` when given. Its table is empty when no run could be scored
/// or none has the model.
pub fn history(entries: &[RunEntry], datasets: &[String], model: Option<&str>) -> History {
    let (mut out, mut warnings) = (SeriesOut::default(), Vec::new());
    for d in datasets {
        let of: Vec<RunEntry> = entries
            .iter()
            .filter(|e| &e.manifest.dataset.name == d)
            .cloned()
            .collect();
        let series = load_series(of, &mut warnings);
        series_rows(&series, model, &mut out);
    }
    let table = Tabular {
        keys: KEYS.to_vec(),
        titles: TITLES.to_vec(),
        rows: out.rows,
        machine_only: &["dataset", "model", "metric", "date", "ci_low", "ci_high"],
        group: Some("series"),
    };
    History {
        table,
        trends: out.trends,
        models: out.models,
        changes: out.changes,
        warnings,
    }
}

impl History {
    /// The Markdown view: per dataset its settings changes, then a table per model.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let mut dataset: Option<&str> = None;
        for m in &self.models {
            if dataset != Some(m.dataset.as_str()) {
                dataset = Some(&m.dataset);
                out.push_str(&format!("## Dataset {}\n\n", md_text(&m.dataset)));
                let mut any = false;
                for (run, changes) in m.runs.iter().zip(&m.run_changes) {
                    for c in changes {
                        out.push_str(&format!(
                            "- {}, every model: {}\n",
                            md_text(run),
                            md_text(c)
                        ));
                        any = true;
                    }
                }
                if any {
                    out.push('\n');
                }
            }
            out.push_str(&m.markdown());
            out.push('\n');
        }
        out
    }

    /// The terminal's view within `width` columns: per dataset its settings changes, then a grid
    /// per model (runs by headline metrics) with its notes.
    pub fn terminal(&self, width: usize) -> String {
        let mut out = String::new();
        let mut dataset: Option<&str> = None;
        for m in &self.models {
            if dataset != Some(m.dataset.as_str()) {
                dataset = Some(&m.dataset);
                out.push_str(&wrap(
                    &format!("Dataset {}", printable(&m.dataset)),
                    width,
                    "  ",
                ));
                out.push('\n');
                for (run, changes) in m.runs.iter().zip(&m.run_changes) {
                    for c in changes {
                        let line = format!("  {run}, every model: {}", printable(c));
                        out.push_str(&wrap(&line, width, "    "));
                        out.push('\n');
                    }
                }
            }
            out.push('\n');
            out.push_str(&m.terminal(width));
        }
        out
    }

    /// The HTML page: per dataset the trend plots, what happened in each run (numbered as on
    /// the plots), and the values, a row per run and model with the headline metrics as columns.
    pub fn html(&self) -> String {
        let mut pages = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for m in &self.models {
            if seen.contains(&m.dataset.as_str()) {
                continue;
            }
            seen.push(&m.dataset);
            let grids: Vec<&ModelRuns> = (self.models.iter())
                .filter(|g| g.dataset == m.dataset)
                .collect();
            let full: Vec<String> = grids.iter().map(|g| g.model.clone()).collect();
            let short = shorten_names(&full, HTML_NAME_WIDTH);
            let short_of = |n: &str| {
                (full.iter().position(|f| f == n))
                    .map_or_else(|| n.to_string(), |i| short[i].clone())
            };
            let notes = run_notes(&grids, &short_of);
            let numbered = (notes.into_iter().enumerate())
                .filter(|(_, lines)| !lines.is_empty())
                .enumerate()
                .map(|(n, (run, lines))| (n + 1, m.runs[run].clone(), lines))
                .collect();
            let mut header = vec!["run".to_string(), "model".to_string()];
            header.extend(m.metrics.iter().cloned());
            let mut rows = Vec::new();
            for (run, label) in m.runs.iter().enumerate() {
                for (g, s) in grids.iter().zip(&short) {
                    let mut row = vec![label.clone(), s.clone()];
                    row.extend(g.cells[run].iter().cloned());
                    rows.push(row);
                }
            }
            pages.push(DatasetPage {
                dataset: &m.dataset,
                trends: self
                    .trends
                    .iter()
                    .filter(|t| t.dataset == m.dataset)
                    .collect(),
                notes: numbered,
                header,
                rows,
                names: (short.iter().zip(&full))
                    .filter(|(s, f)| s != f)
                    .map(|(s, f)| (s.clone(), f.clone()))
                    .collect(),
            });
        }
        html_page(&pages)
    }
}
