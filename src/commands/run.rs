//! `gpassk run`: resolve the plan and run directory, sample every model, then grade and report.

use crate::checkpoint::checkpoint_path;
use crate::client::ApiKey;
use crate::config::GraderMode;
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::manifest::Manifest;
use crate::plan::{self, Plan};
use crate::report;
use crate::runner::{self, load_done, missing_work, DoneSet, ModelEnd, SamplingJob};
use crate::scoring::{score_run, JudgeCall};
use crate::shard::Shard;
use crate::util::{coarse_k_note, now_rfc3339};
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk run --config configs/config.toml --dry-run\n  gpassk run --config configs/config.toml --models gpt-4o --limit 20\n  gpassk run --config configs/config.toml --resume latest\n  gpassk run --config configs/config.toml --shard 0/4"
)]
pub struct RunArgs {
    /// The run configuration.
    #[arg(long, default_value = "configs/config.toml")]
    pub config: PathBuf,
    /// Continue a run: its directory, or `latest` for the newest under output_dir.
    #[arg(long)]
    pub resume: Option<String>,
    /// Resume even when sampling parameters, prompts or the dataset changed.
    #[arg(long)]
    pub force: bool,
    /// Print the plan (units, requests, tokens) and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only the first N problems (overrides `limit` in the config).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only these models (comma-separated names from the config).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Only the problems whose id hashes to shard I of N (0 ≤ I < N); join shards with `gpassk merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// Print every metric with its exact interval bounds instead of the table that fits the terminal.
    #[arg(long)]
    pub wide: bool,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, default_value_t = 5.0, hide = true)]
    pub progress_interval: f64,
}

pub fn run(args: RunArgs) -> Result<ExitStatus> {
    let plan = plan::load(&args.config, &args.models, args.limit, args.shard).map_err(bad_input)?;
    let output_dir = plan.settings.evaluation.output_dir.clone();
    let resume_dir = match &args.resume {
        None => None,
        Some(r) => Some(resolve_resume(r, &output_dir)?),
    };
    if args.dry_run {
        print_plan(&plan, resume_dir.as_deref()).map_err(bad_input)?;
        return Ok(ExitStatus::Success);
    }
    let keys = runner::read_keys(&plan.settings)?;
    let judge_key = judge_key(&plan)?;
    if !args.quiet {
        warn_coarse_k(&plan);
    }
    let (run_dir, mut manifest) = open_run_dir(&plan, resume_dir, args.force)?;
    if !args.quiet {
        eprintln!("run directory: {}", run_dir.display());
    }
    // With live bars the progress reporter announces the interrupt (a print from the signal
    // thread would tear the bars).
    let bars = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (shutdown, _signals) = super::shutdown_on_signals(args.quiet || bars)?;
    let job = SamplingJob {
        settings: plan.settings.clone(),
        run_dir: run_dir.clone(),
        run_id: manifest.run_id.clone(),
        prepared: plan.prepared.clone(),
        keys,
        quiet: args.quiet,
        progress_interval: Duration::from_secs_f64(args.progress_interval.max(0.05)),
    };
    let ends = runner::sample_all(&job, &shutdown)?;
    let interrupted = record_ends(&plan, &run_dir, &mut manifest, &ends)?;
    let resume_cmd = format!(
        "gpassk run --config {} --resume {}",
        args.config.display(),
        run_dir.display()
    );
    if interrupted {
        for (name, m) in manifest.models.iter().filter(|(_, m)| m.api_error > 0) {
            eprintln!("model {name}: {} failed{}", units(m.api_error), causes(m));
        }
        eprintln!("interrupted: checkpoints saved; continue with:\n  {resume_cmd}");
        return Ok(ExitStatus::Interrupted);
    }
    let call = judge_key.map(|key| JudgeCall {
        key,
        shutdown: &shutdown,
    });
    let results = score_run(&plan, &run_dir, Some(manifest.clone()), call.as_ref())?;
    report::write_all(&run_dir, &results)?;
    print!("{}", report::terminal_table(&results, args.wide));
    println!("results: {}", run_dir.display());
    let status = runner::exit_status_for(&ends, &manifest);
    if status != ExitStatus::Success {
        explain_failures(&manifest, &resume_cmd);
    }
    Ok(status)
}

/// The judge's key when the config's grader calls the judge: `Some(key)` (the key itself may be
/// None for servers without auth); `None` when the rule grader decides alone.
fn judge_key(plan: &Plan) -> Result<Option<Option<ApiKey>>> {
    match (&plan.settings.judge, plan.settings.evaluation.grader) {
        (Some(j), mode) if mode != GraderMode::Rule => Ok(Some(runner::read_key(
            j.api.api_key_env.as_deref(),
            "the judge",
        )?)),
        _ => Ok(None),
    }
}

fn warn_coarse_k(plan: &Plan) {
    let k = plan
        .settings
        .evaluation
        .ks
        .iter()
        .max()
        .copied()
        .unwrap_or(1);
    let models: Vec<(&str, u64)> = plan
        .settings
        .models
        .iter()
        .map(|m| (m.name.as_str(), u64::from(m.sampling.n)))
        .collect();
    if let Some(note) = coarse_k_note(k, &models) {
        let width = crate::util::terminal_width();
        eprintln!("{}", super::tabular::wrap(&note, width, "  "));
    }
}

/// The run directory and its manifest, marked `running`: resumed, or created fresh.
fn open_run_dir(
    plan: &Plan,
    resume_dir: Option<PathBuf>,
    force: bool,
) -> Result<(PathBuf, Manifest)> {
    let (run_dir, mut manifest) = match resume_dir {
        Some(dir) => {
            let old = Manifest::read(&dir)?;
            plan.check_resume(&old, force)?;
            let m = plan.update_manifest(old);
            (dir, m)
        }
        None => new_run_dir(plan)?,
    };
    manifest.status = "running".into();
    manifest.updated_at = now_rfc3339();
    manifest
        .write(&run_dir)
        .with_context(|| format!("cannot write manifest in {}", run_dir.display()))?;
    Ok((run_dir, manifest))
}

