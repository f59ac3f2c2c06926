//! Progress: one line per model (a bar on a terminal, plain log lines otherwise), nothing with --quiet.
//!
//! Every figure comes from counters bumped right after a checkpoint record is written, so what is
//! shown never runs ahead of the checkpoints; the last frame is drawn from the final counts.

use crate::util::{clip_words, printable, shorten_names, terminal_width, Notes, Shutdown};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Live counters of one model, shared by its workers.
#[derive(Debug, Default)]
pub(super) struct Counters {
    /// Units missing when this session started (a resumed run counts only what is left).
    pub total: AtomicU64,
    /// Units with a checkpoint record written this session (answers and final errors).
    pub done: AtomicU64,
    pub retries: AtomicU64,
    /// Units whose record is an API error after all retries.
    pub errors: AtomicU64,
    pub tokens: AtomicU64,
    pub requests: AtomicU64,
    /// Set when the model's session is over: no ETA from then on.
    pub ended: AtomicBool,
    /// Set when the model stopped on an error (auth, unknown model, unreachable, budget, disk).
    pub failed: AtomicBool,
    /// A message for the user (why the model stopped), printed once by the reporter.
    pub note: Mutex<Option<String>>,
    /// Why the model stopped, printed once by the reporter: a reason told for an earlier model
    /// is named, not repeated.
    pub stop: Mutex<Option<String>>,
}

/// One moment of a model's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Snapshot {
    pub total: u64,
    pub done: u64,
    pub retries: u64,
    pub errors: u64,
    pub tokens: u64,
    pub requests: u64,
    pub ended: bool,
    pub failed: bool,
}

impl Snapshot {
    /// Whether errors are most of what was done: the line must not read like progress.
    pub(super) fn failing(&self) -> bool {
        self.failed || (self.errors > 0 && 2 * self.errors >= self.done)
    }
}

impl Counters {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            total: self.total.load(Ordering::SeqCst),
            done: self.done.load(Ordering::SeqCst),
            retries: self.retries.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            tokens: self.tokens.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            ended: self.ended.load(Ordering::SeqCst),
            failed: self.failed.load(Ordering::SeqCst),
        }
    }

    fn take_note(&self) -> Option<String> {
        self.note.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn take_stop(&self) -> Option<String> {
        self.stop.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Bars,
    Lines,
    Quiet,
}

impl Mode {
    pub(super) fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bars
        } else {
            Mode::Lines
        }
    }
}

/// Draws progress until `finish` is called.
pub(super) struct Reporter {
    stop: Arc<tokio::sync::Notify>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// What the drawing task needs.
struct Watch {
    models: Vec<(String, Arc<Counters>)>,
    /// The models' names as shown: shortened to [`NAME_WIDTH`] together, so no two read alike.
    labels: Vec<String>,
    /// Where the plain lines go.
    out: Notes,
    stop: Arc<tokio::sync::Notify>,
    shutdown: Shutdown,
    width: usize,
    /// The stop reasons told so far, with the model first stopped for each.
    told: Mutex<Vec<(String, String)>>,
}

impl Reporter {
    pub(super) fn start(
        mode: Mode,
        models: Vec<(String, Arc<Counters>)>,
        interval: Duration,
        shutdown: &Shutdown,
        out: Notes,
    ) -> Reporter {
        let stop = Arc::new(tokio::sync::Notify::new());
        let names: Vec<&str> = models.iter().map(|(n, _)| n.as_str()).collect();
        let watch = Watch {
            labels: shorten_names(&names, NAME_WIDTH),
            models,
            out,
            stop: stop.clone(),
            shutdown: shutdown.clone(),
            width: terminal_width().clamp(40, 120),
            told: Mutex::new(Vec::new()),
        };
        let task = match mode {
            Mode::Quiet => None,
            Mode::Bars => Some(tokio::spawn(bars(watch))),
            Mode::Lines => Some(tokio::spawn(lines(watch, interval))),
        };
        Reporter { stop, task }
    }

