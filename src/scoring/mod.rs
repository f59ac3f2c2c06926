//! Grading stored samples and turning them into per-problem counts, votes, exact metrics and
//! intervals; loading a whole run directory back for `score`, `report`, `compare` and `audit`.

pub mod calls;
pub mod found;
pub mod grow;
pub mod judge;
pub mod label;
pub mod paid;
pub mod steps;
pub mod stored;
pub mod verifier_calls;
pub mod verifier_metrics;

use crate::client::{ApiKey, Usage};
use crate::config::{GraderMode, JudgeInput, JudgeSettings, ModelSettings, Strategy};
use crate::dataset::Problem;
use crate::error::BadInput;
use crate::grade::{extraction, Answer, Extraction, FoundBy, Gold, GradeConfig, Outcome};
use crate::metrics::{aggregate, Aggregate, MetricKind, ProblemCounts, Tau};
use crate::plan::Plan;
use crate::rundir::manifest::Manifest;
use crate::rundir::record::{
    read_batches, read_records, CheckpointError, LineBatch, Record, RecordAnswer, SampleIndex,
    SearchStats, UnitOutcome,
};
use crate::rundir::RunDir;
use crate::scoring::judge::{
    judge_pending, render, response_hash, JudgeJob, JudgeStats, JudgeVerdicts,
};
use crate::stats::{estimates, problem_values, Estimate, ProblemValues, Vote};
use crate::util::{hex, id_index, short, Notes, Shutdown};
use anyhow::{Context, Result};
use num_rational::Ratio;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex, OnceLock};

// Per-unit states, kept as one byte per (problem, slot) so a million units cost a megabyte.
const MISSING: u8 = 0;
const WRONG: u8 = 1;
const NO_ANSWER: u8 = 2;
const CORRECT: u8 = 3;

/// One model's graded samples and metrics.
#[derive(Debug, Clone)]
pub struct ModelScore {
    pub name: String,
    pub model_id: String,
    /// The run's n for this model.
    pub n: u32,
    pub problems: Vec<ProblemCounts>,
    pub correct: u64,
    pub wrong: u64,
    pub no_answer: u64,
    pub truncated: u64,
    /// Units with no usable sample (API errors or never sampled).
    pub missing: u64,
    pub served_models: BTreeMap<String, u64>,
    pub aggregate: Aggregate,
    /// Majority votes of the samples, aligned with `problems`.
    pub votes: Vec<Vote>,
    /// Every metric of every problem, aligned with `problems`.
    pub values: ProblemValues,
    /// Every metric overall and per subset, with its 95% interval.
    pub estimates: Vec<Estimate>,
    /// What the scored units cost: calls, tokens, code runs, wall time.
    pub effort: Effort,
    /// An imported run's second verdict: the source harness's own, where it kept one per sample.
    pub source: Option<SourceScore>,
    /// What the verifier's scores came to, when the run has a verifier (its metrics are among
    /// `values` and `estimates`).
    pub verifier: Option<verifier_metrics::VerifierSummary>,
    /// With a judge: per problem (aligned with `problems`), its samples (greedy answers too)
    /// whose judge verdict differs from the rule grader's.
    pub judge_overruled: Option<Vec<u32>>,
    /// Per problem, what it adds to the unit totals beyond its counts (no answer, truncated,
    /// how its answers were found): what keeps the totals exact when one problem is graded again
    /// ([`grow`]). None when built from parts that do not hold it (the results database).
    pub problem_units: Option<Vec<grow::ProblemUnits>>,
    /// How its graded answers (samples and greedy answers) were found; None when the results
    /// come from where it was not kept (a run stored by a gpassk before `found_by`).
    pub found_by: Option<found::ModelFound>,
}

/// The source harness's verdicts of an imported run's samples, beside gpassk's re-grade.
#[derive(Debug, Clone)]
pub struct SourceScore {
    pub agreement: Agreement,
    /// Per problem, counting only the samples the source judged (aligned with the model's).
    pub problems: Vec<ProblemCounts>,
    pub aggregate: Aggregate,
    /// Every metric from the source's verdicts, with its 95% interval.
    pub estimates: Vec<Estimate>,
}

impl SourceScore {
    pub fn estimate(&self, metric: &MetricKind, subset: Option<&str>) -> Option<&Estimate> {
        self.estimates
            .iter()
            .find(|e| &e.metric == metric && e.subset.as_deref() == subset)
    }
}

/// Samples judged by both the source and gpassk, by the two verdicts (no answer is wrong).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agreement {
    pub both_correct: u64,
    pub only_gpassk: u64,
    pub only_source: u64,
    pub both_wrong: u64,
}

impl Agreement {
    pub fn total(&self) -> u64 {
        self.both_correct + self.only_gpassk + self.only_source + self.both_wrong
    }

    pub fn agreeing(&self) -> u64 {
        self.both_correct + self.both_wrong
    }

    fn add(&mut self, gpassk: bool, source: bool) {
        match (gpassk, source) {
            (true, true) => self.both_correct += 1,
            (true, false) => self.only_gpassk += 1,
            (false, true) => self.only_source += 1,
            (false, false) => self.both_wrong += 1,
        }
    }
}

/// The source verdicts met while grading one model: per problem (judged, correct).
#[derive(Default)]
struct SourceTally {
    per_problem: Vec<(u64, u64)>,
    agreement: Agreement,
}

impl SourceTally {
    fn add(&mut self, problems: usize, p: usize, gpassk: bool, source: bool) {
        if self.per_problem.is_empty() {
            self.per_problem = vec![(0, 0); problems];
        }
        self.per_problem[p].0 += 1;
        self.per_problem[p].1 += source as u64;
        self.agreement.add(gpassk, source);
    }

    /// The source's counts and metrics, when it judged any sample.
    fn score(
        self,
        scored: &[ProblemCounts],
        n: u32,
        inputs: &ScoreInputs,
    ) -> Result<Option<SourceScore>> {
        if self.per_problem.is_empty() {
            return Ok(None);
        }
        let problems: Vec<ProblemCounts> = scored
            .iter()
            .zip(&self.per_problem)
            .map(|(p, &(judged, c))| ProblemCounts {
                n: judged,
                c,
                greedy: None,
                ..p.clone()
            })
            .collect();
        let aggregate = aggregate(&problems, n as u64, inputs.ks, inputs.taus)?;
        // The source kept verdicts, not answers: there is nothing to vote on.
        let votes = vec![Vote::default(); problems.len()];
        let values = problem_values(&problems, &votes, inputs.ks, inputs.taus)?;
        let estimates = estimates(&problems, &values, &aggregate, n as u64);
        Ok(Some(SourceScore {
            agreement: self.agreement,
            problems,
            aggregate,
            estimates,
        }))
    }
}

impl ModelScore {
    /// The estimate of one metric over the whole dataset (`None`) or a subset.
    pub fn estimate(&self, metric: &MetricKind, subset: Option<&str>) -> Option<&Estimate> {
        self.estimates
            .iter()
            .find(|e| &e.metric == metric && e.subset.as_deref() == subset)
    }
}

