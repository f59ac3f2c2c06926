//! Sampling: units of work, seeds, concurrency and rate control, retries, progress, shutdown.
//!
//! Every (model, problem, sample index | greedy) is one unit. Each finished unit is appended to the
//! model's checkpoint as it arrives, so a killed run resumes with only the missing units.

mod budget;
mod cache;
mod pace;
mod progress;
mod search;
mod units;

pub mod batch_api;
pub mod batch_file;

use crate::plan::Prepared;
use crate::rundir::manifest::Status;
use crate::rundir::RunDir;
use crate::util::Notes;
use budget::Budget;
pub use budget::BudgetBook;
pub use cache::{request_key, Cached, RequestCache};
pub use search::SearchCtx;
pub use units::{derive_seed, missing_work, DoneSet, WorkItem};

use crate::client::retry::{Next, RetryPolicy};
use crate::client::{ApiError, ApiKey, ChatResponse, Client, ErrorClass};
use crate::config::{ModelSettings, Settings};
use crate::cost::Money;
use crate::error::{BadInput, ExitStatus};
use crate::rundir::manifest::{CostEntry, Manifest, ModelManifest};
use crate::rundir::record::{
    read_lines, CheckpointWriter, RecordHead, RecordRef, SampleIndex, UnitOutcome,
};
use crate::util::{hex, id_index, now_rfc3339, printable, Shutdown};
use anyhow::{Context, Result};
use pace::{AdaptiveLimit, Pace, Permit};
use progress::{Counters, Mode, Reporter};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

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

/// Everything the workers of one model share.
struct ModelCtx {
    settings: ModelSettings,
    /// Body fields that never change between requests, pre-serialized: `,"model":…` and so on.
    body_sample: String,
    body_greedy: String,
    run_id: String,
    client: Client,
    limit: Arc<AdaptiveLimit>,
    pace: Pace,
    policy: RetryPolicy,
    writer: CheckpointWriter,
    counters: Arc<Counters>,
    prepared: Arc<Vec<Prepared>>,
    fatal: Mutex<Option<String>>,
    stopped: AtomicBool,
    shutdown: Shutdown,
    quiet: bool,
    /// Set when `save_raw_responses = false`: responses are replaced by the answer this grader
    /// configuration extracts, and a hash.
    strip: Option<crate::grade::GradeConfig>,
    budget: Option<Budget>,
    /// `strategy = "mcts"`: each unit is a tree search.
    search: Option<SearchCtx>,
}

impl ModelCtx {
    /// The most completion tokens `choices` choices can hold.
    fn completion_bound(&self, choices: usize) -> u64 {
        u64::from(self.settings.sampling.max_tokens.unwrap_or(0)) * choices as u64
    }

    /// Reserves a request's worst case; on refusal stops the model with the budget message.
    fn reserve(&self, prep: &Prepared, slots: usize) -> Option<Option<Money>> {
        let Some(b) = &self.budget else {
            return Some(None);
        };
        let worst = b.worst_case(&self.settings, prep, slots);
        self.reserve_worst(worst, b.worst_case(&self.settings, prep, 1))
    }

    /// Reserves `worst` (`per_unit`: a unit's worst case, for the stop message); on refusal
    /// stops the model.
    fn reserve_worst(&self, worst: Money, per_unit: Money) -> Option<Option<Money>> {
        let Some(b) = &self.budget else {
            return Some(None);
        };
        let (key, ledger) = match b.reserve(worst) {
            Ok(()) => return Some(Some(worst)),
            Err(hit) => hit,
        };
        let left = self
            .counters
            .total
            .load(Ordering::SeqCst)
            .saturating_sub(self.counters.done.load(Ordering::SeqCst));
        self.fail(&b.stop_message(key, ledger, left, per_unit));
        None
    }

    /// Settles a sampling request's reservation (see [`ModelCtx::settle_bounded`]); a reply's
    /// completion bound counts the choices it actually carried.
    fn settle(
        &self,
        worst: Option<Money>,
        prep: &Prepared,
        slots: usize,
        reply: &Result<ChatResponse, ApiError>,
    ) {
        let choices = reply.as_ref().map_or(slots, |r| r.choices.len().max(slots));
        let bound = (prep.prompt_tokens_bound, self.completion_bound(choices));
        self.settle_bounded(worst, bound, reply.as_ref().map(|r| r.usage.as_ref()));
    }

