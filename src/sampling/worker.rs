//! The worker loop of one model: a unit's request body, its tries under the one retry policy,
//! pacing and the budget, and the checkpoint line each finished unit leaves.

use super::budget::worst_case;
use super::pace::{AdaptiveLimit, Pace, Permit};
use super::progress::Counters;
use super::search_shared::SearchShared;
use super::units::{derive_seed, missing_work, DoneSet, WorkItem};
use super::{ModelEnd, SamplingJob};
use crate::client::retry::{Next, RetryPolicy};
use crate::client::{ApiError, ChatResponse, Client, ErrorClass};
use crate::config::ModelSettings;
use crate::cost::{Budget, Money, Price};
use crate::plan::Prepared;
use crate::rundir::record::{CheckpointWriter, RecordRef, SampleIndex, UnitOutcome};
use crate::util::{hex, now_rfc3339, Shutdown};
use anyhow::Result;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Everything the workers of one model share.
pub(super) struct ModelShared {
    pub(super) settings: ModelSettings,
    /// Body fields that never change between requests, pre-serialized: `,"model":…` and so on.
    pub(super) body_sample: String,
    pub(super) body_greedy: String,
    pub(super) run_id: String,
    pub(super) client: Client,
    pub(super) limit: Arc<AdaptiveLimit>,
    pub(super) pace: Pace,
    pub(super) policy: RetryPolicy,
    pub(super) writer: CheckpointWriter,
    pub(super) counters: Arc<Counters>,
    pub(super) prepared: Arc<Vec<Prepared>>,
    pub(super) fatal: Mutex<Option<String>>,
    pub(super) stopped: AtomicBool,
    /// Attempts in a row that could not connect (see [`ModelShared::note_reach`]): to the model's
    /// endpoint, and to a search's reward endpoint (its own server, which may be down alone).
    unreached: [AtomicU32; 2],
    pub(super) shutdown: Shutdown,
    pub(super) quiet: bool,
    /// Set when `save_raw_responses = false`: responses are replaced by the answer this grader
    /// configuration extracts, and a hash.
    pub(super) strip: Option<crate::grade::GradeConfig>,
    pub(super) budget: Option<Budget>,
    /// `strategy = "mcts"`: each unit is a tree search.
    pub(super) search: Option<SearchShared>,
}

impl ModelShared {
    /// The most completion tokens `choices` choices can hold.
    fn completion_bound(&self, choices: usize) -> u64 {
        u64::from(self.settings.sampling.max_tokens.unwrap_or(0)) * choices as u64
    }

    /// Reserves a request's worst case; on refusal stops the model with the budget message.
    pub(super) fn reserve(&self, prep: &Prepared, slots: usize) -> Option<Option<Money>> {
        let Some(b) = &self.budget else {
            return Some(None);
        };
        let worst = worst_case(b, &self.settings, prep, slots);
        self.reserve_worst(worst, worst_case(b, &self.settings, prep, 1))
    }

    /// Reserves `worst` (`per_unit`: a unit's worst case, for the stop message); on refusal
    /// stops the model.
    pub(super) fn reserve_worst(&self, worst: Money, per_unit: Money) -> Option<Option<Money>> {
        let Some(b) = &self.budget else {
            return Some(None);
        };
        let hit = match b.reserve(worst) {
            Ok(()) => return Some(Some(worst)),
            Err(hit) => hit,
        };
        let left = self
            .counters
            .total
            .load(Ordering::SeqCst)
            .saturating_sub(self.counters.done.load(Ordering::SeqCst));
        self.fail(&b.stop_message(hit, (left, "units"), per_unit));
        None
    }

    /// Settles a sampling request's reservation (see [`ModelShared::settle_bounded`]); a reply's
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
    pub(super) fn settle_bounded(
        &self,
        worst: Option<Money>,
        bound: (u64, u64),
        reply: Result<Option<&crate::client::Usage>, &ApiError>,
    ) {
        self.settle_at(None, worst, bound, reply);
    }

    /// [`ModelShared::settle_bounded`] at `price` (None: the model's own), for a search's reward
    /// calls, which have a price of their own.
    pub(super) fn settle_at(
        &self,
        price: Option<&Price>,
        worst: Option<Money>,
        bound: (u64, u64),
        reply: Result<Option<&crate::client::Usage>, &ApiError>,
    ) {
        let (Some(b), Some(w)) = (&self.budget, worst) else {
            return;
        };
        let actual = match reply {
            Ok(usage) => price.unwrap_or(&b.price).cost_at_most(usage, bound),
            Err(e) if e.may_be_billed() => w,
            Err(_) => Money::from_integer(0),
        };
        b.settle(w, actual);
    }

