//! Tree-search units of `strategy = "mcts"` models: one search per (problem, sample index), run by
//! the engine on a blocking thread with live or replayed model calls and the code sandbox; one
//! checkpoint line and one tree file per finished search.

use super::cache::{request_key, Cached};
use super::{ModelEnd, ModelShared, SearchShared};
use crate::client::retry::Next;
use crate::client::{ApiError, ChatResponse, Client, ErrorClass, Usage};
use crate::config::{Prefix, RewardMode, SearchSettings, JUDGE_MAX_TOKENS};
use crate::cost::Money;
use crate::rundir::record::{RecordRef, SampleIndex, SearchRecord, UnitOutcome};
use crate::rundir::RunDir;
use crate::search::requests::{
    judge_body, parse_pooling, parse_score, policy_body, pooling_body, prefix_text,
};
use crate::search::sandbox::{Limits, Sandbox, Status};
use crate::search::{
    CallFailed, Exec, Executor, Expand, Policy, Proposal, Reward, Score, SearchInput, SearchOutcome,
};
use crate::util::{now_rfc3339, write_atomic};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;

/// The cache's name for a search: `<problem id>#<search index>` (the last `#` splits it).
pub(super) fn unit_name(problem_id: &str, index: u32) -> String {
    format!("{problem_id}#{index}")
}

/// Runs every missing search of one model, `concurrency` at a time.
pub(super) async fn search_model(
    ctx: &Arc<ModelShared>,
    done: super::DoneSet,
    grace: Duration,
) -> ModelEnd {
    let mut tasks = tokio::task::JoinSet::new();
    let sampling = ctx.settings.sampling.clone();
    let units = super::missing_work(ctx.prepared.len(), &sampling, &done)
        .flat_map(|w| w.slots.into_iter().map(move |s| (w.problem, s)));
    for (problem, slot) in units {
        let SampleIndex::Sample(index) = slot else {
            continue;
        };
        if ctx.stopped.load(Ordering::SeqCst) || ctx.shutting_down() {
            break;
        }
        let permit = tokio::select! {
            p = ctx.limit.acquire() => p,
            _ = ctx.shutdown.triggered() => break,
        };
        let (c, handle) = (ctx.clone(), Handle::current());
        tasks.spawn_blocking(move || {
            let _permit = permit;
            run_search(&c, &handle, problem, index);
        });
        while tasks.try_join_next().is_some() {}
    }
    super::worker::finish_model(ctx, tasks, grace).await
}

/// One search, start to end: replayed calls first (a resumed search), then live ones.
fn run_search(ctx: &ModelShared, handle: &Handle, problem: usize, index: u32) {
    let Some(sc) = &ctx.search else { return };
    let input = &sc.inputs[problem];
    let seed = super::derive_seed(ctx.settings.sampling.seed, &input.problem_id, index);
    let (started_at, started) = (now_rfc3339(), Instant::now());
    let calls = Calls {
        ctx,
        sc,
        handle,
        unit: unit_name(&input.problem_id, index),
        state: RefCell::new(CallState::default()),
    };
    let mut policy = PolicyCalls(&calls);
    let mut reward = RewardCalls(&calls);
    let mut exec = SandboxExec {
        sandbox: &sc.sandbox,
        limits: Limits {
            timeout: sc.settings.exec_timeout,
            ..Limits::default()
        },
    };
    let reward: Option<&mut dyn Reward> = sc.reward.as_ref().map(|_| &mut reward as _);
    let outcome = crate::search::search(input, &sc.settings, seed, &mut policy, reward, &mut exec);
    let state = calls.state.into_inner();
    if state.interrupted {
        // Nothing is recorded: the unit stays missing and resumes by replaying the cache.
        return;
    }
    let unit = Finished {
        ctx,
        sc,
        problem,
        index,
        seed,
        started_at: &started_at,
        latency_ms: started.elapsed().as_millis() as u64,
    };
    let written = match &state.failure {
        Some(err) => unit.write_failure(err, &state),
        None => unit.write_success(&outcome, &state),
    };
    if let Err(e) = written {
        ctx.fail(&format!("disk error: {e}"));
    }
    sc.cache.forget(&calls.unit);
    ctx.counters.done.fetch_add(1, Ordering::SeqCst);
}

