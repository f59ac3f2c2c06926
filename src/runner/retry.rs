//! The retry policy: exponential backoff with jitter, honouring the server's Retry-After.

use crate::client::{ApiError, ErrorClass};
use std::time::Duration;

/// How failed requests are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub max: Duration,
}

impl RetryPolicy {
    /// Whether to try again after `attempts` tries ended in `err`.
    pub fn should_retry(&self, err: &ApiError, attempts: u32) -> bool {
        err.class.retryable() && attempts <= self.max_retries
    }

    /// The pause before the next try: the server's Retry-After when it gave one, else
    /// base·2^(attempt−1) capped at max, with "equal jitter" (half fixed, half random).
    pub fn delay(&self, err: &ApiError, attempts: u32) -> Duration {
        if err.class == ErrorClass::RateLimited {
            if let Some(ra) = err.retry_after {
                return ra;
            }
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempts.saturating_sub(1).min(20));
        let capped = exp.min(self.max);
        let half = capped / 2;
        half + half.mul_f64(fastrand::f64())
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
        };
        let e = err(ErrorClass::Server, None);
        for (attempt, lo, hi) in [(1, 50, 100), (2, 100, 200), (3, 175, 350), (9, 175, 350)] {
            let d = p.delay(&e, attempt).as_millis();
            assert!((lo..=hi).contains(&d), "attempt {attempt}: {d}");
        }
        let ra = err(ErrorClass::RateLimited, Some(Duration::from_secs(7)));
        assert_eq!(p.delay(&ra, 1), Duration::from_secs(7));
        assert!(p.should_retry(&e, 3));
        assert!(!p.should_retry(&e, 4));
        assert!(!p.should_retry(&err(ErrorClass::Auth, None), 1));
    }
}