/// What the reporters need about a run.
#[derive(Debug, Clone)]
pub struct RunResults {
    pub run_id: String,
    pub dataset: String,
    pub dataset_sha256: String,
    /// The config's `metrics`: their k values are the ones human-facing summaries show.
    pub shown: Vec<MetricKind>,
    pub ks: Vec<u64>,
    pub taus: Vec<Tau>,
    /// The run's manifest, when the results come from a run directory.
    pub manifest: Option<Manifest>,
    pub models: Vec<ModelScore>,
    /// What the scoring rested on, when it graded a run's files (kept in `scores.json`).
    pub basis: Option<stored::Basis>,
    /// What the judge's and the verifier's calls cost, when they are priced.
    pub call_costs: Vec<paid::CallCost>,
    /// `[evaluation] heuristic_warn`: the share of a model's answers found by a heuristic past
    /// which the reports warn.
    pub heuristic_warn: f64,
}

impl RunResults {
    /// The results of `plan`'s run `run_id` around its models' scores.
    pub fn of_plan(
        plan: &Plan,
        run_id: String,
        manifest: Option<Manifest>,
        models: Vec<ModelScore>,
        basis: Option<stored::Basis>,
    ) -> RunResults {
        let ev = &plan.settings.evaluation;
        RunResults {
            run_id,
            dataset: plan.dataset.name.clone(),
            dataset_sha256: plan.dataset.sha256.clone(),
            shown: ev.metrics.clone(),
            ks: ev.ks.clone(),
            taus: ev.taus.clone(),
            manifest,
            models,
            basis,
            call_costs: Vec::new(),
            heuristic_warn: ev.heuristic_warn,
        }
    }

    /// What reports are titled with: the settings' `task_name` and the dataset, or the dataset.
    pub fn label(&self) -> String {
        match self.manifest.as_ref().and_then(|m| m.task_name.as_deref()) {
            Some(task) if !task.is_empty() => format!("{task} ({})", self.dataset),
            _ => self.dataset.clone(),
        }
    }

    /// The headline metrics: the config's `metrics`, or every metric of the largest k.
    pub fn headline(&self) -> Vec<MetricKind> {
        if self.shown.is_empty() {
            MetricKind::default_headline(&self.ks, &self.taus)
        } else {
            self.shown.clone()
        }
    }

    /// The metrics `compare` and `history` test, declared before the data: the config's
    /// `metrics` when it lists them, else the headline of the largest k (every k and τ the
    /// config computes would make the family, and so the correction, grow with them).
    pub fn tested_family(&self) -> Vec<MetricKind> {
        let declared = (self.manifest.as_ref())
            .and_then(|m| m.config.get("evaluation")?.get("metrics"))
            .is_some_and(|v| !v.is_null());
        if declared {
            self.headline()
        } else {
            MetricKind::default_headline(&self.ks, &self.taus)
        }
    }

    /// Whether any model's scored units are tree searches (reports then show their cost).
    pub fn any_search(&self) -> bool {
        self.models
            .iter()
            .any(|m| m.effort.strategy == Strategy::Mcts)
    }
}

/// What one model's scored units (the first usable record of each planned unit, greedy
/// included) cost, summed exactly; per-problem figures divide by the problems that have a unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Effort {
    /// `Mcts` when a scored record carries a search, else `Sample`.
    pub strategy: Strategy,
    pub units: u64,
    /// Problems with at least one scored unit.
    pub problems: u64,
    /// Sampling: requests (a unit is 1/choices_in_request of one); search: policy + reward calls.
    pub calls: Ratio<u128>,
    /// Sum of the units' usage totals (a unit's share of its request's); None when no unit said.
    pub tokens: Option<Ratio<u128>>,
    /// Units whose record had no usage (their tokens are not in `tokens`).
    pub units_without_usage: u64,
    /// Sum of the units' `latency_ms` (a search's wall time).
    pub wall_ms: u64,
    /// The searches' counters summed (all zero for sampling).
    pub search: SearchTotals,
}

/// Search counters summed over a model's searches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchTotals {
    pub simulations: u64,
    pub policy_calls: u64,
    pub reward_calls: u64,
    pub code_executions: u64,
    pub dead_steps: u64,
    pub steps: u64,
    pub reward_parse_failures: u64,
    pub unvalued_terminals: u64,
    /// Searches stopped by `max_calls_per_search`.
    pub cap_hits: u64,
    /// Searches stopped by a model call that failed for good.
    pub failed: u64,
    pub replayed_calls: u64,
}

impl Default for Effort {
    fn default() -> Effort {
        Effort {
            strategy: Strategy::Sample,
            units: 0,
            problems: 0,
            calls: Ratio::from_integer(0),
            tokens: None,
            units_without_usage: 0,
            wall_ms: 0,
            search: SearchTotals::default(),
        }
    }
}

/// What one unit's record says about its cost.
#[derive(Debug, Clone, Default)]
pub struct UnitCost {
    pub usage: Option<Usage>,
    pub choices_in_request: u32,
    pub latency_ms: u64,
    pub search: Option<SearchStats>,
}

impl Effort {
    /// Adds one scored unit; `new_problem` when it is the first unit of its problem.
    pub fn add(&mut self, unit: &UnitCost, new_problem: bool) {
        self.units += 1;
        self.problems += new_problem as u64;
        self.wall_ms += unit.latency_ms;
        let share = u128::from(unit.choices_in_request.max(1));
        match &unit.usage {
            Some(u) => {
                let t = Ratio::new(u128::from(u.total()), share);
                self.tokens = Some(self.tokens.unwrap_or_default() + t);
            }
            None => self.units_without_usage += 1,
        }
        let Some(st) = &unit.search else {
            self.calls += Ratio::new(1, share);
            return;
        };
        self.strategy = Strategy::Mcts;
        self.calls += Ratio::from_integer(u128::from(st.calls()));
        let t = &mut self.search;
        t.simulations += u64::from(st.simulations);
        t.policy_calls += st.policy_calls;
        t.reward_calls += st.reward_calls;
        t.code_executions += st.code_executions;
        t.dead_steps += st.dead_steps;
        t.steps += st.steps;
        t.reward_parse_failures += st.reward_parse_failures;
        t.unvalued_terminals += st.unvalued_terminals;
        t.cap_hits += st.cap_hit as u64;
        t.failed += st.failed.is_some() as u64;
        t.replayed_calls += st.replayed_calls;
    }

    /// `total / problems` as a float (the report boundary); None without problems.
    pub fn per_problem(&self, total: Ratio<u128>) -> Option<f64> {
        (self.problems > 0)
            .then(|| ratio_f64(total / Ratio::from_integer(u128::from(self.problems))))
    }

    /// Dead steps over proposed steps; None when no step was proposed.
    pub fn dead_step_rate(&self) -> Option<f64> {
        let s = &self.search;
        (s.steps > 0).then(|| s.dead_steps as f64 / s.steps as f64)
    }
}

/// A non-negative exact ratio as the nearest float.
pub fn ratio_f64(r: Ratio<u128>) -> f64 {
    let (n, d) = (*r.numer(), *r.denom());
    // Integer part exactly, then the remainder: keeps precision for large totals.
    (n / d) as f64 + (n % d) as f64 / d as f64
}

/// Inputs shared by every model's scoring.
#[derive(Clone, Copy)]
pub struct ScoreInputs<'a> {
    pub problems: &'a [Problem],
    pub ks: &'a [u64],
    pub taus: &'a [Tau],
    pub grade: &'a GradeConfig,
    /// Stored LLM-judge verdicts, when the config uses the judge.
    pub judge: Option<&'a JudgeVerdicts>,
    /// The verifier's stored scores of this model's samples, when the run has a verifier.
    pub verifier: Option<&'a verifier_metrics::VerifierInputs>,
    /// Where scoring's warnings go.
    pub notes: &'a Notes,
}

