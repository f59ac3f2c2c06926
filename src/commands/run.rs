//! `gpassk run`: load the tasks, run each through the library's pipeline (`crate::pipeline`),
//! print how each ended and pick the exit status.

use crate::config;
use crate::dataset::shard::Shard;
use crate::error::{bad_input, ExitStatus};
use crate::pipeline::{self, TaskEnd, TaskOutcome, TaskRequest};
use crate::plan::{self, Plan};
use crate::report;
use crate::rundir::manifest::Manifest;
use crate::rundir::RunDir;
use crate::sampling::{self, batch_file};
use crate::scoring::RunResults;
use anyhow::Result;
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
    /// The task file (settings.json); default: a settings.json beside the config, when present.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Override one config key, e.g. --set api.base_url=http://host/v1 or
    /// --set models.NAME.enabled=false (repeatable; applied after the files).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Continue a run: its directory, or `latest` for the newest under output_dir of this config
    /// and shard.
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
    /// Write the missing units as an OpenAI Batch API request file (JSONL) instead of sending
    /// them; the run directory is created (or resumed) and printed, for --import-batch.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["import_batch", "dry_run"])]
    pub export_batch: Option<PathBuf>,
    /// Record a batch output file (JSONL) in the run named by --resume, then grade and report.
    #[arg(
        long,
        value_name = "FILE",
        requires = "resume",
        conflicts_with = "dry_run"
    )]
    pub import_batch: Option<PathBuf>,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, default_value_t = 5.0, hide = true)]
    pub progress_interval: f64,
}

pub fn run(args: RunArgs) -> Result<ExitStatus> {
    let sources = sources(&args);
    let (plans, notes) =
        plan::load_tasks(&sources, &args.models, args.limit, args.shard).map_err(bad_input)?;
    if !args.quiet {
        notes.iter().for_each(|n| eprintln!("note: {n}"));
    }
    let by_file = args.export_batch.is_some() || args.import_batch.is_some();
    pipeline::check_tasks(&plans, args.resume.is_some(), by_file)?;
    if args.dry_run {
        // The "resuming …" note goes to stderr, or nowhere with --quiet.
        let chatter = (!args.quiet).then(super::stderr_notes).unwrap_or_default();
        for plan in &plans {
            let resume_dir = pipeline::resume_dir_for(args.resume.as_deref(), plan, &chatter)?;
            let text = pipeline::plan_text(plan, resume_dir.as_ref()).map_err(bad_input)?;
            print!("{text}");
        }
        return Ok(ExitStatus::Success);
    }
    let mut ran = Vec::new();
    let mut worst = ExitStatus::Success;
    for plan in &plans {
        if plans.len() > 1 {
            println!("== task {} ==", pipeline::task_label(plan));
        }
        let (dir, status, results) = run_task(&args, plan)?;
        let status = store_at_end(&args, plan, &dir, status, results);
        ran.push((pipeline::task_label(plan), dir));
        if status == ExitStatus::Interrupted {
            return Ok(status);
        }
        if worst == ExitStatus::Success {
            worst = status;
        }
    }
    if ran.len() > 1 {
        println!("tasks:");
        for (name, dir) in &ran {
            println!("  {name}: {}", dir.display());
        }
    }
    Ok(worst)
}

fn sources(args: &RunArgs) -> config::Sources {
    config::Sources {
        config: args.config.clone(),
        settings: args.settings.clone(),
        overrides: args.set.clone(),
    }
}

/// Pushes the run to `[store]` when it ends; a shard is part of an evaluation: `gpassk merge`
/// stores the whole once it is joined.
fn store_at_end(
    args: &RunArgs,
    plan: &Plan,
    dir: &RunDir,
    status: ExitStatus,
    results: Option<RunResults>,
) -> ExitStatus {
    match &plan.settings.store {
        Some(store) if args.export_batch.is_none() && args.shard.is_none() => {
            super::push_at_end(store, (Some(plan), dir), status, results)
        }
        Some(_) if args.shard.is_some() && !args.quiet => {
            eprintln!("note: a shard run is not stored; gpassk merge stores the merged run");
            status
        }
        _ => status,
    }
}

/// Runs one task; returns its run directory, its exit status, and the results when it was scored.
fn run_task(args: &RunArgs, plan: &Plan) -> Result<(RunDir, ExitStatus, Option<RunResults>)> {
    let req = TaskRequest {
        resume: args.resume.as_deref(),
        force: args.force,
        quiet: args.quiet,
        import_batch: args.import_batch.as_deref(),
        by_file: args.export_batch.is_some() || args.import_batch.is_some(),
        progress_interval: Duration::from_secs_f64(args.progress_interval.max(0.05)),
    };
    let notes = super::stderr_notes();
    // Held until the task ends: no second process writes this run meanwhile.
    let started = pipeline::start(&req, plan, &notes)?;
    let run_dir = started.run.dir.clone();
    if !args.quiet {
        eprintln!("run directory: {}", run_dir.display());
    }
    if let Some(out) = &args.export_batch {
        let exported = pipeline::export_batch(started, out)?;
        print_exported(&exported, out, &run_dir);
        return Ok((run_dir, ExitStatus::Success, None));
    }
    // With live bars the progress reporter announces the interrupt (a print from the signal
    // thread would tear the bars).
    let bars = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (shutdown, _signals) = super::shutdown_on_signals(args.quiet || bars)?;
    let outcome = pipeline::execute(started, &req, &shutdown, &notes)?;
    let resume_cmd = pipeline::resume_command(&sources(args), &run_dir);
    Ok(report_end(outcome, args.wide, &resume_cmd))
}

