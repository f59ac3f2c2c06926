//! `gpassk label`: Math-Shepherd-style process labels. Each step prefix of a solution gets K rollouts
//! from the model; hard estimate HE = 1 when any reaches the gold answer, soft estimate SE = correct/K.
//!
//! Rollouts are units of the runner (same checkpoints, resume, retries, pacing, progress): the
//! "problem" of a rollout is `<solution_id>#<step>`, its sample index the rollout number.

mod steps;

pub use steps::split;

use crate::checkpoint::{checkpoint_path, read_records, write_atomic};
use crate::cli::{BadInput, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::dataset::Problem;
use crate::grade::{grade, GradeConfig, Outcome};
use crate::prompt::ChatMessage;
use crate::run::{plan, RunArgs};
use crate::runner::{self, ModelEnd, Prepared, SamplingJob};
use crate::score::for_each_unit;
use anyhow::{Context, Result};
use clap::Args;
use regex::Regex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The turn that asks the model to go on from the solution prefix.
pub const CONTINUE: &str =
    "Continue the solution above from where it stops, step by step, and put the final answer in \\boxed{}.";

#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The run configuration (model, dataset, sampling, grading).
    #[arg(long, default_value = "configs/config.toml")]
    pub config: PathBuf,
    /// Solutions to label: JSONL lines {"problem_id","solution_id","solution"}.
    #[arg(
        long,
        conflicts_with = "from_run",
        required_unless_present = "from_run"
    )]
    pub solutions: Option<PathBuf>,
    /// Label the stored samples of an earlier `gpassk run`.
    #[arg(long)]
    pub from_run: Option<PathBuf>,
    /// Rollouts per step prefix.
    #[arg(long, default_value_t = 8)]
    pub k: u32,
    /// Output folder (rerunning with the same folder resumes). Default: <output_dir>/label-<inputs hash>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The model that writes rollouts (default: the first enabled model).
    #[arg(long)]
    pub model: Option<String>,
    /// A regex whose matches start steps (overrides `Step N:` / paragraph / line splitting).
    #[arg(long)]
    pub step_regex: Option<String>,
    /// At most this many steps per solution; the rest joins the last step.
    #[arg(long, default_value_t = 20)]
    pub max_steps: usize,
    /// Only the first N solutions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print how many rollouts (and tokens) it would spend, and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub quiet: bool,
}

/// One solution to label.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Solution {
    pub problem_id: String,
    pub solution_id: String,
    pub solution: String,
}

/// One labelled step, as written to `labels.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLabel {
    pub problem_id: String,
    pub solution_id: String,
    pub step_index: usize,
    pub step_text: String,
    pub rollouts: u32,
    pub correct: u32,
    pub he: u8,
    pub se: f64,
}

#[derive(Debug, Clone, Serialize)]
struct SolutionRow {
    problem_id: String,
    solution_id: String,
    steps: usize,
    final_correct: bool,
    first_he0_step: Option<usize>,
    mean_se: Option<f64>,
}

fn read_solutions(path: &Path) -> Result<Vec<Solution>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BadInput(format!("{}: cannot read solutions: {e}", path.display())))?;
    let mut out = Vec::new();
    let mut ids = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let s: Solution = serde_json::from_str(line).map_err(|e| {
            BadInput(format!(
                "{}:{}: expected {{\"problem_id\",\"solution_id\",\"solution\"}}: {e}",
                path.display(),
                i + 1
            ))
        })?;
        if let Some(prev) = ids.insert(s.solution_id.clone(), i + 1) {
            return Err(BadInput(format!(
                "{}:{}: duplicate solution_id {:?} (first on line {prev})",
                path.display(),
                i + 1,
                s.solution_id
            ))
            .into());
        }
        out.push(s);
    }
    if out.is_empty() {
        return Err(BadInput(format!("{}: no solutions", path.display())).into());
    }
    Ok(out)
}