    pub(super) fn fail(&self, reason: &dyn std::fmt::Display) {
        let mut f = self.fatal.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            let msg = format!(
                "model {} ({}) stopped: {reason}",
                self.settings.name, self.settings.model_id
            );
            if !self.quiet {
                // The progress reporter prints it between frames, so no bar is left half-drawn.
                *self.counters.stop.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(reason.to_string());
            }
            *f = Some(msg);
        }
        self.counters.failed.store(true, Ordering::SeqCst);
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Counts attempts in a row that could not connect; at [`unreachable_after`] of them the model
    /// stops, naming the URL, instead of retrying every unit against a server that is not there.
    pub(super) fn note_reach(&self, err: Option<&ApiError>, client: &Client) {
        let count = &self.unreached[usize::from(!std::ptr::eq(client, &self.client))];
        let err = match err {
            Some(e) if e.never_connected() => e,
            _ => return count.store(0, Ordering::SeqCst),
        };
        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
        if n < unreachable_after(self.settings.api.concurrency) {
            return;
        }
        let cause = super::ends::failure_cause(&err.to_string());
        let inner = cause.split_once(": ").map_or(cause.as_str(), |(_, m)| m);
        self.fail(&format!(
            "connection: cannot reach {}: {n} attempts in a row failed to connect ({inner})",
            client.shown_url()
        ));
    }

    pub(super) fn shutting_down(&self) -> bool {
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

/// Attempts in a row that fail to connect before a model stops: twice the requests in flight, so
/// one burst of refusals is enough, and at least 4, so a single refusal between answers is not.
pub(super) fn unreachable_after(concurrency: usize) -> u32 {
    u32::try_from(2 * concurrency).map_or(u32::MAX, |n| n.max(4))
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
            temperature: Some(if greedy { 0.0 } else { m.sampling.temperature }),
            top_p: Some(if greedy { 1.0 } else { m.sampling.top_p }),
            max_tokens: m.sampling.max_tokens,
            prompt_hash: &prep.prompt_hash,
            response: None,
            extracted: None,
            response_sha256: None,
            found_by: None,
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
            source: None,
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
        let (found, response_sha256) = match (self.strip, outcome) {
            (Some(cfg), Ok((resp, i))) => {
                let text = &resp.choices[i].content;
                let hash = hex(&Sha256::digest(text.as_bytes()));
                (Some(crate::grade::extraction(text, None, cfg)), Some(hash))
            }
            _ => (None, None),
        };
        let mut r = self.line(prep, (slot, seed), timing, &finished_at);
        r.extracted = found.as_ref().and_then(|f| f.answer.as_deref());
        r.found_by = found.as_ref().map(|f| f.found_by);
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
pub(super) fn fixed_body_fields(m: &ModelSettings, greedy: bool) -> String {
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
async fn run_item(ctx: Arc<ModelShared>, item: WorkItem, _permit: Permit) {
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
        ctx.note_reach(reply.as_ref().err(), &ctx.client);
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

impl ModelShared {
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

/// Samples every missing unit of one model that is sampled (not searched).
pub(super) async fn sample_model(
    ctx: &Arc<ModelShared>,
    done: DoneSet,
    grace: Duration,
) -> ModelEnd {
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
pub(super) async fn finish_model(
    ctx: &Arc<ModelShared>,
    mut tasks: tokio::task::JoinSet<()>,
    grace: Duration,
) -> ModelEnd {
    crate::util::tasks::settle(&mut tasks, &ctx.shutdown, Some(grace)).await;
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

/// The shared state of one model's workers.
pub(super) fn model_ctx(
    job: &SamplingJob,
    m: &ModelSettings,
    path: &Path,
    shutdown: &Shutdown,
) -> Result<ModelShared> {
    let key = job.keys.get(&m.name).cloned().flatten();
    let client = (m.api.chat_client(key)).map_err(|e| anyhow::anyhow!("model {}: {e}", m.name))?;
    Ok(ModelShared {
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
        unreached: [AtomicU32::new(0), AtomicU32::new(0)],
        shutdown: shutdown.clone(),
        quiet: job.quiet,
        strip: (!job.settings.evaluation.save_raw_responses)
            .then(|| job.settings.evaluation.grade_config()),
        budget: None,
        search: None,
    })
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