/// Prints how a task ended and picks its exit status.
fn report_end(
    outcome: TaskOutcome,
    wide: bool,
    resume_cmd: &str,
) -> (RunDir, ExitStatus, Option<RunResults>) {
    let TaskOutcome { dir, manifest, end } = outcome;
    let status = match end {
        TaskEnd::InterruptedSampling => {
            interrupted_sampling(&manifest, resume_cmd);
            ExitStatus::Interrupted
        }
        TaskEnd::Stopped(phase) => {
            let what = format!("interrupted while {}; continue with:", phase.what());
            continue_with(&what, resume_cmd);
            ExitStatus::Interrupted
        }
        TaskEnd::GradingFailed(e) => {
            grading_failed(&e, resume_cmd);
            ExitStatus::of_error(&e)
        }
        TaskEnd::Reported {
            results,
            ends,
            verified,
        } => {
            print_results(&results, &manifest, wide, &dir);
            let mut status = sampling::exit_status_for(&ends, &manifest);
            if status != ExitStatus::Success {
                explain_failures(&manifest, resume_cmd);
            }
            if !verified && status == ExitStatus::Success {
                let what = "the verifier did not score every sample; ask it again with:";
                continue_with(what, resume_cmd);
                status = ExitStatus::Failure;
            }
            return (dir, status, Some(*results));
        }
    };
    (dir, status, None)
}

/// `--export-batch`: what the batch file holds, and where the run is.
fn print_exported(n: &batch_file::Exported, out: &Path, run_dir: &RunDir) {
    println!(
        "batch: {} requests ({} units) in {}",
        n.requests,
        n.units,
        out.display()
    );
    if n.over_budget > 0 {
        eprintln!(
            "budget: {} requests left out, their worst case would pass max_cost; raise it and export again with --resume",
            n.over_budget
        );
    }
    println!("run directory: {}", run_dir.display());
}

/// The summary table (or why there is none), then where the results are.
fn print_results(results: &RunResults, manifest: &Manifest, wide: bool, run_dir: &RunDir) {
    let answered = manifest.models.values().any(|m| m.ok + m.truncated > 0);
    if answered {
        // INCOMPLETE stands out on a terminal.
        let table = report::terminal_table(results, wide);
        print!("{}", super::stdout_paint().marks(&table));
    } else {
        // A table of dashes would only hide the reasons below.
        println!("no values: no model answered any unit");
    }
    println!("results: {}", run_dir.display());
}

/// What failed before sampling was interrupted, and how to continue.
fn interrupted_sampling(manifest: &Manifest, resume_cmd: &str) {
    let failed = report::failures(manifest);
    let failed: Vec<_> = failed
        .into_iter()
        .filter(|f| f.models.iter().any(|h| h.failed > 0))
        .collect();
    eprint!(
        "{}",
        report::failures_text(&failed, "", super::stderr_width())
    );
    continue_with("interrupted: checkpoints saved; continue with:", resume_cmd);
}

/// Each reason units failed for, once however many models share it, with the advice it calls
/// for; the resume command only when resuming is the way on.
fn explain_failures(manifest: &Manifest, resume_cmd: &str) {
    let failures = report::failures(manifest);
    eprint!(
        "{}",
        report::failures_text(&failures, "error: ", super::stderr_width())
    );
    if failures.iter().any(|f| f.advice.resumes()) {
        continue_with("continue the run with:", resume_cmd);
    }
}

/// Grading failed after sampling: the error, and (the samples are saved) how to grade them
/// again rather than only failing.
fn grading_failed(e: &anyhow::Error, resume_cmd: &str) {
    let line = format!("error: {}", crate::error::render(e));
    eprintln!("{}", report::wrap(&line, super::stderr_width(), "  "));
    continue_with("the samples are saved; grade them again with:", resume_cmd);
}

/// `what`, then the command to continue with, indented, broken at spaces to stderr's width
/// (each line but the last ending in ` \`, so it pastes as one command).
fn continue_with(what: &str, command: &str) {
    let lines = crate::util::wrap_command(&format!("  {command}"), super::stderr_width(), "    ");
    eprintln!("{what}\n{lines}");
}
