//! Run history: the runs of one results folder in date order, what changed between neighbours
//! (served model, system fingerprint, config, prompt, grader, dataset, coverage), the previous
//! comparable run of a run, and the history table: per dataset, model and headline metric, every
//! run's value with its interval and the difference from the run before with `compare`'s test.

use crate::analysis::compare::{compare, gather, Compared, Comparison};
pub use crate::analysis::entry::{drift, Drift, RunEntry, Stored};
use crate::analysis::trend::{html_page, DatasetPage, Flag, Point, Series, Trend};
use crate::error::BadInput;
use crate::metrics::MetricKind;
use crate::report::{md_table, md_text, metric_label, wrap, Cell, Interval, Tabular};
use crate::rundir::difference::Difference;
use crate::rundir::manifest::Manifest;
use crate::rundir::RunDir;
use crate::scoring::{load_scored, RunResults};
use crate::util::{
    name_legend, name_width, printable, short, shorten_names, Paint, Tone, SHORT_NAME,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
    if models.is_empty() {
        // `--model` names none of this dataset's models: nothing to plot or to note.
        return;
    }
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
    let short = shorten_names(&models, SHORT_NAME);
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
    // What happened in each run, numbered on the plots (as on the page, which asks the same
    // helper); the viewer lists it by run name.
    let notes = Dataset {
        name: &dataset,
        models: grids.iter().collect(),
    }
    .run_notes(&models);
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

/// One model's runs of one dataset: per run its label, id and date, a cell per headline metric
/// (its value, interval and a mark where the change from the run before is significant), what
/// changed for the model alone in a run, and its significant changes with their sizes.
pub struct ModelRuns {
    pub dataset: String,
    pub model: String,
    /// Per run, its label: the date, else the date and minute, else the run's name.
    pub runs: Vec<String>,
    /// Per run, its name (directory or stored id) and when it was created.
    pub run_ids: Vec<String>,
    pub dates: Vec<String>,
    pub metrics: Vec<String>,
    /// Per run, per metric.
    pub cells: Vec<Vec<String>>,
    /// The run's index and what changed for this model alone (drift, coverage).
    pub notes: Vec<(usize, String)>,
    /// The run's index and a significant change from the run before:
    /// `▼ Greedy -36.7 (p 0.0273)`.
    pub flags: Vec<(usize, String)>,
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
            run_ids: series.iter().map(run_name).collect(),
            dates: (series.iter())
                .map(|l| {
                    l.entry
                        .manifest
                        .created_at
                        .chars()
                        .take(16)
                        .collect::<String>()
                        .replace('T', " ")
                })
                .collect(),
            metrics: Vec::new(),
            cells: vec![Vec::new(); series.len()],
            notes,
            flags: Vec::new(),
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
            self.flags.push((run, format!("{metric} {}", flag_note(t))));
        }
    }
}

/// The models of one dataset (consecutive in [`History::models`]) and what their runs share.
struct Dataset<'a> {
    name: &'a str,
    models: Vec<&'a ModelRuns>,
}

impl<'a> Dataset<'a> {
    /// The datasets of `models` in order.
    fn all(models: &'a [ModelRuns]) -> Vec<Dataset<'a>> {
        let mut out: Vec<Dataset<'a>> = Vec::new();
        for m in models {
            match out.last_mut() {
                Some(d) if d.name == m.dataset => d.models.push(m),
                _ => out.push(Dataset {
                    name: &m.dataset,
                    models: vec![m],
                }),
            }
        }
        out
    }

    fn first(&self) -> &'a ModelRuns {
        self.models[0]
    }

    /// The key of each run in the table: its date when that alone tells the runs apart,
    /// else its number.
    fn run_keys(&self) -> Vec<String> {
        let m = self.first();
        if m.runs.iter().all(|l| l.chars().count() <= 10) {
            m.runs.clone()
        } else {
            (1..=m.runs.len()).map(|i| i.to_string()).collect()
        }
    }

    /// How run `i` is named in lines: its date, or `run 2`.
    fn run_word(&self, i: usize, keys: &[String]) -> String {
        if keys[i] == self.first().runs[i] {
            keys[i].clone()
        } else {
            format!("run {}", keys[i])
        }
    }