/// What the calls of one search add up to.
#[derive(Default)]
struct CallState {
    usage: Option<Usage>,
    served_model: Option<String>,
    attempts: u32,
    replayed: u64,
    /// A call that failed for good (after retries, or not retryable).
    failure: Option<ApiError>,
    /// Ctrl-C or SIGTERM, or the model stopped: the search is dropped unrecorded.
    interrupted: bool,
}

/// A search's access to the models: the cache first, then the live server with the sampling
/// rules (pacing, retries, adaptive concurrency, fatal errors, shutdown).
struct Calls<'a> {
    ctx: &'a ModelShared,
    sc: &'a SearchShared,
    handle: &'a Handle,
    unit: String,
    state: RefCell<CallState>,
}

/// Which endpoint a call goes to.
#[derive(Clone, Copy)]
enum Endpoint {
    Policy,
    /// A policy call that continues an assistant message (may be refused: then restated).
    Continued,
    Judge,
    Pooling,
}

impl Calls<'_> {
    fn client(&self, to: Endpoint) -> &Client {
        match (to, &self.sc.reward) {
            (Endpoint::Policy | Endpoint::Continued, _) | (_, None) => &self.ctx.client,
            (_, Some(r)) => r,
        }
    }

    /// The reply to `body`, replayed from the cache or paid for (and then cached).
    fn call(&self, to: Endpoint, body: Vec<u8>, completion: u64) -> Result<Cached, CallFailed> {
        let client = self.client(to);
        let key = request_key(client.url(), &body);
        let reply = match self.sc.cache.get(&self.unit, &key) {
            Some(hit) => {
                self.state.borrow_mut().replayed += 1;
                hit
            }
            None => {
                let reply = self.handle.block_on(self.live(to, body, completion))?;
                if let Err(e) = self.sc.cache.put(&self.unit, &key, &reply) {
                    self.ctx.fail(&format!("disk error: {e}"));
                }
                reply
            }
        };
        let mut st = self.state.borrow_mut();
        add_usage(&mut st.usage, reply.usage.as_ref());
        if matches!(to, Endpoint::Policy | Endpoint::Continued) && reply.served_model.is_some() {
            st.served_model.clone_from(&reply.served_model);
        }
        Ok(reply)
    }

    /// One live request; `completion` bounds its reply for tpm pacing. Until some call has had a
    /// reply, calls go one at a time.
    async fn live(
        &self,
        to: Endpoint,
        body: Vec<u8>,
        completion: u64,
    ) -> Result<Cached, CallFailed> {
        let gate = usize::from(!matches!(to, Endpoint::Policy | Endpoint::Continued));
        let mut first = self.sc.first[gate].lock().await;
        if *first {
            drop(first);
            return self.retried(to, body, completion).await;
        }
        let reply = self.retried(to, body, completion).await;
        *first = reply.is_ok();
        reply
    }

    /// One request with the retry policy.
    async fn retried(
        &self,
        to: Endpoint,
        body: Vec<u8>,
        completion: u64,
    ) -> Result<Cached, CallFailed> {
        let ctx = self.ctx;
        let estimate = body.len() as u64 / 4 + completion;
        let bound = (crate::plan::prompt_bound(body.len()), completion);
        let mut tries = ctx.policy.tries(&ctx.shutdown);
        while tries.start().is_some() {
            if ctx.stopped.load(Ordering::SeqCst) {
                break;
            }
            let Some(reserved) = self.reserve(to, bound.0, completion) else {
                break;
            };
            self.state.borrow_mut().attempts += 1;
            if !ctx.pace.is_unlimited() {
                ctx.pace.wait(estimate).await;
            }
            ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
            let reply = tokio::select! {
                r = self.send(to, body.clone()) => r,
                _ = after_grace(ctx) => {
                    // Dropped in flight: it may still be generated and billed.
                    ctx.settle_at(self.price(to), reserved, bound, Ok(None));
                    break;
                }
            };
            let usage = reply.as_ref().map(|r| r.usage.as_ref());
            ctx.settle_at(self.price(to), reserved, bound, usage);
            ctx.note_reach(reply.as_ref().err(), self.client(to));
            let err = match reply {
                Ok(r) => {
                    ctx.limit.on_success();
                    let t = r.usage.as_ref().map_or(0, Usage::total);
                    ctx.counters.tokens.fetch_add(t, Ordering::Relaxed);
                    return Ok(r);
                }
                Err(e) => e,
            };
            if err.class == ErrorClass::RateLimited {
                ctx.limit.on_rate_limited();
            }
            if matches!(to, Endpoint::Continued) && err.class == ErrorClass::BadRequest {
                self.refused_continuation();
                return Err(CallFailed(RESTATE.into()));
            }
            if !err.class.retryable() {
                ctx.fail(&self.who(to, &err));
            }
            match tries.failed(err).await {
                Next::Retry => {
                    ctx.counters.retries.fetch_add(1, Ordering::Relaxed);
                }
                Next::Stopped => break,
                Next::GaveUp { err, .. } => {
                    let msg = self.who(to, &err);
                    self.state.borrow_mut().failure = Some(err);
                    return Err(CallFailed(msg));
                }
            }
        }
        self.state.borrow_mut().interrupted = true;
        Err(CallFailed("interrupted".into()))
    }

    /// The price of a call to `to` when it is not the model's own: the reward model's.
    fn price(&self, to: Endpoint) -> Option<&crate::cost::Price> {
        match to {
            Endpoint::Policy | Endpoint::Continued => None,
            Endpoint::Judge | Endpoint::Pooling => self.sc.settings.reward_price.as_ref(),
        }
    }

    /// Reserves a call's worst case (at its endpoint's price) on the model's and the run's
    /// budgets (`max_cost`); None when the call could pass one (the model is then stopped with
    /// the budget message). A reward model left unpriced (`reward_allow_unpriced`) reserves
    /// nothing.
    fn reserve(&self, to: Endpoint, prompt: u64, completion: u64) -> Option<Option<Money>> {
        let Some(b) = &self.ctx.budget else {
            return Some(None);
        };
        let reward = !matches!(to, Endpoint::Policy | Endpoint::Continued);
        let price = match self.price(to) {
            Some(p) => p,
            None if reward => return Some(None),
            None => &b.price,
        };
        let worst = price.worst(prompt, completion);
        let calls = self.sc.settings.call_budget().1;
        let per_search = worst * Money::from_integer(u128::from(calls));
        self.ctx.reserve_worst(worst, per_search)
    }

    async fn send(&self, to: Endpoint, body: Vec<u8>) -> Result<Cached, ApiError> {
        let client = self.client(to);
        if matches!(to, Endpoint::Pooling) {
            let value = client.post_json(body).await?;
            let usage = Usage::of_reply(&value);
            return Ok(Cached {
                value: Some(value),
                usage,
                ..Cached::default()
            });
        }
        let resp: ChatResponse = client.chat_bytes(body).await?;
        Ok(Cached {
            texts: resp.choices.into_iter().map(|c| c.content).collect(),
            value: None,
            usage: resp.usage,
            served_model: resp.served_model,
        })
    }

    /// The server cannot continue an assistant message: restate prefixes from now on, and say so
    /// once.
    fn refused_continuation(&self) {
        let ctx = self.ctx;
        if !self.sc.restate.swap(true, Ordering::SeqCst) && !ctx.quiet {
            let note = format!(
                "note: model {}: the server refused to continue an assistant message (HTTP 400); the steps so far are restated in the user turn from now on (set prefix = \"restate\" to skip the attempt)",
                ctx.settings.name
            );
            *ctx.counters.note.lock().unwrap_or_else(|p| p.into_inner()) = Some(note);
        }
    }

    /// An error named by the model it came from.
    fn who(&self, to: Endpoint, err: &ApiError) -> String {
        match (to, &self.sc.settings.reward_model_id) {
            (Endpoint::Policy | Endpoint::Continued, _) | (_, None) => err.to_string(),
            (_, Some(id)) => format!("reward model {id}: {err}"),
        }
    }
}