    /// Settles a reservation: a reply costs its usage, each count it left unreadable at its bound
    /// (prompt, completion tokens); a failure the server may have billed costs the reservation;
    /// one it cannot have billed, nothing.
    fn settle_bounded(
        &self,
        worst: Option<Money>,
        bound: (u64, u64),
        reply: Result<Option<&crate::client::Usage>, &ApiError>,
    ) {
        let (Some(b), Some(w)) = (&self.budget, worst) else {
            return;
        };
        let actual = match reply {
            Ok(usage) => b.price.cost_at_most(usage, bound),
            Err(e) if e.may_be_billed() => w,
            Err(_) => Money::from_integer(0),
        };
        b.settle(w, actual);
    }

    fn fail(&self, reason: &dyn std::fmt::Display) {
        let mut f = self.fatal.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            let msg = format!(
                "model {} ({}) stopped: {reason}",
                self.settings.name, self.settings.model_id
            );
            if !self.quiet {
                // The progress reporter prints it between frames, so no bar is left half-drawn.
                *self.counters.note.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(format!("error: {}", printable(&msg)));
            }
            *f = Some(msg);
        }
        self.stopped.store(true, Ordering::SeqCst);
    }

    fn shutting_down(&self) -> bool {
        self.shutdown.is_triggered()
    }

    /// The request body as JSON bytes; the messages are spliced in pre-serialized.
    fn request_body(&self, prep: &Prepared, slots: &[SampleIndex], seed: u64) -> Vec<u8> {
        let greedy = slots.first() == Some(&SampleIndex::Greedy);
        let fixed = if greedy {
            &self.body_greedy
        } else {
            &self.body_sample
        };
        compose_body(&prep.messages_json, fixed, seed, slots.len())
    }

    fn seed_for(&self, prep: &Prepared, slots: &[SampleIndex]) -> u64 {
        seed_of(&self.settings, prep, slots)
    }

    /// Writes one unit's record to the checkpoint; a write error stops this model.
    fn record(
        &self,
        prep: &Prepared,
        (slot, seed): (SampleIndex, u64),
        tried: &ItemTries<'_>,
        outcome: Result<(&ChatResponse, usize), &ApiError>,
        shared_by: usize,
    ) {
        let unit = Unit {
            settings: &self.settings,
            run_id: &self.run_id,
            strip: self.strip.as_ref(),
        };
        let timing = Attempted {
            started_at: tried.started_at,
            latency_ms: tried.started.elapsed().as_millis() as u64,
            attempts: tried.attempts,
            billable_failures: tried.billable_failures,
            shared_by: shared_by as u32,
        };
        if let Err(e) = unit.write(&self.writer, prep, slot, seed, &timing, outcome) {
            // A checkpoint that cannot be written would lose work silently: stop this model.
            self.fail(&format!("disk error: {e}"));
        }
    }
}

/// How one request went, for each record it writes.
pub struct Attempted<'a> {
    pub started_at: &'a str,
    pub latency_ms: u64,
    pub attempts: u32,
    /// Failed attempts the server may have billed (see [`ApiError::may_be_billed`]).
    pub billable_failures: u32,
    /// Records that share the reply's usage: the choices taken from it.
    pub shared_by: u32,
}

/// A work item's attempts so far, as the runner counts them.
struct ItemTries<'a> {
    started_at: &'a str,
    started: Instant,
    attempts: u32,
    billable_failures: u32,
}

/// What every record of one model shares; builds and writes records exactly as the live runner
/// does (batch import uses it too).
pub struct Unit<'a> {
    pub settings: &'a ModelSettings,
    pub run_id: &'a str,
    /// With `save_raw_responses = false`: the grader configuration that extracts the answer.
    pub strip: Option<&'a crate::grade::GradeConfig>,
}

