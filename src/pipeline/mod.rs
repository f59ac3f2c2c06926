//! A run of one task end to end, behind `gpassk run`: which run it continues (`resume.rs`), the
//! run directory opened, then the phases sample → verify → judge → score → report, and how it
//! ended as data ([`TaskEnd`]); the command prints and picks the exit status from it. The
//! `--dry-run` text is built here too (`dry_run.rs`).

mod dry_run;
mod resume;

pub use dry_run::plan_text;
pub use resume::resume_dir_for;

use crate::client::ApiKey;
use crate::config::{GraderMode, Sources};
use crate::error::BadInput;
use crate::plan::Plan;
use crate::report;
use crate::rundir::manifest::Manifest;
use crate::rundir::{OpenRun, RunDir};
use crate::sampling::{self, batch_file, ModelEnd, SamplingJob};
use crate::scoring::verifier_calls::Verifier;
use crate::scoring::{score_run, JudgeCall, RunResults};
use crate::search::SearchInput;
use crate::util::{coarse_k_note, shell_quote, Notes, Shutdown};
use anyhow::Result;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What the user asked of one task's run (the command's flags, without clap).
#[derive(Debug, Clone, Default)]
pub struct TaskRequest<'a> {
    /// `--resume`: a run directory, or `latest`.
    pub resume: Option<&'a str>,
    /// Resume even when what was sampled changed.
    pub force: bool,
    /// No progress or notes (warnings still go to the notes).
    pub quiet: bool,
    /// `--import-batch`: a Batch API output file to record instead of sampling.
    pub import_batch: Option<&'a Path>,
    /// Whether the units go through a batch file (`--export-batch` or `--import-batch`).
    pub by_file: bool,
    pub progress_interval: Duration,
}

/// A task's run directory opened and locked, with what its phases need; from [`start`].
pub struct Started<'a> {
    pub plan: &'a Plan,
    pub run: OpenRun,
    keys: HashMap<String, Option<ApiKey>>,
    judge_key: Option<Option<ApiKey>>,
    verifier_key: Option<Option<ApiKey>>,
    search: Option<sampling::SearchJob>,
}

/// Where a run stopped after sampling, when it was interrupted there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Verifying,
    Judging,
}

impl Phase {
    /// `interrupted while …`: the phase and what of it is kept.
    pub fn what(self) -> &'static str {
        match self {
            Phase::Verifying => "the verifier scored the samples: scores saved",
            Phase::Judging => "judging: verdicts saved",
        }
    }
}

/// How one task's run ended.
#[derive(Debug)]
pub enum TaskEnd {
    /// Interrupted while sampling: checkpoints saved.
    InterruptedSampling,
    /// Interrupted after sampling, in this phase; the run is marked interrupted.
    Stopped(Phase),
    /// Grading failed; the samples are saved.
    GradingFailed(anyhow::Error),
    /// Scored, and every report written.
    Reported {
        results: Box<RunResults>,
        ends: Vec<(String, ModelEnd)>,
        /// False when the verifier could not score every sample.
        verified: bool,
    },
}

/// A task's run directory, its manifest as the run left it, and how it ended.
#[derive(Debug)]
pub struct TaskOutcome {
    pub dir: RunDir,
    pub manifest: Manifest,
    pub end: TaskEnd,
}

/// A task's name for summaries: its `task_name`, else its position in the settings file.
pub fn task_label(plan: &Plan) -> String {
    let s = &plan.settings;
    let index = s.task_file.as_ref().and_then(|t| t.index);
    s.evaluation
        .task_name
        .clone()
        .unwrap_or_else(|| format!("task{}", index.map_or(1, |i| i + 1)))
}

/// What the flags (`--resume`, a batch file) and the tasks must agree on before anything runs.
pub fn check_tasks(plans: &[Plan], resume: bool, by_file: bool) -> Result<(), BadInput> {
    if resume && plans.len() > 1 {
        return Err(BadInput::new(format!(
            "--resume continues one run, but the settings file holds {} tasks; set \"resume_from_checkpoint\": true so each task resumes its own run",
            plans.len()
        )));
    }
    if by_file && plans.len() > 1 {
        return Err(BadInput::new(format!(
            "--export-batch and --import-batch handle one task, but the settings file holds {}",
            plans.len()
        )));
    }
    // An unpriced judge, verifier or reward model under a budget: refused before anything.
    for plan in plans {
        plan.settings.check_paid_calls().map_err(BadInput)?;
    }
    Ok(())
}

