//! What each page shows, as plain data (the JSON API serves it as it is; `page` renders it):
//! the runs with their history, one run's headline, the problem × model grid, one problem's
//! samples, and the per-problem differences behind a comparison.

use super::{Loaded, ViewError, Viewer};
use crate::analysis::compare::compare;
use crate::analysis::history::{datasets, history, whole_runs, RunEntry, Stored};
use crate::dataset::Problem;
use crate::grade::{Answer, FoundBy, Outcome};
use crate::metrics::to_f64;
use crate::report::{found_summary, metric_label, FoundSummary, Interval};
use crate::rundir::record::{Record, SampleIndex, UnitOutcome};
use crate::scoring::{gold_of, rule_grade, ModelScore, RunResults};
use crate::util::clip_words;
use serde::Serialize;
use std::collections::HashMap;

/// Characters of a question's first line the grid shows.
const FIRST_LINE: usize = 120;

#[derive(Debug, Serialize)]
pub struct RunsView {
    pub folder: String,
    pub runs: Vec<RunRow>,
    /// The history table: a row per dataset, model, headline metric and run.
    pub history: Vec<HistoryRow>,
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
    pub status: String,
    /// `I/N` for a shard run (`gpassk run --shard`): listed, never in the history.
    pub shard: Option<String>,
    pub models: Vec<String>,
    /// The run before it from the same config on the same data, when served.
    pub previous: Option<String>,
    /// History's change and drift markers on this run.
    pub marks: Vec<String>,
    /// Per model one headline value (its first G-Pass@k, else its first headline metric).
    pub headline: Vec<Headline>,
}

#[derive(Debug, Serialize)]
pub struct Headline {
    pub model: String,
    pub metric: String,
    pub value: String,
}

/// The one value per model the runs list shows, from history's rows of run `name`.
fn headline(rows: &[HistoryRow], name: &str) -> Vec<Headline> {
    let mine: Vec<&HistoryRow> = rows.iter().filter(|r| r.run == name).collect();
    let mut out: Vec<Headline> = Vec::new();
    for r in &mine {
        if out.iter().any(|h| h.model == r.model) {
            continue;
        }
        let pick = (mine.iter())
            .find(|x| x.model == r.model && x.metric.starts_with("G-Pass"))
            .unwrap_or(r);
        out.push(Headline {
            model: pick.model.clone(),
            metric: pick.metric.clone(),
            value: pick.value.clone(),
        });
    }
    out
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
}

pub(super) fn runs_view(viewer: &Viewer, entries: &[RunEntry], skipped: Vec<String>) -> RunsView {
    // `gpassk history`'s rule: shard runs stay out of the series (their merged runs are in it).
    let (whole, note) = whole_runs(entries.to_vec(), viewer.root());
    let whole: Vec<RunEntry> = (whole.into_iter())
        .map(|e| with_results(viewer, e))
        .collect();
    let names = datasets(&whole, None);
    let h = history(&whole, &names, None);
    // Cells by the table's own keys, so a column added to history moves nothing here.
    let keys = &h.table.keys;
    let text = |r: &[crate::report::Cell], key: &str| {
        (keys.iter().position(|k| *k == key))
            .and_then(|i| r.get(i))
            .map_or_else(String::new, |c| c.text.clone())
    };
    let rows: Vec<HistoryRow> = (h.table.rows.iter())
        .map(|r| HistoryRow {
            dataset: text(r, "dataset"),
            model: text(r, "model"),
            metric: text(r, "metric"),
            run: text(r, "run"),
            value: text(r, "value"),
            delta: text(r, "delta"),
            p_holm: text(r, "p_holm"),
            flag: text(r, "flag"),
            changes: text(r, "changes"),
        })
        .collect();
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
    let name = e
        .dir
        .path()
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut marks: Vec<String> = (rows.iter())
        .filter(|r| r.run == name && !r.changes.is_empty())
        .map(|r| format!("{}: {}", r.model, r.changes))
        .collect();
    marks.sort();
    marks.dedup();
    RunRow {
        previous: viewer.previous(&name),
        dataset: e.manifest.dataset.name.clone(),
        created_at: e.manifest.created_at.clone(),
        status: e.manifest.status.as_str().to_string(),
        shard: e.manifest.shard.map(|s| s.to_string()),
        models: e.manifest.models.keys().cloned().collect(),
        marks,
        headline: headline(rows, &name),
        name,
    }
}