impl<'a> Unit<'a> {
    /// A unit's checkpoint line before its reply: identity, parameters and timing, outcome
    /// `api_error`, no reply. The one place the runner builds a line; each writer then fills in
    /// what its reply (or error) gave.
    pub(crate) fn line(
        &self,
        prep: &'a Prepared,
        (slot, seed): (SampleIndex, u64),
        timing: &Attempted<'a>,
        finished_at: &'a str,
    ) -> RecordRef<'a> {
        let m: &'a ModelSettings = self.settings;
        let greedy = slot == SampleIndex::Greedy;
        RecordRef {
            run_id: self.run_id,
            model: &m.name,
            model_id: &m.model_id,
            served_model: None,
            system_fingerprint: None,
            problem_id: &prep.id,
            sample_index: slot,
            seed: Some(seed),
            temperature: if greedy { 0.0 } else { m.sampling.temperature },
            top_p: if greedy { 1.0 } else { m.sampling.top_p },
            max_tokens: m.sampling.max_tokens,
            prompt_hash: &prep.prompt_hash,
            response: None,
            extracted: None,
            response_sha256: None,
            reasoning_content: None,
            finish_reason: None,
            usage: None,
            choices_in_request: 1,
            latency_ms: timing.latency_ms,
            ttft_ms: None,
            tokens_per_s: None,
            started_at: timing.started_at,
            finished_at,
            attempts: timing.attempts,
            billable_failures: timing.billable_failures,
            outcome: UnitOutcome::ApiError,
            error_class: None,
            error: None,
            search: None,
        }
    }

    /// Appends one unit's record, serialised straight from borrowed fields.
    pub fn write(
        &self,
        writer: &CheckpointWriter,
        prep: &Prepared,
        slot: SampleIndex,
        seed: u64,
        timing: &Attempted<'_>,
        outcome: Result<(&ChatResponse, usize), &ApiError>,
    ) -> Result<(), crate::rundir::record::CheckpointError> {
        let finished_at = now_rfc3339();
        let error = outcome.err().map(|e| e.to_string());
        let (extracted, response_sha256) = match (self.strip, outcome) {
            (Some(cfg), Ok((resp, i))) => {
                let text = &resp.choices[i].content;
                let hash = hex(&Sha256::digest(text.as_bytes()));
                (crate::grade::extract(text, cfg), Some(hash))
            }
            _ => (None, None),
        };
        let mut r = self.line(prep, (slot, seed), timing, &finished_at);
        r.extracted = extracted.as_deref();
        r.response_sha256 = response_sha256.as_deref();
        r.error = error.as_deref();
        match outcome {
            Ok((resp, i)) => {
                let c = &resp.choices[i];
                r.served_model = resp.served_model.as_deref();
                r.system_fingerprint = resp.system_fingerprint.as_deref();
                if self.strip.is_none() {
                    r.response = Some(&c.content);
                    r.reasoning_content = c.reasoning_content.as_deref();
                }
                r.finish_reason = c.finish_reason.as_deref();
                r.usage = resp.usage.clone();
                // The records taken from this reply carry its whole usage between them, however
                // many choices the server sent: a resume then counts what was billed.
                r.choices_in_request = timing.shared_by.max(1);
                r.ttft_ms = resp.stream.map(|t| t.ttft_ms);
                r.tokens_per_s = resp.stream.and_then(|t| t.tokens_per_s);
                r.outcome = if c.finish_reason.as_deref() == Some("length") {
                    UnitOutcome::Truncated
                } else {
                    UnitOutcome::Ok
                };
            }
            Err(e) => r.error_class = Some(e.class.as_str()),
        }
        writer.append(&r)
    }
}

/// The request of one work item exactly as the runner sends it: its seed and JSON body.
pub fn request_for(m: &ModelSettings, prep: &Prepared, slots: &[SampleIndex]) -> (u64, Vec<u8>) {
    let seed = seed_of(m, prep, slots);
    let greedy = slots.first() == Some(&SampleIndex::Greedy);
    let fixed = fixed_body_fields(m, greedy);
    (
        seed,
        compose_body(&prep.messages_json, &fixed, seed, slots.len()),
    )
}

fn seed_of(m: &ModelSettings, prep: &Prepared, slots: &[SampleIndex]) -> u64 {
    match slots.first() {
        Some(SampleIndex::Sample(i)) => derive_seed(m.sampling.seed, &prep.id, *i),
        _ => m.sampling.seed & 0x7fff_ffff,
    }
}

/// The request fields that are the same for every sample (or every greedy request) of a model, as a
/// JSON fragment starting with a comma.
fn fixed_body_fields(m: &ModelSettings, greedy: bool) -> String {
    let s = &m.sampling;
    let mut map = serde_json::Map::new();
    map.insert("model".into(), m.model_id.clone().into());
    map.insert(
        "temperature".into(),
        (if greedy { 0.0 } else { s.temperature }).into(),
    );
    map.insert("top_p".into(), (if greedy { 1.0 } else { s.top_p }).into());
    if let Some(t) = s.max_tokens {
        map.insert("max_tokens".into(), t.into());
    }
    if let (Some(k), false) = (s.top_k, greedy) {
        map.insert("top_k".into(), k.into());
    }
    if !s.stop.is_empty() {
        map.insert("stop".into(), s.stop.clone().into());
    }
    if m.api.stream {
        map.insert("stream".into(), true.into());
        map.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    let object = serde_json::Value::Object(map).to_string();
    // "{…}" → ",…": the fields are appended after "messages".
    format!(",{}", &object[1..object.len() - 1])
}

/// `{"messages":…,<fixed fields>,"seed":S[,"n":N]}`.
fn compose_body(messages_json: &str, fixed: &str, seed: u64, choices: usize) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut body = String::with_capacity(messages_json.len() + fixed.len() + 48);
    body.push_str("{\"messages\":");
    body.push_str(messages_json);
    body.push_str(fixed);
    let _ = write!(body, ",\"seed\":{seed}");
    if choices > 1 {
        let _ = write!(body, ",\"n\":{choices}");
    }
    body.push('}');
    body.into_bytes()
}