fn solutions_from_run(dir: &Path) -> Result<Vec<Solution>> {
    let ck = dir.join("checkpoints");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&ck)
        .map_err(|e| {
            BadInput(format!(
                "--from-run {}: no checkpoints folder: {e}",
                dir.display()
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        read_records(&f, |r| {
            if r.usable() {
                out.push(Solution {
                    solution_id: format!("{}:{}:{}", r.model, r.problem_id, r.sample_index),
                    problem_id: r.problem_id,
                    solution: r.response.unwrap_or_default(),
                });
            }
            Ok(())
        })?;
    }
    // A unit stored twice (a resumed duplicate) is labelled once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.solution_id.clone()));
    if out.is_empty() {
        return Err(BadInput(format!("--from-run {}: no stored samples", dir.display())).into());
    }
    Ok(out)
}

/// A step prefix waiting for rollouts.
struct Item {
    solution: usize,
    step_index: usize,
    step_text: String,
}

pub fn run(args: LabelArgs) -> Result<u8> {
    if args.k == 0 {
        return Err(BadInput("--k must be at least 1".into()).into());
    }
    let run_args = RunArgs {
        config: args.config.clone(),
        resume: None,
        force: false,
        dry_run: false,
        limit: None,
        models: args.model.iter().cloned().collect(),
        shard: None,
        quiet: args.quiet,
        progress_interval: 5.0,
    };
    let plan = plan(&run_args)?;
    let model = plan.settings.models[0].clone();
    let custom = match &args.step_regex {
        None => None,
        Some(r) => Some(Regex::new(r).map_err(|e| BadInput(format!("--step-regex: {e}")))?),
    };
    let mut solutions = match (&args.solutions, &args.from_run) {
        (Some(p), _) => read_solutions(p)?,
        (None, Some(d)) => solutions_from_run(d)?,
        (None, None) => {
            return Err(BadInput("give --solutions FILE.jsonl or --from-run DIR".into()).into())
        }
    };
    if let Some(l) = args.limit {
        solutions.truncate(l);
    }
    let index: HashMap<&str, usize> = plan
        .problems
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    for s in &solutions {
        if !index.contains_key(s.problem_id.as_str()) {
            return Err(BadInput(format!(
                "solution {:?}: problem {:?} is not in dataset {}",
                s.solution_id, s.problem_id, plan.dataset.name
            ))
            .into());
        }
    }

    // Items and their prompts: the problem's own chat, the prefix as the model's turn, then "continue".
    let mut items = Vec::new();
    let mut prepared = Vec::new();
    let mut pseudo = Vec::new();
    for (si, s) in solutions.iter().enumerate() {
        let p = index[s.problem_id.as_str()];
        let ranges = split(&s.solution, custom.as_ref(), args.max_steps);
        for (i, &(start, end)) in ranges.iter().enumerate() {
            let id = format!("{}#{}", s.solution_id, i + 1);
            let mut messages: Vec<ChatMessage> =
                serde_json::from_str(&plan.prepared[p].messages_json)?;
            messages.push(ChatMessage {
                role: "assistant".into(),
                content: s.solution[..end].to_string(),
            });
            messages.push(ChatMessage {
                role: "user".into(),
                content: CONTINUE.into(),
            });
            prepared.push(Prepared::new(id.clone(), messages));
            pseudo.push(Problem {
                id,
                question: String::new(),
                answer: plan.problems[p].answer.clone(),
                subset: None,
                fields: Default::default(),
            });
            items.push(Item {
                solution: si,
                step_index: i + 1,
                step_text: s.solution[start..end].trim().to_string(),
            });
        }
    }
    let rollouts = items.len() as u64 * args.k as u64;
    if args.dry_run {
        let prompt: u64 = prepared
            .iter()
            .map(|p| p.prompt_tokens_estimate)
            .sum::<u64>()
            * args.k as u64;
        let completion = match model.sampling.max_tokens {
            Some(t) => format!("≤ {} completion tokens", rollouts * t as u64),
            None => "completion tokens unbounded (no max_tokens)".into(),
        };
        println!(
            "plan (dry run, nothing is sent): {} solutions, {} steps × K = {} → {rollouts} rollouts with model {}; ~{prompt} prompt tokens, {completion}",
            solutions.len(),
            items.len(),
            args.k,
            model.name
        );
        return Ok(0);
    }

    let keys = runner::read_keys(&plan.settings)?;
    let out = match &args.out {
        Some(o) => o.clone(),
        None => {
            let mut h = Sha256::new();
            for s in &solutions {
                h.update(s.solution_id.as_bytes());
                h.update([0]);
                h.update(s.solution.as_bytes());
            }
            h.update(format!("{}:{}:{}", model.name, args.k, plan.prompt_hash).as_bytes());
            plan.settings
                .evaluation
                .output_dir
                .join(format!("label-{}", crate::config::hex(&h.finalize()[..6])))
        }
    };
    std::fs::create_dir_all(out.join("checkpoints"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    if !args.quiet {
        eprintln!("label directory: {}", out.display());
    }
    let mut settings = plan.settings.clone();
    let mut rollout_model = model.clone();
    rollout_model.sampling.n = args.k;
    rollout_model.sampling.greedy = false;
    settings.models = vec![rollout_model];
    let job = SamplingJob {
        settings,
        run_dir: out.clone(),
        run_id: out
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("label")
            .to_string(),
        prepared: Arc::new(prepared),
        keys,
        quiet: args.quiet,
        progress_interval: Duration::from_secs(5),
    };
    let ends = runner::sample_all(&job)?;
    let again = format!(
        "rerun the same command{} to continue",
        if args.out.is_none() {
            ""
        } else {
            " (same --out)"
        }
    );
    if ends.iter().any(|(_, e)| *e == ModelEnd::Interrupted) {
        eprintln!("interrupted: rollouts saved in {}; {again}", out.display());
        return Ok(EXIT_INTERRUPTED);
    }

    // Grade rollouts: per item, rollouts done and how many reached the gold answer.
    let ev = &plan.settings.evaluation;
    let grade_cfg = GradeConfig {
        extract_regex: ev.answer_extract_regex.clone(),
        policy: ev.grading,
    };
    let mut done = vec![0u32; items.len()];
    let mut correct = vec![0u32; items.len()];
    let ck = checkpoint_path(&out, &model.name);
    for_each_unit(&ck, &pseudo, args.k, false, |i, _slot, r| {
        done[i] += 1;
        let verdict = grade(
            &pseudo[i].answer,
            r.response.as_deref().unwrap_or(""),
            &grade_cfg,
        );
        correct[i] += (verdict.outcome == Outcome::Correct) as u32;
        Ok(())
    })?;
    let labels: Vec<StepLabel> = items
        .iter()
        .enumerate()
        .map(|(i, it)| StepLabel {
            problem_id: solutions[it.solution].problem_id.clone(),
            solution_id: solutions[it.solution].solution_id.clone(),
            step_index: it.step_index,
            step_text: it.step_text.clone(),
            rollouts: done[i],
            correct: correct[i],
            he: (correct[i] > 0) as u8,
            se: if done[i] > 0 {
                correct[i] as f64 / done[i] as f64
            } else {
                0.0
            },
        })
        .collect();
    let mut jsonl = Vec::new();
    for l in &labels {
        serde_json::to_writer(&mut jsonl, l)?;
        jsonl.push(b'\n');
    }
    write_atomic(&out.join("labels.jsonl"), &jsonl)?;

    let mut rows = Vec::new();
    let mut by_solution: Vec<Vec<&StepLabel>> = vec![Vec::new(); solutions.len()];
    for (it, l) in items.iter().zip(&labels) {
        by_solution[it.solution].push(l);
    }
    for (s, steps) in solutions.iter().zip(&by_solution) {
        let p = index[s.problem_id.as_str()];
        let final_correct =
            grade(&plan.problems[p].answer, &s.solution, &grade_cfg).outcome == Outcome::Correct;
        let scored: Vec<&&StepLabel> = steps.iter().filter(|l| l.rollouts > 0).collect();
        rows.push(SolutionRow {
            problem_id: s.problem_id.clone(),
            solution_id: s.solution_id.clone(),
            steps: steps.len(),
            final_correct,
            first_he0_step: steps
                .iter()
                .find(|l| l.rollouts > 0 && l.he == 0)
                .map(|l| l.step_index),
            mean_se: (!scored.is_empty())
                .then(|| scored.iter().map(|l| l.se).sum::<f64>() / scored.len() as f64),
        });
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &rows {
        w.serialize(r)?;
    }
    write_atomic(
        &out.join("solutions.csv"),
        &w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?,
    )?;
    print!("{}", summary(&labels, &rows));
    println!("labels: {}", out.join("labels.jsonl").display());

    let missing = labels.iter().filter(|l| l.rollouts < args.k).count();
    let failed = ends
        .iter()
        .any(|(_, e)| matches!(e, ModelEnd::Failed(_) | ModelEnd::Incomplete));
    if missing > 0 || failed {
        for (_, e) in &ends {
            if let ModelEnd::Failed(msg) = e {
                eprintln!("error: {msg}");
            }
        }
        eprintln!(
            "{missing} steps have fewer than {} rollouts; {again}",
            args.k
        );
        return Ok(EXIT_FAILED);
    }
    Ok(0)
}

fn summary(labels: &[StepLabel], rows: &[SolutionRow]) -> String {
    let he1 = labels.iter().filter(|l| l.he == 1).count();
    let mut buckets = [0usize; 5];
    for l in labels {
        buckets[((l.se * 4.0).round() as usize).min(4)] += 1;
    }
    let with_he0: Vec<&SolutionRow> = rows.iter().filter(|r| r.first_he0_step.is_some()).collect();
    let wrong = rows.iter().filter(|r| !r.final_correct).count();
    let he0_then_wrong = with_he0.iter().filter(|r| !r.final_correct).count();
    let wrong_with_he0 = rows
        .iter()
        .filter(|r| !r.final_correct && r.first_he0_step.is_some())
        .count();
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * a as f64 / b as f64)
        }
    };
    format!(
        "{} steps in {} solutions: HE = 1 for {he1}, HE = 0 for {}\n\
         SE ≈ 0: {}, 0.25: {}, 0.5: {}, 0.75: {}, 1: {}\n\
         solutions with an HE-0 step whose final answer is wrong: {he0_then_wrong}/{} ({})\n\
         wrong final answers that have an HE-0 step: {wrong_with_he0}/{wrong} ({})\n",
        labels.len(),
        rows.len(),
        labels.len() - he1,
        buckets[0],
        buckets[1],
        buckets[2],
        buckets[3],
        buckets[4],
        with_he0.len(),
        pct(he0_then_wrong, with_he0.len()),
        pct(wrong_with_he0, wrong),
    )
}