    /// What run `i` says, each thing once: for the run as a whole its settings changes
    /// (`every model: …`) and what the changes of the models with values in it all share
    /// (`all 6 models: …`); per model (in order) the rest of its own changes, then its flagged
    /// changes. Text from servers and files made printable.
    fn said(&self, i: usize) -> (Vec<String>, Vec<Vec<String>>) {
        let mut run: Vec<String> = (self.first().run_changes[i].iter())
            .map(|c| format!("every model: {}", printable(c)))
            .collect();
        let pairs: Vec<(String, String)> = (self.models.iter())
            .flat_map(|mr| {
                (mr.notes.iter().filter(|(r, _)| *r == i))
                    .map(|(_, n)| (mr.model.clone(), printable(n).into_owned()))
            })
            .collect();
        let with_values: Vec<&str> = (self.models.iter())
            .filter(|mr| mr.present[i])
            .map(|mr| mr.model.as_str())
            .collect();
        let (shared, own) = gather(&pairs, &with_values);
        run.extend(shared);
        let models = (self.models.iter())
            .map(|mr| {
                let own = own.iter().filter(|(m, _)| *m == mr.model).map(|(_, n)| n);
                let flags = mr.flags.iter().filter(|(r, _)| *r == i).map(|(_, f)| f);
                own.chain(flags).cloned().collect()
            })
            .collect();
        (run, models)
    }

    /// A line per run: its key, id and date, then what changed for the run as a whole.
    fn run_lines(&self) -> Vec<(String, Vec<String>)> {
        let m = self.first();
        let keys = self.run_keys();
        (0..m.runs.len())
            .map(|i| {
                let key = self.run_word(i, &keys);
                let id = printable(&m.run_ids[i]);
                let head = if key == id {
                    format!("{id}, {}", m.dates[i])
                } else {
                    format!("{key} = {id}, {}", m.dates[i])
                };
                (head, self.said(i).0)
            })
            .collect()
    }

    /// Per model and run, what happened that the run lines do not already say, a line each
    /// (`short, 2026-11-30: …; …`), for under the table.
    fn notes(&self, short: &[String]) -> Vec<String> {
        let keys = self.run_keys();
        let mut out = Vec::new();
        for i in 0..keys.len() {
            for (said, name) in self.said(i).1.iter().zip(short) {
                if !said.is_empty() {
                    let run = self.run_word(i, &keys);
                    out.push(format!("{name}, {run}: {}", said.join("; ")));
                }
            }
        }
        out
    }

    /// Per run (one entry each, empty when nothing happened), everything [`Dataset::said`]
    /// says of it, a line each, models named by `names`: the numbered notes of the history page
    /// and its plots, and the viewer's changes.
    fn run_notes<S: AsRef<str>>(&self, names: &[S]) -> Vec<Vec<String>> {
        (0..self.first().runs.len())
            .map(|i| {
                let (mut lines, models) = self.said(i);
                for (said, name) in models.iter().zip(names) {
                    lines.extend(said.iter().map(|n| format!("{}: {n}", name.as_ref())));
                }
                lines
            })
            .collect()
    }

    /// The values: a row per model and run (named by `keys`), a column per headline metric.
    fn rows(&self, short: &[String], keys: &[String]) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec!["model".to_string(), "run".to_string()];
        header.extend(self.first().metrics.iter().cloned());
        let mut rows = Vec::new();
        for (mr, name) in self.models.iter().zip(short) {
            for (i, cells) in mr.cells.iter().enumerate() {
                let mut row = vec![name.clone(), keys[i].clone()];
                row.extend(cells.iter().cloned());
                rows.push(row);
            }
        }
        (header, rows)
    }
}

/// A cell's value and its mark (`▲`, `▼` or none).
fn marked(cell: &str) -> (&str, &str) {
    match cell.strip_suffix(['▲', '▼']) {
        Some(v) => (v.trim_end(), &cell[v.len()..]),
        None => (cell, ""),
    }
}

