//! What each page shows, as plain data (the JSON API serves it as it is; `page` renders it):
//! the runs with their history, one run's headline, the problem × model grid, one problem's
//! samples, and a comparison of two runs (compare's verdicts, drift and rows, with the
//! per-problem differences behind each row).

use super::{Loaded, ViewError, Viewer};
use crate::analysis::compare::{
    check_dataset, compare, drift_lines, setting_differences, verdicts, Verdict,
};
use crate::analysis::history::{datasets, history, whole_runs, RunEntry, Stored};
use crate::dataset::Problem;
use crate::grade::{Answer, FoundBy, Outcome};
use crate::metrics::{to_f64, MetricKind};
use crate::report::{found_summary, metric_label, Cell, FoundSummary, Interval};
use crate::rundir::record::{Record, SampleIndex, UnitOutcome};
use crate::scoring::{gold_of, rule_grade, ModelScore, RunResults};
use serde::Serialize;
use std::collections::HashMap;

/// Characters of a question's first sentence the grid shows.
const PREVIEW: usize = 160;

/// A value as the pages show it: the number, and its interval (kept whole on its own).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    pub value: String,
    pub bounds: Option<String>,
}

impl From<Interval> for Shown {
    fn from(i: Interval) -> Shown {
        Shown {
            value: i.value_text(),
            bounds: i.bounds_text(),
        }
    }
}

/// `2026-11-30T06:00:00Z` as people read it: `Mon 30 Nov 2026, 06:00 UTC`; a stamp that does
/// not parse is shown as written.
pub fn human_time(stamp: &str) -> String {
    let parsed = humantime::parse_rfc3339_weak(stamp.trim().trim_end_matches('Z'));
    let Ok(at) = parsed else {
        return stamp.replace('T', " ");
    };
    // `Mon, 30 Nov 2026 06:00:00 GMT`
    let http = httpdate::fmt_http_date(at);
    let parts: Vec<&str> = http.split(' ').collect();
    match parts.as_slice() {
        [day, date, month, year, time, _] => format!(
            "{} {} {month} {year}, {} UTC",
            day.trim_end_matches(','),
            date.trim_start_matches('0'),
            time.get(..5).unwrap_or(time)
        ),
        _ => stamp.to_string(),
    }
}

