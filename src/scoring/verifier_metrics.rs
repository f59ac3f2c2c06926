//! The verifier metrics of a scored model: each sample's stored step scores aggregated, then per
//! problem bon@N and wmaj@N (per aggregation) and maj@N for every N of the curve (the k grid and
//! n), as columns beside the other metrics, so every report, `compare` and `history` treat them
//! alike; what the verifier could not score; and how its step scores agree with the run's step
//! labels (`gpassk label --from-run`).
//!
//! bon@N and wmaj@N of a problem rest on its samples that have a verifier score, as pass@k rests
//! on its usable samples: a sample without one (an unreadable reply, no steps, or not scored yet)
//! is left out and counted, never read as 0 nor as a rank, and the problem has a value at every N
//! up to its scored samples. maj@N needs no score and uses every usable sample, as maj@n does.

use super::label::StepLabel;
use super::verifier_calls::VerifierScores;
use super::ModelScore;
use crate::config::VerifierSettings;
use crate::metrics::agreement::{step_agreement, LabelledStep, StepAgreement};
use crate::metrics::{
    best_of_n, majority_at, pass_at_k, to_f64, weighted_majority_at, Aggregation, MetricKind,
    Sample, VoteBudget, VoteEstimate, DEFAULT_BUDGET,
};
use crate::rundir::record::{read_lines, SampleIndex};
use crate::rundir::RunDir;
use crate::stats::paired::paired_test_by;
use crate::stats::{cluster_indices, cluster_key, PairedTest};
use anyhow::{Context, Result};
use num_rational::BigRational;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What scoring one model needs of the verifier: its settings and stored scores, and where the
/// run's step labels would be.
pub struct VerifierInputs {
    pub settings: VerifierSettings,
    pub scores: VerifierScores,
    pub labels: PathBuf,
}

impl VerifierInputs {
    /// The scores `settings`' PRM gave `model`'s samples in `dir`.
    pub fn load(dir: &RunDir, model: &str, settings: &VerifierSettings) -> Result<VerifierInputs> {
        let scores = VerifierScores::load(&dir.verifier_scores(model), &settings.reward_model_id)?;
        Ok(VerifierInputs {
            settings: settings.clone(),
            scores,
            labels: dir.labels_dir().join("labels.jsonl"),
        })
    }

    /// A sample's score under each aggregation, or why it has none.
    pub fn sample(&self, problem_id: &str, slot: SampleIndex, response: Option<&str>) -> Scored {
        let Some(response) = response else {
            return Scored::NotScored;
        };
        match self.scores.get(problem_id, slot, response) {
            None => Scored::NotScored,
            Some(None) => Scored::Unreadable,
            Some(Some([])) => Scored::NoSteps,
            Some(Some(steps)) => Scored::Scores(
                (self.settings.aggregations.iter())
                    .map(|a| a.of(steps).unwrap_or(f64::NAN))
                    .collect(),
            ),
        }
    }
}

/// One sample's verifier score, as grading finds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Scored {
    /// One score per aggregation, in the settings' order.
    Scores(Vec<f64>),
    /// The PRM's reply held no readable score.
    Unreadable,
    /// The response split into no steps.
    NoSteps,
    /// No stored score for this response (not verified yet, or no response kept).
    NotScored,
}

/// One sample as the verifier metrics need it.
struct Voter {
    correct: bool,
    class: Option<u64>,
    score: Scored,
}

/// The samples met while grading one model, per problem.
#[derive(Default)]
pub struct Voters {
    problems: Vec<Vec<Voter>>,
}

impl Voters {
    pub fn new(problems: usize) -> Voters {
        Voters {
            problems: (0..problems).map(|_| Vec::new()).collect(),
        }
    }

    pub fn add(&mut self, problem: usize, correct: bool, class: Option<u64>, score: Scored) {
        self.problems[problem].push(Voter {
            correct,
            class,
            score,
        });
    }
}

