//! One pass of requests about stored samples, shared by the LLM judge and the verifier: the
//! client, the one retry policy, the budget each attempt reserves before it is sent and what it
//! cost, what is appended as replies arrive, the counts of what happened, and what stops the pass
//! (a refused key or model, a budget reached, every request failing).

use crate::client::retry::{Next, RetryPolicy};
use crate::client::{ApiError, ChatResponse, Client, ErrorClass, Usage};
use crate::cost::{Budget, Money, Spend};
use crate::rundir::record::CheckpointWriter;
use crate::util::Shutdown;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What one reply came to, as a pass counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// A readable reply, stored.
    Done = 0,
    /// A reply without a readable answer, stored as such.
    Unreadable = 1,
    /// A request that failed after its retries (or a reply that could not be stored).
    Failed = 2,
}

/// Why a pass ended without doing its work.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("{role} model {model} {what}: {message}")]
    Refused {
        role: &'static str,
        model: String,
        what: &'static str,
        message: String,
    },
    #[error("{role} model {model} stopped: {message}")]
    Budget {
        role: &'static str,
        model: String,
        message: String,
    },
    #[error("{role} model {model} failed every request ({failed} after retries){last}")]
    AllFailed {
        role: &'static str,
        model: String,
        failed: u64,
        last: String,
    },
}

/// What every request of one pass shares; `ctx` is what the caller's requests need besides.
pub struct Pass<C> {
    pub writer: CheckpointWriter,
    pub client: Client,
    policy: RetryPolicy,
    stats: [AtomicU64; 3],
    /// A non-retryable error (a rejected key, an unknown model): the pass stops.
    fatal: Mutex<Option<ApiError>>,
    /// The last error a request gave up on, for the message when every request failed.
    last_error: Mutex<Option<ApiError>>,
    /// What each attempt reserves before it is sent (None: nothing caps these calls).
    budget: Option<Budget>,
    /// Why the budget stopped the pass.
    budget_stop: Mutex<Option<String>>,
    /// The jobs the pass was given, for the stop message's count of what is left.
    jobs: AtomicU64,
    pub shutdown: Shutdown,
    pub ctx: C,
}

/// A reply that may say what it used.
pub trait Billed {
    fn usage(&self) -> Option<Usage>;
}

impl Billed for ChatResponse {
    fn usage(&self) -> Option<Usage> {
        self.usage.clone()
    }
}

impl Billed for serde_json::Value {
    /// A `/pooling` reply's `usage`, when it has one that reads as usage.
    fn usage(&self) -> Option<Usage> {
        Usage::of_reply(self)
    }
}