#[derive(Debug, Serialize)]
pub struct RunsView {
    pub folder: String,
    pub runs: Vec<RunRow>,
    /// The history table: a row per dataset, model, headline metric and run.
    pub history: Vec<HistoryRow>,
    /// What changed from a run to the next: a change every model shares once, flagged changes.
    pub changes: Vec<String>,
    /// What the history leaves out (shard runs: their merged runs are in it).
    pub history_notes: Vec<String>,
    /// Runs that could not be read or scored, with the reason.
    pub skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RunRow {
    pub name: String,
    pub dataset: String,
    pub created_at: String,
    /// `created_at` as people read it.
    pub when: String,
    pub status: String,
    /// `I/N` for a shard run (`gpassk run --shard`): listed, never in the history.
    pub shard: Option<String>,
    /// The headline metrics the values are of (history's, the tested family).
    pub metrics: Vec<String>,
    pub models: Vec<RunModel>,
    /// The run before it from the same config on the same data, when served.
    pub previous: Option<String>,
    /// History's change and drift markers on this run, each once with its models.
    pub marks: Vec<Mark>,
}

/// One model of a listed run: its value of each headline metric (none when history has none).
#[derive(Debug, Serialize)]
pub struct RunModel {
    pub name: String,
    pub values: Vec<Option<RunValue>>,
}

#[derive(Debug, Serialize)]
pub struct RunValue {
    pub shown: Shown,
    /// History's flag of the change from the run before (`REGRESSED`, `improved`, …).
    pub flag: String,
    pub delta: String,
    pub p_holm: String,
}

/// A change marker and the models it applies to (`all` when every model of the run).
#[derive(Debug, Serialize)]
pub struct Mark {
    pub change: String,
    pub models: Vec<String>,
    pub all: bool,
}

#[derive(Debug, Serialize)]
pub struct HistoryRow {
    pub dataset: String,
    pub model: String,
    pub metric: String,
    pub run: String,
    pub value: String,
    pub delta: String,
    pub p_holm: String,
    pub flag: String,
    pub changes: String,
    /// The value and its interval as the pages show them.
    #[serde(skip)]
    shown: Shown,
}

/// The history table's rows, by the table's own keys (a column added to history moves nothing).
fn history_rows(table: &crate::report::Tabular) -> Vec<HistoryRow> {
    let at = |key: &str| table.keys.iter().position(|k| *k == key);
    let text = |r: &[Cell], key: &str| {
        (at(key).and_then(|i| r.get(i))).map_or_else(String::new, |c| c.text.clone())
    };
    let num = |r: &[Cell], key: &str| (at(key).and_then(|i| r.get(i))).and_then(|c| c.raw.as_f64());
    (table.rows.iter())
        .map(|r| {
            let bounds = num(r, "ci_low").zip(num(r, "ci_high"));
            HistoryRow {
                dataset: text(r, "dataset"),
                model: text(r, "model"),
                metric: text(r, "metric"),
                run: text(r, "run"),
                value: text(r, "value"),
                delta: text(r, "delta"),
                p_holm: text(r, "p_holm"),
                flag: text(r, "flag"),
                changes: text(r, "changes"),
                shown: Interval::percent(num(r, "value"), bounds).into(),
            }
        })
        .collect()
}

pub(super) fn runs_view(viewer: &Viewer, entries: &[RunEntry], skipped: Vec<String>) -> RunsView {
    // `gpassk history`'s rule: shard runs stay out of the series (their merged runs are in it).
    let (whole, note) = whole_runs(entries.to_vec(), viewer.root());
    let whole: Vec<RunEntry> = (whole.into_iter())
        .map(|e| with_results(viewer, e))
        .collect();
    let names = datasets(&whole, None);
    let h = history(&whole, &names, None);
    let rows = history_rows(&h.table);
    let runs = entries.iter().rev().map(|e| run_row(viewer, e, &rows));
    let mut skipped = skipped;
    skipped.extend(h.warnings);
    RunsView {
        folder: viewer.root().display().to_string(),
        runs: runs.collect(),
        history: rows,
        changes: h.changes,
        history_notes: note.into_iter().collect(),
        skipped,
    }
}

/// A run with the viewer's scores of it attached, so the history grades nothing again (a run the
/// viewer cannot score is left to the history, which says why it skips it).
fn with_results(viewer: &Viewer, mut e: RunEntry) -> RunEntry {
    if let Ok((_, results)) = viewer.results(&e.name()) {
        e.stored = Some(std::sync::Arc::new(Stored {
            results: (*results).clone(),
            fingerprints: None,
        }));
    }
    e
}

fn run_row(viewer: &Viewer, e: &RunEntry, rows: &[HistoryRow]) -> RunRow {
    let name = e.name();
    let mine: Vec<&HistoryRow> = rows.iter().filter(|r| r.run == name).collect();
    let mut metrics: Vec<String> = Vec::new();
    for r in &mine {
        if !metrics.contains(&r.metric) {
            metrics.push(r.metric.clone());
        }
    }
    let models: Vec<RunModel> = (model_order(&e.manifest).iter())
        .map(|m| RunModel {
            name: m.clone(),
            values: (metrics.iter())
                .map(|metric| {
                    let r = mine.iter().find(|r| &r.model == m && &r.metric == metric)?;
                    Some(RunValue {
                        shown: r.shown.clone(),
                        flag: r.flag.clone(),
                        delta: r.delta.clone(),
                        p_holm: r.p_holm.clone(),
                    })
                })
                .collect(),
        })
        .collect();
    RunRow {
        previous: viewer.previous(&name),
        dataset: e.manifest.dataset.name.clone(),
        created_at: e.manifest.created_at.clone(),
        when: human_time(&e.manifest.created_at),
        status: e.manifest.status.as_str().to_string(),
        shard: e.manifest.shard.map(|s| s.to_string()),
        metrics,
        marks: marks(&mine, e.manifest.models.len()),
        models,
        name,
    }
}

/// A run's models in its config's order (the manifest keeps them by name).
fn model_order(m: &crate::rundir::manifest::Manifest) -> Vec<String> {
    let listed = m.config["models"].as_array().into_iter().flatten();
    let mut out: Vec<String> = (listed.filter_map(|x| x["name"].as_str()))
        .filter(|n| m.models.contains_key(*n))
        .map(String::from)
        .collect();
    for k in m.models.keys() {
        if !out.contains(k) {
            out.push(k.clone());
        }
    }
    out
}

/// History's change tags of one run (every metric's row carries them), each once with the models
/// it applies to; `all` when it applies to each of the run's `count` models.
fn marks(mine: &[&HistoryRow], count: usize) -> Vec<Mark> {
    let mut out: Vec<Mark> = Vec::new();
    for r in mine {
        for tag in r.changes.split(", ").filter(|t| !t.is_empty()) {
            match out.iter_mut().find(|m| m.change == tag) {
                Some(m) if !m.models.contains(&r.model) => m.models.push(r.model.clone()),
                Some(_) => {}
                None => out.push(Mark {
                    change: tag.to_string(),
                    models: vec![r.model.clone()],
                    all: false,
                }),
            }
        }
    }
    for m in &mut out {
        m.all = count > 1 && m.models.len() == count;
    }
    out
}

#[derive(Debug, Serialize)]
pub struct RunView {
    pub name: String,
    pub label: String,
    pub status: String,
    pub created_at: String,
    /// `created_at` as people read it.
    pub when: String,
    pub problems: usize,
    pub metrics: Vec<String>,
    pub models: Vec<ModelRow>,
    pub previous: Option<String>,
    /// How each model's answers were found: the guessed share and its warning.
    pub answers_found: FoundSummary,
}

#[derive(Debug, Serialize)]
pub struct ModelRow {
    pub name: String,
    pub model_id: String,
    pub status: String,
    pub n: u32,
    /// The headline values in `metrics`' order, each with its interval.
    pub values: Vec<Shown>,
    pub correct: u64,
    pub wrong: u64,
    pub no_answer: u64,
    pub missing: u64,
}

pub fn run_view(viewer: &Viewer, name: &str) -> Result<RunView, ViewError> {
    let (loaded, results) = viewer.results(name)?;
    let headline = results.headline();
    let models = (results.models.iter())
        .map(|m| ModelRow {
            name: m.name.clone(),
            model_id: m.model_id.clone(),
            status: (loaded.manifest.models.get(&m.name))
                .map_or("", |mm| mm.status.as_str())
                .to_string(),
            n: m.n,
            values: (headline.iter())
                .map(|k| Interval::of(m.estimate(k, None)).into())
                .collect(),
            correct: m.correct,
            wrong: m.wrong,
            no_answer: m.no_answer,
            missing: m.missing,
        })
        .collect();
    Ok(RunView {
        name: name.to_string(),
        label: results.label(),
        status: loaded.manifest.status.as_str().to_string(),
        created_at: loaded.manifest.created_at.clone(),
        when: human_time(&loaded.manifest.created_at),
        problems: loaded.plan.problems.len(),
        metrics: headline.iter().map(metric_label).collect(),
        models,
        previous: viewer.previous(name),
        answers_found: found_summary(&results),
    })
}

#[derive(Debug, Serialize)]
pub struct ProblemsView {
    pub run: String,
    pub models: Vec<String>,
    /// The headline metrics each cell has a per-problem value of.
    pub metrics: Vec<String>,
    pub rows: Vec<ProblemRow>,
    /// Whether the grader-and-judge filter means anything here (the run used a judge).
    pub judged: bool,
    pub previous: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ProblemRow {
    pub id: String,
    pub subset: Option<String>,
    /// The question's first sentence, its math readable, on one line.
    pub preview: String,
    pub cells: Vec<GridCell>,
    pub unstable: bool,
    pub disagree: bool,
    pub changed: bool,
    pub judge_disagrees: bool,
    pub no_answer: bool,
}

/// One model on one problem: c of n, how many samples gave no answer, the class, the shade on
/// the grid's colour scale, and the problem's value of each headline metric.
#[derive(Debug, Clone, Serialize)]
pub struct GridCell {
    pub c: u64,
    pub n: u64,
    pub no_answer: u64,
    pub class: &'static str,
    /// 0 (never correct) … 6 (always); a step per fifth of `c/n` in between, so 1/16 and 15/16
    /// never share a colour.
    pub shade: u8,
    /// In `ProblemsView::metrics`' order; none where the model has no value.
    pub values: Vec<Option<f64>>,
}

fn class_of(c: u64, n: u64) -> &'static str {
    match (c, n) {
        (_, 0) => "missing",
        (0, _) => "never",
        (c, n) if c == n => "always",
        _ => "sometimes",
    }
}

/// The grid's colour step of `c` of `n`: 0 and 6 for never and always, 1…5 for each fifth of the
/// share in between (symmetric: `c` of `n` and `n − c` of `n` sit as far from the middle).
fn shade_of(c: u64, n: u64) -> u8 {
    if n == 0 || c == 0 {
        return 0;
    }
    if c >= n {
        return 6;
    }
    let share = c as f64 / n as f64;
    match share {
        s if s <= 0.2 => 1,
        s if s <= 0.4 => 2,
        s if s < 0.6 => 3,
        s if s < 0.8 => 4,
        _ => 5,
    }
}

fn cell(m: &ModelScore, i: usize, metrics: &[MetricKind]) -> GridCell {
    let p = &m.problems[i];
    let voters = m.votes.get(i).map_or(0, |v| u64::from(v.voters));
    let values = (metrics.iter())
        .map(|k| {
            let col = m.values.column(k)?;
            m.values.rows.get(i)?.get(col)?.as_ref().map(to_f64)
        })
        .collect();
    GridCell {
        c: p.c,
        n: p.n,
        no_answer: p.n.saturating_sub(voters),
        class: class_of(p.c, p.n),
        shade: shade_of(p.c, p.n),
        values,
    }
}

/// Per model, each problem's (c, n) in a run (for "changed since the previous run").
fn counts(results: &RunResults) -> HashMap<(&str, &str), (u64, u64)> {
    let mut out = HashMap::new();
    for m in &results.models {
        for p in &m.problems {
            out.insert((m.name.as_str(), p.id.as_str()), (p.c, p.n));
        }
    }
    out
}

pub fn problems_view(viewer: &Viewer, name: &str) -> Result<ProblemsView, ViewError> {
    let (loaded, results) = viewer.results(name)?;
    let previous = viewer.previous(name);
    let before = previous.as_deref().and_then(|p| viewer.results(p).ok());
    let before = before.as_ref().map(|(_, r)| counts(r));
    let judged = results.models.iter().any(|m| m.judge_overruled.is_some());
    let metrics = results.headline();
    let mut rows = Vec::with_capacity(loaded.plan.problems.len());
    for (i, p) in loaded.plan.problems.iter().enumerate() {
        let cells: Vec<GridCell> = (results.models.iter())
            .map(|m| cell(m, i, &metrics))
            .collect();
        let changed = before.as_ref().is_some_and(|b| {
            (results.models.iter().zip(&cells))
                .any(|(m, c)| b.get(&(m.name.as_str(), p.id.as_str())) != Some(&(c.c, c.n)))
        });
        let judge_disagrees = judged && judge_disagrees(&results, i);
        rows.push(problem_row(p, cells, changed, judge_disagrees));
    }
    Ok(ProblemsView {
        run: name.to_string(),
        models: results.models.iter().map(|m| m.name.clone()).collect(),
        metrics: metrics.iter().map(metric_label).collect(),
        rows,
        judged,
        previous,
    })
}

fn problem_row(p: &Problem, cells: Vec<GridCell>, changed: bool, judge: bool) -> ProblemRow {
    let present: Vec<&GridCell> = cells.iter().filter(|c| c.n > 0).collect();
    let disagree = present.windows(2).any(|w| w[0].class != w[1].class);
    ProblemRow {
        id: p.id.clone(),
        subset: p.subset.clone(),
        preview: super::math::first_sentence(&p.question, PREVIEW),
        unstable: cells.iter().any(|c| c.class == "sometimes"),
        no_answer: cells.iter().any(|c| c.no_answer > 0),
        disagree,
        changed,
        judge_disagrees: judge,
        cells,
    }
}

/// Whether any model's judge verdict on problem `i` differs from the rule grader's, as scoring
/// counted them.
fn judge_disagrees(results: &RunResults, i: usize) -> bool {
    (results.models.iter())
        .any(|m| (m.judge_overruled.as_ref()).is_some_and(|o| o.get(i).is_some_and(|&c| c > 0)))
}

#[derive(Debug, Serialize)]
pub struct ProblemView {
    pub run: String,
    pub id: String,
    pub subset: Option<String>,
    pub question: String,
    pub gold: String,
    pub models: Vec<ModelSamples>,
    /// The same problem in the previous run, per model.
    pub before: Option<Before>,
}

#[derive(Debug, Serialize)]
pub struct Before {
    pub run: String,
    pub models: Vec<ModelSamples>,
}

#[derive(Debug, Serialize)]
pub struct ModelSamples {
    pub model: String,
    /// The run's n for this model.
    pub n: u32,
    /// Correct samples of those shown (greedy apart).
    pub c: u32,
    pub clusters: Vec<Cluster>,
    pub samples: Vec<SampleView>,
}

/// Samples whose extracted answers are the same answer, with its verdict.
#[derive(Debug, Serialize)]
pub struct Cluster {
    pub answer: String,
    pub votes: u32,
    pub correct: bool,
}

#[derive(Debug, Serialize)]
pub struct SampleView {
    /// `0`…`n-1`, or `greedy`.
    pub index: String,
    pub extracted: Option<String>,
    /// How the answer was found (`boxed`, `marker`, …, `last_number`, `none`); None when the run
    /// kept the answer without saying how.
    pub found_by: Option<&'static str>,
    /// Found by a heuristic (the last math span or number): a guess.
    pub heuristic: bool,
    /// The rule grader's outcome.
    pub rule: &'static str,
    /// The outcome that counts (the judge's, where it decided).
    pub verdict: &'static str,
    pub finish_reason: Option<String>,
    pub outcome: &'static str,
    pub completion_tokens: Option<u64>,
    pub latency_ms: u64,
    pub response: String,
    pub error: Option<String>,
    pub search: Option<SearchView>,
}

#[derive(Debug, Serialize)]
pub struct SearchView {
    pub answer: Option<String>,
    pub path: Vec<String>,
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Correct => "correct",
        Outcome::Wrong => "wrong",
        Outcome::NoAnswer => "no answer",
    }
}

