//! `gpassk run`: resolve the plan and run directory, sample every model, then grade and report.

use crate::client::ApiKey;
use crate::config::{self, GraderMode};
use crate::cost::Money;
use crate::dataset::shard::Shard;
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::plan::{self, Plan};
use crate::report;
use crate::rundir::manifest::Manifest;
use crate::rundir::{OpenRun, RunDir};
use crate::sampling::{self, load_done, missing_work, DoneSet, ModelEnd, SamplingJob};
use crate::scoring::verify::Verifier;
use crate::scoring::{score_run, JudgeCall, RunResults};
use crate::search::SearchInput;
use crate::util::{coarse_k_note, shell_quote, short};
use anyhow::Result;
use clap::Args;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    let sources = config::Sources {
        config: args.config.clone(),
        settings: args.settings.clone(),
        overrides: args.set.clone(),
    };
    let (plans, notes) =
        plan::load_tasks(&sources, &args.models, args.limit, args.shard).map_err(bad_input)?;
    if !args.quiet {
        notes.iter().for_each(|n| eprintln!("note: {n}"));
    }
    if args.resume.is_some() && plans.len() > 1 {
        return Err(BadInput::new(format!(
            "--resume continues one run, but the settings file holds {} tasks; set \"resume_from_checkpoint\": true so each task resumes its own run",
            plans.len()
        ))
        .into());
    }
    let batch = args.export_batch.is_some() || args.import_batch.is_some();
    if batch && plans.len() > 1 {
        return Err(BadInput::new(format!(
            "--export-batch and --import-batch handle one task, but the settings file holds {}",
            plans.len()
        ))
        .into());
    }
    // An unpriced judge, verifier or reward model under a budget: refused before anything.
    for plan in &plans {
        plan.settings.check_paid_calls().map_err(BadInput)?;
    }
    if args.dry_run {
        for plan in &plans {
            let resume_dir = resume_dir_for(&args, plan)?;
            print_plan(plan, resume_dir.as_ref()).map_err(bad_input)?;
        }
        return Ok(ExitStatus::Success);
    }
    let mut ran = Vec::new();
    let mut worst = ExitStatus::Success;
    for plan in &plans {
        if plans.len() > 1 {
            println!("== task {} ==", task_label(plan));
        }
        let (dir, status, results) = run_task(&args, plan)?;
        // A shard is part of an evaluation: `gpassk merge` stores the whole once it is joined.
        let status = match &plan.settings.store {
            Some(store) if args.export_batch.is_none() && args.shard.is_none() => {
                super::push_at_end(store, (Some(plan), &dir), status, results)
            }
            Some(_) if args.shard.is_some() && !args.quiet => {
                eprintln!("note: a shard run is not stored; gpassk merge stores the merged run");
                status
            }
            _ => status,
        };
        ran.push((task_label(plan), dir));
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

/// A task's name for summaries: its `task_name`, else its position in the settings file.
fn task_label(plan: &Plan) -> String {
    let s = &plan.settings;
    let index = s.task_file.as_ref().and_then(|t| t.index);
    s.evaluation
        .task_name
        .clone()
        .unwrap_or_else(|| format!("task{}", index.map_or(1, |i| i + 1)))
}

/// Samples, grades and reports one task; returns its run directory and how it ended.
/// The results are those scored, or None when the run stopped before scoring (interrupted,
/// grading failed) or only wrote a batch file.
fn run_task(args: &RunArgs, plan: &Plan) -> Result<(RunDir, ExitStatus, Option<RunResults>)> {
    let resume_dir = resume_dir_for(args, plan)?;
    let by_file = args.export_batch.is_some() || args.import_batch.is_some();
    refuse_search_by_file(plan, by_file)?;
    // A batch file is sent by someone else: no model key is needed here.
    let keys = if by_file {
        Default::default()
    } else {
        sampling::read_keys(&plan.settings)?
    };
    let (judge_key, verifier_key) = (judge_key(plan)?, verifier_key(plan)?);
    // Before the run directory exists: no sandbox is bad input, and leaves nothing behind.
    let search = search_job(plan)?;
    if !args.quiet {
        warn_before_start(plan);
    }
    // Held until the process ends: no second process writes this run meanwhile.
    let mut run = open_run_dir(plan, resume_dir, args.force)?;
    let run_dir = run.dir.clone();
    if !args.quiet {
        eprintln!("run directory: {}", run_dir.display());
    }
    if let Some(out) = &args.export_batch {
        let (dir, status) = export_batch(plan, &mut run, out)?;
        return Ok((dir, status, None));
    }
    // With live bars the progress reporter announces the interrupt (a print from the signal
    // thread would tear the bars).
    let bars = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (shutdown, _signals) = super::shutdown_on_signals(args.quiet || bars)?;
    interrupted_on_quit_now(&shutdown, &run_dir);
    let job_notes = super::stderr_notes();
    let job = SamplingJob {
        budgets: sampling::BudgetBook::default(),
        settings: plan.settings.clone(),
        run_dir: run_dir.clone(),
        run_id: run.manifest.run_id.clone(),
        prepared: plan.prepared.clone(),
        keys,
        quiet: args.quiet,
        notes: job_notes.clone(),
        progress_interval: Duration::from_secs_f64(args.progress_interval.max(0.05)),
        search,
    };
    let ends = match &args.import_batch {
        Some(file) => import_batch(plan, &run_dir, &run.manifest.run_id, file, args.quiet)?,
        None => sample(plan, &mut run, job, &shutdown)?,
    };
    let interrupted = record_ends(plan, &mut run, &ends)?;
    let manifest = &run.manifest;
    let resume_cmd = resume_command(args, &run_dir);
    if interrupted {
        interrupted_sampling(manifest, &resume_cmd);
        return Ok((run_dir, ExitStatus::Interrupted, None));
    }
    let notes = &job_notes;
    // Opened again from the files: what sampling spent is where the judge's and the verifier's
    // budgets start, as on a resume.
    let book = sampling::BudgetBook::open(&plan.settings, &plan.prepared, &run_dir)?;
    let verifier = verifier_key.map(|key| (key, book.verifier()));
    let verified = verify_samples(plan, &run_dir, verifier, (&shutdown, notes), args.quiet);
    if shutdown.is_triggered() {
        // Stopped while the verifier scored: its scores so far are saved and not asked again.
        let what = "the verifier scored the samples: scores saved";
        return Ok((run_dir, stopped_while(&mut run, what, &resume_cmd)?, None));
    }
    let call = judge_key.map(|key| JudgeCall {
        key,
        budget: book.judge(),
        shutdown: &shutdown,
        notes,
    });
    let results = match score_run(plan, &run_dir, Some(manifest.clone()), call.as_ref(), notes) {
        Ok(r) => r,
        Err(e) => {
            // The samples are saved; say how to grade them again rather than only failing.
            let line = format!("error: {}", crate::error::render(&e));
            eprintln!("{}", report::wrap(&line, stderr_width(), "  "));
            eprintln!("the samples are saved; grade them again with:\n  {resume_cmd}");
            return Ok((run_dir, ExitStatus::of_error(&e), None));
        }
    };
    if shutdown.is_triggered() {
        // Stopped while judging: the verdicts so far are saved; scores would be half-judged.
        let what = "judging: verdicts saved";
        return Ok((run_dir, stopped_while(&mut run, what, &resume_cmd)?, None));
    }
    report::write_all(&run_dir, &results)?;
    print_results(&results, manifest, args.wide, &run_dir);
    let mut status = sampling::exit_status_for(&ends, &run.manifest);
    if status != ExitStatus::Success {
        explain_failures(&run.manifest, &resume_cmd);
    }
    if !verified && status == ExitStatus::Success {
        eprintln!("the verifier did not score every sample; ask it again with:\n  {resume_cmd}");
        status = ExitStatus::Failure;
    }
    Ok((run_dir, status, Some(results)))
}

/// The results table (or why there is none) and where the run is.
fn print_results(results: &RunResults, manifest: &Manifest, wide: bool, run_dir: &RunDir) {
    let answered = manifest.models.values().any(|m| m.ok + m.truncated > 0);
    if answered {
        print!("{}", report::terminal_table(results, wide));
    } else {
        // A table of dashes would only hide the reasons below.
        println!("no values: no model answered any unit");
    }
    println!("results: {}", run_dir.display());
}

/// The run's samples scored by the `[verifier]` PRM, when the config has one (those already
/// scored are not asked again); false when some could not be (the reports then leave their
/// problems out of bon@N and wmaj@N).
fn verify_samples(
    plan: &Plan,
    run_dir: &RunDir,
    key: Option<(Option<ApiKey>, Option<crate::cost::Budget>)>,
    ctl: (&crate::util::Shutdown, &crate::util::Notes),
    quiet: bool,
) -> bool {
    let (Some(settings), Some((key, budget))) = (&plan.settings.verifier, key) else {
        return true;
    };
    let verifier = Verifier {
        settings,
        api: &plan.settings.models[0].api,
        key,
        budget,
    };
    let questions: HashMap<&str, &str> = plan
        .problems
        .iter()
        .map(|p| (p.id.as_str(), p.question.as_str()))
        .collect();
    let models: Vec<&str> = plan
        .settings
        .models
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    let prm = &settings.reward_model_id;
    let mut complete = true;
    let result = crate::scoring::verify::verify_run(
        run_dir,
        &models,
        &questions,
        &verifier,
        ctl,
        |model, stats| {
            complete &= stats.failed == 0;
            if !quiet {
                eprintln!("verifier {prm}: {model}: {}", stats.summary());
            }
        },
    );
    if let Err(e) = result {
        eprintln!("error: {}", crate::error::render(&e.into()));
        return false;
    }
    complete
}

/// Marks the run interrupted after sampling (while `what`) and says how to continue.
fn stopped_while(run: &mut OpenRun, what: &str, resume_cmd: &str) -> Result<ExitStatus> {
    run.interrupt()?;
    eprintln!("interrupted while {what}; continue with:\n  {resume_cmd}");
    Ok(ExitStatus::Interrupted)
}

/// What failed before sampling was interrupted, and how to continue.
fn interrupted_sampling(manifest: &Manifest, resume_cmd: &str) {
    let failed = report::failures(manifest);
    let failed: Vec<_> = failed
        .into_iter()
        .filter(|f| f.models.iter().any(|h| h.failed > 0))
        .collect();
    eprint!("{}", report::failures_text(&failed, "", stderr_width()));
    eprintln!("interrupted: checkpoints saved; continue with:\n  {resume_cmd}");
}

/// Sends the Batch API models' batches, then samples the others live; each model's end.
fn sample(
    plan: &Plan,
    run: &mut OpenRun,
    mut job: SamplingJob,
    shutdown: &crate::util::Shutdown,
) -> Result<Vec<(String, ModelEnd)>> {
    let ctl = crate::sampling::batch_api::Control {
        shutdown,
        notes: &job.notes,
    };
    let mut ends = crate::sampling::batch_api::drive_all(plan, run, &job.keys, ctl)?;
    // Opened after the batches are recorded, from every model's checkpoint: the run's budget
    // counts what the batches cost.
    job.budgets = sampling::BudgetBook::open(&plan.settings, &plan.prepared, &run.dir)?;
    job.settings.models.retain(|m| m.api.batch.is_none());
    if !job.settings.models.is_empty() {
        ends.extend(sampling::sample_all(&job, shutdown)?);
    }
    Ok(ends)
}

/// A second Ctrl-C quits at once: the manifest must not be left saying `running`.
fn interrupted_on_quit_now(shutdown: &crate::util::Shutdown, run_dir: &RunDir) {
    let dir = run_dir.clone();
    shutdown.on_quit_now(move || dir.mark_interrupted_now());
}

/// Writes the batch request file for the run's missing units and leaves the run pending.
fn export_batch(plan: &Plan, run: &mut OpenRun, out: &Path) -> Result<(RunDir, ExitStatus)> {
    let n = crate::sampling::batch_file::export(plan, &run.dir, out)?;
    record_ends(plan, run, &[])?;
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
    println!("run directory: {}", run.dir.display());
    Ok((run.dir.clone(), ExitStatus::Success))
}

/// Records a batch output file in the run; each model's end as the live runner would report it.
fn import_batch(
    plan: &Plan,
    run_dir: &RunDir,
    run_id: &str,
    file: &Path,
    quiet: bool,
) -> Result<Vec<(String, ModelEnd)>> {
    // A file from elsewhere may echo a key: every model key that is set is redacted from it.
    let keys: Vec<_> = plan
        .settings
        .models
        .iter()
        .filter_map(|m| {
            sampling::read_key(m.api.api_key_env.as_deref(), "")
                .ok()
                .flatten()
        })
        .collect();
    let keys: Vec<_> = keys.iter().collect();
    let (got, ends) = crate::sampling::batch_file::import(
        plan,
        run_dir,
        run_id,
        file,
        (&keys, &super::stderr_notes()),
    )?;
    if quiet {
        return Ok(ends);
    }
    eprintln!(
        "batch: {} units recorded ({} API errors){}",
        got.units,
        got.api_errors,
        if got.skipped > 0 {
            format!("; {} already done, left as they were", got.skipped)
        } else {
            String::new()
        }
    );
    Ok(ends)
}

/// The command that continues `run_dir`, with the same files and overrides.
fn resume_command(args: &RunArgs, run_dir: &RunDir) -> String {
    let quote = |p: &Path| shell_quote(&p.display().to_string());
    let mut cmd = format!("gpassk run --config {}", quote(&args.config));
    if let Some(s) = &args.settings {
        cmd.push_str(&format!(" --settings {}", quote(s)));
    }
    for o in &args.set {
        cmd.push_str(&format!(" --set {}", shell_quote(o)));
    }
    cmd + &format!(" --resume {}", quote(run_dir.path()))
}

/// The run to continue: `--resume`; else, with `resume_from_checkpoint = true`, the latest run
/// of this config, settings file, task and shard under output_dir; else none (a new run).
fn resume_dir_for(args: &RunArgs, plan: &Plan) -> Result<Option<RunDir>> {
    let ev = &plan.settings.evaluation;
    if let Some(r) = &args.resume {
        return resolve_resume(r, plan).map(Some);
    }
    if ev.resume_from_checkpoint != Some(true) {
        return Ok(None);
    }
    let latest = latest_of_task(plan, &ev.output_dir);
    if let (Some(dir), false) = (&latest, args.quiet) {
        eprintln!(
            "resuming {} (resume_from_checkpoint = true: the latest run of this config, task and shard)",
            dir.display()
        );
    }
    Ok(latest)
}

/// The newest run directory whose manifest has this plan's config hash, settings task and shard.
fn latest_of_task(plan: &Plan, output_dir: &Path) -> Option<RunDir> {
    let s = &plan.settings;
    newest(&runs_under(output_dir), |m| {
        m.same_task(&s.config_hash, s.task_file.as_ref()) && m.shard == plan.shard
    })
}

/// Every run directory directly under `output_dir` with a readable manifest.
fn runs_under(output_dir: &Path) -> Vec<(RunDir, Manifest)> {
    RunDir::runs_under(output_dir).map_or_else(|_| Vec::new(), |f| f.runs)
}

/// The latest-started run that `same` accepts (ties broken by directory name).
fn newest(runs: &[(RunDir, Manifest)], same: impl Fn(&Manifest) -> bool) -> Option<RunDir> {
    runs.iter()
        .filter(|(_, m)| same(m))
        .max_by(|(da, a), (db, b)| (&a.created_at, da).cmp(&(&b.created_at, db)))
        .map(|(d, _)| d.clone())
}

/// The judge's key when the config's grader calls the judge: `Some(key)` (the key itself may be
/// None for servers without auth); `None` when the rule grader decides alone.
fn judge_key(plan: &Plan) -> Result<Option<Option<ApiKey>>> {
    match (&plan.settings.judge, plan.settings.evaluation.grader) {
        (Some(j), mode) if mode != GraderMode::Rule => Ok(Some(sampling::read_key(
            j.api.api_key_env.as_deref(),
            "the judge",
        )?)),
        _ => Ok(None),
    }
}

/// The PRM's key when the config has a `[verifier]`: `Some(key)` (None for servers without auth).
fn verifier_key(plan: &Plan) -> Result<Option<Option<ApiKey>>> {
    let Some(v) = &plan.settings.verifier else {
        return Ok(None);
    };
    let api = &plan.settings.models[0].api;
    let who = format!("verifier {}", v.reward_model_id);
    Ok(Some(sampling::read_key(v.key_env(api), &who)?))
}

/// The notes a run prints before it sends anything.
fn warn_before_start(plan: &Plan) {
    warn_coarse_k(plan);
    // Checked before: only the notes are left (calls a budget does not count or cap).
    let width = crate::util::terminal_width();
    for note in plan.settings.check_paid_calls().unwrap_or_default() {
        let note = format!("note: {note}");
        eprintln!("{}", crate::report::wrap(&note, width, "  "));
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
        eprintln!("{}", crate::report::wrap(&note, width, "  "));
    }
}

/// The run directory, locked, and its manifest marked `running`: resumed, or created fresh.
fn open_run_dir(plan: &Plan, resume_dir: Option<RunDir>, force: bool) -> Result<OpenRun> {
    let Some(dir) = resume_dir else {
        let output_dir = &plan.settings.evaluation.output_dir;
        let base = crate::rundir::new_run_id(&plan.settings.config_hash);
        return Ok(RunDir::create(output_dir, &base, |id| {
            plan.new_manifest(id)
        })?);
    };
    dir.resume(|old| -> Result<Manifest> {
        refuse_changed(plan, &old, force)?;
        Ok(plan.update_manifest(old))
    })
}

/// Refuses to resume when what was sampled would no longer match what is asked for; with
/// `force`, warns and resumes.
fn refuse_changed(plan: &Plan, old: &Manifest, force: bool) -> Result<(), BadInput> {
    let changes = plan.resume_changes(old);
    if changes.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(BadInput(format!(
            "refusing to resume {}: {} changed since it started (pass --force to resume anyway)",
            old.run_id,
            changes.join("; ")
        )));
    }
    eprintln!(
        "warning: resuming with --force despite: {}",
        changes.join("; ")
    );
    Ok(())
}