#[derive(Debug, Serialize)]
pub struct RunView {
    pub name: String,
    pub label: String,
    pub status: String,
    pub created_at: String,
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
    pub values: Vec<String>,
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
                .map(|k| Interval::of(m.estimate(k, None)).to_string())
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
    pub rows: Vec<ProblemRow>,
    /// Whether the grader-and-judge filter means anything here (the run used a judge).
    pub judged: bool,
    pub previous: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ProblemRow {
    pub id: String,
    pub subset: Option<String>,
    pub first_line: String,
    pub cells: Vec<GridCell>,
    pub unstable: bool,
    pub disagree: bool,
    pub changed: bool,
    pub judge_disagrees: bool,
    pub no_answer: bool,
}

/// One model on one problem: c of n, how many samples gave no answer, and the class.
#[derive(Debug, Clone, Serialize)]
pub struct GridCell {
    pub c: u64,
    pub n: u64,
    pub no_answer: u64,
    pub class: &'static str,
}

fn class_of(c: u64, n: u64) -> &'static str {
    match (c, n) {
        (_, 0) => "missing",
        (0, _) => "never",
        (c, n) if c == n => "always",
        _ => "sometimes",
    }
}

fn cell(m: &ModelScore, i: usize) -> GridCell {
    let p = &m.problems[i];
    let voters = m.votes.get(i).map_or(0, |v| u64::from(v.voters));
    GridCell {
        c: p.c,
        n: p.n,
        no_answer: p.n.saturating_sub(voters),
        class: class_of(p.c, p.n),
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
    let mut rows = Vec::with_capacity(loaded.plan.problems.len());
    for (i, p) in loaded.plan.problems.iter().enumerate() {
        let cells: Vec<GridCell> = results.models.iter().map(|m| cell(m, i)).collect();
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
        rows,
        judged,
        previous,
    })
}

fn problem_row(p: &Problem, cells: Vec<GridCell>, changed: bool, judge: bool) -> ProblemRow {
    let first = p
        .question
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let present: Vec<&GridCell> = cells.iter().filter(|c| c.n > 0).collect();
    let disagree = present.windows(2).any(|w| w[0].class != w[1].class);
    ProblemRow {
        id: p.id.clone(),
        subset: p.subset.clone(),
        first_line: clip_words(first.trim(), FIRST_LINE).into_owned(),
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

#[derive(Debug, Serialize)]
pub struct CompareView {
    pub a: String,
    pub b: String,
    pub rows: Vec<CompareRow>,
    pub skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct CompareRow {
    pub model: String,
    pub metric: String,
    pub a: String,
    pub b: String,
    /// B − A, in percentage points.
    pub delta: String,
    pub p_holm: Option<f64>,
    pub flagged: bool,
    pub shared: usize,
    /// The problems whose value moved, largest move first.
    pub problems: Vec<ProblemDiff>,
}

#[derive(Debug, Serialize)]
pub struct ProblemDiff {
    pub id: String,
    pub a: f64,
    pub b: f64,
}

pub fn compare_view(viewer: &Viewer, a: &str, b: &str) -> Result<CompareView, ViewError> {
    let (_, ra) = viewer.results(a)?;
    let (_, rb) = viewer.results(b)?;
    let family = rb.tested_family();
    let in_family =
        |m: &crate::metrics::MetricKind| family.iter().any(|h| h.identity() == m.identity());
    let compared = compare(&ra, &rb, &in_family);
    let rows = (compared.rows.iter())
        .map(|row| {
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
                shared: row.test.problems,
                problems,
            }
        })
        .collect();
    Ok(CompareView {
        a: a.to_string(),
        b: b.to_string(),
        rows,
        skipped: compared.skipped,
    })
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
    }
}