fn unit_name(o: UnitOutcome) -> &'static str {
    match o {
        UnitOutcome::Ok => "ok",
        UnitOutcome::Truncated => "truncated",
        UnitOutcome::ApiError => "api error",
    }
}

pub fn problem_view(viewer: &Viewer, name: &str, id: &str) -> Result<ProblemView, ViewError> {
    let loaded = viewer.loaded(name)?;
    let problem = find_problem(&loaded, id)?;
    let models = all_samples(viewer, &loaded, problem)?;
    let before = viewer.previous(name).and_then(|prev| {
        let l = viewer.loaded(&prev).ok()?;
        let p = find_problem(&l, id).ok()?;
        let models = all_samples(viewer, &l, p).ok()?;
        Some(Before { run: prev, models })
    });
    Ok(ProblemView {
        run: name.to_string(),
        id: problem.id.clone(),
        subset: problem.subset.clone(),
        question: problem.question.clone(),
        gold: problem.answer.clone(),
        models,
        before,
    })
}

fn find_problem<'a>(loaded: &'a Loaded, id: &str) -> Result<&'a Problem, ViewError> {
    (loaded.plan.problems.iter())
        .find(|p| p.id == id)
        .ok_or_else(|| ViewError::NotFound(format!("problem {id:?} in run {}", loaded.name)))
}