/// Resolves once shutdown was asked for and the grace period has passed.
async fn after_grace(ctx: &ModelShared) {
    ctx.shutdown.triggered().await;
    tokio::time::sleep(ctx.settings.api.shutdown_grace).await;
}

fn add_usage(sum: &mut Option<Usage>, u: Option<&Usage>) {
    let Some(u) = u else { return };
    let s = sum.get_or_insert_with(Usage::default);
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    s.prompt_tokens = add(s.prompt_tokens, u.prompt_tokens);
    s.completion_tokens = add(s.completion_tokens, u.completion_tokens);
}

/// What a refused continuation returns, so the expansion is asked again, restated.
const RESTATE: &str = "restate";

struct PolicyCalls<'a>(&'a Calls<'a>);

impl PolicyCalls<'_> {
    /// The policy request of `req` with the prefix sent as `how`.
    fn body(&self, req: &Expand, how: Prefix) -> Vec<u8> {
        let c = self.0;
        let m = &c.ctx.settings;
        let s = SearchSettings {
            prefix: how,
            ..c.sc.settings.clone()
        };
        let (input, prefix) = (req.input, req.prefix);
        let top_p = m.sampling.top_p;
        let body = policy_body(&m.model_id, &s, top_p, input, prefix, req.n, req.seed);
        if !c.ctx.client.streams() {
            return body;
        }
        // `[api] stream = true`: the policy's steps arrive as server-sent events.
        let mut v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        crate::client::ask_to_stream(&mut v);
        serde_json::to_vec(&v).unwrap_or(body)
    }
}