/// Runs one request's worth of work with retries; writes one record per slot.
async fn run_item(ctx: Arc<ModelCtx>, item: WorkItem, _permit: Permit) {
    let prep = &ctx.prepared[item.problem];
    let mut pending = item.slots;
    let started_at = now_rfc3339();
    let mut tried = ItemTries {
        started_at: &started_at,
        started: Instant::now(),
        attempts: 0,
        billable_failures: 0,
    };
    let estimate =
        prep.prompt_tokens_estimate + ctx.settings.sampling.max_tokens.unwrap_or(1024) as u64;
    let mut tries = ctx.policy.tries(&ctx.shutdown);
    while let Some(attempts) = tries.start() {
        if ctx.stopped.load(Ordering::SeqCst) {
            return ctx.abandon(prep, &pending, &tried);
        }
        let Some(reserved) = ctx.reserve(prep, pending.len()) else {
            return ctx.abandon(prep, &pending, &tried);
        };
        let seed = ctx.seed_for(prep, &pending);
        let body = ctx.request_body(prep, &pending, seed);
        if !ctx.pace.is_unlimited() {
            ctx.pace.wait(estimate * pending.len() as u64).await;
        }
        ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
        tried.attempts = attempts;
        // Boxed: the exchange's state is most of this future's size, which spawning moves.
        let reply = Box::pin(ctx.client.chat_bytes(body)).await;
        ctx.settle(reserved, prep, pending.len(), &reply);
        let err = match reply {
            Ok(resp) => match ctx.take_choices(prep, &resp, &mut pending, seed, &tried) {
                None => return,
                Some(err) => err,
            },
            Err(e) => {
                // Counted for the records, so a resume prices this attempt as the ledger did.
                tried.billable_failures += u32::from(e.may_be_billed());
                e
            }
        };
        if err.class == ErrorClass::RateLimited {
            ctx.limit.on_rate_limited();
        }
        if !err.class.retryable() {
            ctx.fail(&err);
        }
        match tries.failed(err).await {
            Next::Retry => {
                ctx.counters.retries.fetch_add(1, Ordering::Relaxed);
            }
            Next::Stopped => return ctx.abandon(prep, &pending, &tried),
            Next::GaveUp { err, attempts } => {
                tried.attempts = attempts;
                for slot in pending.drain(..) {
                    ctx.record(prep, (slot, seed), &tried, Err(&err), 1);
                    ctx.counters.errors.fetch_add(1, Ordering::SeqCst);
                    ctx.counters.done.fetch_add(1, Ordering::SeqCst);
                }
                return;
            }
        }
    }
}

impl ModelCtx {
    /// Stops a work item before its retries ended (budget, stop, shutdown). Attempts the server
    /// may have billed are kept as an error record per slot, so a resume's budget counts them;
    /// the units stay missing either way.
    fn abandon(&self, prep: &Prepared, pending: &[SampleIndex], tried: &ItemTries<'_>) {
        if tried.billable_failures == 0 || pending.is_empty() {
            return;
        }
        let err = ApiError {
            class: ErrorClass::Timeout,
            status: None,
            message: format!(
                "stopped after {} attempts the server may have billed",
                tried.billable_failures
            ),
            retry_after: None,
        };
        let seed = self.seed_for(prep, pending);
        for &slot in pending {
            self.record(prep, (slot, seed), tried, Err(&err), 1);
        }
    }

    /// Records the choices a reply holds; the error for any slots it left without one.
    fn take_choices(
        &self,
        prep: &Prepared,
        resp: &ChatResponse,
        pending: &mut Vec<SampleIndex>,
        seed: u64,
        tried: &ItemTries<'_>,
    ) -> Option<ApiError> {
        self.limit.on_success();
        let tokens = resp.usage.as_ref().map_or(0, crate::client::Usage::total);
        self.counters.tokens.fetch_add(tokens, Ordering::Relaxed);
        let got = resp.choices.len().min(pending.len());
        for (i, slot) in pending.drain(..got).enumerate() {
            self.record(prep, (slot, seed), tried, Ok((resp, i)), got);
            self.counters.done.fetch_add(1, Ordering::SeqCst);
        }
        (!pending.is_empty()).then(|| ApiError {
            class: ErrorClass::EmptyChoices,
            status: None,
            message: format!("asked for {} choices, got {got}", got + pending.len()),
            retry_after: None,
        })
    }
}