/// One call's worst case: its prompt and completion token bounds, and how many calls its job
/// makes (the stop message's cost of a job left).
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub bound: (u64, u64),
    pub per_job: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<C: Send + Sync + 'static> Pass<C> {
    pub fn new(
        writer: CheckpointWriter,
        client: Client,
        policy: RetryPolicy,
        shutdown: &Shutdown,
        ctx: C,
    ) -> Pass<C> {
        Pass {
            writer,
            client,
            policy,
            stats: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            fatal: Mutex::new(None),
            last_error: Mutex::new(None),
            budget: None,
            budget_stop: Mutex::new(None),
            jobs: AtomicU64::new(0),
            shutdown: shutdown.clone(),
            ctx,
        }
    }

    /// The pass with `budget` reserved before each attempt (None: no limit applies).
    pub fn with_budget(mut self, budget: Option<Budget>) -> Pass<C> {
        self.budget = budget.filter(Budget::capped);
        self
    }

    pub fn count(&self, t: Tally) {
        self.stats[t as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a refused request or the budget stopped the pass.
    pub fn stopped(&self) -> bool {
        lock(&self.fatal).is_some() || lock(&self.budget_stop).is_some()
    }

    /// Runs `work` on every job (at most `concurrency` at once) on a runtime of its own; after a
    /// stop, requests in flight get `grace` (None: they finish).
    pub fn run<J, F, Fut>(
        self: &Arc<Self>,
        jobs: Vec<J>,
        concurrency: usize,
        grace: Option<Duration>,
        work: F,
    ) -> std::io::Result<()>
    where
        F: Fn(Arc<Self>, J) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.jobs.store(jobs.len() as u64, Ordering::Relaxed);
        let rt = crate::util::tasks::network_runtime()?;
        let stopped = || self.stopped();
        let each = |job| work(self.clone(), job);
        rt.block_on(crate::util::tasks::run_bounded(
            jobs,
            concurrency,
            &self.shutdown,
            grace,
            stopped,
            each,
        ));
        Ok(())
    }

    /// One request through the retry policy, each attempt reserving `call`'s worst case first
    /// and adding what it used to `spend`: its reply, or None when it failed for good (counted
    /// and remembered; a non-retryable error stops the pass), the budget refused it (the pass
    /// stops) or the pass is stopping.
    pub async fn request<T, Fut>(
        &self,
        call: Call,
        spend: &mut Spend,
        send: impl Fn() -> Fut,
    ) -> Option<T>
    where
        T: Billed,
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let mut tries = self.policy.tries(&self.shutdown);
        loop {
            if tries.start().is_none() || self.stopped() {
                return None;
            }
            let reserved = self.reserve(call)?;
            let err = match send().await {
                Ok(v) => {
                    let usage = v.usage();
                    self.settle(reserved, call, Some(usage.as_ref()));
                    spend.add_reply(usage.as_ref(), call.bound);
                    return Some(v);
                }
                Err(e) => e,
            };
            // A failure the server may have billed costs its worst case; one it cannot, nothing.
            let billed = err.may_be_billed();
            if billed {
                spend.add_failure(call.bound);
            }
            self.settle(reserved, call, billed.then_some(None));
            match tries.failed(err).await {
                Next::Retry => {}
                Next::Stopped => return None,
                Next::GaveUp { err, .. } => {
                    self.count(Tally::Failed);
                    *lock(&self.last_error) = Some(err.clone());
                    if !err.class.retryable() {
                        lock(&self.fatal).get_or_insert(err);
                    }
                    return None;
                }
            }
        }
    }

    /// Reserves `call`'s worst case: Some(the reservation, None without a budget), or None
    /// when it could pass a limit (the pass then stops with the budget's message).
    fn reserve(&self, call: Call) -> Option<Option<Money>> {
        let Some(b) = &self.budget else {
            return Some(None);
        };
        let worst = b.price.worst(call.bound.0, call.bound.1);
        let hit = match b.reserve(worst) {
            Ok(()) => return Some(Some(worst)),
            Err(hit) => hit,
        };
        let done: u64 = self.stats.iter().map(|s| s.load(Ordering::Relaxed)).sum();
        let left = self.jobs.load(Ordering::Relaxed).saturating_sub(done);
        let per_job = worst * Money::from_integer(u128::from(call.per_job.max(1)));
        let message = b.stop_message(hit, (left, "samples"), per_job);
        lock(&self.budget_stop).get_or_insert(message);
        None
    }

    /// Settles a reservation: a reply (`Some(usage)`) costs its usage, a count it left out at
    /// its bound; a failure the server may have billed (`Some(None)`) its worst case; None,
    /// nothing.
    fn settle(&self, reserved: Option<Money>, call: Call, reply: Option<Option<&Usage>>) {
        let (Some(b), Some(worst)) = (&self.budget, reserved) else {
            return;
        };
        let actual = match reply {
            Some(usage) => b.price.cost_at_most(usage, call.bound),
            None => Money::from_integer(0),
        };
        b.settle(worst, actual);
    }

    /// The pass's counts (done, unreadable, failed), or why it did nothing: `role` (`judge`,
    /// `verifier`) and `model` name the model in the message.
    pub fn end(&self, role: &'static str, model: &str) -> Result<[u64; 3], PassError> {
        if let Some(e) = lock(&self.fatal).clone() {
            let what = if e.class == ErrorClass::Auth {
                "rejected the key"
            } else {
                "refused the request"
            };
            return Err(PassError::Refused {
                role,
                model: model.to_string(),
                what,
                message: crate::util::printable(&e.to_string()).into_owned(),
            });
        }
        if let Some(message) = lock(&self.budget_stop).clone() {
            return Err(PassError::Budget {
                role,
                model: model.to_string(),
                message,
            });
        }
        let counts = [0, 1, 2].map(|i| self.stats[i].load(Ordering::Relaxed));
        if counts[2] > 0 && counts[0] + counts[1] == 0 {
            // Not one reply: the pass did not run, so it must not look successful.
            let last = lock(&self.last_error)
                .clone()
                .map(|e| format!("; last error: {}", crate::util::printable(&e.to_string())))
                .unwrap_or_default();
            return Err(PassError::AllFailed {
                role,
                model: model.to_string(),
                failed: counts[2],
                last,
            });
        }
        Ok(counts)
    }
}