fn all_samples(
    viewer: &Viewer,
    loaded: &Loaded,
    problem: &Problem,
) -> Result<Vec<ModelSamples>, ViewError> {
    (loaded.plan.settings.models.iter())
        .map(|m| model_samples(viewer, loaded, &m.name, problem))
        .collect()
}

/// One model's samples of one problem: the first usable record of each planned unit (as scoring
/// counts them), graded as scoring grades them.
pub fn model_samples(
    viewer: &Viewer,
    loaded: &Loaded,
    model: &str,
    problem: &Problem,
) -> Result<ModelSamples, ViewError> {
    let settings = (loaded.plan.settings.models.iter())
        .find(|m| m.name == model)
        .ok_or_else(|| ViewError::NotFound(format!("model {model}")))?;
    let (n, greedy) = (settings.sampling.n, settings.sampling.greedy);
    let records = viewer.with_index(loaded, model, |index, path| {
        index.records(path, &problem.id)
    })?;
    let records = records.map_err(|e| ViewError::Run(e.to_string()))?;
    let mut slots: Vec<Option<Record>> = (0..=n).map(|_| None).collect();
    for r in records.into_iter().filter(Record::usable) {
        if let Some(s) = r.sample_index.slot(n, greedy) {
            slots[s].get_or_insert(r);
        }
    }
    let verdicts = viewer.verdicts(loaded, model);
    let grade = loaded.plan.settings.evaluation.grade_config();
    let gold = gold_of(problem);
    let mut samples = Vec::new();
    let mut clusters: Vec<(String, Cluster)> = Vec::new();
    for r in slots.into_iter().flatten() {
        let g = rule_grade(&gold, &r, &grade);
        let rule = g.verdict.outcome;
        let verdict = verdicts.as_ref().map_or(rule, |j| {
            j.decide(&problem.id, (r.sample_index, g.text), rule, g.found_by)
        });
        let (extracted, found_by) = (g.verdict.extracted, g.found_by);
        if let (Some(x), true) = (&extracted, r.sample_index != SampleIndex::Greedy) {
            add_vote(&mut clusters, x, verdict == Outcome::Correct);
        }
        let graded = Graded {
            extracted,
            found_by,
            rule,
            verdict,
        };
        samples.push(sample_view(r, graded));
    }
    let c = (samples.iter())
        .filter(|s| s.index != "greedy" && s.verdict == "correct")
        .count() as u32;
    let mut clusters: Vec<Cluster> = clusters.into_iter().map(|c| c.1).collect();
    clusters.sort_by_key(|c| std::cmp::Reverse(c.votes));
    Ok(ModelSamples {
        model: model.to_string(),
        n,
        c,
        clusters,
        samples,
    })
}