/// Calls `each(problem position, slot, record)` for the first usable record of every planned unit
/// (slot n is the greedy answer); later duplicates and API errors are skipped.
pub fn for_each_unit(
    path: &Path,
    problems: &[Problem],
    n: u32,
    greedy: bool,
    mut each: impl FnMut(usize, usize, Record) -> Result<()>,
) -> Result<()> {
    let index = id_index(problems, |p| p.id.as_str());
    let width = n as usize + 1;
    let mut seen = vec![false; problems.len() * width];
    let mut failure: Option<anyhow::Error> = None;
    read_records(path, |r| {
        if failure.is_some() || !r.usable() {
            return Ok(());
        }
        let Some(&p) = index.get(r.problem_id.as_str()) else {
            return Ok(());
        };
        let Some(slot) = r.sample_index.slot(n, greedy) else {
            return Ok(());
        };
        if std::mem::replace(&mut seen[p * width + slot], true) {
            return Ok(());
        }
        if let Err(e) = each(p, slot, r) {
            failure = Some(e);
        }
        Ok(())
    })?;
    failure.map_or(Ok(()), Err)
}

/// One model's stored units: its checkpoint and what was planned.
pub struct ModelUnits<'a> {
    pub checkpoint: &'a Path,
    pub problems: &'a [Problem],
    pub n: u32,
    pub greedy: bool,
}

/// Sends every sample the judge must see and has not yet judged to the judge; verdicts are appended
/// to `grades_path` so that scoring (and any later re-scoring) reads them without asking again.
pub fn judge_model(
    units: &ModelUnits,
    grades_path: &Path,
    grade_cfg: &GradeConfig,
    (judge, mode): (&JudgeSettings, GraderMode),
    call: &JudgeCall,
) -> Result<JudgeStats> {
    let done = JudgeVerdicts::load(grades_path, mode)?;
    let jobs = judge_jobs(units, &done, grade_cfg, (judge, mode))?;
    judge_pending(judge, call, jobs, grades_path)
}

/// The samples (greedy answers too) that `mode` sends to the judge and `done` has no verdict of:
/// what [`judge_model`] asks about, each with its prompt.
pub fn judge_jobs(
    units: &ModelUnits,
    done: &JudgeVerdicts,
    grade_cfg: &GradeConfig,
    (judge, mode): (&JudgeSettings, GraderMode),
) -> Result<Vec<JudgeJob>> {
    let problems = units.problems;
    let golds: Vec<std::cell::OnceCell<Gold>> =
        problems.iter().map(|_| Default::default()).collect();
    let mut jobs = Vec::new();
    for_each_unit(
        units.checkpoint,
        problems,
        units.n,
        units.greedy,
        |p, _slot, r| {
            let problem = &problems[p];
            let gold = golds[p].get_or_init(|| gold_of(problem));
            let g = rule_grade(gold, &r, grade_cfg);
            if !mode.needs_judge(g.verdict.outcome, g.found_by)
                || done.has(&r.problem_id, r.sample_index, g.text)
            {
                return Ok(());
            }
            let answer = match judge.input {
                JudgeInput::Extracted => match &g.verdict.extracted {
                    Some(a) => a.clone(),
                    // Nothing to show the judge: the rule grader's "no answer" stands.
                    None => return Ok(()),
                },
                JudgeInput::Response => g.text.to_string(),
            };
            jobs.push(JudgeJob {
                problem_id: r.problem_id.clone(),
                sample_index: r.sample_index,
                response_hash: response_hash(g.text),
                prompt: render(
                    &judge.prompt,
                    &problem.question,
                    &problem.answer,
                    &answer,
                    g.text,
                ),
            });
            Ok(())
        },
    )?;
    Ok(jobs)
}

/// How many of `m`'s stored samples the judge would be asked about now (the dry run's count):
/// those the run's grader sends it that its stored verdicts in `run_dir` do not cover; 0 when
/// the grader never asks it.
pub fn judge_pending_count(plan: &Plan, run_dir: &RunDir, m: &ModelSettings) -> Result<usize> {
    let mode = plan.settings.evaluation.grader;
    let Some(judge) = plan.settings.judged() else {
        return Ok(0);
    };
    let units = ModelUnits {
        checkpoint: &run_dir.checkpoint(&m.name),
        problems: &plan.problems,
        n: m.sampling.n,
        greedy: m.sampling.greedy,
    };
    let done = JudgeVerdicts::load(&run_dir.grades(&m.name), mode)?;
    let grade = plan.settings.evaluation.grade_config();
    Ok(judge_jobs(&units, &done, &grade, (judge, mode))?.len())
}

/// A unit's rule verdict as scoring gives it.
pub struct RuleGrade<'a> {
    /// What it was graded on ([`found::graded_on`]): what a judge verdict of it is keyed by.
    pub text: &'a str,
    pub verdict: crate::grade::Verdict,
    /// How its answer was found ([`found::found_by_of`]; None: the run did not record it).
    pub found_by: Option<FoundBy>,
}

/// Grades one record against its problem's gold as scoring does: on its response, or on the
/// answer a run without responses kept, the gold steering extraction.
pub fn rule_grade<'a>(gold: &Gold, r: &'a Record, cfg: &GradeConfig) -> RuleGrade<'a> {
    let text = found::graded_on(r.response.as_deref(), r.extracted.as_deref());
    let verdict = crate::grade::grade_against(gold, text, cfg);
    let found_by = found::found_by_of(r.response.is_some(), r.found_by, verdict.found_by);
    RuleGrade {
        text,
        verdict,
        found_by,
    }
}

/// Grades one model's checkpoint (the first usable record of each unit counts) and aggregates.
pub fn score_model(
    path: &Path,
    name: &str,
    model_id: &str,
    n: u32,
    greedy: bool,
    inputs: &ScoreInputs,
) -> Result<ModelScore> {
    let mut t = ModelTally::new(inputs.problems.len(), n, inputs.judge.is_some());
    let units = ModelUnits {
        checkpoint: path,
        problems: inputs.problems,
        n,
        greedy,
    };
    grade_units(&units, inputs, false, |g| t.add(g))?;
    let (parts, problem_units) = t.parts(name, model_id, greedy, inputs.problems);
    let score = ModelScore::from_parts(parts, inputs.ks, inputs.taus)?;
    let source = t.source.score(&score.problems, n, inputs)?;
    let mut score = ModelScore {
        effort: t.effort,
        source,
        judge_overruled: t.overruled,
        problem_units: Some(problem_units),
        ..score
    };
    if let Some(v) = inputs.verifier {
        verifier_metrics::extend(&mut score, t.voters, v, inputs.ks)?;
    }
    Ok(score)
}

/// What grading one model's units gathers, unit by unit in checkpoint order (each unit once):
/// for all its problems ([`score_model`]), or for one problem graded again (`grow`).
struct ModelTally {
    n: u32,
    /// Per (problem, slot): MISSING, WRONG, NO_ANSWER or CORRECT; slot n is the greedy answer.
    state: Vec<u8>,
    /// Per problem: the answer classes of its samples as (key hash, members, members correct).
    /// Keys are hashed so memory stays a few bytes per distinct answer, never the responses.
    classes: Vec<Vec<(u64, u32, u32)>>,
    /// Per problem: its truncated samples.
    truncated: Vec<u32>,
    /// Per problem: how its graded answers (greedy too) were found.
    found: Vec<found::ProblemFound>,
    /// With a judge, per problem: its units the judge decided otherwise than the rule grader.
    overruled: Option<Vec<u32>>,
    served: BTreeMap<String, u64>,
    effort: Effort,
    has_unit: Vec<bool>,
    source: SourceTally,
    voters: verifier_metrics::Voters,
}