fn new_run_dir(plan: &Plan) -> Result<(PathBuf, Manifest)> {
    let output_dir = &plan.settings.evaluation.output_dir;
    let run_id = runner::new_run_id(&plan.settings.config_hash);
    let mut dir = output_dir.join(&run_id);
    let mut i = 1;
    while dir.exists() {
        dir = output_dir.join(format!("{run_id}-{i}"));
        i += 1;
    }
    let run_id = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(&run_id)
        .to_string();
    std::fs::create_dir_all(dir.join("checkpoints"))
        .with_context(|| format!("cannot create run directory {}", dir.display()))?;
    let manifest = plan.new_manifest(&run_id);
    Ok((dir, manifest))
}

/// Counts each model's checkpoint into the manifest and writes it; true when interrupted.
fn record_ends(
    plan: &Plan,
    run_dir: &Path,
    manifest: &mut Manifest,
    ends: &[(String, ModelEnd)],
) -> Result<bool> {
    let index = plan.id_index();
    for m in &plan.settings.models {
        let path = checkpoint_path(run_dir, &m.name);
        let counts = runner::count_checkpoint(&path, &index, m.sampling.n, m.sampling.greedy)?;
        let end = ends.iter().find(|(n, _)| n == &m.name).map(|(_, e)| e);
        manifest.models.insert(
            m.name.clone(),
            runner::model_manifest(m, end, &counts, plan.prepared.len()),
        );
    }
    let interrupted = ends.iter().any(|(_, e)| *e == ModelEnd::Interrupted);
    manifest.status = if interrupted {
        "interrupted".into()
    } else if manifest.models.values().all(|m| m.status == "complete") {
        "complete".into()
    } else {
        "incomplete".into()
    };
    manifest.updated_at = now_rfc3339();
    if !interrupted {
        manifest.finished_at = Some(manifest.updated_at.clone());
    }
    manifest.write(run_dir)?;
    Ok(interrupted)
}

fn explain_failures(manifest: &Manifest, resume_cmd: &str) {
    for (name, m) in &manifest.models {
        if let Some(e) = &m.error {
            eprintln!("error: {e}");
            if m.api_error > 0 {
                eprintln!("  {} failed{}", units(m.api_error), causes(m));
            }
        } else if m.status != "complete" {
            eprintln!(
                "error: model {name}: {} still failed after retries{}",
                units(m.api_error),
                causes(m)
            );
        }
    }
    eprintln!("some units failed; request them again with:\n  {resume_cmd}");
}

/// The failure causes of a model, one indented line each (`  connection: … refused ×25`), after
/// a colon; nothing when no cause is known.
fn causes(m: &crate::manifest::ModelManifest) -> String {
    let width = crate::util::terminal_width().saturating_sub(2);
    runner::describe_causes(&m.failure_causes, width)
        .iter()
        .fold(String::new(), |acc, line| {
            let lead = if acc.is_empty() { ":" } else { "" };
            format!("{acc}{lead}\n  {line}")
        })
}

fn units(n: u64) -> String {
    format!("{n} unit{}", if n == 1 { "" } else { "s" })
}

fn resolve_resume(r: &str, output_dir: &Path) -> Result<PathBuf> {
    if r != "latest" {
        let p = PathBuf::from(r);
        if !p.join("manifest.json").is_file() {
            return Err(BadInput::new(format!(
                "--resume {r}: no manifest.json there; is it a gpassk run directory?"
            ))
            .into());
        }
        return Ok(p);
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(output_dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.join("manifest.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    runs.pop().ok_or_else(|| {
        BadInput::new(format!(
            "--resume latest: no runs under {}",
            output_dir.display()
        ))
        .into()
    })
}

fn print_plan(plan: &Plan, resume: Option<&Path>) -> Result<()> {
    let index = plan.id_index();
    let prompt_tokens: u64 = plan.prepared.iter().map(|p| p.prompt_tokens_estimate).sum();
    println!(
        "plan (dry run, nothing is sent): dataset {} — {} problems, {} few-shot examples",
        plan.dataset.name,
        plan.prepared.len(),
        plan.few_shot_examples
    );
    let (mut all_units, mut all_requests) = (0u64, 0u64);
    for m in &plan.settings.models {
        let done = match resume {
            Some(dir) => load_done(&checkpoint_path(dir, &m.name), &index)?,
            None => DoneSet::new(),
        };
        let (mut units, mut requests, mut prompt) = (0u64, 0u64, 0u64);
        for w in missing_work(plan.prepared.len(), &m.sampling, &done) {
            units += w.slots.len() as u64;
            requests += 1;
            prompt += plan.prepared[w.problem].prompt_tokens_estimate;
        }
        let completion = match m.sampling.max_tokens {
            Some(t) => format!("≤ {} completion tokens", units * t as u64),
            None => "completion tokens unbounded (no max_tokens)".into(),
        };
        println!(
            "  {}: {} problems × ({} samples{}) → {units} units in {requests} requests; ~{prompt} prompt tokens, {completion}",
            m.name,
            plan.prepared.len(),
            m.sampling.n,
            if m.sampling.greedy { " + greedy" } else { "" },
        );
        all_units += units;
        all_requests += requests;
    }
    println!("  total: {all_units} units, {all_requests} requests (prompt ~{prompt_tokens} tokens per pass over the problems)");
    Ok(())
}