/// Counts each model's checkpoint into the manifest and writes it; true when interrupted.
fn record_ends(plan: &Plan, run: &mut OpenRun, ends: &[(String, ModelEnd)]) -> Result<bool> {
    let index = plan.id_index();
    for m in &plan.settings.models {
        let path = run.dir.checkpoint(&m.name);
        let counts = sampling::count_checkpoint(&path, &index, m.sampling.n, m.sampling.greedy)?;
        let end = ends.iter().find(|(n, _)| n == &m.name).map(|(_, e)| e);
        let mut entry = sampling::model_manifest(m, end, &counts, plan.prepared.len());
        // A pending Batch API batch outlives every rewrite until it is imported.
        entry.batch_id = run
            .manifest
            .models
            .get(&m.name)
            .and_then(|e| e.batch_id.clone());
        run.manifest.models.insert(m.name.clone(), entry);
    }
    let interrupted = ends.iter().any(|(_, e)| *e == ModelEnd::Interrupted);
    run.finish(interrupted)?;
    Ok(interrupted)
}

/// Each reason units failed for, once however many models share it, with the advice it calls
/// for; the resume command only when resuming is the way on.
fn explain_failures(manifest: &Manifest, resume_cmd: &str) {
    let failures = report::failures(manifest);
    eprint!(
        "{}",
        report::failures_text(&failures, "error: ", stderr_width())
    );
    if failures.iter().any(|f| f.advice.resumes()) {
        eprintln!("continue the run with:\n  {resume_cmd}");
    }
}