/// Samples every missing unit of one model.
async fn run_model(ctx: Arc<ModelCtx>, done: DoneSet, grace: Duration) -> ModelEnd {
    let end = sample_model(&ctx, done, grace).await;
    ctx.counters.ended.store(true, Ordering::SeqCst);
    end
}

async fn sample_model(ctx: &Arc<ModelCtx>, done: DoneSet, grace: Duration) -> ModelEnd {
    if ctx.search.is_some() {
        return search::search_model(ctx, done, grace).await;
    }
    let sampling = ctx.settings.sampling.clone();
    let mut tasks = tokio::task::JoinSet::new();
    let mut first = true;
    for item in missing_work(ctx.prepared.len(), &sampling, &done) {
        if ctx.stopped.load(Ordering::SeqCst) || ctx.shutting_down() {
            break;
        }
        let permit = tokio::select! {
            p = ctx.limit.acquire() => p,
            _ = ctx.shutdown.triggered() => break,
        };
        tasks.spawn(run_item(ctx.clone(), item, permit));
        if first {
            // The first request goes alone: a bad key or unknown model then costs one request, not a burst.
            first = false;
            tokio::select! {
                _ = tasks.join_next() => {}
                _ = ctx.shutdown.triggered() => break,
            }
            continue;
        }
        while tasks.try_join_next().is_some() {}
    }
    finish_model(ctx, tasks, grace).await
}

/// Waits for a model's work in flight and says how its session ended. After a stop, requests in
/// flight get `grace` to finish whatever the request timeout is; then they are dropped and their
/// units stay missing, for resume.
async fn finish_model(
    ctx: &Arc<ModelCtx>,
    mut tasks: tokio::task::JoinSet<()>,
    grace: Duration,
) -> ModelEnd {
    tokio::select! {
        _ = join_all(&mut tasks) => {}
        _ = ctx.shutdown.triggered() => {}
    }
    if ctx.shutting_down() {
        let _ = tokio::time::timeout(grace, join_all(&mut tasks)).await;
        tasks.abort_all();
    }
    join_all(&mut tasks).await;
    let _ = ctx.writer.sync();
    if let Some(msg) = ctx.fatal.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        return ModelEnd::Failed(msg);
    }
    if ctx.shutting_down() {
        return ModelEnd::Interrupted;
    }
    if ctx.counters.errors.load(Ordering::Relaxed) > 0 {
        ModelEnd::Incomplete
    } else {
        ModelEnd::Complete
    }
}

