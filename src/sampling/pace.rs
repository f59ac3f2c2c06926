//! Flow control for one model: an adaptive concurrency limit and optional rpm/tpm pacing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// A concurrency limit that halves on 429 and grows back by one per window of successes.
pub(super) struct AdaptiveLimit {
    sem: Arc<Semaphore>,
    max: usize,
    current: AtomicUsize,
    /// Permits to retire as they come back, after a cut below the number in flight.
    debt: AtomicUsize,
    successes: AtomicUsize,
}

impl AdaptiveLimit {
    pub(super) fn new(max: usize) -> AdaptiveLimit {
        AdaptiveLimit {
            sem: Arc::new(Semaphore::new(max)),
            max,
            current: AtomicUsize::new(max),
            debt: AtomicUsize::new(0),
            successes: AtomicUsize::new(0),
        }
    }

    pub(super) async fn acquire(self: &Arc<Self>) -> Permit {
        let permit = self
            .sem
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore is never closed");
        Permit {
            inner: Some(permit),
            limit: self.clone(),
        }
    }

    #[cfg(test)]
    pub(super) fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    /// Halves the limit (at least 1) after a 429.
    pub(super) fn on_rate_limited(&self) {
        let mut cur = self.current.load(Ordering::Relaxed);
        loop {
            let target = (cur / 2).max(1);
            if target == cur {
                return;
            }
            match self
                .current
                .compare_exchange(cur, target, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.debt.fetch_add(cur - target, Ordering::AcqRel);
                    self.successes.store(0, Ordering::Relaxed);
                    return;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Counts a success; after `current` of them in a row the limit grows by one, up to the maximum.
    pub(super) fn on_success(&self) {
        let cur = self.current.load(Ordering::Relaxed);
        if cur >= self.max {
            return;
        }
        if self.successes.fetch_add(1, Ordering::AcqRel) + 1 < cur {
            return;
        }
        self.successes.store(0, Ordering::Relaxed);
        if self
            .current
            .compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            // Cancel a pending retirement first; otherwise release a new permit.
            let paid = self
                .debt
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |d| d.checked_sub(1))
                .is_ok();
            if !paid {
                self.sem.add_permits(1);
            }
        }
    }
}

/// A slot; returning it pays off debt first, so a cut takes effect as requests finish.
pub(super) struct Permit {
    inner: Option<OwnedSemaphorePermit>,
    limit: Arc<AdaptiveLimit>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(p) = self.inner.take() {
            let retire = self
                .limit
                .debt
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |d| d.checked_sub(1))
                .is_ok();
            if retire {
                p.forget();
            }
        }
    }
}

/// Spaces requests (rpm) and tokens (tpm) evenly: each caller reserves the next free moment.
pub(super) struct Pace {
    per_request: Option<Duration>,
    per_token: Option<Duration>,
    next_request: Mutex<Option<Instant>>,
    next_token: Mutex<Option<Instant>>,
}

impl Pace {
    pub(super) fn new(rpm: Option<f64>, tpm: Option<f64>) -> Pace {
        Pace {
            per_request: rpm.map(|r| Duration::from_secs_f64(60.0 / r)),
            per_token: tpm.map(|t| Duration::from_secs_f64(60.0 / t)),
            next_request: Mutex::new(None),
            next_token: Mutex::new(None),
        }
    }

    pub(super) fn is_unlimited(&self) -> bool {
        self.per_request.is_none() && self.per_token.is_none()
    }

    /// Waits for this request's turn; `tokens` is its estimated size.
    pub(super) async fn wait(&self, tokens: u64) {
        let now = Instant::now();
        let mut at = now;
        if let Some(step) = self.per_request {
            at = at.max(reserve(&self.next_request, now, step));
        }
        if let Some(step) = self.per_token {
            at = at.max(reserve(
                &self.next_token,
                now,
                step.saturating_mul(tokens.min(u32::MAX as u64) as u32),
            ));
        }
        if at > now {
            tokio::time::sleep_until(at).await;
        }
    }
}

fn reserve(slot: &Mutex<Option<Instant>>, now: Instant, step: Duration) -> Instant {
    let mut next = slot.lock().unwrap_or_else(|p| p.into_inner());
    let at = next.map_or(now, |n| n.max(now));
    *next = Some(at + step);
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rate_limit_halves_and_recovers_gradually() {
        let lim = Arc::new(AdaptiveLimit::new(8));
        let held: Vec<_> = futures_hold(&lim, 8).await;
        lim.on_rate_limited();
        assert_eq!(lim.current(), 4);
        drop(held);
        // Four permits were retired as they came back.
        assert_eq!(lim.sem.available_permits(), 4);
        for _ in 0..4 {
            lim.on_success();
        }
        assert_eq!(lim.current(), 5);
        assert_eq!(lim.sem.available_permits(), 5);
        for _ in 0..100 {
            lim.on_success();
        }
        assert_eq!(lim.current(), 8);
        assert_eq!(lim.sem.available_permits(), 8);
        for _ in 0..10 {
            lim.on_rate_limited();
        }
        assert_eq!(lim.current(), 1);
    }

    async fn futures_hold(lim: &Arc<AdaptiveLimit>, n: usize) -> Vec<Permit> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(lim.acquire().await);
        }
        v
    }

    #[tokio::test(start_paused = true)]
    async fn pace_spaces_requests() {
        let pace = Pace::new(Some(60.0), None);
        let start = Instant::now();
        for _ in 0..3 {
            pace.wait(1).await;
        }
        // Three requests at 60 rpm: at 0 s, 1 s and 2 s.
        assert_eq!(Instant::now() - start, Duration::from_secs(2));
        let tpm = Pace::new(None, Some(600.0));
        let start = Instant::now();
        tpm.wait(100).await;
        tpm.wait(100).await;
        assert_eq!(Instant::now() - start, Duration::from_secs(10));
    }
}