/// The width reasons are wrapped to on stderr: the terminal's, or none in a log (one line a
/// reason, for grep).
fn stderr_width() -> usize {
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if terminal || std::env::var_os("COLUMNS").is_some() {
        crate::util::terminal_width()
    } else {
        usize::MAX
    }
}

/// `--resume DIR`, or for `latest` the newest run under output_dir of this config (same config
/// hash, or else same config file) and shard: another config's run, or another shard's (shards
/// of one evaluation share a results folder on a cluster), is never taken over.
fn resolve_resume(r: &str, plan: &Plan) -> Result<RunDir> {
    if r != "latest" {
        return Ok(RunDir::existing(r, "--resume")?);
    }
    let s = &plan.settings;
    let output_dir = &s.evaluation.output_dir;
    let runs = runs_under(output_dir);
    let path = s.config_path.display().to_string();
    let shard = |m: &Manifest| m.shard == plan.shard;
    newest(&runs, |m| m.config_hash == s.config_hash && shard(m))
        .or_else(|| newest(&runs, |m| m.config_path == path && shard(m)))
        .ok_or_else(|| {
            let of = plan.shard.map_or(String::new(), |x| format!(" shard {x}"));
            BadInput::new(format!(
                "--resume latest: no run of {path}{of} under {} ({} runs of other configs or shards there; name one with --resume DIR)",
                output_dir.display(),
                runs.len()
            ))
            .into()
        })
}