/// The command that continues `run_dir`, with the same files and overrides.
pub fn resume_command(sources: &Sources, run_dir: &RunDir) -> String {
    let quote = |p: &Path| shell_quote(&p.display().to_string());
    let mut cmd = format!("gpassk run --config {}", quote(&sources.config));
    if let Some(s) = &sources.settings {
        cmd.push_str(&format!(" --settings {}", quote(s)));
    }
    for o in &sources.overrides {
        cmd.push_str(&format!(" --set {}", shell_quote(o)));
    }
    cmd + &format!(" --resume {}", quote(run_dir.path()))
}

/// Everything checked before the run directory exists (keys, the sandbox: bad input leaves
/// nothing behind), then the run directory opened, locked and marked `running`.
pub fn start<'a>(req: &TaskRequest, plan: &'a Plan, notes: &Notes) -> Result<Started<'a>> {
    let chatter = if req.quiet {
        Notes::default()
    } else {
        notes.clone()
    };
    let resume_dir = resume_dir_for(req.resume, plan, &chatter)?;
    refuse_search_by_file(plan, req.by_file)?;
    // A batch file is sent by someone else: no model key is needed here.
    let keys = if req.by_file {
        Default::default()
    } else {
        sampling::read_keys(&plan.settings)?
    };
    let (judge_key, verifier_key) = (judge_key(plan)?, verifier_key(plan)?);
    let search = search_job(plan)?;
    warn_before_start(plan, &chatter);
    let run = resume::open_run_dir(plan, resume_dir, req.force, notes)?;
    Ok(Started {
        plan,
        run,
        keys,
        judge_key,
        verifier_key,
        search,
    })
}

/// `--export-batch`: the batch request file for the run's missing units; the run stays pending.
pub fn export_batch(mut started: Started, out: &Path) -> Result<batch_file::Exported> {
    let exported = batch_file::export(started.plan, &started.run.dir, out)?;
    record_ends(started.plan, &mut started.run, &[])?;
    Ok(exported)
}

/// The phases after [`start`]: sample (or record `--import-batch`), verify, judge and score,
/// write the reports. `shutdown` stops it between phases (and sampling within).
pub fn execute(
    started: Started,
    req: &TaskRequest,
    shutdown: &Shutdown,
    notes: &Notes,
) -> Result<TaskOutcome> {
    let Started { plan, mut run, .. } = started;
    let run_dir = run.dir.clone();
    // A second Ctrl-C quits at once: the manifest must not be left saying `running`.
    let dir = run_dir.clone();
    shutdown.on_quit_now(move || dir.mark_interrupted_now());
    let job = SamplingJob {
        budgets: sampling::BudgetBook::default(),
        settings: plan.settings.clone(),
        run_dir: run_dir.clone(),
        run_id: run.manifest.run_id.clone(),
        prepared: plan.prepared.clone(),
        keys: started.keys,
        quiet: req.quiet,
        notes: notes.clone(),
        progress_interval: req.progress_interval,
        search: started.search,
    };
    let ends = match req.import_batch {
        Some(file) => import_batch(plan, &run, file, req.quiet, notes)?,
        None => sample(plan, &mut run, job, shutdown)?,
    };
    let end = if record_ends(plan, &mut run, &ends)? {
        TaskEnd::InterruptedSampling
    } else {
        let keys = (started.judge_key, started.verifier_key);
        after_sampling(plan, &mut run, ends, keys, (shutdown, notes), req.quiet)?
    };
    Ok(TaskOutcome {
        dir: run_dir,
        manifest: run.manifest.clone(),
        end,
    })
}

