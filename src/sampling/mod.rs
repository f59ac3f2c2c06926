//! Sampling: the job the command hands over and one task per model (its workers in `worker`,
//! how it ended in `ends`), with seeds, pacing, budgets, progress and shutdown in their own files.
//!
//! Every (model, problem, sample index | greedy) is one unit. Each finished unit is appended to the
//! model's checkpoint as it arrives, so a killed run resumes with only the missing units.

mod budget;
mod cache;
mod ends;
mod keys;
mod pace;
mod progress;
mod search;
mod search_shared;
mod units;
mod worker;

pub mod batch_api;
pub mod batch_file;

use crate::plan::Prepared;
use crate::rundir::RunDir;
use crate::util::Notes;
pub use budget::BudgetBook;
pub use cache::{request_key, Cached, RequestCache};
pub use ends::{
    cause_class, count_checkpoint, exit_status_for, failure_cause, model_manifest,
    CheckpointCounts, CAUSE_MAX,
};
pub use keys::{read_key, read_keys};
pub use search_shared::SearchShared;
pub use units::{derive_seed, missing_work, DoneSet, WorkItem};
use worker::ModelShared;
pub use worker::{request_for, Attempted, Unit};

use crate::client::ApiKey;
use crate::config::{ModelSettings, RunSettings};
use crate::rundir::record::{read_lines, RecordHead};
use crate::util::{id_index, Shutdown};
use anyhow::{Context, Result};
use progress::{Mode, Reporter};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What one model's sampling session ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEnd {
    Complete,
    /// Some units still ended in API errors after their retries.
    Incomplete,
    /// Stopped at once: auth, unknown model, or another non-retryable error.
    Failed(String),
    Interrupted,
}

/// The finished units of a checkpoint, keyed by problem position; also fixes a torn tail.
pub fn load_done(path: &Path, index: &HashMap<&str, usize>) -> Result<DoneSet> {
    let mut done = DoneSet::new();
    read_lines(path, |r: RecordHead| {
        if r.usable() {
            if let Some(&p) = index.get(r.problem_id.as_str()) {
                done.insert((p as u32, r.sample_index.key()));
            }
        }
        Ok(())
    })?;
    Ok(done)
}

/// Inputs for sampling, resolved by the command layer.
pub struct SamplingJob {
    pub settings: RunSettings,
    pub run_dir: RunDir,
    pub run_id: String,
    pub prepared: Arc<Vec<Prepared>>,
    pub keys: HashMap<String, Option<ApiKey>>,
    pub quiet: bool,
    pub progress_interval: Duration,
    /// Where progress lines go (unless `quiet`).
    pub notes: Notes,
    /// For `strategy = "mcts"` models: the questions (no gold answers), the sandbox and the
    /// reward models' keys.
    pub search: Option<SearchJob>,
    /// The budgets, opened from the whole plan's checkpoints ([`BudgetBook::open`]).
    pub budgets: BudgetBook,
}

/// What tree searches need beyond sampling.
pub struct SearchJob {
    pub inputs: Arc<Vec<crate::search::SearchInput>>,
    pub sandbox: crate::search::sandbox::Sandbox,
    /// Model name → its reward model's key (`reward_api_key_env`, else the model's own key).
    pub reward_keys: HashMap<String, Option<ApiKey>>,
}

/// Samples all models concurrently until done or `shutdown` fires; returns each model's end
/// state, in settings order.
pub fn sample_all(job: &SamplingJob, shutdown: &Shutdown) -> Result<Vec<(String, ModelEnd)>> {
    let rt = crate::util::tasks::network_runtime().context("cannot start the async runtime")?;
    rt.block_on(sample_all_async(job, shutdown))
}

/// Samples (or searches, with `strategy = "mcts"`) every missing unit of one model.
async fn run_model(ctx: Arc<ModelShared>, done: DoneSet, grace: Duration) -> ModelEnd {
    let end = if ctx.search.is_some() {
        search::search_model(&ctx, done, grace).await
    } else {
        worker::sample_model(&ctx, done, grace).await
    };
    ctx.counters.ended.store(true, Ordering::SeqCst);
    end
}

async fn sample_all_async(
    job: &SamplingJob,
    shutdown: &Shutdown,
) -> Result<Vec<(String, ModelEnd)>> {
    let index = id_index(job.prepared.iter(), |p| p.id.as_str());
    let mut handles = Vec::new();
    let mut bars = Vec::new();
    for m in &job.settings.models {
        let path = job.run_dir.checkpoint(&m.name);
        let done = load_done(&path, &index)?;
        let mut ctx = worker::model_ctx(job, m, &path, shutdown)?;
        ctx.budget = job.budgets.budget(&m.name);
        ctx.search = search_shared(job, m, &done)?;
        let ctx = Arc::new(ctx);
        // Set before any frame is drawn: what is missing now, so a resumed run starts at 0 of the rest.
        let missing: u64 = missing_work(job.prepared.len(), &m.sampling, &done)
            .map(|w| w.slots.len() as u64)
            .sum();
        ctx.counters.total.store(missing, Ordering::SeqCst);
        bars.push((m.name.clone(), ctx.counters.clone()));
        let grace = m.api.shutdown_grace;
        handles.push((m.name.clone(), tokio::spawn(run_model(ctx, done, grace))));
    }
    let reporter = Reporter::start(
        Mode::detect(job.quiet),
        bars,
        job.progress_interval,
        shutdown,
        job.notes.clone(),
    );
    let mut ends = Vec::new();
    for (name, h) in handles {
        let end = h
            .await
            .unwrap_or_else(|e| ModelEnd::Failed(format!("model {name}: worker crashed: {e}")));
        ends.push((name, end));
    }
    reporter.finish().await;
    Ok(ends)
}

/// The search context of an mcts model: its reward client, request cache and sandbox.
fn search_shared(
    job: &SamplingJob,
    m: &ModelSettings,
    done: &DoneSet,
) -> Result<Option<SearchShared>> {
    let (Some(settings), Some(sj)) = (&m.search, &job.search) else {
        return Ok(None);
    };
    let reward = match settings.reward_mode {
        crate::config::RewardMode::None => None,
        mode => {
            let url = settings.reward_url(&m.api.base_url, mode);
            let key = sj.reward_keys.get(&m.name).cloned().flatten();
            let client = (m.api.client_at(url, key, None))
                .map_err(|e| anyhow::anyhow!("model {}: reward model: {e}", m.name))?;
            Some(client)
        }
    };
    let finished = done
        .iter()
        .filter(|(_, k)| *k >= 0)
        .map(|&(p, k)| search::unit_name(&job.prepared[p as usize].id, k as u32))
        .collect();
    let cache = RequestCache::open(&job.run_dir.cache(&m.name), &finished, &job.notes)?;
    Ok(Some(SearchShared {
        settings: settings.clone(),
        inputs: sj.inputs.clone(),
        reward,
        sandbox: sj.sandbox.clone(),
        cache,
        run_dir: job.run_dir.clone(),
        first: Default::default(),
        restate: Default::default(),
    }))
}