/// A tree search cannot be a batch file: each call depends on the replies before it.
fn refuse_search_by_file(plan: &Plan, by_file: bool) -> Result<(), BadInput> {
    match plan.settings.models.iter().find(|m| m.search.is_some()) {
        Some(m) if by_file => Err(BadInput::new(format!(
            "model {} has strategy = \"mcts\": a tree search cannot go through a batch file (each call depends on the replies before it); run it live, or leave it out with --models",
            m.name
        ))),
        _ => Ok(()),
    }
}

/// What tree searches need, when a model has `strategy = "mcts"`: the questions without their
/// gold answers, a working sandbox (none is an error, never a silent fallback) and reward keys.
fn search_job(plan: &Plan) -> Result<Option<sampling::SearchJob>> {
    let searching: Vec<&crate::config::ModelSettings> = plan
        .settings
        .models
        .iter()
        .filter(|m| m.search.is_some() && m.api.batch.is_none())
        .collect();
    if searching.is_empty() {
        return Ok(None);
    }
    let sandbox = crate::search::sandbox::Sandbox::detect().map_err(|e| {
        BadInput::new(format!(
            "model {} has strategy = \"mcts\", which runs model-written code: {e}",
            searching[0].name
        ))
    })?;
    let mut reward_keys = HashMap::new();
    for m in &searching {
        let s = m.search.as_ref().expect("filtered above");
        let var = s
            .reward_api_key_env
            .as_deref()
            .or(m.api.api_key_env.as_deref());
        let who = format!("the reward model of {}", m.name);
        reward_keys.insert(m.name.clone(), sampling::read_key(var, &who)?);
    }
    let inputs = plan
        .problems
        .iter()
        .map(SearchInput::from_problem)
        .collect();
    Ok(Some(sampling::SearchJob {
        inputs: Arc::new(inputs),
        sandbox,
        reward_keys,
    }))
}