/// How a model's samples fared with the verifier, and what its metrics rest on.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifierSummary {
    pub reward_model: String,
    pub aggregations: Vec<Aggregation>,
    /// The N of the curve: the k grid's values up to n, and n.
    pub sizes: Vec<u64>,
    /// Usable samples (greedy answers aside), and how many of them have scores.
    pub samples: u64,
    pub scored: u64,
    pub unreadable: u64,
    pub no_steps: u64,
    pub not_scored: u64,
    /// Problems with samples left out of bon@N and wmaj@N: some sample had no score (they count
    /// at each N up to their scored samples).
    pub partial_problems: usize,
    /// Problems left out of bon@N and wmaj@N at every N: no sample has a score.
    pub excluded_problems: usize,
    /// Per problem (aligned with the model's), its usable samples without a score.
    pub unscored: Vec<u32>,
    /// Per N of `sizes`, the problems with at least N scored samples: those bon@N rests on.
    pub problems_at: Vec<usize>,
    /// When the vote metrics enumerate subsets and how they sample beyond.
    pub budget: VoteBudget,
    /// Agreement with the run's step labels, when it has any for this model's samples.
    pub labels: Option<LabelAgreement>,
    /// bon@N − maj@N per N and aggregation, paired over the problems both score.
    pub versus: Vec<Versus>,
}

/// Does the verifier beat voting at N: bon@N against maj@N (maj@n at N = n), paired by problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Versus {
    pub size: u64,
    pub aggregation: Aggregation,
    /// `a` is maj@N, `b` bon@N; `delta` is bon − maj; the p-value is uncorrected (exploratory).
    pub test: PairedTest,
}

/// The verifier's step scores against the run's step labels for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelAgreement {
    /// Labelled samples whose step scores were set against their labels.
    pub solutions: u64,
    /// Labelled samples left out: no score, an unreadable reply, or another number of steps
    /// (the label and verifier split steps differently).
    pub unpaired: u64,
    pub agreement: StepAgreement,
}

/// The metrics one problem gets: a value per column, with its Monte Carlo standard error where
/// it was estimated.
type Cells = Vec<Option<(BigRational, Option<f64>)>>;

/// Adds the verifier's columns (per N: maj@N below n, then per aggregation wmaj@N and bon@N; and
/// pass@n when n is not in the k grid) to `score`, recomputes its estimates, and sets its summary.
pub fn extend(
    score: &mut ModelScore,
    voters: Voters,
    inputs: &VerifierInputs,
    ks: &[u64],
) -> Result<()> {
    let n = u64::from(score.n);
    let mut sizes: Vec<u64> = ks.iter().copied().filter(|&k| k <= n).collect();
    sizes.push(n);
    sizes.sort_unstable();
    sizes.dedup();
    sizes.retain(|&s| s > 0);
    let aggregations = &inputs.settings.aggregations;
    let columns = columns(&sizes, n, aggregations);
    let budget = DEFAULT_BUDGET;
    let cells: Vec<Result<Cells>> = crate::util::par_map(&voters.problems, |voters| {
        problem_cells(voters, (&columns, aggregations), &budget)
    });
    let values = &mut score.values;
    // pass@n tops the curve at N = n, where the k grid may not reach.
    let pass_n = MetricKind::PassAtK { k: n };
    if values.column(&pass_n).is_none() {
        values.metrics.push(pass_n);
        values.std_errors.push(None);
        for (row, p) in values.rows.iter_mut().zip(&score.problems) {
            let v = (p.n >= n).then(|| pass_at_k(p.n, p.c, n)).transpose()?;
            row.push(v);
        }
    }
    let first = values.metrics.len();
    values.metrics.extend(columns.iter().cloned());
    values.std_errors.extend(columns.iter().map(|_| None));
    for (p, row) in cells.into_iter().enumerate() {
        let row =
            row.with_context(|| format!("model {}: problem {}", score.name, score.problems[p].id))?;
        for (c, cell) in row.into_iter().enumerate() {
            if let Some(se) = cell.as_ref().and_then(|c| c.1) {
                let column = values.std_errors[first + c]
                    .get_or_insert_with(|| vec![None; score.problems.len()]);
                column[p] = Some(se);
            }
            values.rows[p].push(cell.map(|c| c.0));
        }
    }
    score.estimates = crate::stats::estimates(&score.problems, values, &score.aggregate, n);
    let mut summary = summary(&voters, inputs, sizes, budget);
    summary.labels = label_agreement(&score.name, inputs)?;
    summary.versus = versus(score, &summary);
    score.verifier = Some(summary);
    Ok(())
}