impl ModelTally {
    fn new(problems: usize, n: u32, judged: bool) -> ModelTally {
        ModelTally {
            n,
            state: vec![MISSING; problems * (n as usize + 1)],
            classes: vec![Vec::new(); problems],
            truncated: vec![0; problems],
            found: vec![found::ProblemFound::default(); problems],
            overruled: judged.then(|| vec![0; problems]),
            served: BTreeMap::new(),
            effort: Effort::default(),
            has_unit: vec![false; problems],
            source: SourceTally::default(),
            voters: verifier_metrics::Voters::new(problems),
        }
    }

    fn add(&mut self, g: Graded) {
        let (p, slot) = (g.problem as usize, g.slot as usize);
        let sample = slot < self.n as usize;
        self.state[p * (self.n as usize + 1) + slot] = match g.outcome {
            Outcome::Correct => CORRECT,
            Outcome::Wrong => WRONG,
            Outcome::NoAnswer => NO_ANSWER,
        };
        let correct = g.outcome == Outcome::Correct;
        if let (Some(key), true) = (g.class, sample) {
            let ok = correct as u32;
            match self.classes[p].iter_mut().find(|c| c.0 == key) {
                Some(c) => {
                    c.1 += 1;
                    c.2 += ok;
                }
                None => self.classes[p].push((key, 1, ok)),
            }
        }
        if let (Some(v), true) = (g.source, sample) {
            self.source.add(self.classes.len(), p, correct, v);
        }
        if let (Some(v), true) = (g.verifier, sample) {
            self.voters.add(p, correct, g.class, v);
        }
        if let (Some(o), true) = (self.overruled.as_mut(), g.overruled) {
            o[p] += 1;
        }
        self.truncated[p] += (g.truncated && sample) as u32;
        self.found[p].add(g.found_by);
        if let Some(s) = g.served {
            *self.served.entry(s).or_default() += 1;
        }
        let first = !std::mem::replace(&mut self.has_unit[p], true);
        self.effort.add(&g.cost, first);
    }

    /// Per-problem counts and votes with the unit totals (what every metric rests on), and per
    /// problem what it adds to those totals beyond its counts.
    fn parts(
        &self,
        name: &str,
        model_id: &str,
        greedy: bool,
        problems: &[Problem],
    ) -> (ScoreParts, Vec<grow::ProblemUnits>) {
        let (n, width) = (self.n, self.n as usize + 1);
        let mut counts = Vec::with_capacity(problems.len());
        let mut units = Vec::with_capacity(problems.len());
        for (p, prob) in problems.iter().enumerate() {
            let cells = &self.state[p * width..(p + 1) * width];
            let samples = &cells[..n as usize];
            let g = cells[n as usize];
            counts.push(ProblemCounts {
                id: prob.id.clone(),
                subset: prob.subset.clone(),
                group: prob.fields.get("group").cloned(),
                n: samples.iter().filter(|&&c| c >= WRONG).count() as u64,
                c: samples.iter().filter(|&&c| c == CORRECT).count() as u64,
                greedy: (greedy && g >= WRONG).then_some(g == CORRECT),
            });
            units.push(grow::ProblemUnits {
                no_answer: samples.iter().filter(|&&c| c == NO_ANSWER).count() as u32,
                truncated: self.truncated[p],
                found: self.found[p],
            });
        }
        let votes: Vec<Vote> = (self.classes.iter())
            .map(|cs| {
                let tally: Vec<(u32, u32)> = cs.iter().map(|c| (c.1, c.2)).collect();
                Vote::from_classes(&tally)
            })
            .collect();
        let mut parts = ScoreParts {
            name: name.to_string(),
            model_id: model_id.to_string(),
            n,
            problems: counts,
            votes,
            correct: 0,
            wrong: 0,
            no_answer: 0,
            truncated: 0,
            missing: 0,
            served_models: self.served.clone(),
            found_by: None,
        };
        grow::sum_units(&mut parts, &units, greedy);
        (parts, units)
    }
}

/// One graded unit as `gpassk store push --samples` writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct GradedSample<'a> {
    pub problem_id: &'a str,
    pub sample_index: SampleIndex,
    /// The answer the grader read (None: no answer found).
    pub extracted: Option<String>,
    /// How it was found (None: the run kept the answer without saying how).
    pub found_by: Option<FoundBy>,
    pub outcome: Outcome,
    /// sha256 of the response, hex (the one recorded when the response itself was not kept).
    pub response_sha256: Option<String>,
}

/// Every graded unit of `model` in the run (each unit's first usable record, in checkpoint
/// order) with the verdict scoring gives it: the same grading, the stored judge verdicts applied,
/// the judge never called.
pub fn for_each_sample(
    plan: &Plan,
    run_dir: &RunDir,
    model: &ModelSettings,
    notes: &Notes,
    mut each: impl FnMut(GradedSample) -> Result<()>,
) -> Result<()> {
    let ev = &plan.settings.evaluation;
    let grade = ev.grade_config();
    let verdicts = verdicts_for(plan, run_dir, model, &grade, (None, notes))?;
    let inputs = ScoreInputs {
        problems: &plan.problems,
        ks: &ev.ks,
        taus: &ev.taus,
        grade: &grade,
        judge: verdicts.as_ref(),
        // Per-sample rows hold verdicts; the verifier's scores stay in its own file.
        verifier: None,
        notes,
    };
    let units = ModelUnits {
        checkpoint: &run_dir.checkpoint(&model.name),
        problems: &plan.problems,
        n: model.sampling.n,
        greedy: model.sampling.greedy,
    };
    let mut failed = None;
    grade_units(&units, &inputs, true, |g| {
        let (Some(d), None) = (g.detail, &failed) else {
            return;
        };
        let sample = GradedSample {
            problem_id: &plan.problems[g.problem as usize].id,
            sample_index: d.sample_index,
            extracted: d.extracted,
            found_by: g.found_by,
            outcome: g.outcome,
            response_sha256: d.response_sha256,
        };
        failed = each(sample).err();
    })?;
    failed.map_or(Ok(()), Err)
}

/// What a model's score rests on: per-problem counts and majority votes, and the unit tallies.
/// The results database keeps these; every metric, value per problem and interval follows.
#[derive(Debug, Clone)]
pub struct ScoreParts {
    pub name: String,
    pub model_id: String,
    pub n: u32,
    pub problems: Vec<ProblemCounts>,
    /// Aligned with `problems`.
    pub votes: Vec<Vote>,
    pub correct: u64,
    pub wrong: u64,
    pub no_answer: u64,
    pub truncated: u64,
    pub missing: u64,
    pub served_models: BTreeMap<String, u64>,
    /// How the graded answers were found (None: not kept where the parts come from).
    pub found_by: Option<found::ModelFound>,
}