/// What the dry run adds up over the models: its closing total.
struct PlanTotal {
    units: u64,
    requests: u64,
    /// Calls of the search models (min, max).
    search_calls: (u64, u64),
    prompt: u64,
    /// None once a model has no `max_tokens`: nothing bounds the completions.
    completion: Option<u64>,
    /// Per currency, the (min, max) cost of the priced sampling models; max None when unbounded.
    cost: std::collections::BTreeMap<String, (Money, Option<Money>)>,
    /// Sampling models with a price, of all sampling models.
    priced: (usize, usize),
}

impl PlanTotal {
    fn new() -> PlanTotal {
        PlanTotal {
            units: 0,
            requests: 0,
            search_calls: (0, 0),
            prompt: 0,
            completion: Some(0),
            cost: Default::default(),
            priced: (0, 0),
        }
    }
}

/// The dry run: one block per model (its name on a line of its own, so long names never push the
/// figures past 80 columns), where the config came from, and the total.
fn print_plan(plan: &Plan, resume: Option<&RunDir>) -> Result<()> {
    let index = plan.id_index();
    let pass: u64 = plan.prepared.iter().map(|p| p.prompt_tokens_estimate).sum();
    println!("plan (dry run, nothing is sent)");
    println!(
        "dataset {} — {} problems, {} few-shot examples",
        plan.dataset.name,
        plan.prepared.len(),
        plan.few_shot_examples
    );
    println!("  prompts: ~{pass} tokens a pass over the problems");
    let mut total = PlanTotal::new();
    for m in &plan.settings.models {
        let done = match resume {
            Some(dir) => load_done(&dir.checkpoint(&m.name), &index)?,
            None => DoneSet::new(),
        };
        println!("  {}", m.name);
        let mut work = Work::default();
        for w in missing_work(plan.prepared.len(), &m.sampling, &done) {
            work.units += w.slots.len() as u64;
            work.requests += 1;
            work.prompt += plan.prepared[w.problem].prompt_tokens_estimate;
        }
        total.units += work.units;
        match &m.search {
            Some(search) => print_search_plan(plan, m, search, work.units, &mut total),
            None => print_sampling_plan(plan, m, &work, &mut total),
        }
    }
    if let Some(v) = &plan.settings.verifier {
        let per = match v.reward_mode {
            config::RewardMode::Pooling => "one /pooling call a sample",
            _ => "one chat call a step",
        };
        let line = format!(
            "  verifier {}: scores every sample not yet scored after sampling ({per}; {})",
            v.reward_model_id,
            price_text(v.pricing.as_ref())
        );
        println!("{}", report::wrap(&line, 80, "    "));
    }
    if let Some(j) = plan.settings.judged() {
        let line = format!(
            "  judge {}: asked about the samples its grader sends it, at most {} tokens a \
             reply ({})",
            j.model_id,
            j.max_tokens,
            price_text(j.pricing.as_ref())
        );
        println!("{}", report::wrap(&line, 80, "    "));
    }
    print_sources(plan, resume);
    print_total(&total);
    Ok(())
}

