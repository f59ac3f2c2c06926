//! The one retry policy and its one loop: exponential backoff with jitter, honouring the server's
//! Retry-After, cut short by a [`Shutdown`]. The runner and the judge both retry through [`Tries`].

use crate::client::{ApiError, ErrorClass};
use crate::util::Shutdown;
use std::time::Duration;

/// What to do after a failed try.
#[derive(Debug)]
pub enum Next {
    /// The pause is over: try again.
    Retry,
    /// The last error, after `attempts` tries (not retryable, or the retries ran out).
    GaveUp { err: ApiError, attempts: u32 },
    /// Shutdown fired while waiting.
    Stopped,
}

/// One request's tries under a policy: callers loop `while let Some(n) = tries.start()`, and on an
/// error ask [`Tries::failed`] whether (after the pause) to go on.
pub struct Tries<'a> {
    policy: &'a RetryPolicy,
    shutdown: &'a Shutdown,
    attempts: u32,
}

impl Tries<'_> {
    /// The number of the try about to start, or None once shutdown has fired.
    pub fn start(&mut self) -> Option<u32> {
        if self.shutdown.is_triggered() {
            return None;
        }
        self.attempts += 1;
        Some(self.attempts)
    }

    /// After a failed try: gives up, or waits out the backoff (cut short by shutdown).
    pub async fn failed(&mut self, err: ApiError) -> Next {
        if !self.policy.should_retry(&err, self.attempts) {
            return Next::GaveUp {
                err,
                attempts: self.attempts,
            };
        }
        tokio::select! {
            _ = tokio::time::sleep(self.policy.delay(&err, self.attempts)) => Next::Retry,
            _ = self.shutdown.triggered() => Next::Stopped,
        }
    }
}

/// How failed requests are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub max: Duration,
    /// The most of a server's Retry-After that is honoured (`[api] retry_after_max`).
    pub retry_after_max: Duration,
}

/// The default `retry_after_max`: two minutes.
pub const DEFAULT_RETRY_AFTER_MAX: Duration = Duration::from_secs(120);

impl RetryPolicy {
    /// Whether to try again after `attempts` tries ended in `err`.
    pub fn should_retry(&self, err: &ApiError, attempts: u32) -> bool {
        err.class.retryable() && attempts <= self.max_retries
    }

    /// The pause before the next try: the server's Retry-After (at most `retry_after_max`) when
    /// it gave one, else base·2^(attempt−1) capped at max, with "equal jitter" (half fixed, half random).
    pub fn delay(&self, err: &ApiError, attempts: u32) -> Duration {
        if err.class == ErrorClass::RateLimited {
            if let Some(ra) = err.retry_after {
                return ra.min(self.retry_after_max);
            }
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempts.saturating_sub(1).min(20));
        let capped = exp.min(self.max);
        let half = capped / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// The tries of one request.
    pub fn tries<'a>(&'a self, shutdown: &'a Shutdown) -> Tries<'a> {
        Tries {
            policy: self,
            shutdown,
            attempts: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(class: ErrorClass, retry_after: Option<Duration>) -> ApiError {
        ApiError {
            class,
            status: None,
            message: String::new(),
            retry_after,
        }
    }

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        let p = RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(100),
            max: Duration::from_millis(350),
            retry_after_max: Duration::from_secs(60),
        };
        let e = err(ErrorClass::Server, None);
        for (attempt, lo, hi) in [(1, 50, 100), (2, 100, 200), (3, 175, 350), (9, 175, 350)] {
            let d = p.delay(&e, attempt).as_millis();
            assert!((lo..=hi).contains(&d), "attempt {attempt}: {d}");
        }
        let ra = err(ErrorClass::RateLimited, Some(Duration::from_secs(7)));
        assert_eq!(p.delay(&ra, 1), Duration::from_secs(7));
        // A server asking for a day (or a date in 2099) waits retry_after_max at most.
        for header in ["100000", "Thu, 01 Jan 2099 00:00:00 GMT"] {
            let asked = crate::client::parse_retry_after(header);
            let huge = err(ErrorClass::RateLimited, asked);
            assert_eq!(p.delay(&huge, 1), Duration::from_secs(60), "{header}");
        }
        assert!(p.should_retry(&e, 3));
        assert!(!p.should_retry(&e, 4));
        assert!(!p.should_retry(&err(ErrorClass::Auth, None), 1));
    }

    #[tokio::test(start_paused = true)]
    async fn tries_go_on_until_the_policy_gives_up_or_shutdown_fires() {
        let p = RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(10),
            max: Duration::from_millis(10),
            retry_after_max: DEFAULT_RETRY_AFTER_MAX,
        };
        let shutdown = Shutdown::new();
        let mut tries = p.tries(&shutdown);
        assert_eq!(tries.start(), Some(1));
        assert!(matches!(
            tries.failed(err(ErrorClass::Server, None)).await,
            Next::Retry
        ));
        assert_eq!(tries.start(), Some(2));
        assert!(matches!(
            tries.failed(err(ErrorClass::Server, None)).await,
            Next::Retry
        ));
        assert_eq!(tries.start(), Some(3));
        let last = tries.failed(err(ErrorClass::Server, None)).await;
        assert!(matches!(last, Next::GaveUp { attempts: 3, .. }));
        let mut auth = p.tries(&shutdown);
        auth.start();
        let refused = auth.failed(err(ErrorClass::Auth, None)).await;
        assert!(matches!(refused, Next::GaveUp { attempts: 1, .. }));
        shutdown.trigger();
        assert_eq!(p.tries(&shutdown).start(), None);
    }
}