/// The verifier columns in report order.
fn columns(sizes: &[u64], n: u64, aggregations: &[Aggregation]) -> Vec<MetricKind> {
    let mut out = Vec::new();
    for &size in sizes {
        if size < n {
            out.push(MetricKind::MajorityAt { size });
        }
        for &aggregation in aggregations {
            out.push(MetricKind::WeightedMajority { size, aggregation });
            out.push(MetricKind::BestOfN { size, aggregation });
        }
    }
    out
}

/// One problem's value in every verifier column: maj@N from every usable sample, wmaj@N and
/// bon@N from the samples with a score; None where N exceeds the samples they rest on.
fn problem_cells(
    voters: &[Voter],
    (columns, aggregations): (&[MetricKind], &[Aggregation]),
    budget: &VoteBudget,
) -> Result<Cells> {
    let sample = |v: &Voter, score: f64| Sample {
        correct: v.correct,
        class: v.class,
        score,
    };
    let plain: Vec<Sample> = voters.iter().map(|v| sample(v, 0.0)).collect();
    let per_aggregation = |i: usize| -> Option<Vec<Sample>> {
        let scored: Vec<Sample> = (voters.iter())
            .filter_map(|v| match &v.score {
                Scored::Scores(s) => Some(sample(v, s[i])),
                _ => None,
            })
            .collect();
        (!scored.is_empty()).then_some(scored)
    };
    let vote = |e: VoteEstimate| {
        let se = (!e.is_exact()).then(|| e.std_error());
        (e.value().clone(), se)
    };
    let mut by_aggregation: BTreeMap<Aggregation, Option<Vec<Sample>>> = BTreeMap::new();
    let mut cells = Vec::with_capacity(columns.len());
    for column in columns {
        let cell = match column {
            MetricKind::MajorityAt { size } if !plain.is_empty() => {
                majority_at(&plain, *size, budget)?.map(vote)
            }
            MetricKind::WeightedMajority { size, aggregation }
            | MetricKind::BestOfN { size, aggregation }
                if !plain.is_empty() =>
            {
                let index = aggregations.iter().position(|a| a == aggregation);
                let scored = by_aggregation
                    .entry(*aggregation)
                    .or_insert_with(|| per_aggregation(index.unwrap_or(0)));
                match (scored, column) {
                    (None, _) => None,
                    (Some(s), MetricKind::BestOfN { .. }) => {
                        best_of_n(s, *size)?.map(|v| (v, None))
                    }
                    (Some(s), _) => weighted_majority_at(s, *size, budget)?.map(vote),
                }
            }
            _ => None,
        };
        cells.push(cell);
    }
    Ok(cells)
}

/// bon@N − maj@N for every N and aggregation the model has both of.
fn versus(score: &ModelScore, summary: &VerifierSummary) -> Vec<Versus> {
    let n = u64::from(score.n);
    let values = &score.values;
    let mut out = Vec::new();
    for &size in &summary.sizes {
        let maj = match size < n {
            true => MetricKind::MajorityAt { size },
            false => MetricKind::Majority,
        };
        for &aggregation in &summary.aggregations {
            let bon = MetricKind::BestOfN { size, aggregation };
            let (Some(a), Some(b)) = (values.column(&maj), values.column(&bon)) else {
                continue;
            };
            let (pairs, keys): (Vec<(f64, f64)>, Vec<String>) = (values.rows.iter())
                .zip(&score.problems)
                .filter_map(|(r, p)| {
                    let pair = (to_f64(r[a].as_ref()?), to_f64(r[b].as_ref()?));
                    Some((pair, cluster_key(&p.id, p.group.as_deref())))
                })
                .unzip();
            let (clusters, units) = cluster_indices(keys.iter().map(String::as_str));
            let clusters = (units < pairs.len()).then_some(clusters.as_slice());
            if let Some(test) = paired_test_by(&pairs, clusters) {
                out.push(Versus {
                    size,
                    aggregation,
                    test,
                });
            }
        }
    }
    out
}