impl ModelScore {
    /// A model's score from its parts, exactly as grading its samples gives it (without the
    /// effort and the source's verdicts, which the parts do not hold).
    pub fn from_parts(p: ScoreParts, ks: &[u64], taus: &[Tau]) -> Result<ModelScore> {
        let aggregate = aggregate(&p.problems, u64::from(p.n), ks, taus)?;
        let values = problem_values(&p.problems, &p.votes, ks, taus)?;
        let estimates = estimates(&p.problems, &values, &aggregate, u64::from(p.n));
        Ok(ModelScore {
            name: p.name,
            model_id: p.model_id,
            n: p.n,
            problems: p.problems,
            correct: p.correct,
            wrong: p.wrong,
            no_answer: p.no_answer,
            truncated: p.truncated,
            missing: p.missing,
            served_models: p.served_models,
            aggregate,
            votes: p.votes,
            values,
            estimates,
            effort: Effort::default(),
            source: None,
            verifier: None,
            judge_overruled: None,
            problem_units: None,
            found_by: p.found_by,
        })
    }
}

/// One unit's grade, as the tally needs it.
struct Graded {
    problem: u32,
    slot: u32,
    outcome: Outcome,
    /// Hash of the extracted answer's canonical key (its majority-vote class).
    class: Option<u64>,
    truncated: bool,
    served: Option<String>,
    cost: UnitCost,
    source: Option<bool>,
    /// The verifier's score of a sample (never of the greedy answer), when the run has one.
    verifier: Option<verifier_metrics::Scored>,
    /// The judge's verdict differs from the rule grader's.
    overruled: bool,
    /// How the answer was found (None: the run kept it without saying how).
    found_by: Option<FoundBy>,
    /// Only when asked for ([`for_each_sample`]): what a per-sample row shows.
    detail: Option<Box<Detail>>,
}

/// A graded unit's answer and response, for [`for_each_sample`].
struct Detail {
    sample_index: SampleIndex,
    extracted: Option<String>,
    response_sha256: Option<String>,
}

/// Checkpoint bytes per batch handed to a grading thread: large enough to amortise the hand-off,
/// small enough that the batches in flight (two queued and one decoding per thread) stay near 2 MB.
const BATCH_BYTES: usize = 256 << 10;

/// One batch's grades, and the error of its first unreadable line (grading stopped there).
type GradedBatch = (Vec<Graded>, Option<CheckpointError>);

/// Reads a checkpoint and grades its units on every core: the reading thread only splits the file
/// into batches of lines, the grading threads decode and grade them. `apply` sees the first usable
/// record of every planned unit in file order, so results never depend on thread timing.
fn grade_units(
    units: &ModelUnits,
    inputs: &ScoreInputs,
    details: bool,
    mut apply: impl FnMut(Graded),
) -> Result<()> {
    let graders = Graders {
        problems: (0..inputs.problems.len())
            .map(|_| ProblemGrader::default())
            .collect(),
        answers: Answers::default(),
        details,
    };
    let index = id_index(units.problems, |p| p.id.as_str());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, LineBatch)>(workers * 2);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, GradedBatch)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            let (index, graders) = (&index, &graders);
            scope.spawn(move || loop {
                let job = work_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((i, batch)) = job else { break };
                let graded = grade_batch(&batch, units, index, inputs, graders);
                if done_tx.send((i, graded)).is_err() {
                    break;
                }
            });
        }
        drop(done_tx);
        let mut order = InOrder::new(units);
        let mut batches = 0;
        let read = read_batches(units.checkpoint, BATCH_BYTES, |batch| {
            // A send fails only when every worker is gone, which the count below reports.
            let _ = work_tx.send((batches, batch));
            batches += 1;
            while let Ok((i, graded)) = done_rx.try_recv() {
                order.push(i, graded, &mut apply);
            }
            match order.failed {
                Some(_) => ControlFlow::Break(()),
                None => ControlFlow::Continue(()),
            }
        });
        drop(work_tx);
        for (i, graded) in done_rx {
            order.push(i, graded, &mut apply);
        }
        // The batches sent all come before where reading stopped: their error is the earlier one.
        if let Some(e) = order.failed {
            return Err(e.into());
        }
        read?;
        anyhow::ensure!(order.next == batches, "a grading thread stopped early");
        if order.duplicates > 0 {
            // Only two processes writing one run leave a unit twice; say so rather than pick
            // quietly.
            inputs.notes.warn(&format!(
                "{}: {} duplicate records of units already recorded (two processes wrote this \
                 run at once?); each unit's first record is scored, the later ones ignored",
                units.checkpoint.display(),
                order.duplicates
            ));
        }
        Ok(())
    })
}

/// Decodes and grades one batch of checkpoint lines: the usable records of planned units, up to
/// its first unreadable line.
fn grade_batch(
    batch: &LineBatch,
    units: &ModelUnits,
    index: &HashMap<&str, usize>,
    inputs: &ScoreInputs,
    graders: &Graders,
) -> GradedBatch {
    let mut graded = Vec::with_capacity(batch.len());
    for r in batch.decode::<RecordAnswer>(units.checkpoint) {
        let r = match r {
            Ok(r) => r,
            Err(e) => return (graded, Some(e)),
        };
        if r.outcome == UnitOutcome::ApiError {
            continue;
        }
        let Some(&p) = index.get(r.problem_id.as_str()) else {
            continue;
        };
        let Some(slot) = r.sample_index.slot(units.n, units.greedy) else {
            continue;
        };
        graded.push(grade_one(r, p, slot, inputs, graders));
    }
    (graded, None)
}

/// A problem's gold answer, with its multiple-choice options when the dataset gives them.
pub fn gold_of(problem: &Problem) -> Gold {
    Gold::with_options(&problem.answer, &problem.choice_options())
}

/// What the grading threads share: each problem's grader, and the answers parsed so far.
struct Graders {
    problems: Vec<ProblemGrader>,
    answers: Answers,
    /// Keep each unit's [`Detail`] (a per-sample push; scoring alone never pays for it).
    details: bool,
}

/// Short answers parsed once for the whole run, with their voting class: the same few (`2`,
/// `\frac{1}{2}`) come back across problems, and parsing is most of grading one.
#[derive(Default)]
struct Answers {
    parsed: Mutex<HashMap<Box<str>, SharedAnswer>>,
}

/// A parsed answer and the hash of its voting key.
type SharedAnswer = Arc<(Answer, u64)>;

/// Answers longer than this are parsed each time (rarely the same twice); with the count cap, the
/// cache stays a few MB.
const SHARED_ANSWER_BYTES: usize = 64;
const SHARED_ANSWERS: usize = 8192;

impl Answers {
    fn get(&self, answer: &str) -> SharedAnswer {
        let lock = || self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        let short = answer.len() <= SHARED_ANSWER_BYTES;
        if short {
            if let Some(hit) = lock().get(answer) {
                return hit.clone();
            }
        }
        let parsed = Answer::new(answer);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        parsed.key().hash(&mut h);
        let entry = Arc::new((parsed, h.finish()));
        let mut map = lock();
        if short && map.len() < SHARED_ANSWERS {
            map.insert(answer.into(), entry.clone());
        }
        entry
    }
}

/// One problem's gold, parsed once, and the verdicts of the answers already graded against it:
/// samples of a problem repeat a few answers, each compared once.
#[derive(Default)]
struct ProblemGrader {
    gold: OnceLock<Gold>,
    seen: Mutex<HashMap<Box<str>, (Outcome, u64)>>,
}

/// The distinct answers a problem remembers (more are graded each time they come): the common
/// ones come early, and memory stays a few hundred bytes per problem.
const SEEN_PER_PROBLEM: usize = 16;

impl ProblemGrader {
    /// The problem's gold, parsed on first use.
    fn gold(&self, problem: &Problem) -> &Gold {
        self.gold.get_or_init(|| gold_of(problem))
    }