fn add_vote(clusters: &mut Vec<(String, Cluster)>, answer: &str, correct: bool) {
    let key = Answer::new(answer).key().to_string();
    match clusters.iter_mut().find(|c| c.0 == key) {
        Some(c) => c.1.votes += 1,
        None => clusters.push((
            key,
            Cluster {
                answer: answer.to_string(),
                votes: 1,
                correct,
            },
        )),
    }
}

/// A sample's grade as the page shows it.
struct Graded {
    extracted: Option<String>,
    found_by: Option<FoundBy>,
    rule: Outcome,
    verdict: Outcome,
}

fn sample_view(r: Record, g: Graded) -> SampleView {
    SampleView {
        index: r.sample_index.to_string(),
        extracted: g.extracted,
        found_by: g.found_by.map(FoundBy::as_str),
        heuristic: g.found_by.is_some_and(FoundBy::is_heuristic),
        rule: outcome_name(g.rule),
        verdict: outcome_name(g.verdict),
        finish_reason: r.finish_reason,
        outcome: unit_name(r.outcome),
        completion_tokens: r.usage.and_then(|u| u.completion_tokens),
        latency_ms: r.latency_ms,
        response: bounded(r.response.or(r.extracted).unwrap_or_default()),
        error: r.error,
        search: r.search.map(|s| SearchView {
            answer: s.answer,
            path: s.path,
        }),
    }
}