fn summary(
    voters: &Voters,
    inputs: &VerifierInputs,
    sizes: Vec<u64>,
    budget: VoteBudget,
) -> VerifierSummary {
    let mut s = VerifierSummary {
        reward_model: inputs.settings.reward_model_id.clone(),
        aggregations: inputs.settings.aggregations.clone(),
        sizes,
        samples: 0,
        scored: 0,
        unreadable: 0,
        no_steps: 0,
        not_scored: 0,
        partial_problems: 0,
        excluded_problems: 0,
        unscored: Vec::with_capacity(voters.problems.len()),
        problems_at: Vec::new(),
        budget,
        labels: None,
        versus: Vec::new(),
    };
    for problem in &voters.problems {
        let mut missing = 0;
        for v in problem {
            s.samples += 1;
            let counter = match v.score {
                Scored::Scores(_) => &mut s.scored,
                Scored::Unreadable => &mut s.unreadable,
                Scored::NoSteps => &mut s.no_steps,
                Scored::NotScored => &mut s.not_scored,
            };
            *counter += 1;
            missing += !matches!(v.score, Scored::Scores(_)) as u32;
        }
        s.partial_problems += (missing > 0) as usize;
        s.excluded_problems += (!problem.is_empty() && missing as usize == problem.len()) as usize;
        s.unscored.push(missing);
    }
    let scored = |p: &Vec<Voter>, missing: &u32| p.len() as u64 - u64::from(*missing);
    let counts: Vec<u64> = (voters.problems.iter().zip(&s.unscored))
        .map(|(p, m)| scored(p, m))
        .collect();
    s.problems_at = (s.sizes.iter())
        .map(|&n| counts.iter().filter(|&&c| c >= n).count())
        .collect();
    s
}

/// A labelled step: its index (from 1), rollouts that reached the gold answer, rollouts.
type StepCounts = (usize, u32, u32);

/// The model's step scores set against the run's step labels of its samples; None when the run
/// has no labels for them. A labelled sample pairs step by step only when the verifier scored it
/// with as many steps as it has labels.
fn label_agreement(model: &str, inputs: &VerifierInputs) -> Result<Option<LabelAgreement>> {
    let mut solutions: BTreeMap<(String, SampleIndex), Vec<StepCounts>> = BTreeMap::new();
    read_lines(&inputs.labels, |l: StepLabel| {
        let prefix = format!("{model}:{}:", l.problem_id);
        let slot = l.solution_id.strip_prefix(&prefix).and_then(sample_index);
        if let Some(slot) = slot.filter(|s| *s != SampleIndex::Greedy) {
            let steps = solutions.entry((l.problem_id, slot)).or_default();
            steps.push((l.step_index, l.correct, l.rollouts));
        }
        Ok(())
    })?;
    if solutions.is_empty() {
        return Ok(None);
    }
    let (mut paired, mut unpaired, mut steps) = (0, 0, Vec::new());
    for ((problem, slot), mut labels) in solutions {
        labels.sort_unstable();
        let scores = inputs.scores.of_sample(&problem, slot).flatten();
        let aligned = scores.filter(|s| {
            s.len() == labels.len() && labels.iter().enumerate().all(|(i, l)| l.0 == i + 1)
        });
        let Some(scores) = aligned else {
            unpaired += 1;
            continue;
        };
        paired += 1;
        for (&score, &(_, correct, rollouts)) in scores.iter().zip(&labels) {
            steps.push(LabelledStep {
                score,
                correct,
                rollouts,
            });
        }
    }
    Ok(step_agreement(&steps).map(|agreement| LabelAgreement {
        solutions: paired,
        unpaired,
        agreement,
    }))
}

/// A sample index as `gpassk label --from-run` writes it in a solution id (`3`, `greedy`).
fn sample_index(text: &str) -> Option<SampleIndex> {
    match text {
        "greedy" => Some(SampleIndex::Greedy),
        t => t.parse().ok().map(SampleIndex::Sample),
    }
}