    /// The rule outcome and voting class of an extracted answer.
    fn grade(
        &self,
        answers: &Answers,
        problem: &Problem,
        answer: &str,
        cfg: &GradeConfig,
    ) -> (Outcome, u64) {
        let lock = || self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&hit) = lock().get(answer) {
            return hit;
        }
        let gold = self.gold(problem);
        let parsed = answers.get(answer);
        let graded = (parsed.0.outcome(gold, cfg), parsed.1);
        let mut seen = lock();
        if seen.len() < SEEN_PER_PROBLEM {
            seen.insert(answer.into(), graded);
        }
        graded
    }
}

fn grade_one(
    r: RecordAnswer,
    p: usize,
    slot: usize,
    inputs: &ScoreInputs,
    graders: &Graders,
) -> Graded {
    let verifier = inputs
        .verifier
        .filter(|_| r.sample_index != SampleIndex::Greedy)
        .map(|v| {
            v.sample(
                &inputs.problems[p].id,
                r.sample_index,
                r.response.as_deref(),
            )
        });
    let raw = r.response.is_some();
    let response = found::graded_on(r.response.as_deref(), r.extracted.as_deref());
    let problem = &inputs.problems[p];
    let gold = graders.problems[p].gold(problem);
    let Extraction { answer, found_by } = extraction(response, Some(gold), inputs.grade);
    let found_by = found::found_by_of(raw, r.found_by, found_by);
    let extracted = answer;
    let (rule, class) = match &extracted {
        None => (Outcome::NoAnswer, None),
        Some(answer) => {
            let (outcome, class) = graders.problems[p].grade(
                &graders.answers,
                &inputs.problems[p],
                answer,
                inputs.grade,
            );
            (outcome, Some(class))
        }
    };
    let detail = graders.details.then(|| {
        let response_sha256 = match raw {
            true => Some(hex(&<sha2::Sha256 as sha2::Digest>::digest(response))),
            false => r.response_sha256,
        };
        Box::new(Detail {
            sample_index: r.sample_index,
            extracted,
            response_sha256,
        })
    });
    let outcome = match inputs.judge {
        Some(j) => j.decide(&problem.id, (r.sample_index, response), rule, found_by),
        None => rule,
    };
    Graded {
        problem: p as u32,
        slot: slot as u32,
        outcome,
        class,
        truncated: r.outcome == UnitOutcome::Truncated,
        served: r.served_model,
        cost: UnitCost {
            usage: r.usage,
            choices_in_request: r.choices_in_request,
            latency_ms: r.latency_ms,
            search: r.search.map(|s| s.stats),
        },
        source: r.source.and_then(|s| s.verdict),
        verifier,
        overruled: outcome != rule,
        found_by,
        detail,
    }
}

/// The in-order step: numbered batches of grades applied in file order, each unit's first record
/// only (later ones are counted as duplicates), up to the first unreadable line.
struct InOrder {
    next: usize,
    waiting: BTreeMap<usize, GradedBatch>,
    width: usize,
    seen: Vec<bool>,
    duplicates: u64,
    failed: Option<CheckpointError>,
}

impl InOrder {
    fn new(units: &ModelUnits) -> InOrder {
        let width = units.n as usize + 1;
        InOrder {
            next: 0,
            waiting: BTreeMap::new(),
            width,
            seen: vec![false; units.problems.len() * width],
            duplicates: 0,
            failed: None,
        }
    }

    fn push(&mut self, i: usize, graded: GradedBatch, apply: &mut impl FnMut(Graded)) {
        self.waiting.insert(i, graded);
        while let Some((batch, error)) = self.waiting.remove(&self.next) {
            self.next += 1;
            if self.failed.is_some() {
                continue;
            }
            for g in batch {
                let cell = g.problem as usize * self.width + g.slot as usize;
                if std::mem::replace(&mut self.seen[cell], true) {
                    self.duplicates += 1;
                } else {
                    apply(g);
                }
            }
            self.failed = error;
        }
    }
}

/// Re-grades a run directory offline: the config, dataset, limit and shard come from its manifest.
pub fn load_run(run_dir: &RunDir, notes: &Notes) -> Result<RunResults> {
    load_run_with(run_dir, &[], notes)
}

/// [`load_run`], or the run's kept parts ([`stored::read_back`]) while every file and setting
/// they rest on is as it was: for readers of many runs (`history`) that need no report sections
/// beyond the metrics (the effort, source verdicts and verifier summary are not kept).
pub fn load_scored(run_dir: &RunDir, notes: &Notes) -> Result<RunResults> {
    let (plan, manifest) = load_plan(run_dir, &[])?;
    if let Some(r) = stored::read_back(run_dir, &plan, &manifest) {
        return Ok(r);
    }
    score_run(&plan, run_dir, Some(manifest), None, notes)
}

/// [`load_run`] with `--set` overrides applied to the stored config.
pub fn load_run_with(run_dir: &RunDir, set: &[String], notes: &Notes) -> Result<RunResults> {
    let (plan, manifest) = load_plan(run_dir, set)?;
    // Offline: stored judge verdicts are used, the judge is never called.
    score_run(&plan, run_dir, Some(manifest), None, notes)
}

/// A run directory's plan as its manifest records it (config with `set` applied, dataset checked
/// against the recorded hash), and the manifest: what [`load_run_with`] scores.
pub fn load_plan(run_dir: &RunDir, set: &[String]) -> Result<(Plan, Manifest)> {
    let manifest = run_dir.read_manifest()?;
    let where_ = run_dir.manifest_path();
    let raw_kept = manifest.config["evaluation"]["save_raw_responses"].as_bool() != Some(false);
    if let Some(o) = set
        .iter()
        .find(|o| !raw_kept && o.starts_with("evaluation.answer_extract_regex"))
    {
        return Err(BadInput(format!(
            "--set {o}: this run kept no raw responses (save_raw_responses = false), so its answers cannot be re-extracted"
        ))
        .into());
    }
    let mut settings = if manifest.config.is_null() {
        crate::config::load(Path::new(&manifest.config_path))
    } else {
        crate::config::load_json_with(&manifest.config, Path::new(&manifest.config_path), set)
    }
    .map_err(|e| BadInput(format!("{}: field `config`: {e}", where_.display())))?;
    settings.config_hash = manifest.config_hash.clone();
    settings
        .models
        .retain(|m| manifest.models.contains_key(&m.name));
    if settings.models.is_empty() {
        return Err(BadInput(format!(
            "{}: field `models`: no model of the run's config is listed",
            where_.display()
        ))
        .into());
    }
    // An imported run keeps its problems beside its manifest, wherever the run is moved.
    let imported = manifest.imported.is_some();
    if imported {
        let file = manifest.dataset.files.first().map(Path::new);
        settings.evaluation.dataset = run_dir
            .resolve(file.unwrap_or(Path::new("dataset")))
            .display()
            .to_string();
    }
    let mut plan = crate::plan::build(settings, manifest.dataset.limit, manifest.shard)
        .with_context(|| format!("re-loading the plan of {}", run_dir.display()))?;
    if imported {
        plan.dataset.name = manifest.dataset.name.clone();
    }
    if plan.dataset.sha256 != manifest.dataset.sha256 {
        return Err(BadInput(format!(
            "{}: field `dataset.sha256`: dataset {} changed since the run ({} then, {} now); \
             scoring it would grade against different answers",
            where_.display(),
            plan.dataset.name,
            short(&manifest.dataset.sha256),
            short(&plan.dataset.sha256)
        ))
        .into());
    }
    Ok((plan, manifest))
}

