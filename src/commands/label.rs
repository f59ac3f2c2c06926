//! `gpassk label`: Math-Shepherd step labels from rollouts (see [`crate::scoring::label`]).

use crate::config::ModelSettings;
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::plan::{self, Plan};
use crate::rundir::RunDir;
use crate::sampling::{self, ModelEnd, SamplingJob};
use crate::scoring::label::{self, Rollouts, Solution, StepLabel};
use crate::util::{hex, write_atomic};
use anyhow::{Context, Result};
use clap::Args;
use regex::Regex;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk label --config configs/local.toml --from-run results/<run> --k 4 --dry-run\n  gpassk label --config configs/config.toml --solutions solutions.jsonl --k 8 --out labels/"
)]
pub struct LabelArgs {
    /// The run configuration (model, dataset, sampling, grading).
    #[arg(long, default_value = "configs/config.toml")]
    pub config: PathBuf,
    /// The task file (settings.json); default: a settings.json beside the config, when present.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Override one config key, e.g. --set sampling.max_tokens=512 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
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
    /// Output folder (rerunning with the same folder resumes). Default: with --from-run, the run's
    /// `labels/` (where scoring finds them to set a verifier's scores against); else
    /// `<output_dir>/label-<inputs hash>`.
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
    /// No notes, progress lines or summary on stderr.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: LabelArgs) -> Result<ExitStatus> {
    let (plan, solutions, work) = prepare(&args).map_err(bad_input)?;
    let model = plan.settings.models[0].clone();
    if args.dry_run {
        print_plan(&args, &model, &solutions, &work);
        return Ok(ExitStatus::Success);
    }
    let keys = sampling::read_keys(&plan.settings)?;
    let out = out_dir(&args, &plan, &model, &solutions);
    std::fs::create_dir_all(out.checkpoints_dir())
        .with_context(|| format!("cannot create {}", out.display()))?;
    if !args.quiet {
        eprintln!("label directory: {}", out.display());
    }
    let job = rollout_job(&args, (&plan, &model, &work), &out, keys)?;
    let (shutdown, _signals) = super::shutdown_on_signals(args.quiet)?;
    let ends = sampling::sample_all(&job, &shutdown)?;
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
        return Ok(ExitStatus::Interrupted);
    }
    let labels = write_labels(&args, &plan, &work, &solutions, &out, &model)?;
    let missing = labels.iter().filter(|l| l.rollouts < args.k).count();
    let failed = ends
        .iter()
        .any(|(_, e)| matches!(e, ModelEnd::Failed(_) | ModelEnd::Incomplete));
    if missing > 0 || failed {
        for (_, e) in &ends {
            if let ModelEnd::Failed(msg) = e {
                eprintln!("error: {}", crate::util::printable(msg));
            }
        }
        eprintln!(
            "{missing} steps have fewer than {} rollouts; {again}",
            args.k
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}

/// The sampling job of the rollouts: `k` samples a step from the model, no greedy answer.
fn rollout_job(
    args: &LabelArgs,
    (plan, model, work): (&Plan, &ModelSettings, &Rollouts),
    out: &RunDir,
    keys: std::collections::HashMap<String, Option<crate::client::ApiKey>>,
) -> Result<SamplingJob> {
    let mut settings = plan.settings.clone();
    let mut rollout_model = model.clone();
    rollout_model.sampling.n = args.k;
    rollout_model.sampling.greedy = false;
    settings.models = vec![rollout_model];
    let budgets = sampling::BudgetBook::open(&settings, &work.prepared, out)?;
    Ok(SamplingJob {
        search: None,
        budgets,
        settings,
        run_dir: out.clone(),
        run_id: out
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("label")
            .to_string(),
        prepared: Arc::new(work.prepared.clone()),
        keys,
        quiet: args.quiet,
        notes: super::stderr_notes(),
        progress_interval: Duration::from_secs(5),
    })
}

/// The plan, the solutions and their rollout work: everything that depends on input alone.
fn prepare(args: &LabelArgs) -> Result<(Plan, Vec<Solution>, Rollouts)> {
    if args.k == 0 {
        return Err(BadInput("--k must be at least 1".into()).into());
    }
    let models: Vec<String> = args.model.iter().cloned().collect();
    let sources = crate::config::Sources {
        config: args.config.clone(),
        settings: args.settings.clone(),
        overrides: args.set.clone(),
    };
    let (mut plans, notes) = plan::load_tasks(&sources, &models, None, None)?;
    if plans.len() != 1 {
        return Err(BadInput(format!(
            "label works on one task, but the settings file holds {}; pass --settings with a single task object",
            plans.len()
        ))
        .into());
    }
    if !args.quiet {
        notes.iter().for_each(|n| eprintln!("note: {n}"));
    }
    let plan = plans.remove(0);
    let custom = match &args.step_regex {
        None => None,
        Some(r) => Some(Regex::new(r).map_err(|e| BadInput(format!("--step-regex: {e}")))?),
    };
    let mut solutions = match (&args.solutions, &args.from_run) {
        (Some(p), _) => label::read_solutions(p)?,
        (None, Some(d)) => label::solutions_from_run(&RunDir::at(d))?,
        (None, None) => {
            return Err(BadInput("give --solutions FILE.jsonl or --from-run DIR".into()).into())
        }
    };
    if let Some(l) = args.limit {
        solutions.truncate(l);
    }
    label::check_problems(&plan, &solutions)?;
    let work = label::rollouts(&plan, &solutions, custom.as_ref(), args.max_steps)?;
    Ok((plan, solutions, work))
}

fn print_plan(args: &LabelArgs, model: &ModelSettings, solutions: &[Solution], work: &Rollouts) {
    let k = u64::from(args.k);
    let rollouts = work.items.len() as u64 * k;
    let prompt: u64 = work
        .prepared
        .iter()
        .map(|p| p.prompt_tokens_estimate)
        .sum::<u64>()
        * k;
    let completion = match model.sampling.max_tokens {
        Some(t) => format!("≤ {} completion tokens", rollouts * t as u64),
        None => "completion tokens unbounded (no max_tokens)".into(),
    };
    println!(
        "plan (dry run, nothing is sent): {} solutions, {} steps × K = {} → {rollouts} rollouts with model {}; ~{prompt} prompt tokens, {completion}",
        solutions.len(),
        work.items.len(),
        args.k,
        model.name
    );
}

/// `--out`; else the run's `labels/` for `--from-run`, or `<output_dir>/label-<hash of the
/// inputs>`, so that rerunning resumes.
fn out_dir(args: &LabelArgs, plan: &Plan, model: &ModelSettings, solutions: &[Solution]) -> RunDir {
    if let Some(o) = &args.out {
        return RunDir::at(o);
    }
    if let Some(run) = &args.from_run {
        return RunDir::at(RunDir::at(run).labels_dir());
    }
    let mut h = Sha256::new();
    for s in solutions {
        h.update(s.solution_id.as_bytes());
        h.update([0]);
        h.update(s.solution.as_bytes());
    }
    h.update(format!("{}:{}:{}", model.name, args.k, plan.prompt_hash).as_bytes());
    let dir = plan.settings.evaluation.output_dir.as_path();
    RunDir::at(dir.join(format!("label-{}", hex(&h.finalize()[..6]))))
}

/// Grades the rollouts, writes labels.jsonl and solutions.csv, prints the summary.
fn write_labels(
    args: &LabelArgs,
    plan: &Plan,
    work: &Rollouts,
    solutions: &[Solution],
    out: &RunDir,
    model: &ModelSettings,
) -> Result<Vec<StepLabel>> {
    let ev = &plan.settings.evaluation;
    let grade_cfg = ev.grade_config();
    let ck = out.checkpoint(&model.name);
    let labels = label::labels(&ck, work, solutions, args.k, &grade_cfg)?;
    let mut jsonl = Vec::new();
    for l in &labels {
        serde_json::to_writer(&mut jsonl, l)?;
        jsonl.push(b'\n');
    }
    write_atomic(&out.file("labels.jsonl"), &jsonl)?;
    let rows = label::solution_rows(plan, work, solutions, &labels, &grade_cfg);
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &rows {
        w.serialize(r)?;
    }
    write_atomic(
        &out.file("solutions.csv"),
        &w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?,
    )?;
    print!("{}", label::summary(&labels, &rows));
    println!("labels: {}", out.file("labels.jsonl").display());
    Ok(labels)
}