/// Verify, judge and score, write the reports; a stop between phases marks the run interrupted.
fn after_sampling(
    plan: &Plan,
    run: &mut OpenRun,
    ends: Vec<(String, ModelEnd)>,
    (judge_key, verifier_key): (Option<Option<ApiKey>>, Option<Option<ApiKey>>),
    (shutdown, notes): (&Shutdown, &Notes),
    quiet: bool,
) -> Result<TaskEnd> {
    let run_dir = run.dir.clone();
    // Opened again from the files: what sampling spent is where the judge's and the verifier's
    // budgets start, as on a resume.
    let book = sampling::BudgetBook::open(&plan.settings, &plan.prepared, &run_dir)?;
    let verifier = verifier_key.map(|key| (key, book.verifier()));
    let verified = verify_samples(plan, &run_dir, verifier, (shutdown, notes), quiet);
    if shutdown.is_triggered() {
        // Stopped while the verifier scored: its scores so far are saved and not asked again.
        run.interrupt()?;
        return Ok(TaskEnd::Stopped(Phase::Verifying));
    }
    let call = judge_key.map(|key| JudgeCall {
        key,
        budget: book.judge(),
        shutdown,
        notes,
    });
    let manifest = Some(run.manifest.clone());
    let results = match score_run(plan, &run_dir, manifest, call.as_ref(), notes) {
        Ok(r) => r,
        Err(e) => return Ok(TaskEnd::GradingFailed(e)),
    };
    if shutdown.is_triggered() {
        // Stopped while judging: the verdicts so far are saved; scores would be half-judged.
        run.interrupt()?;
        return Ok(TaskEnd::Stopped(Phase::Judging));
    }
    report::write_all(&run_dir, &results)?;
    Ok(TaskEnd::Reported {
        results: Box::new(results),
        ends,
        verified,
    })
}

/// The run's samples scored by the `[verifier]` PRM, when the config has one (those already
/// scored are not asked again); false when some could not be (the reports then leave their
/// problems out of bon@N and wmaj@N).
fn verify_samples(
    plan: &Plan,
    run_dir: &RunDir,
    key: Option<(Option<ApiKey>, Option<crate::cost::Budget>)>,
    ctl: (&Shutdown, &Notes),
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
    let notes = ctl.1;
    let mut complete = true;
    let result = crate::scoring::verifier_calls::verify_run(
        run_dir,
        &models,
        &questions,
        &verifier,
        ctl,
        |model, stats| {
            complete &= stats.failed == 0;
            if !quiet {
                notes.say(&format!("verifier {prm}: {model}: {}", stats.summary()));
            }
        },
    );
    if let Err(e) = result {
        notes.say(&format!("error: {}", crate::error::render(&e.into())));
        return false;
    }
    complete
}

/// Sends the Batch API models' batches, then samples the others live; each model's end.
fn sample(
    plan: &Plan,
    run: &mut OpenRun,
    mut job: SamplingJob,
    shutdown: &Shutdown,
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

/// Records a batch output file in the run; each model's end as the live runner would report it.
fn import_batch(
    plan: &Plan,
    run: &OpenRun,
    file: &Path,
    quiet: bool,
    notes: &Notes,
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
    let run_id = &run.manifest.run_id;
    let (got, ends) = batch_file::import(plan, &run.dir, run_id, file, (&keys, notes))?;
    if quiet {
        return Ok(ends);
    }
    notes.say(&format!(
        "batch: {} units recorded ({} API errors){}",
        got.units,
        got.api_errors,
        if got.skipped > 0 {
            format!("; {} already done, left as they were", got.skipped)
        } else {
            String::new()
        }
    ));
    Ok(ends)
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
fn warn_before_start(plan: &Plan, notes: &Notes) {
    warn_coarse_k(plan, notes);
    // Checked before: only the notes are left (calls a budget does not count or cap).
    let width = crate::util::terminal_width();
    for note in plan.settings.check_paid_calls().unwrap_or_default() {
        let note = format!("note: {note}");
        notes.say(&crate::report::wrap(&note, width, "  "));
    }
}

fn warn_coarse_k(plan: &Plan, notes: &Notes) {
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
        notes.say(&crate::report::wrap(&note, width, "  "));
    }
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