/// Where a judge's or verifier's price comes from, for the dry run.
fn price_text(p: Option<&crate::cost::Price>) -> String {
    p.map_or_else(|| "not priced".into(), |p| format!("price: {}", p.source))
}

/// What one model still has to send.
#[derive(Default)]
struct Work {
    units: u64,
    requests: u64,
    prompt: u64,
}

/// The dry run's lines for a sampling model: units, requests, tokens and cost, added to the total.
fn print_sampling_plan(plan: &Plan, m: &config::ModelSettings, w: &Work, total: &mut PlanTotal) {
    println!(
        "    {} problems × ({} samples{}) → {} units in {} requests",
        plan.prepared.len(),
        m.sampling.n,
        if m.sampling.greedy { " + greedy" } else { "" },
        w.units,
        w.requests
    );
    let completion = m.sampling.max_tokens.map(|t| w.units * u64::from(t));
    println!(
        "    ~{} prompt tokens, {}",
        w.prompt,
        completion_text(completion)
    );
    total.requests += w.requests;
    total.prompt += w.prompt;
    total.completion = total.completion.zip(completion).map(|(a, b)| a + b);
    total.priced.1 += 1;
    let Some(p) = &m.pricing else {
        return;
    };
    let (min, max) = cost_bounds(p, w.prompt, completion);
    let range = cost_range(&min, max.as_ref(), &p.currency);
    println!("    cost estimate: {range}");
    let price = format!("    price: {}", p.source);
    println!("{}", report::wrap(&price, 80, "      "));
    let zero = || Money::from_integer(0);
    let sum = total
        .cost
        .entry(p.currency.clone())
        .or_insert_with(|| (zero(), Some(zero())));
    sum.0 += min;
    sum.1 = sum.1.take().zip(max).map(|(a, b)| a + b);
    total.priced.0 += 1;
}