/// Permission to call the LLM judge during scoring: its key, its budget (from the run's
/// [`crate::sampling::BudgetBook`]) and the shutdown that stops it.
pub struct JudgeCall<'a> {
    pub key: Option<ApiKey>,
    pub budget: Option<crate::cost::Budget>,
    pub shutdown: &'a Shutdown,
    pub notes: &'a Notes,
}

/// Grades and aggregates every model; with `judge` the judge is asked about samples it has not
/// seen (a run); without, only stored verdicts are used (offline re-scoring).
pub fn score_run(
    plan: &Plan,
    run_dir: &RunDir,
    manifest: Option<Manifest>,
    judge: Option<&JudgeCall>,
    notes: &Notes,
) -> Result<RunResults> {
    let ev = &plan.settings.evaluation;
    let grade = ev.grade_config();
    let verifier = verifier_calls::run_settings(run_dir, plan.settings.verifier.as_ref())?;
    let mut basis = stored::Basis::start(plan, verifier.as_ref());
    let mut models = Vec::new();
    for m in &plan.settings.models {
        let verdicts = verdicts_for(plan, run_dir, m, &grade, (judge, notes))?;
        // After the judge's verdicts are in, before anything of the model is read.
        basis.add_model(run_dir, &m.name);
        let scores = (verifier.as_ref())
            .map(|v| verifier_metrics::VerifierInputs::load(run_dir, &m.name, v))
            .transpose()?;
        let inputs = ScoreInputs {
            problems: &plan.problems,
            ks: &ev.ks,
            taus: &ev.taus,
            grade: &grade,
            judge: verdicts.as_ref(),
            verifier: scores.as_ref(),
            notes,
        };
        models.push(score_model(
            &run_dir.checkpoint(&m.name),
            &m.name,
            &m.model_id,
            m.sampling.n,
            m.sampling.greedy,
            &inputs,
        )?);
    }
    let run_id = manifest.as_ref().map_or_else(
        || {
            run_dir
                .path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        },
        |m| m.run_id.clone(),
    );
    let mut results = RunResults::of_plan(plan, run_id, manifest, models, Some(basis));
    results.call_costs = paid::call_costs(plan, run_dir, verifier.as_ref())?;
    Ok(results)
}