    pub(super) async fn finish(mut self) {
        self.stop.notify_one();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Watch {
    fn describe(&self, i: usize, elapsed: f64, bar: bool) -> String {
        let c = &self.models[i].1;
        let stopping = self.shutdown.is_triggered();
        // Live bars leave room for the terminal's `^C` echo: a wrapped line would stay on screen.
        let width = if bar { self.width - 3 } else { self.width };
        describe(&self.labels[i], c.snapshot(), elapsed, stopping, bar, width)
    }

    /// The notes not told yet, then one line per model.
    fn say_all(&self, elapsed: f64, bar: bool) {
        for note in self.notes() {
            self.out.say(&note);
        }
        for i in 0..self.models.len() {
            self.out.say(&self.describe(i, elapsed, bar));
        }
    }

    fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .models
            .iter()
            .filter_map(|(_, c)| c.take_note())
            .collect();
        let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
        for (name, c) in &self.models {
            let Some(reason) = c.take_stop() else {
                continue;
            };
            let shown = printable(&clip_words(&reason, super::ends::CAUSE_MAX)).into_owned();
            notes.push(match told.iter().find(|(r, _)| *r == reason) {
                Some((_, first)) => format!("error: model {name} stopped: as model {first} did"),
                None => format!("error: model {name} stopped: {shown}"),
            });
            told.push((reason, name.clone()));
        }
        notes
    }
}

async fn lines(w: Watch, interval: Duration) {
    let start = Instant::now();
    loop {
        tokio::select! {
            _ = w.stop.notified() => break,
            _ = tokio::time::sleep(interval) => {
                w.say_all(start.elapsed().as_secs_f64(), false);
            }
        }
    }
    w.say_all(start.elapsed().as_secs_f64(), false);
}

async fn bars(w: Watch) {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(5));
    let style =
        ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_bar());
    // A model whose units mostly fail is drawn in red: a full bar of errors is not success.
    let failing = ProgressStyle::with_template("{msg:.red}").unwrap_or_else(|_| style.clone());
    let bars: Vec<ProgressBar> = w
        .models
        .iter()
        .map(|_| {
            let b = multi.add(ProgressBar::new(0));
            b.set_style(style.clone());
            b
        })
        .collect();
    let start = Instant::now();
    let mut told = false;
    loop {
        if w.shutdown.is_triggered() && !told {
            // Printed here, not by the signal handler, so it cannot tear the bars.
            told = true;
            let _ = multi.println(
                "interrupted: saving after the requests in flight (Ctrl-C again: quit now)",
            );
        }
        for note in w.notes() {
            let _ = multi.println(note);
        }
        for (i, bar) in bars.iter().enumerate() {
            if w.models[i].1.snapshot().failing() {
                bar.set_style(failing.clone());
            }
            bar.set_message(w.describe(i, start.elapsed().as_secs_f64(), true));
        }
        tokio::select! {
            _ = w.stop.notified() => break,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    // The live bars go; the final counts stay as plain lines (no bar claims more than was saved).
    let _ = multi.clear();
    for b in &bars {
        b.finish_and_clear();
    }
    drop(multi);
    w.say_all(start.elapsed().as_secs_f64(), true);
}

/// The longest model name shown as is; longer ones are shortened by [`shorten_names`].
pub(super) const NAME_WIDTH: usize = 16;

/// `1 retry`, `2 retries`.
pub(super) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `45s`, `12m05s`, `3h07m`.
fn short_duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Requests per second once a second has passed; `None` before (early figures are noise).
fn rate(requests: u64, elapsed: f64) -> Option<String> {
    if elapsed < 1.0 || requests == 0 {
        return None;
    }
    let r = requests as f64 / elapsed;
    Some(if r >= 10.0 {
        format!("{r:.0} req/s")
    } else if r >= 0.1 {
        format!("{r:.1} req/s")
    } else {
        format!("{:.1} req/min", r * 60.0)
    })
}

/// The bar: answered units `█`, failed units `×`, the rest `░`; any error shows at least one `×`.
fn bar_cells(s: Snapshot, cells: usize) -> String {
    let of = |n: u64| {
        (n.min(s.total) * cells as u64)
            .checked_div(s.total)
            .unwrap_or(0) as usize
    };
    let failed = match s.errors {
        0 => 0,
        e => of(e).clamp(1, cells),
    };
    let done = of(s.done).max(failed);
    "█".repeat(done - failed) + &"×".repeat(failed) + &"░".repeat(cells - done)
}

/// One model's progress line, at most `width` characters: its label (at most [`NAME_WIDTH`]),
/// bar, counts, then as many of errors, retries, rate, ETA and tokens as fit (in that order of
/// importance).
pub(super) fn describe(
    label: &str,
    s: Snapshot,
    elapsed: f64,
    stopping: bool,
    bar: bool,
    width: usize,
) -> String {
    let mut line = format!("{label:<NAME_WIDTH$} ");
    if bar {
        line.push_str(&bar_cells(s, 20usize.min(width.saturating_sub(60)).max(8)));
        line.push(' ');
    }
    line.push_str(&format!("{}/{} units", s.done, s.total));
    let state = match (s.ended, stopping, s.done >= s.total) {
        (true, _, _) if s.failing() => Some("failed".to_string()),
        (false, false, _) if s.failing() => Some("failing".to_string()),
        (true, _, true) if s.errors == 0 => Some("done".to_string()),
        (true, true, _) | (false, true, _) => Some("stopped".to_string()),
        (true, false, _) => Some("ended".to_string()),
        _ => None,
    };
    // (importance, text): the least important piece goes first when the line is too long.
    let mut extras: Vec<(u8, String)> = Vec::new();
    if let Some(st) = &state {
        extras.push((0, st.clone()));
    }
    if s.errors > 0 {
        // Errors that are most of the work go last, if at all, when room is short.
        let importance = if s.failing() { 0 } else { 1 };
        extras.push((importance, plural(s.errors, "error", "errors")));
    }
    if s.retries > 0 {
        extras.push((2, plural(s.retries, "retry", "retries")));
    }
    if let Some(r) = rate(s.requests, elapsed) {
        extras.push((3, r));
    }
    if state.is_none() && s.done > 0 && s.done < s.total {
        let secs = elapsed / s.done as f64 * (s.total - s.done) as f64;
        extras.push((4, format!("ETA {}", short_duration(secs.round() as u64))));
    }
    if s.tokens > 0 {
        extras.push((5, format!("{} tok", s.tokens)));
    }
    let fits = |extras: &[(u8, String)]| {
        let extra: usize = extras.iter().map(|(_, t)| t.chars().count() + 2).sum();
        line.chars().count() + extra <= width
    };
    while !fits(&extras) && !extras.is_empty() {
        let least = (0..extras.len()).max_by_key(|&i| extras[i].0).unwrap_or(0);
        extras.remove(least);
    }
    for (_, t) in extras {
        line.push_str(", ");
        line.push_str(&t);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(total: u64, done: u64) -> Snapshot {
        Snapshot {
            total,
            done,
            ..Snapshot::default()
        }
    }

    #[test]
    fn long_names_are_shortened_apart() {
        let names = ["Llama-3.1-70B-Instruct", "Llama-3.1-8B-Instruct", "gpt-4o"];
        let labels = shorten_names(&names, NAME_WIDTH);
        assert_eq!(labels, ["Lla…70B-Instruct", "Llam…8B-Instruct", "gpt-4o"]);
        let lines: Vec<String> = labels
            .iter()
            .map(|l| describe(l, snap(10, 3), 3.0, false, true, 80))
            .collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:?}");
        // The counts start in one column whatever the name.
        let at = |l: &String| l.find('█').map(|b| l[..b].chars().count());
        assert_eq!(at(&lines[0]), at(&lines[2]), "{lines:?}");
    }

    #[test]
    fn every_line_fits_80_columns_at_worst_case_counts() {
        let s = Snapshot {
            total: 1_000_000,
            done: 999_999,
            retries: 123_456,
            errors: 98_765,
            tokens: 9_876_543_210,
            requests: 5_000_000,
            ended: false,
            failed: false,
        };
        for bar in [true, false] {
            let label = &shorten_names(&["Llama-3.1-Nemotron-70B-Instruct-HF"], NAME_WIDTH)[0];
            let line = describe(label, s, 3.0, false, bar, 80);
            assert!(line.chars().count() <= 80, "{line}");
            assert!(line.contains("98765 errors"), "{line}");
        }
    }

    #[test]
    fn errors_are_drawn_apart_and_a_line_of_errors_says_so() {
        let mut s = snap(10, 10);
        s.errors = 1;
        let line = describe("m", s, 2.0, false, true, 80);
        assert_eq!(line.matches('×').count(), 2, "a tenth of 20 cells: {line}");
        assert!(!line.contains("mostly"), "{line}");
        s.errors = 10;
        s.ended = true;
        let line = describe("m", s, 2.0, false, true, 80);
        assert!(!line.contains('█'), "{line}");
        assert!(line.contains("10/10 units, failed, 10 errors"), "{line}");
        s.ended = false;
        let running = describe("m", s, 2.0, false, false, 80);
        assert!(running.contains("10/10 units, failing"), "{running}");
        // With little room, the error count outlasts the rate and tokens.
        s.requests = 30;
        s.tokens = 123_456;
        // Labels come shortened to NAME_WIDTH (shorten_names, once per run).
        let long = describe(&"n".repeat(NAME_WIDTH), s, 2.0, false, true, 60);
        assert!(long.ends_with("failing, 10 errors"), "{long}");
    }

    #[test]
    fn a_stopped_model_has_no_eta_and_the_counts_are_what_was_saved() {
        let mut s = snap(878, 142);
        s.requests = 150;
        let running = describe("m", s, 10.0, false, false, 80);
        assert!(
            running.contains("142/878 units") && running.contains("ETA"),
            "{running}"
        );
        let stopped = describe("m", s, 10.0, true, true, 80);
        assert!(stopped.contains("142/878 units, stopped"), "{stopped}");
        assert!(!stopped.contains("ETA"), "{stopped}");
        s.ended = true;
        assert!(!describe("m", s, 10.0, false, false, 80).contains("ETA"));
    }

    #[test]
    fn no_zero_rates_and_singular_counts() {
        let mut s = snap(10, 10);
        s.requests = 10;
        s.retries = 1;
        s.errors = 1;
        s.ended = true;
        let early = describe("m", s, 0.2, false, false, 80);
        assert!(!early.contains("req/s"), "{early}");
        assert!(
            early.contains("1 retry") && early.contains("1 error"),
            "{early}"
        );
        assert!(
            !early.contains("retries") && !early.contains("errors"),
            "{early}"
        );
        let slow = describe("m", snap(10, 1), 100.0, false, false, 80);
        assert!(!slow.contains("0.0 req"), "{slow}");
        s.requests = 3;
        let later = describe("m", s, 600.0, false, false, 80);
        assert!(later.contains("0.3 req/min"), "{later}");
        s.retries = 2;
        s.errors = 2;
        let many = describe("m", s, 2.0, false, false, 80);
        assert!(
            many.contains("2 retries") && many.contains("2 errors"),
            "{many}"
        );
    }
}
