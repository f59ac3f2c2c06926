//! One pass of requests about stored samples, shared by the LLM judge and the verifier: the
//! client, the one retry policy, what is appended as replies arrive, the counts of what happened,
//! and what stops the pass (a refused key or model, every request failing).

use crate::client::retry::{Next, RetryPolicy};
use crate::client::{ApiError, Client, ErrorClass};
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
    pub shutdown: Shutdown,
    pub ctx: C,
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
            shutdown: shutdown.clone(),
            ctx,
        }
    }

    pub fn count(&self, t: Tally) {
        self.stats[t as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a refused request stopped the pass.
    pub fn stopped(&self) -> bool {
        lock(&self.fatal).is_some()
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

    /// One request through the retry policy: its reply, or None when it failed for good (counted
    /// and remembered; a non-retryable error stops the pass) or the pass is stopping.
    pub async fn request<T, Fut>(&self, send: impl Fn() -> Fut) -> Option<T>
    where
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let mut tries = self.policy.tries(&self.shutdown);
        loop {
            if tries.start().is_none() || self.stopped() {
                return None;
            }
            let err = match send().await {
                Ok(v) => return Some(v),
                Err(e) => e,
            };
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