/// The judge verdicts one model's scoring uses (None when the rule grader decides alone), after
/// asking the judge about new samples when `call` allows it.
fn verdicts_for(
    plan: &Plan,
    run_dir: &RunDir,
    m: &ModelSettings,
    grade: &GradeConfig,
    (call, notes): (Option<&JudgeCall>, &Notes),
) -> Result<Option<JudgeVerdicts>> {
    let mode = plan.settings.evaluation.grader;
    let Some(judge) = plan
        .settings
        .judge
        .as_ref()
        .filter(|_| mode != GraderMode::Rule)
    else {
        return Ok(None);
    };
    let grades_path = run_dir.grades(&m.name);
    if let Some(call) = call {
        let unit = ModelUnits {
            checkpoint: &run_dir.checkpoint(&m.name),
            problems: &plan.problems,
            n: m.sampling.n,
            greedy: m.sampling.greedy,
        };
        let stats = judge_model(&unit, &grades_path, grade, (judge, mode), call)
            .with_context(|| format!("judging the samples of model {}", m.name))?;
        if stats.judged + stats.unparsed + stats.failed > 0 {
            notes.say(&format!(
                "judge {}: {} verdicts for {}, {} unreadable replies, {} failed (the rule verdict stands for those)",
                judge.model_id, stats.judged, m.name, stats.unparsed, stats.failed
            ));
        }
    }
    Ok(Some(JudgeVerdicts::load(&grades_path, mode)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_answers_grade_as_a_fresh_parse_does_past_the_cap_too() {
        let problem = Problem {
            id: "p".into(),
            question: "q".into(),
            answer: "\\frac{1}{2}".into(),
            subset: None,
            fields: Default::default(),
        };
        let cfg = GradeConfig::default();
        let grader = ProblemGrader::default();
        let shared = Answers::default();
        let mut answers: Vec<String> =
            vec!["0.5".into(), "1/2".into(), "2".into(), "\\dfrac12".into()];
        answers.extend((0..SEEN_PER_PROBLEM + 10).map(|i| format!("{i}/{}", 2 * i + 1)));
        for round in 0..2 {
            for a in &answers {
                let fresh = crate::grade::grade_extracted(&gold_of(&problem), a, &cfg);
                let mut h = std::collections::hash_map::DefaultHasher::new();
                fresh.1.hash(&mut h);
                assert_eq!(
                    grader.grade(&shared, &problem, a, &cfg),
                    (fresh.0, h.finish()),
                    "{a} round {round}"
                );
            }
        }
        assert_eq!(
            grader.grade(&shared, &problem, "1/2", &cfg).0,
            Outcome::Correct
        );
        assert_eq!(grader.grade(&shared, &problem, "2", &cfg).0, Outcome::Wrong);
        assert!(grader.seen.lock().unwrap().len() <= SEEN_PER_PROBLEM);
    }

    #[test]
    fn answers_parsed_for_one_problem_grade_against_another_gold_as_fresh() {
        let problem = |id: &str, answer: &str| Problem {
            id: id.into(),
            question: "q".into(),
            answer: answer.into(),
            subset: None,
            fields: Default::default(),
        };
        let problems = [
            problem("a", "\\frac{1}{2}"),
            problem("b", "2"),
            problem("c", "x+1"),
        ];
        let graders: Vec<ProblemGrader> =
            problems.iter().map(|_| ProblemGrader::default()).collect();
        let (shared, cfg) = (Answers::default(), GradeConfig::default());
        let long = format!("{}+1", "1".repeat(SHARED_ANSWER_BYTES));
        for a in ["0.5", "2", "1+x", "2.0", long.as_str()] {
            for (p, g) in problems.iter().zip(&graders) {
                let fresh = crate::grade::grade_extracted(&gold_of(p), a, &cfg);
                let mut h = std::collections::hash_map::DefaultHasher::new();
                fresh.1.hash(&mut h);
                assert_eq!(
                    g.grade(&shared, p, a, &cfg),
                    (fresh.0, h.finish()),
                    "{a} vs {}",
                    p.answer
                );
            }
        }
        // The long answer was graded but not kept.
        assert_eq!(shared.parsed.lock().unwrap().len(), 4);
    }

    /// A checkpoint line of one unit; `padding` makes the file span several batches.
    fn unit_line(problem: &str, sample: &str, outcome: &str, answer: &str) -> String {
        let padding = "x".repeat(300);
        format!(
            r#"{{"run_id":"r","model":"m","model_id":"m","served_model":"s","system_fingerprint":null,"problem_id":"{problem}","sample_index":{sample},"seed":1,"temperature":0.7,"top_p":1.0,"max_tokens":null,"prompt_hash":"{padding}","response":"so \\boxed{{{answer}}}","finish_reason":"stop","usage":null,"latency_ms":1,"started_at":"t","finished_at":"t","attempts":1,"outcome":"{outcome}"}}"#
        )
    }

    /// Problems `p0`, `p1`, … whose answer is 7.
    fn sevens(count: usize) -> Vec<Problem> {
        (0..count)
            .map(|i| Problem {
                id: format!("p{i}"),
                question: "q".into(),
                answer: "7".into(),
                subset: None,
                fields: Default::default(),
            })
            .collect()
    }

    /// (problem, slot, outcome) of each unit `grade_units` applied, in order.
    type Applied = Vec<(u32, u32, Outcome)>;

    /// What `grade_units` applies, in order, with the notes it left.
    fn graded(text: &str, problems: &[Problem], n: u32) -> (Result<Applied>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        std::fs::write(&path, text).unwrap();
        let (notes, kept) = Notes::collect();
        let grade = GradeConfig::default();
        let inputs = ScoreInputs {
            problems,
            ks: &[],
            taus: &[],
            grade: &grade,
            judge: None,
            verifier: None,
            notes: &notes,
        };
        let units = ModelUnits {
            checkpoint: &path,
            problems,
            n,
            greedy: true,
        };
        let mut applied = Vec::new();
        let result = grade_units(&units, &inputs, false, |g| {
            applied.push((g.problem, g.slot, g.outcome))
        });
        let kept = kept.lock().unwrap().clone();
        (result.map(|()| applied), kept)
    }

    #[test]
    fn units_are_applied_in_file_order_across_batches_and_the_first_record_wins() {
        let (n, problems) = (300, sevens(10));
        let mut lines = Vec::new();
        let mut want = Vec::new();
        // An API error is no record of its unit: the unit's later answer counts.
        lines.push(unit_line("p1", "1", "api_error", "1"));
        for (p, id) in problems.iter().enumerate() {
            for s in 0..=n {
                let (sample, answer) = match s {
                    s if s == n => ("\"greedy\"".to_string(), "7"),
                    s => (s.to_string(), if s % 2 == 0 { "7" } else { "8" }),
                };
                lines.push(unit_line(&id.id, &sample, "ok", answer));
                let outcome = if answer == "7" {
                    Outcome::Correct
                } else {
                    Outcome::Wrong
                };
                want.push((p as u32, s, outcome));
            }
        }
        // Units the plan does not have, a blank line, and a later record of a scored unit.
        lines.push(unit_line("nope", "0", "ok", "7"));
        lines.push(unit_line("p2", &n.to_string(), "ok", "7"));
        lines.push("  ".into());
        lines.push(unit_line("p0", "1", "truncated", "7"));
        let mut text = lines.join("\n") + "\n";
        assert!(
            text.len() > 4 * BATCH_BYTES,
            "the file spans several batches"
        );
        // A torn last line is not read.
        text.push_str(&unit_line("p3", "0", "ok", "8")[..100]);
        let (applied, notes) = graded(&text, &problems, n);
        assert_eq!(applied.unwrap(), want);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("m.jsonl: 1 duplicate records"),
            "{notes:?}"
        );
    }

    #[test]
    fn the_first_corrupt_line_in_the_file_is_the_error_whatever_batch_it_is_in() {
        let problems = sevens(1);
        let good = unit_line("p0", "0", "ok", "7");
        let mut lines = vec![good.clone(); 3000];
        lines[1500] = "{\"run_id\": tor".into();
        lines[2800] = "not json".into();
        let (result, _) = graded(&(lines.join("\n") + "\n"), &problems, 1);
        let err = format!("{:#}", result.unwrap_err());
        assert!(
            err.contains("m.jsonl:1501: corrupt checkpoint line"),
            "{err}"
        );
    }

    fn usage(prompt: u64, completion: u64) -> Option<Usage> {
        Some(Usage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            ..Usage::default()
        })
    }

    fn search(policy: u64, reward: u64, dead: u64, steps: u64) -> SearchStats {
        SearchStats {
            simulations: 4,
            policy_calls: policy,
            reward_calls: reward,
            tokens: Some(1),
            code_executions: steps - 1,
            dead_steps: dead,
            steps,
            ..SearchStats::default()
        }
    }

    #[test]
    fn sampling_counts_requests_and_token_shares_exactly() {
        let mut e = Effort::default();
        // Three choices of one request (usage covers all three), then a request of its own.
        for (i, p) in [(0, true), (1, false), (2, false)] {
            let unit = UnitCost {
                usage: usage(30, 70),
                choices_in_request: 3,
                latency_ms: 100 + i,
                search: None,
            };
            e.add(&unit, p);
        }
        e.add(
            &UnitCost {
                usage: None,
                choices_in_request: 1,
                latency_ms: 50,
                search: None,
            },
            true,
        );
        assert_eq!(e.strategy, Strategy::Sample);
        assert_eq!((e.units, e.problems, e.wall_ms), (4, 2, 353));
        assert_eq!(e.calls, Ratio::from_integer(2));
        assert_eq!(e.tokens, Some(Ratio::from_integer(100)));
        assert_eq!(e.units_without_usage, 1);
        assert_eq!(e.search, SearchTotals::default());
        assert_eq!(e.per_problem(e.calls), Some(1.0));
        assert_eq!(e.dead_step_rate(), None);
        // One choice of three: a third of a request, never rounded inside.
        let mut third = Effort::default();
        third.add(
            &UnitCost {
                usage: usage(1, 0),
                choices_in_request: 3,
                latency_ms: 0,
                search: None,
            },
            true,
        );
        assert_eq!(third.calls, Ratio::new(1, 3));
        assert_eq!(third.tokens, Some(Ratio::new(1, 3)));
    }

    #[test]
    fn searches_sum_their_counters() {
        let mut e = Effort::default();
        let mut capped = search(10, 6, 2, 8);
        capped.cap_hit = true;
        capped.reward_parse_failures = 3;
        let mut failed = search(5, 1, 1, 4);
        failed.failed = Some("server (HTTP 500)".into());
        failed.replayed_calls = 2;
        failed.unvalued_terminals = 1;
        let units = [
            (capped, usage(1000, 500), 2000, true),
            (search(7, 7, 0, 8), usage(700, 300), 1500, false),
            (failed, None, 500, true),
        ];
        for (st, u, ms, new) in units {
            let unit = UnitCost {
                usage: u,
                choices_in_request: 1,
                latency_ms: ms,
                search: Some(st),
            };
            e.add(&unit, new);
        }
        assert_eq!(e.strategy, Strategy::Mcts);
        assert_eq!((e.units, e.problems, e.wall_ms), (3, 2, 4000));
        assert_eq!(e.calls, Ratio::from_integer(36));
        assert_eq!(e.tokens, Some(Ratio::from_integer(2500)));
        assert_eq!(e.units_without_usage, 1);
        let want = SearchTotals {
            simulations: 12,
            policy_calls: 22,
            reward_calls: 14,
            code_executions: 17,
            dead_steps: 3,
            steps: 20,
            reward_parse_failures: 3,
            unvalued_terminals: 1,
            cap_hits: 1,
            failed: 1,
            replayed_calls: 2,
        };
        assert_eq!(e.search, want);
        assert_eq!(e.per_problem(e.calls), Some(18.0));
        assert_eq!(
            e.per_problem(Ratio::from_integer(u128::from(e.wall_ms))),
            Some(2000.0)
        );
        assert_eq!(e.dead_step_rate(), Some(0.15));
        assert_eq!(Effort::default().per_problem(e.calls), None);
    }

    #[test]
    fn ratios_convert_to_the_nearest_float() {
        assert_eq!(ratio_f64(Ratio::new(7, 2)), 3.5);
        assert_eq!(
            ratio_f64(Ratio::new(u128::from(u64::MAX) * 4 + 2, 4)),
            2f64.powi(64)
        );
        assert_eq!(ratio_f64(Ratio::new(1, 3)), 1.0 / 3.0);
    }
}