async fn join_all(tasks: &mut tokio::task::JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
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
    pub settings: Settings,
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(sample_all_async(job, shutdown))
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
        let mut ctx = model_ctx(job, m, &path, shutdown)?;
        ctx.budget = job.budgets.budget(&m.name);
        ctx.search = search_ctx(job, m, &done)?;
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

fn model_ctx(
    job: &SamplingJob,
    m: &ModelSettings,
    path: &Path,
    shutdown: &Shutdown,
) -> Result<ModelCtx> {
    let key = job.keys.get(&m.name).cloned().flatten();
    let client = (m.api.chat_client(key)).map_err(|e| anyhow::anyhow!("model {}: {e}", m.name))?;
    Ok(ModelCtx {
        body_sample: fixed_body_fields(m, false),
        body_greedy: fixed_body_fields(m, true),
        settings: m.clone(),
        run_id: job.run_id.clone(),
        client,
        limit: Arc::new(AdaptiveLimit::new(m.api.concurrency)),
        pace: Pace::new(m.api.rpm, m.api.tpm),
        policy: m.api.retry_policy(),
        writer: CheckpointWriter::open(path, &job.notes)?,
        counters: Arc::new(Counters::default()),
        prepared: job.prepared.clone(),
        fatal: Mutex::new(None),
        stopped: AtomicBool::new(false),
        shutdown: shutdown.clone(),
        quiet: job.quiet,
        strip: (!job.settings.evaluation.save_raw_responses)
            .then(|| job.settings.evaluation.grade_config()),
        budget: None,
        search: None,
    })
}

/// The search context of an mcts model: its reward client, request cache and sandbox.
fn search_ctx(job: &SamplingJob, m: &ModelSettings, done: &DoneSet) -> Result<Option<SearchCtx>> {
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
    Ok(Some(SearchCtx {
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

/// Per-model totals read back from a checkpoint, for the manifest.
#[derive(Debug, Default, Clone)]
pub struct CheckpointCounts {
    pub ok: u64,
    pub truncated: u64,
    pub api_error: u64,
    pub served_models: BTreeMap<String, u64>,
    pub system_fingerprints: BTreeSet<String>,
    /// Units whose latest record is an API error, by [`failure_cause`].
    pub failure_causes: BTreeMap<String, u64>,
    /// The usage of every planned record, each its share of its request.
    pub tokens: crate::cost::Tally,
}

/// Counts the latest state of each planned unit: a unit with any usable record counts as done.
pub fn count_checkpoint(
    path: &Path,
    index: &HashMap<&str, usize>,
    n: u32,
    greedy: bool,
) -> Result<CheckpointCounts> {
    // One byte per planned unit (a map of 1M units held ~150 MB at its peak); the error texts
    // are kept only for units whose latest record failed.
    let width = n as usize + usize::from(greedy);
    let problems = index.values().max().map_or(0, |&p| p + 1);
    let mut state = vec![UNSEEN; problems * width];
    let mut errors: HashMap<usize, Option<String>> = HashMap::new();
    let mut c = CheckpointCounts::default();
    read_lines(path, |r: RecordHead| {
        let Some(&p) = index.get(r.problem_id.as_str()) else {
            return Ok(());
        };
        let Some(slot) = r.sample_index.slot(n, greedy) else {
            return Ok(());
        };
        if r.usable() {
            c.tokens.add(r.usage.as_ref(), r.choices_in_request);
        }
        let at = p * width + slot;
        if state[at] == UNSEEN || state[at] == FAILED {
            state[at] = match r.outcome {
                UnitOutcome::Ok => OK,
                UnitOutcome::Truncated => TRUNCATED,
                UnitOutcome::ApiError => FAILED,
            };
            if r.usable() {
                errors.remove(&at);
                if let Some(s) = &r.served_model {
                    *c.served_models.entry(s.clone()).or_default() += 1;
                }
                if let Some(f) = &r.system_fingerprint {
                    c.system_fingerprints.insert(f.clone());
                }
            } else {
                errors.insert(at, r.error);
            }
        }
        Ok(())
    })?;
    c.ok = state.iter().filter(|&&s| s == OK).count() as u64;
    c.truncated = state.iter().filter(|&&s| s == TRUNCATED).count() as u64;
    c.api_error = errors.len() as u64;
    for error in errors.into_values() {
        let cause = failure_cause(error.as_deref().unwrap_or("unknown error"));
        *c.failure_causes.entry(cause).or_default() += 1;
    }
    c.failure_causes = cap_causes(std::mem::take(&mut c.failure_causes));
    Ok(c)
}

// A unit's latest state in [`count_checkpoint`]; zero for unseen, so untouched pages stay unmapped.
const UNSEEN: u8 = 0;
const OK: u8 = 1;
const TRUNCATED: u8 = 2;
const FAILED: u8 = 3;

/// A failed unit's cause for grouping: the error class (and HTTP status) with the innermost
/// message of the chain, e.g. `connection: Connection refused (os error 111)`. The text comes from
/// a server, so control characters are dropped and the length is bounded.
pub fn failure_cause(error: &str) -> String {
    let (class, rest) = error.split_once(": ").unwrap_or(("error", error));
    let inner = rest
        .rsplit(": ")
        .find(|s| !s.trim().is_empty())
        .unwrap_or(rest);
    let text = format!("{class}: {}", inner.trim());
    let clean: String = text
        .chars()
        .map(|ch| if ch.is_control() { ' ' } else { ch })
        .collect();
    if clean.chars().count() > 100 {
        clean.chars().take(99).chain(['…']).collect()
    } else {
        clean
    }
}

/// Keeps the [`MAX_CAUSES`] most frequent causes; the rest are summed under `other`.
fn cap_causes(causes: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    use crate::rundir::manifest::MAX_CAUSES;
    if causes.len() <= MAX_CAUSES {
        return causes;
    }
    let mut all: Vec<(String, u64)> = causes.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let other: u64 = all[MAX_CAUSES - 1..].iter().map(|(_, c)| c).sum();
    all.truncate(MAX_CAUSES - 1);
    let mut kept: BTreeMap<String, u64> = all.into_iter().collect();
    *kept.entry("other".into()).or_default() += other;
    kept
}

/// One line per cause, most frequent first, each at most `width` characters:
/// `connection: Connection refused (os error 111) ×25`.
pub fn describe_causes(causes: &BTreeMap<String, u64>, width: usize) -> Vec<String> {
    let mut all: Vec<(&String, &u64)> = causes.iter().collect();
    all.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    all.iter()
        .map(|(cause, n)| {
            let count = format!(" ×{n}");
            let room = width.saturating_sub(count.chars().count()).max(10);
            let text: String = if cause.chars().count() > room {
                cause.chars().take(room - 1).chain(['…']).collect()
            } else {
                cause.to_string()
            };
            text + &count
        })
        .collect()
}

/// The manifest's per-model section from the checkpoint counts and the model's end state.
pub fn model_manifest(
    m: &ModelSettings,
    end: Option<&ModelEnd>,
    counts: &CheckpointCounts,
    problems: usize,
) -> ModelManifest {
    let mut mm = ModelManifest::planned(m, problems);
    let finished = counts.ok + counts.truncated;
    let (status, error) = match end {
        Some(ModelEnd::Failed(msg)) => (Status::Failed, Some(msg.clone())),
        Some(ModelEnd::Interrupted) => (Status::Interrupted, None),
        Some(_) if finished == mm.units_planned => (Status::Complete, None),
        Some(_) => (Status::Incomplete, None),
        None => (Status::Pending, None),
    };
    mm.status = status;
    mm.error = error;
    mm.ok = counts.ok;
    mm.truncated = counts.truncated;
    mm.api_error = counts.api_error;
    mm.served_models = counts.served_models.clone();
    mm.system_fingerprints = counts.system_fingerprints.iter().cloned().collect();
    mm.failure_causes = counts.failure_causes.clone();
    mm.cost = m
        .pricing
        .as_ref()
        .map(|p| cost_entry(p, &counts.tokens, problems));
    mm
}

/// The manifest's cost ledger for a model's tally at its price.
fn cost_entry(p: &crate::cost::Price, t: &crate::cost::Tally, problems: usize) -> CostEntry {
    use crate::cost::{to_f64, Money};
    let total = t.cost(p);
    let per = |n: u64| (n > 0).then(|| to_f64(&(total / Money::from_integer(u128::from(n)))));
    CostEntry {
        currency: p.currency.clone(),
        total: to_f64(&total),
        per_sample: per(t.with_usage + t.without_usage),
        per_problem: per(problems as u64),
        samples_without_usage: t.without_usage,
        price_source: p.source.clone(),
    }
}

/// How a finished sampling session ends the command.
pub fn exit_status_for(ends: &[(String, ModelEnd)], manifest: &Manifest) -> ExitStatus {
    if ends.iter().any(|(_, e)| *e == ModelEnd::Interrupted) {
        return ExitStatus::Interrupted;
    }
    let all_complete = manifest.models.values().all(|m| m.status.is_complete());
    if all_complete {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }
}

/// Reads each model's API key from its environment variable; a missing one is an error before any request.
pub fn read_keys(settings: &Settings) -> Result<HashMap<String, Option<ApiKey>>, BadInput> {
    let mut keys = HashMap::new();
    for m in &settings.models {
        let key = read_key(m.api.api_key_env.as_deref(), &format!("model {}", m.name))?;
        keys.insert(m.name.clone(), key);
    }
    Ok(keys)
}

/// Reads one key; `who` names its user in the error.
pub fn read_key(var: Option<&str>, who: &str) -> Result<Option<ApiKey>, BadInput> {
    let Some(var) = var else { return Ok(None) };
    let state = match std::env::var_os(var) {
        Some(v) => match v.to_str().map(str::trim) {
            Some(k) if !k.is_empty() => return Ok(Some(ApiKey::new(k.to_string()))),
            Some(_) => "is set but empty",
            None => "is not valid UTF-8",
        },
        None => "is not set",
    };
    Err(BadInput::new(format!(
        "environment variable {var} {state} (api_key_env of {who}); export the key in it or run with a config that names another variable"
    )))
}

/// The run id: UTC time plus the config hash's first 8 hex digits.
pub fn new_run_id(config_hash: &str) -> String {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{}", &config_hash[..8.min(config_hash.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;

    fn model(extra: &str) -> ModelSettings {
        let text = format!(
            "[api]\nbase_url = \"http://x\"\n[sampling]\nn = 4\ntemperature = 0.6\ntop_p = 0.9\n{extra}\n[[models]]\nname = \"m\"\nmodel_id = \"vendor/\\\"q\\\"\"\n[evaluation]\ndataset = \"d\"\n"
        );
        config::load_str(&text, std::path::Path::new("c.toml"))
            .unwrap()
            .models
            .remove(0)
    }

    #[test]
    fn counts_keep_each_units_first_usable_record_else_its_latest_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let line = |p: &str, i: &str, outcome: &str, error: &str| {
            format!(
                "{{\"run_id\":\"r\",\"model\":\"m\",\"model_id\":\"m\",\"problem_id\":\"{p}\",\
                 \"sample_index\":{i},\"temperature\":0.7,\"top_p\":1.0,\"prompt_hash\":\"h\",\
                 \"latency_ms\":1,\"started_at\":\"t\",\"finished_at\":\"t\",\"attempts\":1,\
                 \"outcome\":\"{outcome}\",\"error\":\"{error}\",\"served_model\":\"s\"}}\n"
            )
        };
        let text = [
            line("a", "0", "api_error", "timeout: first"),
            line("a", "0", "ok", ""),
            line("a", "0", "api_error", "timeout: after ok"),
            line("a", "1", "api_error", "timeout: one"),
            line("a", "1", "api_error", "http 500: two"),
            line("b", "\"greedy\"", "truncated", ""),
            line("b", "0", "truncated", ""),
            line("b", "0", "ok", ""),
            line("b", "2", "ok", ""),
            line("zz", "0", "ok", ""),
        ]
        .concat();
        std::fs::write(&path, text).unwrap();
        let index = HashMap::from([("a", 0), ("b", 1)]);
        let c = count_checkpoint(&path, &index, 2, true).unwrap();
        assert_eq!((c.ok, c.truncated, c.api_error), (1, 2, 1));
        assert_eq!(
            c.failure_causes,
            BTreeMap::from([("http 500: two".into(), 1)])
        );
        assert_eq!(c.served_models, BTreeMap::from([("s".into(), 3)]));
        let c = count_checkpoint(&path, &index, 2, false).unwrap();
        assert_eq!((c.ok, c.truncated, c.api_error), (1, 1, 1));
    }

    #[test]
    fn failure_causes_keep_the_class_and_the_innermost_message() {
        assert_eq!(
            failure_cause("connection: error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)"),
            "connection: Connection refused (os error 111)"
        );
        assert_eq!(
            failure_cause("server (HTTP 503): upstream busy\u{1b}[2J"),
            "server (HTTP 503): upstream busy [2J"
        );
        assert!(
            failure_cause(&format!("server (HTTP 500): {}", "x".repeat(500)))
                .chars()
                .count()
                <= 100
        );
        let many: BTreeMap<String, u64> = (0..30).map(|i| (format!("c{i:02}"), 30 - i)).collect();
        let capped = cap_causes(many);
        assert_eq!(capped.len(), crate::rundir::manifest::MAX_CAUSES);
        assert_eq!(capped.values().sum::<u64>(), (1..=30).sum::<u64>());
        assert_eq!(capped["c00"], 30);
        let two = BTreeMap::from([("a: x".to_string(), 2), ("b: y".to_string(), 25)]);
        assert_eq!(describe_causes(&two, 80), ["b: y ×25", "a: x ×2"]);
        let long = BTreeMap::from([("c".repeat(100), 7)]);
        assert_eq!(describe_causes(&long, 40)[0].chars().count(), 40);
    }

    #[test]
    fn request_bodies_are_valid_json_with_every_field() {
        let m = model("max_tokens = 64\ntop_k = 20\nstop = [\"</s>\", \"\\n\\n\"]");
        let messages = serde_json::to_string(
            &serde_json::json!([{"role": "user", "content": "What is \"1\"+1?\n"}]),
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&compose_body(
            &messages,
            &fixed_body_fields(&m, false),
            7,
            3,
        ))
        .unwrap();
        assert_eq!(body["model"], "vendor/\"q\"");
        assert_eq!(body["messages"][0]["content"], "What is \"1\"+1?\n");
        assert_eq!(
            (body["temperature"].as_f64(), body["top_p"].as_f64()),
            (Some(0.6), Some(0.9))
        );
        assert_eq!(
            (body["seed"].as_u64(), body["n"].as_u64()),
            (Some(7), Some(3))
        );
        assert_eq!(
            (body["max_tokens"].as_u64(), body["top_k"].as_u64()),
            (Some(64), Some(20))
        );
        assert_eq!(body["stop"], serde_json::json!(["</s>", "\n\n"]));
        let greedy: serde_json::Value = serde_json::from_slice(&compose_body(
            &messages,
            &fixed_body_fields(&m, true),
            42,
            1,
        ))
        .unwrap();
        assert_eq!(
            (greedy["temperature"].as_f64(), greedy["top_p"].as_f64()),
            (Some(0.0), Some(1.0))
        );
        assert!(greedy.get("n").is_none() && greedy.get("top_k").is_none());
        let plain: serde_json::Value = serde_json::from_slice(&compose_body(
            &messages,
            &fixed_body_fields(&model(""), false),
            1,
            1,
        ))
        .unwrap();
        assert!(plain.get("max_tokens").is_none() && plain.get("stop").is_none());
    }
}