impl Policy for PolicyCalls<'_> {
    fn expand(&mut self, req: &Expand) -> Result<Proposal, CallFailed> {
        let c = self.0;
        let s = &c.sc.settings;
        let completion = u64::from(s.policy_max_tokens) * u64::from(req.n);
        let how = if c.sc.restate.load(Ordering::SeqCst) {
            Prefix::Restate
        } else {
            s.prefix
        };
        let reply = if how == Prefix::Continue && !req.prefix.is_empty() {
            let restated = || self.body(req, Prefix::Restate);
            match c.call(Endpoint::Continued, self.body(req, how), completion) {
                Err(CallFailed(m)) if m == RESTATE => {
                    c.call(Endpoint::Policy, restated(), completion)?
                }
                other => other?,
            }
        } else {
            c.call(Endpoint::Policy, self.body(req, how), completion)?
        };
        // Some servers (llama.cpp) return a continued message with its prefix: keep the new step.
        let done = prefix_text(req.prefix);
        let steps = reply
            .texts
            .into_iter()
            .map(|t| match t.strip_prefix(done.as_str()) {
                Some(rest) if !done.is_empty() => rest.to_string(),
                _ => t,
            })
            .collect();
        Ok(Proposal {
            steps,
            tokens: reply.usage.as_ref().and_then(|u| {
                u.completion_tokens
                    .map(|t| t + u.prompt_tokens.unwrap_or(0))
            }),
        })
    }
}

struct RewardCalls<'a>(&'a Calls<'a>);

impl Reward for RewardCalls<'_> {
    fn score(&mut self, input: &SearchInput, steps: &[String]) -> Result<Score, CallFailed> {
        let c = self.0;
        let id = c.sc.settings.reward_model_id.as_deref().unwrap_or_default();
        match c.sc.settings.reward_mode {
            RewardMode::Pooling => {
                let reply = c.call(Endpoint::Pooling, pooling_body(id, input, steps), 0)?;
                Ok(parse_pooling(&reply.value.unwrap_or_default()))
            }
            _ => {
                let body = judge_body(id, input, steps);
                let reply = c.call(Endpoint::Judge, body, u64::from(JUDGE_MAX_TOKENS))?;
                Ok(parse_score(reply.texts.first().map_or("", String::as_str)))
            }
        }
    }
}

/// Runs a path's cumulative code in the sandbox.
struct SandboxExec<'a> {
    sandbox: &'a Sandbox,
    limits: Limits,
}

impl Executor for SandboxExec<'_> {
    fn run(&mut self, code: &str) -> Exec {
        match self.sandbox.run_python(code, &self.limits) {
            Ok(o) if o.success() => Exec::Ok { stdout: o.stdout },
            Ok(o) if o.status == Status::TimedOut => Exec::TimedOut,
            Ok(o) => Exec::Failed {
                stderr: last_lines(&o.stderr, &o.status),
            },
            Err(e) => Exec::Failed {
                stderr: e.to_string(),
            },
        }
    }
}

/// The end of a failed program's stderr (the exception), at most 500 characters.
fn last_lines(stderr: &str, status: &Status) -> String {
    let lines: Vec<&str> = stderr.lines().rev().take(3).collect();
    let text: String = lines.into_iter().rev().collect::<Vec<_>>().join("\n");
    let text = if text.trim().is_empty() {
        format!("{status:?}")
    } else {
        text
    };
    text.chars().take(500).collect()
}