/// `≤ N completion tokens`, or why there is no bound.
fn completion_text(completion: Option<u64>) -> String {
    match completion {
        Some(t) => format!("≤ {t} completion tokens"),
        None => "completion tokens unbounded (no max_tokens)".into(),
    }
}

/// The dry run's last lines: units, requests, tokens and the worst-case cost over every model.
fn print_total(t: &PlanTotal) {
    let searched = if t.search_calls.1 > 0 {
        format!(" + {}–{} search calls", t.search_calls.0, t.search_calls.1)
    } else {
        String::new()
    };
    // A search's prompts grow with its tree: the plan cannot count them.
    let theirs = if searched.is_empty() {
        ""
    } else {
        " + the searches'"
    };
    println!(
        "total: {} units in {} requests{searched}",
        t.units, t.requests
    );
    println!(
        "  ~{} prompt tokens{theirs}, {}",
        t.prompt,
        completion_text(t.completion)
    );
    if t.cost.is_empty() {
        return;
    }
    let costs: Vec<String> = t
        .cost
        .iter()
        .map(|(currency, (min, max))| cost_range(min, max.as_ref(), currency))
        .collect();
    let mut line = format!("  cost {}", costs.join("; "));
    if t.priced.0 < t.priced.1 {
        line.push_str(&format!(", {} of {} models priced", t.priced.0, t.priced.1));
    }
    println!("{}", report::wrap(&line, 80, "    "));
    println!("  (min: the prompts alone; max, the worst case: every sample uses max_tokens)");
}