/// Characters of one response the viewer shows (a page of many samples stays loadable).
const RESPONSE_CHARS: usize = 100_000;

fn bounded(text: String) -> String {
    match text.char_indices().nth(RESPONSE_CHARS) {
        None => text,
        Some((at, _)) => {
            let rest = text[at..].chars().count();
            format!("{}\n[… {rest} more characters not shown]", &text[..at])
        }
    }
}

/// A search's tree file, as stored: the record of that unit names it.
pub fn tree_text(
    viewer: &Viewer,
    name: &str,
    (model, id, index): (&str, &str, &str),
) -> Result<String, ViewError> {
    let loaded = viewer.loaded(name)?;
    let problem = find_problem(&loaded, id)?;
    let records = viewer.with_index(&loaded, model, |ix, path| ix.records(path, &problem.id))?;
    let records = records.map_err(|e| ViewError::Run(e.to_string()))?;
    let tree = (records.into_iter())
        .find(|r| r.sample_index.to_string() == index && r.search.is_some())
        .and_then(|r| r.search)
        .ok_or_else(|| ViewError::NotFound(format!("search tree {model} {id} {index}")))?;
    let path = loaded.dir.resolve(std::path::Path::new(&tree.tree));
    let inside = (path.canonicalize().ok())
        .zip(loaded.dir.path().canonicalize().ok())
        .is_some_and(|(p, run)| p.starts_with(run));
    if !inside {
        return Err(ViewError::BadRequest(format!(
            "tree {}: outside the run",
            tree.tree
        )));
    }
    crate::util::read_bounded_string(&path, TREE_BYTES).map_err(|e| ViewError::Run(e.to_string()))
}

