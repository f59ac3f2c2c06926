//! Grading stored samples and turning them into per-problem counts and exact metrics.

use crate::checkpoint::{read_records, SampleIndex, UnitOutcome};
use crate::dataset::Problem;
use crate::grade::{grade, GradeConfig, Outcome};
use crate::metrics::{aggregate, Aggregate, MetricKind, ProblemCounts, Tau};
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

// Per-unit states, kept as one byte per (problem, slot) so a million units cost a megabyte.
const MISSING: u8 = 0;
const API_ERROR: u8 = 1;
const WRONG: u8 = 2;
const NO_ANSWER: u8 = 3;
const CORRECT: u8 = 4;

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
pub struct ScoreInputs<'a> {
    pub problems: &'a [Problem],
    pub ks: &'a [u64],
    pub taus: &'a [Tau],
    pub grade: &'a GradeConfig,
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
    let index: HashMap<&str, usize> = inputs
        .problems
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    let width = n as usize + 1;
    let mut state = vec![MISSING; inputs.problems.len() * width];
    let mut truncated = 0u64;
    let mut served: BTreeMap<String, u64> = BTreeMap::new();
    read_records(path, |r| {
        let Some(&p) = index.get(r.problem_id.as_str()) else {
            return Ok(());
        };
        let slot = match r.sample_index {
            SampleIndex::Sample(i) if i < n => i as usize,
            SampleIndex::Greedy if greedy => n as usize,
            _ => return Ok(()),
        };
        let cell = &mut state[p * width + slot];
        if *cell >= WRONG {
            return Ok(());
        }
        if !r.usable() {
            *cell = API_ERROR;
            return Ok(());
        }
        let response = r.response.as_deref().unwrap_or("");
        let verdict = grade(&inputs.problems[p].answer, response, inputs.grade);
        *cell = match verdict.outcome {
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
