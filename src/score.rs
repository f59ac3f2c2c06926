//! Grading stored samples and turning them into per-problem counts, votes, exact metrics and
//! intervals; loading a whole run directory back for `score`, `report`, `compare` and `audit`.

use crate::checkpoint::{read_records, Record, SampleIndex, UnitOutcome};
use crate::cli::BadInput;
use crate::client::ApiKey;
use crate::dataset::Problem;
use crate::grade::judge::{
    judge_pending, render, response_hash, GraderMode, JudgeInput, JudgeJob, JudgeSettings,
    JudgeStats, JudgeVerdicts,
};
use crate::grade::{canonical_key, grade, grade_against, Gold, GradeConfig, Outcome};
use crate::manifest::Manifest;
use crate::metrics::{aggregate, Aggregate, MetricKind, ProblemCounts, Tau};
use crate::stats::{estimates, problem_values, Estimate, ProblemValues, Vote};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

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
    // Per problem: the answer classes of its samples as (key hash, members, members correct).
    // Keys are hashed so memory stays a few bytes per distinct answer, never the responses.
    let mut classes: Vec<Vec<(u64, u32, u32)>> = vec![Vec::new(); inputs.problems.len()];
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
        if let (Some(answer), true) = (&verdict.extracted, slot < n as usize) {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            canonical_key(answer).hash(&mut h);
            let key = h.finish();
            let ok = (outcome == Outcome::Correct) as u32;
            match classes[p].iter_mut().find(|c| c.0 == key) {
                Some(c) => {
                    c.1 += 1;
                    c.2 += ok;
                }
                None => classes[p].push((key, 1, ok)),
            }
        }
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
    let votes: Vec<Vote> = classes
        .iter()
        .map(|cs| {
            let tally: Vec<(u32, u32)> = cs.iter().map(|c| (c.1, c.2)).collect();
            Vote::from_classes(&tally)
        })
        .collect();
    let values = problem_values(&problems, &votes, inputs.ks, inputs.taus)?;
    let estimates = estimates(&problems, &values, &aggregate, n as u64);
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
        votes,
        values,
        estimates,
    })
}

/// Re-grades a run directory offline: the config, dataset, limit and shard come from its manifest.
pub fn load_run(run_dir: &Path) -> Result<RunResults> {
    let manifest = Manifest::read(run_dir)?;
    let where_ = run_dir.join("manifest.json");
    let mut settings = if manifest.config.is_null() {
        crate::config::load(Path::new(&manifest.config_path))
    } else {
        crate::config::load_json(&manifest.config, Path::new(&manifest.config_path))
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
    let plan = crate::run::build_plan(settings, manifest.dataset.limit, manifest.shard)
        .with_context(|| format!("re-loading the plan of {}", run_dir.display()))?;
    if plan.dataset.sha256 != manifest.dataset.sha256 {
        return Err(BadInput(format!(
            "{}: field `dataset.sha256`: dataset {} changed since the run ({} then, {} now); \
             scoring it would grade against different answers",
            where_.display(),
            plan.dataset.name,
            crate::run::short(&manifest.dataset.sha256),
            crate::run::short(&plan.dataset.sha256)
        ))
        .into());
    }
    // Offline: stored judge verdicts are used, the judge is never called.
    crate::run::score_run(&plan, run_dir, Some(manifest), None)
}

/// `gpassk score <run dir>`: re-grade and rewrite every output file.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// The run directory (holding manifest.json and checkpoints/).
    pub run_dir: PathBuf,
    /// Do not print the summary table.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run_score(args: ScoreArgs) -> Result<u8> {
    let results = load_run(&args.run_dir)?;
    let written = crate::report::write_all(&args.run_dir, &results)?;
    if !args.quiet {
        let table = crate::report::Format::Table.exporter().export(&results)?;
        print!("{}", String::from_utf8_lossy(&table));
        for path in written {
            println!("wrote {}", path.display());
        }
    }
    Ok(0)
}