/// The largest tree file shown.
const TREE_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, Serialize)]
pub struct CompareView {
    pub a: String,
    pub b: String,
    /// Tested rows of the family (Holm's correction runs over these), and how many are flagged.
    pub tested: usize,
    pub flagged: usize,
    /// A verdict per model (B's order, then models only A has), in compare's words.
    pub verdicts: Vec<ModelVerdictView>,
    /// Changes (served model, fingerprint) every compared model shares, each said once
    /// (`all 5 models: …`); the verdicts' `drift` holds the rest.
    pub shared: Vec<String>,
    /// The settings that differ between the runs (compare's warnings).
    pub differences: Vec<String>,
    /// Flagged rows first, then the rest of the tested family, then exploratory rows; in the
    /// verdicts' model order within each.
    pub rows: Vec<CompareRow>,
    pub skipped: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelVerdictView {
    pub model: String,
    /// As compare prints it: `REGRESSED`, `improved`, `no detectable change`, ….
    pub verdict: &'static str,
    /// One word for the page's colour: regressed, improved, mixed, same, incomparable.
    pub kind: &'static str,
    pub reason: String,
    pub drift: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub model: String,
    pub metric: String,
    pub a: String,
    pub b: String,
    /// B − A, in percentage points.
    pub delta: String,
    pub p_holm: Option<f64>,
    pub flagged: bool,
    /// As compare prints it: `REGRESSED`, `improved`, `untested`, `exploratory` or empty.
    pub flag: &'static str,
    /// In the tested family (else exploratory).
    pub family: bool,
    pub shared: usize,
    /// The problems whose value moved, largest move first.
    pub problems: Vec<ProblemDiff>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProblemDiff {
    pub id: String,
    pub a: f64,
    pub b: f64,
}

fn verdict_kind(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::Mixed => "mixed",
        Verdict::NoDetectableChange => "same",
        Verdict::NotComparable => "incomparable",
    }
}

/// Runs `a` and `b` compared as `gpassk compare` compares them (the same checks, rows, Holm
/// family, verdicts and drift), kept while neither run changes.
pub fn compare_view(viewer: &Viewer, a: &str, b: &str) -> Result<CompareView, ViewError> {
    viewer.compared(a, b, || compare_now(viewer, a, b))
}

fn compare_now(viewer: &Viewer, a: &str, b: &str) -> Result<CompareView, ViewError> {
    let (la, ra) = viewer.results(a)?;
    let (lb, rb) = viewer.results(b)?;
    check_dataset(&ra, &rb).map_err(|e| ViewError::BadRequest(e.0))?;
    let family = rb.tested_family();
    let in_family = |m: &MetricKind| family.iter().any(|h| h.identity() == m.identity());
    let compared = compare(&ra, &rb, &in_family);
    let entry = |l: &Loaded| RunEntry::of_dir(l.dir.clone(), l.manifest.clone());
    let drift = drift_lines([&entry(&la), &entry(&lb)], &rb);
    let (verdicts, shared) = verdicts(&ra, &rb, &compared, &drift);
    let order = |model: &str| verdicts.iter().position(|v| v.model == model);
    let mut rows: Vec<(usize, CompareRow)> = (compared.rows.iter())
        .map(|row| {
            let rank = if row.flagged() {
                0
            } else if row.in_family {
                1
            } else {
                2
            };
            (rank, compare_row(&ra, &rb, row))
        })
        .collect();
    rows.sort_by_key(|(rank, r)| (*rank, order(&r.model)));
    Ok(CompareView {
        a: a.to_string(),
        b: b.to_string(),
        tested: compared.family_tested,
        flagged: compared.rows.iter().filter(|c| c.flagged()).count(),
        verdicts: (verdicts.into_iter())
            .map(|v| ModelVerdictView {
                verdict: v.verdict.as_str(),
                kind: verdict_kind(v.verdict),
                model: v.model,
                reason: v.reason,
                drift: v.drift,
            })
            .collect(),
        shared,
        differences: setting_differences(&ra, &rb),
        rows: rows.into_iter().map(|r| r.1).collect(),
        skipped: compared.skipped,
    })
}

fn compare_row(
    ra: &RunResults,
    rb: &RunResults,
    row: &crate::analysis::compare::Comparison,
) -> CompareRow {
    let ma = ra.models.iter().find(|m| m.name == row.model);
    let mb = rb.models.iter().find(|m| m.name == row.model);
    let problems = ma
        .zip(mb)
        .map_or_else(Vec::new, |(ma, mb)| diffs(ma, mb, &row.kind));
    CompareRow {
        model: row.model.clone(),
        metric: row.label(),
        a: Interval::percent(Some(row.test.a), None).to_string(),
        b: Interval::percent(Some(row.test.b), None).to_string(),
        delta: format!("{:+.1}", 100.0 * row.test.delta),
        p_holm: row.adjusted,
        flagged: row.flagged(),
        flag: row.flag(),
        family: row.in_family,
        shared: row.test.problems,
        problems,
    }
}

/// The problems both models scored whose value of `metric` differs.
fn diffs(
    ma: &ModelScore,
    mb: &ModelScore,
    metric: &crate::metrics::MetricKind,
) -> Vec<ProblemDiff> {
    let (Some(ca), Some(cb)) = (ma.values.column(metric), mb.values.column(metric)) else {
        return Vec::new();
    };
    let index: HashMap<&str, usize> = (ma.problems.iter().enumerate())
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    let mut out: Vec<ProblemDiff> = (mb.problems.iter().enumerate())
        .filter_map(|(ib, p)| {
            let ia = *index.get(p.id.as_str())?;
            let va = to_f64(ma.values.rows[ia][ca].as_ref()?);
            let vb = to_f64(mb.values.rows[ib][cb].as_ref()?);
            (va != vb).then(|| ProblemDiff {
                id: p.id.clone(),
                a: va,
                b: vb,
            })
        })
        .collect();
    out.sort_by(|x, y| (y.b - y.a).abs().total_cmp(&(x.b - x.a).abs()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_responses_are_cut_with_a_note_and_classes_follow_c_of_n() {
        let long = "é".repeat(RESPONSE_CHARS + 5);
        let shown = bounded(long);
        assert!(
            shown.ends_with("[… 5 more characters not shown]"),
            "{}",
            &shown[shown.len() - 40..]
        );
        assert_eq!(bounded("short".into()), "short");
        let classes = [(0, 0), (0, 4), (2, 4), (4, 4)].map(|(c, n)| class_of(c, n));
        assert_eq!(classes, ["missing", "never", "sometimes", "always"]);
        // Every count of 16 on the scale: 1/16 and 15/16 apart, as far from the middle.
        let shades: Vec<u8> = (0..=16).map(|c| shade_of(c, 16)).collect();
        assert_eq!(shades, [0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6]);
        assert!((0..=16).all(|c| shades[c] + shades[16 - c] == 6));
    }

    #[test]
    fn times_read_as_words_and_a_stamp_that_does_not_parse_as_written() {
        assert_eq!(
            human_time("2026-01-01T00:05:59.999Z"),
            "Thu 1 Jan 2026, 00:05 UTC"
        );
        assert_eq!(
            human_time("2026-11-30T06:00:00Z"),
            "Mon 30 Nov 2026, 06:00 UTC"
        );
        assert_eq!(
            human_time("2026-11-30T06:00:00+02:00"),
            "2026-11-30 06:00:00+02:00"
        );
        assert_eq!(human_time("yesterday"), "yesterday");
    }
}
