//! Grading stored samples and turning them into per-problem counts and exact metrics.

use crate::checkpoint::{read_records, Record, SampleIndex, UnitOutcome};
use crate::client::ApiKey;
use crate::dataset::Problem;
use crate::grade::judge::{
    judge_pending, render, response_hash, GraderMode, JudgeInput, JudgeJob, JudgeSettings,
    JudgeStats, JudgeVerdicts,
};
use crate::grade::{grade, grade_against, Gold, GradeConfig, Outcome};
use crate::metrics::{aggregate, Aggregate, MetricKind, ProblemCounts, Tau};
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

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
}

/// What the reporters need about a run.
#[derive(Debug, Clone)]
pub struct RunResults {
    pub run_id: String,
    pub dataset: String,
    pub dataset_sha256: String,
    /// The metrics the summary shows, in config order.
    pub shown: Vec<MetricKind>,
    pub models: Vec<ModelScore>,
}

/// Inputs shared by every model's scoring.
#[derive(Clone, Copy)]
pub struct ScoreInputs<'a> {
    pub problems: &'a [Problem],
    pub ks: &'a [u64],
    pub taus: &'a [Tau],
    pub grade: &'a GradeConfig,
    /// Stored LLM-judge verdicts, when the config uses the judge.
    pub judge: Option<&'a crate::grade::judge::JudgeVerdicts>,
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
    let index: HashMap<&str, usize> = problems
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
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
        let slot = match r.sample_index {
            SampleIndex::Sample(i) if i < n => i as usize,
            SampleIndex::Greedy if greedy => n as usize,
            _ => return Ok(()),
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

/// Sends every sample the judge must see and has not yet judged to the judge; verdicts are appended
/// to `grades_path` so that scoring (and any later re-scoring) reads them without asking again.
#[allow(clippy::too_many_arguments)]
pub fn judge_model(
    path: &Path,
    grades_path: &Path,
    problems: &[Problem],
    n: u32,
    greedy: bool,
    grade_cfg: &GradeConfig,
    judge: &JudgeSettings,
    mode: GraderMode,
    key: Option<ApiKey>,
) -> Result<JudgeStats> {
    let done = JudgeVerdicts::load(grades_path, mode)?;
    let mut jobs = Vec::new();
    for_each_unit(path, problems, n, greedy, |p, _slot, r| {
        let response = r.response.as_deref().unwrap_or("");
        let problem = &problems[p];
        let verdict = grade(&problem.answer, response, grade_cfg);
        if !mode.needs_judge(verdict.outcome) || done.has(&r.problem_id, r.sample_index, response) {
            return Ok(());
        }
        let answer = match judge.input {
            JudgeInput::Extracted => match &verdict.extracted {
                Some(a) => a.clone(),
                // Nothing to show the judge: the rule grader's "no answer" stands.
                None => return Ok(()),
            },
            JudgeInput::Response => response.to_string(),
        };
        jobs.push(JudgeJob {
            problem_id: r.problem_id.clone(),
            sample_index: r.sample_index,
            response_hash: response_hash(response),
            prompt: render(
                &judge.prompt,
                &problem.question,
                &problem.answer,
                &answer,
                response,
            ),
        });
        Ok(())
    })?;
    judge_pending(judge, key, jobs, grades_path)
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
    let width = n as usize + 1;
    let mut state = vec![MISSING; inputs.problems.len() * width];
    let mut truncated = 0u64;
    let mut served: BTreeMap<String, u64> = BTreeMap::new();
    // Each gold answer is parsed once, when its problem's first sample arrives.
    let mut golds: Vec<Option<Gold>> = (0..inputs.problems.len()).map(|_| None).collect();
    for_each_unit(path, inputs.problems, n, greedy, |p, slot, r| {
        let response = r.response.as_deref().unwrap_or("");
        let gold = golds[p].get_or_insert_with(|| Gold::new(&inputs.problems[p].answer));
        let verdict = grade_against(gold, response, inputs.grade);
        let outcome = match inputs.judge {
            Some(j) => j.decide(&r, response, verdict.outcome),
            None => verdict.outcome,
        };
        state[p * width + slot] = match outcome {
            Outcome::Correct => CORRECT,
            Outcome::Wrong => WRONG,
            Outcome::NoAnswer => NO_ANSWER,
        };
        if r.outcome == UnitOutcome::Truncated && slot < n as usize {
            truncated += 1;
        }
        if let Some(s) = r.served_model {
            *served.entry(s).or_default() += 1;
        }
        Ok(())
    })?;
    let (mut correct, mut wrong, mut no_answer, mut missing) = (0, 0, 0, 0);
    let mut problems = Vec::with_capacity(inputs.problems.len());
    for (p, prob) in inputs.problems.iter().enumerate() {
        let cells = &state[p * width..(p + 1) * width];
        let samples = &cells[..n as usize];
        for &c in samples {
            match c {
                CORRECT => correct += 1,
                WRONG => wrong += 1,
                NO_ANSWER => no_answer += 1,
                _ => missing += 1,
            }
        }
        let g = cells[n as usize];
        if greedy && g < WRONG {
            missing += 1;
        }
        problems.push(ProblemCounts {
            id: prob.id.clone(),
            subset: prob.subset.clone(),
            n: samples.iter().filter(|&&c| c >= WRONG).count() as u64,
            c: samples.iter().filter(|&&c| c == CORRECT).count() as u64,
            greedy: (greedy && g >= WRONG).then_some(g == CORRECT),
        });
    }
    let aggregate = aggregate(&problems, n as u64, inputs.ks, inputs.taus)?;
    Ok(ModelScore {
        name: name.to_string(),
        model_id: model_id.to_string(),
        n,
        problems,
        correct,
        wrong,
        no_answer,
        truncated,
        missing,
        served_models: served,
        aggregate,
    })
}
