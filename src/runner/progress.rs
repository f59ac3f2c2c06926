//! Progress: one bar per model on a terminal, plain log lines otherwise (cron), nothing with --quiet.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Live counters of one model, shared by its workers.
#[derive(Debug, Default)]
pub struct Counters {
    pub total: AtomicU64,
    pub done: AtomicU64,
    pub retries: AtomicU64,
    pub errors: AtomicU64,
    pub tokens: AtomicU64,
    pub requests: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> [u64; 6] {
        [
            self.total.load(Ordering::Relaxed),
            self.done.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
            self.tokens.load(Ordering::Relaxed),
            self.requests.load(Ordering::Relaxed),
        ]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Bars,
    Lines,
    Quiet,
}

impl Mode {
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bars
        } else {
            Mode::Lines
        }
    }
}

/// Draws progress until `stop` is called.
pub struct Reporter {
    stop: Arc<tokio::sync::Notify>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Reporter {
    pub fn start(mode: Mode, models: Vec<(String, Arc<Counters>)>, interval: Duration) -> Reporter {
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = match mode {
            Mode::Quiet => None,
            Mode::Bars => Some(tokio::spawn(bars(models, stop.clone()))),
            Mode::Lines => Some(tokio::spawn(lines(models, stop.clone(), interval))),
        };
        Reporter { stop, task }
    }

    pub async fn finish(mut self) {
        self.stop.notify_one();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

fn describe(name: &str, s: [u64; 6], elapsed: f64) -> String {
    let [total, done, retries, errors, tokens, requests] = s;
    let rate = rate(requests, elapsed);
    let eta = if done > 0 && done < total {
        let secs = elapsed / done as f64 * (total - done) as f64;
        format!(
            "{}",
            humantime::format_duration(Duration::from_secs(secs.round() as u64))
        )
    } else {
        "-".into()
    };
    format!(
        "[{name}] {done}/{total} units, {rate:.1} req/s, {retries} retries, {errors} errors, {tokens} tokens, ETA {eta}"
    )
}

async fn lines(
    models: Vec<(String, Arc<Counters>)>,
    stop: Arc<tokio::sync::Notify>,
    interval: Duration,
) {
    let start = Instant::now();
    loop {
        tokio::select! {
            _ = stop.notified() => break,
            _ = tokio::time::sleep(interval) => {
                for (name, c) in &models {
                    eprintln!("{}", describe(name, c.snapshot(), start.elapsed().as_secs_f64()));
                }
            }
        }
    }
    for (name, c) in &models {
        eprintln!(
            "{}",
            describe(name, c.snapshot(), start.elapsed().as_secs_f64())
        );
    }
}

async fn bars(models: Vec<(String, Arc<Counters>)>, stop: Arc<tokio::sync::Notify>) {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(5));
    let style = ProgressStyle::with_template("{prefix:>16} {bar:30} {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    let bars: Vec<ProgressBar> = models
        .iter()
        .map(|(name, _)| {
            let b = multi.add(ProgressBar::new(0));
            b.set_style(style.clone());
            b.set_prefix(name.clone());
            b
        })
        .collect();
    let start = Instant::now();
    loop {
        for ((_, c), bar) in models.iter().zip(&bars) {
            let [total, done, retries, errors, tokens, requests] = c.snapshot();
            bar.set_length(total);
            bar.set_position(done);
            let rate = rate(requests, start.elapsed().as_secs_f64());
            bar.set_message(format!(
                "{rate:.1} req/s, {retries} retries, {errors} errors, {tokens} tok, ETA {}",
                eta(bar)
            ));
        }
        tokio::select! {
            _ = stop.notified() => break,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    for b in bars {
        b.finish();
    }
}

/// Requests per second, once a second has passed (earlier figures are noise).
fn rate(requests: u64, elapsed: f64) -> f64 {
    if elapsed < 1.0 {
        0.0
    } else {
        requests as f64 / elapsed
    }
}

fn eta(bar: &ProgressBar) -> String {
    let e = bar.eta();
    if e.is_zero() {
        "-".into()
    } else {
        humantime::format_duration(Duration::from_secs(e.as_secs())).to_string()
    }
}