/// A finished search, ready to be written.
struct Finished<'a> {
    ctx: &'a ModelShared,
    sc: &'a SearchShared,
    problem: usize,
    index: u32,
    seed: u64,
    started_at: &'a str,
    latency_ms: u64,
}

/// The tree file: the search's identity, outcome and every node.
#[derive(serde::Serialize)]
struct TreeFile<'a> {
    problem_id: &'a str,
    search_index: u32,
    seed: u64,
    answer: Option<&'a str>,
    answer_node: Option<usize>,
    stats: &'a crate::rundir::record::SearchStats,
    nodes: &'a [crate::search::Node],
}

impl Finished<'_> {
    fn record<'b>(&'b self, state: &'b CallState, finished_at: &'b str) -> RecordRef<'b> {
        let ctx = self.ctx;
        let unit = super::Unit {
            settings: &ctx.settings,
            run_id: &ctx.run_id,
            strip: ctx.strip.as_ref(),
        };
        let timing = super::Attempted {
            started_at: self.started_at,
            latency_ms: self.latency_ms,
            attempts: state.attempts.max(1),
            billable_failures: 0,
            shared_by: 1,
        };
        let slot = (SampleIndex::Sample(self.index), self.seed);
        let mut r = unit.line(&ctx.prepared[self.problem], slot, &timing, finished_at);
        r.temperature = Some(self.sc.settings.policy_temperature);
        r.max_tokens = Some(self.sc.settings.policy_max_tokens);
        r.served_model = state.served_model.as_deref();
        r.usage = state.usage.clone();
        r
    }

    fn write_failure(&self, err: &ApiError, state: &CallState) -> anyhow::Result<()> {
        let finished_at = now_rfc3339();
        let mut r = self.record(state, &finished_at);
        let msg = err.to_string();
        r.error_class = Some(err.class.as_str());
        r.error = Some(&msg);
        self.ctx.counters.errors.fetch_add(1, Ordering::SeqCst);
        Ok(self.ctx.writer.append(&r)?)
    }

    /// Writes the tree (atomically) and then the checkpoint line that points to it.
    fn write_success(&self, o: &SearchOutcome, state: &CallState) -> anyhow::Result<()> {
        let m = &self.ctx.settings;
        let prep = &self.ctx.prepared[self.problem];
        let tree = RunDir::tree_relative(&m.name, &prep.id, self.index);
        let mut stats = o.stats.clone();
        stats.replayed_calls = state.replayed;
        let file = TreeFile {
            problem_id: &prep.id,
            search_index: self.index,
            seed: self.seed,
            answer: o.answer.as_deref(),
            answer_node: o.answer_node,
            // Without `replayed_calls`: a resumed search writes the same tree as an unbroken one.
            stats: &o.stats,
            nodes: &o.tree.nodes,
        };
        write_atomic(
            &self.sc.run_dir.resolve(&tree),
            &serde_json::to_vec_pretty(&file)?,
        )?;
        let tree = tree.to_string_lossy();
        let mut search = SearchRecord {
            answer: o.answer.as_deref(),
            path: o.path.iter().map(String::as_str).collect(),
            tree: &*tree,
            stats,
        };
        let response = o.path.join("\n");
        let finished_at = now_rfc3339();
        let mut r = self.record(state, &finished_at);
        // `save_raw_responses = false`: the line keeps the extracted answer and a hash, as for
        // samples (the tree file still holds every step: it is the search's own record).
        let stripped = self.ctx.strip.as_ref().map(|cfg| {
            let hash = crate::util::hex(&Sha256::digest(response.as_bytes()));
            (crate::grade::extraction(&response, None, cfg), hash)
        });
        match &stripped {
            Some((found, hash)) => {
                r.extracted = found.answer.as_deref();
                r.found_by = Some(found.found_by);
                r.response_sha256 = Some(hash);
                search.path.clear();
            }
            None => r.response = Some(&response),
        }
        r.finish_reason = Some("stop");
        r.outcome = UnitOutcome::Ok;
        r.search = Some(search);
        Ok(self.ctx.writer.append(&r)?)
    }
}