/// The dry run's lines for an mcts model: searches, the call budget (min–max) and the completion
/// tokens it bounds, added to the total.
fn print_search_plan(
    plan: &Plan,
    m: &config::ModelSettings,
    s: &config::SearchSettings,
    searches: u64,
    total: &mut PlanTotal,
) {
    let (lo, hi) = s.call_budget();
    let (lo, hi) = (searches * lo, searches * hi);
    let completion = searches * s.completion_budget();
    println!(
        "    {} problems × {} searches → {searches} searches\n    {lo}–{hi} calls (policy + reward), ≤ {completion} completion tokens",
        plan.prepared.len(),
        m.sampling.n,
    );
    if m.pricing.is_some() {
        let note = "    cost: set by the trees (prompts grow with depth); max_cost, when set, is held call by call";
        println!("{}", report::wrap(note, 80, "      "));
    }
    total.search_calls = (total.search_calls.0 + lo, total.search_calls.1 + hi);
    total.completion = total.completion.map(|t| t + completion);
}

/// The dry run's cost bounds: min = the prompts alone, max = prompts plus max_tokens per sample
/// (None without max_tokens).
fn cost_bounds(
    p: &crate::cost::Price,
    prompt: u64,
    completion: Option<u64>,
) -> (Money, Option<Money>) {
    (
        p.estimate(prompt, 0),
        completion.map(|c| p.estimate(prompt, c)),
    )
}

/// `MIN – MAX` in a currency; MAX is `unbounded (no max_tokens)` when there is none.
fn cost_range(min: &Money, max: Option<&Money>, currency: &str) -> String {
    use crate::cost::{show, to_f64};
    let max = max.map_or_else(
        || "unbounded (no max_tokens)".into(),
        |m| show(to_f64(m), currency),
    );
    format!("{} – {max}", show(to_f64(min), currency))
}

/// The dry run's account of where the configuration came from.
fn print_sources(plan: &Plan, resume: Option<&RunDir>) {
    let s = &plan.settings;
    if let Some(t) = &s.task_file {
        let name = s.evaluation.task_name.as_deref().unwrap_or("(unnamed)");
        println!(
            "  task {name} from {} (sha256 {})",
            t.path,
            short(&t.sha256)
        );
    }
    for o in &s.overrides {
        println!("  override: --set {o}");
    }
    if let Some(dir) = resume {
        println!("  resumes: {}", dir.display());
    }
}