/// The values table within `width`: the model and run columns, then as many metric columns as
/// fit, in blocks (each repeating model and run); the model's name on its first row only,
/// values right-aligned with their marks after them.
fn values_terminal(header: &[String], rows: &[Vec<String>], width: usize, paint: Paint) -> String {
    let len = |s: &str| s.chars().count();
    // Per column: the widest value, and whether any cell has a mark.
    let columns: Vec<(usize, bool)> = (0..header.len())
        .map(|c| {
            let value = (rows.iter().map(|r| len(marked(&r[c]).0)))
                .chain([len(&header[c])])
                .max()
                .unwrap_or(0);
            (value, rows.iter().any(|r| !marked(&r[c]).1.is_empty()))
        })
        .collect();
    let full = |c: usize| columns[c].0 + if columns[c].1 { 2 } else { 0 };
    let keys = full(0) + full(1) + 4;
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    for c in 2..header.len() {
        match blocks.last_mut() {
            Some(b) if keys + b.iter().map(|&i| full(i) + 2).sum::<usize>() + full(c) <= width => {
                b.push(c);
            }
            _ => blocks.push(vec![c]),
        }
    }
    let line = |cells: &[String], cols: &[usize], name: bool| -> String {
        let mut text = String::new();
        for &c in cols {
            let cell = if c == 0 && !name {
                ""
            } else {
                cells[c].as_str()
            };
            let (value, mark) = marked(cell);
            let pad = columns[c].0.saturating_sub(len(value));
            if c < 2 {
                text.push_str(value);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str(&" ".repeat(pad));
                text.push_str(value);
                if columns[c].1 {
                    let mark = if mark.is_empty() {
                        "  ".to_string()
                    } else {
                        format!(" {}", mark.trim())
                    };
                    text.push_str(&paint.marks(&mark));
                }
            }
            text.push_str("  ");
        }
        text.trim_end().to_string() + "\n"
    };
    let mut out = String::new();
    for (b, block) in blocks.into_iter().enumerate() {
        if b > 0 {
            out.push('\n');
        }
        let cols: Vec<usize> = [0, 1].into_iter().chain(block).collect();
        out.push_str(&paint.paint(line(header, &cols, true).trim_end(), Tone::Faint));
        out.push('\n');
        for (i, r) in rows.iter().enumerate() {
            out.push_str(&line(r, &cols, i == 0 || rows[i - 1][0] != r[0]));
        }
    }
    out
}

/// A flagged change as history says it: `REGRESSED -12.1 points, p (Holm) 0.0060`.
fn flag_note(t: &Comparison) -> String {
    let p = t
        .adjusted
        .map_or_else(String::new, |p| format!(", p (Holm) {}", p_text(p)));
    format!("{} {:+.1} points{p}", t.flag(), 100.0 * t.test.delta)
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
pub const LEGEND: &str = "% [95% CI] per run; ▲/▼: a significant change from the run before \
                          (same dataset; exact paired test, Holm over every model's headline \
                          metrics of the two runs), its size under the table";

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
    /// The Markdown view, per dataset: its runs (key, id, date, what changed for every model),
    /// the values table (a row per model and run, a column per headline metric), what happened
    /// to each model, and the short names' legend.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for d in Dataset::all(&self.models) {
            out.push_str(&format!("## Dataset {}\n\n", md_text(d.name)));
            for (head, under) in d.run_lines() {
                out.push_str(&format!("- {}\n", md_text(&head)));
                for u in under {
                    out.push_str(&format!("  - {}\n", md_text(&u)));
                }
            }
            let names: Vec<&str> = d.models.iter().map(|m| m.model.as_str()).collect();
            let short = shorten_names(&names, SHORT_NAME);
            let (header, rows) = d.rows(&short, &d.run_keys());
            out.push('\n');
            out.push_str(&md_table(&header, &rows, 2));
            let notes = d.notes(&short);
            if !notes.is_empty() {
                out.push('\n');
            }
            for n in notes {
                out.push_str(&format!("- {}\n", md_text(&n)));
            }
            let legend = name_legend(&names, &short);
            if !legend.is_empty() {
                out.push('\n');
                let rows: Vec<Vec<String>> =
                    (legend.into_iter()).map(|(s, f)| vec![s, f]).collect();
                out.push_str(&md_table(&["short name".into(), "model".into()], &rows, 1));
            }
            out.push('\n');
        }
        out
    }

    /// The terminal's view within `width` columns, per dataset: its runs, each id whole on its
    /// line with what changed for every model, the values table (a row per model and run,
    /// headline metrics as columns, in blocks when they do not fit), what happened to each
    /// model, and the short names' legend.
    pub fn terminal(&self, width: usize, paint: Paint) -> String {
        let mut out = String::new();
        for d in Dataset::all(&self.models) {
            out.push_str(&wrap(
                &format!("Dataset {}", printable(d.name)),
                width,
                "  ",
            ));
            out.push('\n');
            for (head, under) in d.run_lines() {
                out.push_str(&wrap(&format!("  {head}"), width, "    "));
                out.push('\n');
                for u in under {
                    out.push_str(&paint.marks(&wrap(&format!("    {u}"), width, "      ")));
                    out.push('\n');
                }
            }
            let names: Vec<&str> = d.models.iter().map(|m| m.model.as_str()).collect();
            let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
            // Room for the run column and two metrics beside the names.
            let widest = (d.models.iter())
                .flat_map(|m| m.cells.iter().flatten())
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0);
            let room = width.saturating_sub(10 + 2 * (widest + 2));
            let short = shorten_names(&names, name_width(room).max(12).min(longest));
            let (header, rows) = d.rows(&short, &d.run_keys());
            out.push('\n');
            out.push_str(&values_terminal(&header, &rows, width, paint));
            for n in d.notes(&short) {
                out.push_str(&paint.marks(&wrap(&format!("  {n}"), width, "    ")));
                out.push('\n');
            }
            out.push_str(&crate::report::name_lines(&names, &short, width));
            out.push('\n');
        }
        out
    }

    /// The values as CSV, a row per dataset, run and model: per headline metric its value,
    /// interval bounds, difference from the run before, p-value (Holm) and flag (raw fractions,
    /// as the other machine formats), then what changed.
    pub fn csv(&self) -> anyhow::Result<String> {
        let metrics: Vec<String> = {
            let mut seen: Vec<String> = Vec::new();
            for r in &self.table.rows {
                if !seen.contains(&r[3].text) {
                    seen.push(r[3].text.clone());
                }
            }
            seen
        };
        let mut header: Vec<String> = ["dataset", "run", "date", "model"]
            .map(String::from)
            .to_vec();
        for m in &metrics {
            header.push(m.clone());
            for part in ["ci_low", "ci_high", "delta", "p_holm", "flag"] {
                header.push(format!("{m} {part}"));
            }
        }
        header.push("changes".into());
        // (dataset, run, model) in first-seen order, each with its metrics' cells.
        type Row<'r> = (Vec<String>, Vec<Option<&'r [Cell]>>, String);
        let mut rows: Vec<Row> = Vec::new();
        for r in &self.table.rows {
            let key = vec![
                r[1].text.clone(),
                r[4].text.clone(),
                r[5].text.clone(),
                r[2].text.clone(),
            ];
            let at = match rows.iter().position(|(k, _, _)| *k == key) {
                Some(at) => at,
                None => {
                    rows.push((key, vec![None; metrics.len()], r[12].text.clone()));
                    rows.len() - 1
                }
            };
            let m = metrics.iter().position(|m| *m == r[3].text).unwrap_or(0);
            rows[at].1[m] = Some(r.as_slice());
        }
        let raw = |c: &Cell| match &c.raw {
            serde_json::Value::String(s) => crate::report::csv_cell(s).into_owned(),
            serde_json::Value::Null => String::new(),
            v => v.to_string(),
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&header)?;
        for (key, cells, changes) in &rows {
            let mut record: Vec<String> = key
                .iter()
                .map(|k| crate::report::csv_cell(k).into_owned())
                .collect();
            for cell in cells {
                for i in [6, 7, 8, 9, 10, 11] {
                    record.push(cell.map_or_else(String::new, |r| raw(&r[i])));
                }
            }
            record.push(crate::report::csv_cell(changes).into_owned());
            w.write_record(&record)?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    /// The HTML page: per dataset the trend plots, what happened in each run (numbered as on
    /// the plots), and the values, a row per run and model with the headline metrics as columns.
    pub fn html(&self) -> String {
        let mut pages = Vec::new();
        for d in Dataset::all(&self.models) {
            let names: Vec<&str> = d.models.iter().map(|m| m.model.as_str()).collect();
            let short = shorten_names(&names, SHORT_NAME);
            // Runs by their labels, as the plots' axis names them.
            let labels = &d.first().runs;
            let notes = (d.run_notes(&short).into_iter().enumerate())
                .filter(|(_, lines)| !lines.is_empty())
                .enumerate()
                .map(|(n, (run, lines))| (n + 1, labels[run].clone(), lines))
                .collect();
            let (header, rows) = d.rows(&short, labels);
            pages.push(DatasetPage {
                dataset: d.name,
                trends: (self.trends.iter())
                    .filter(|t| t.dataset == d.name)
                    .collect(),
                notes,
                header,
                rows,
                names: name_legend(&names, &short),
            });
        }
        html_page(&pages)
    }
}
