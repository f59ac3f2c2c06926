//! Progress: one line per model (a bar on a terminal, plain log lines otherwise), nothing with --quiet.
//!
//! Every figure comes from counters bumped right after a checkpoint record is written, so what is
//! shown never runs ahead of the checkpoints; the last frame is drawn from the final counts.

use crate::util::{
    clip_words, name_legend, name_width, printable, shorten_names, terminal_width, wrap, Notes,
    Shutdown,
};
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
    /// The models' names as shown: shortened together ([`shorten_names`]) to what the width
    /// leaves them, so no two read alike.
    labels: Vec<String>,
    /// How a line is laid out at this width.
    fit: Fit,
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
        let width = terminal_width().max(40);
        let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let fit = Fit::of(width, longest);
        let labels = shorten_names(&names, fit.name);
        if mode != Mode::Quiet {
            // Said once, before any bar: which full name each short one stands for.
            for (short, full) in name_legend(&names, &labels) {
                out.say(&format!("{} = {}", printable(&short), printable(&full)));
            }
        }
        let watch = Watch {
            fit: Fit {
                name: labels.iter().map(|l| l.chars().count()).max().unwrap_or(0),
                ..fit
            },
            labels,
            models,
            out,
            stop: stop.clone(),
            shutdown: shutdown.clone(),
            width,
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
        let fit = Fit {
            bar: if bar { self.fit.bar } else { 0 },
            ..self.fit
        };
        describe(&self.labels[i], c.snapshot(), elapsed, stopping, fit, width)
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

/// A terminal for indicatif that leaves out the spaces it pads the last line with up to the
/// terminal's edge. A cursor left at the edge wraps at the next character, and the terminal's
/// echo of Ctrl-C (`^C`) is such a character: every frame after it landed a line lower, the
/// first bar line left stale above the interrupt note.
#[derive(Debug)]
struct NoEdge<T>(T);

impl<T: indicatif::TermLike> indicatif::TermLike for NoEdge<T> {
    fn width(&self) -> u16 {
        self.0.width()
    }

    fn height(&self) -> u16 {
        self.0.height()
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        // The padding to the edge is a write of spaces only.
        if !s.is_empty() && s.bytes().all(|b| b == b' ') {
            return Ok(());
        }
        self.0.write_str(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Stderr as indicatif's terminal: ANSI cursor moves, each frame written at once on flush.
#[derive(Debug)]
struct Stderr {
    width: u16,
    frame: Mutex<Vec<u8>>,
}

impl Stderr {
    fn put(&self, text: &str) -> std::io::Result<()> {
        let mut frame = self.frame.lock().unwrap_or_else(|p| p.into_inner());
        frame.extend_from_slice(text.as_bytes());
        Ok(())
    }

    /// `ESC [ n <code>`, nothing for n = 0.
    fn moves(&self, n: usize, code: char) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(&format!("\x1b[{n}{code}"))
    }
}

impl indicatif::TermLike for Stderr {
    fn width(&self) -> u16 {
        self.width
    }

    fn height(&self) -> u16 {
        terminal_size::terminal_size().map_or(24, |(_, h)| h.0)
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.moves(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.moves(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.moves(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.moves(n, 'D')
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(&format!("{s}\n"))
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.put("\r\x1b[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        use std::io::Write as _;
        let frame = std::mem::take(&mut *self.frame.lock().unwrap_or_else(|p| p.into_inner()));
        let mut err = std::io::stderr().lock();
        err.write_all(&frame)?;
        err.flush()
    }
}

async fn bars(w: Watch) {
    let term = NoEdge(Stderr {
        width: u16::try_from(w.width).unwrap_or(u16::MAX),
        frame: Mutex::new(Vec::new()),
    });
    let multi =
        MultiProgress::with_draw_target(ProgressDrawTarget::term_like_with_hz(Box::new(term), 5));
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
            // Broken at spaces: the terminal would break a long reason inside a word or a URL.
            let _ = multi.println(wrap(&note, w.width, "  "));
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

/// How a progress line is laid out: the width of the names' column and the bar's cells (none
/// for plain lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fit {
    pub name: usize,
    pub bar: usize,
}

/// Room kept for the counts and the most telling of state, errors, rate and ETA.
const FIGURES: usize = 37;

impl Fit {
    /// The layout at `width` columns for names up to `longest`: half of what the figures leave
    /// goes to the names (the documents' [`SHORT_NAME`] at 80 columns, more on wider terminals),
    /// the rest to the bar, between 8 and 60 cells.
    pub(super) fn of(width: usize, longest: usize) -> Fit {
        let free = width.saturating_sub(3 + FIGURES);
        let name = name_width((free / 2).max(8)).min(longest.max(1));
        let bar = free.saturating_sub(name + 2).clamp(8, 60);
        Fit { name, bar }
    }
}

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

/// One model's progress line, at most `width` characters: its label (padded to `fit.name`),
/// bar (`fit.bar` cells, none when 0), counts, then as many of errors, retries, rate, ETA and
/// tokens as fit (in that order of importance).
pub(super) fn describe(
    label: &str,
    s: Snapshot,
    elapsed: f64,
    stopping: bool,
    fit: Fit,
    width: usize,
) -> String {
    let pad = fit.name;
    let mut line = format!("{label:<pad$} ");
    if fit.bar > 0 {
        line.push_str(&bar_cells(s, fit.bar));
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
    use crate::util::SHORT_NAME;

    /// A bar line and a plain line with 16-character names.
    const BAR: Fit = Fit { name: 16, bar: 20 };
    const LINE: Fit = Fit { name: 16, bar: 0 };

    fn snap(total: u64, done: u64) -> Snapshot {
        Snapshot {
            total,
            done,
            ..Snapshot::default()
        }
    }

    #[test]
    fn long_names_are_shortened_apart() {
        let names = [
            "Llama-3.1-70B-Instruct-served-by-vllm",
            "Llama-3.1-8B-Instruct-served-by-vllm",
            "gpt-4o",
        ];
        let fit = Fit::of(80, 37);
        assert_eq!(
            fit,
            Fit {
                name: SHORT_NAME,
                bar: 18
            }
        );
        let labels = shorten_names(&names, fit.name);
        assert!(
            labels[0].contains("70B") && labels[1].contains("8B"),
            "{labels:?}"
        );
        let lines: Vec<String> = labels
            .iter()
            .map(|l| describe(l, snap(10, 3), 3.0, false, fit, 77))
            .collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 77), "{lines:?}");
        // The counts start in one column whatever the name.
        let at = |l: &String| l.find('█').map(|b| l[..b].chars().count());
        assert_eq!(at(&lines[0]), at(&lines[2]), "{lines:?}");
    }

    /// Issue 40: a wider terminal gives longer names and a wider bar.
    #[test]
    fn wider_terminals_get_longer_names_and_bars() {
        let at = |w| Fit::of(w, 52);
        assert!(
            at(120).name > at(80).name && at(120).bar > 16,
            "{:?}",
            at(120)
        );
        assert_eq!(at(200).name, 52);
        assert!(at(200).bar > at(120).bar, "{:?}", at(200));
        assert!(at(40).bar >= 8);
        for w in [40, 60, 80, 120, 200] {
            let f = at(w);
            let line = describe(&"n".repeat(f.name), snap(1_000, 999), 3.0, false, f, w - 3);
            assert!(line.chars().count() <= w - 3, "{w}: {line}");
            assert!(line.contains("999/1000 units"), "{w}: {line}");
        }
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
        for fit in [BAR, LINE] {
            let label = &shorten_names(&["Llama-3.1-Nemotron-70B-Instruct-HF"], 16)[0];
            let line = describe(label, s, 3.0, false, fit, 80);
            assert!(line.chars().count() <= 80, "{line}");
            assert!(line.contains("98765 errors"), "{line}");
        }
    }

    #[test]
    fn errors_are_drawn_apart_and_a_line_of_errors_says_so() {
        let mut s = snap(10, 10);
        s.errors = 1;
        let line = describe("m", s, 2.0, false, BAR, 80);
        assert_eq!(line.matches('×').count(), 2, "a tenth of 20 cells: {line}");
        assert!(!line.contains("mostly"), "{line}");
        s.errors = 10;
        s.ended = true;
        let line = describe("m", s, 2.0, false, BAR, 80);
        assert!(!line.contains('█'), "{line}");
        assert!(line.contains("10/10 units, failed, 10 errors"), "{line}");
        s.ended = false;
        let running = describe("m", s, 2.0, false, LINE, 80);
        assert!(running.contains("10/10 units, failing"), "{running}");
        // With little room, the error count outlasts the rate and tokens.
        s.requests = 30;
        s.tokens = 123_456;
        // Labels come shortened to the names' column (shorten_names, once per run).
        let narrow = Fit { name: 16, bar: 8 };
        let long = describe(&"n".repeat(16), s, 2.0, false, narrow, 60);
        assert!(long.ends_with("failing, 10 errors"), "{long}");
    }

    #[test]
    fn a_stopped_model_has_no_eta_and_the_counts_are_what_was_saved() {
        let mut s = snap(878, 142);
        s.requests = 150;
        let running = describe("m", s, 10.0, false, LINE, 80);
        assert!(
            running.contains("142/878 units") && running.contains("ETA"),
            "{running}"
        );
        let stopped = describe("m", s, 10.0, true, BAR, 80);
        assert!(stopped.contains("142/878 units, stopped"), "{stopped}");
        assert!(!stopped.contains("ETA"), "{stopped}");
        s.ended = true;
        assert!(!describe("m", s, 10.0, false, LINE, 80).contains("ETA"));
    }

    #[test]
    fn no_zero_rates_and_singular_counts() {
        let mut s = snap(10, 10);
        s.requests = 10;
        s.retries = 1;
        s.errors = 1;
        s.ended = true;
        let early = describe("m", s, 0.2, false, LINE, 80);
        assert!(!early.contains("req/s"), "{early}");
        assert!(
            early.contains("1 retry") && early.contains("1 error"),
            "{early}"
        );
        assert!(
            !early.contains("retries") && !early.contains("errors"),
            "{early}"
        );
        let slow = describe("m", snap(10, 1), 100.0, false, LINE, 80);
        assert!(!slow.contains("0.0 req"), "{slow}");
        s.requests = 3;
        let later = describe("m", s, 600.0, false, LINE, 80);
        assert!(later.contains("0.3 req/min"), "{later}");
        s.retries = 2;
        s.errors = 2;
        let many = describe("m", s, 2.0, false, LINE, 80);
        assert!(
            many.contains("2 retries") && many.contains("2 errors"),
            "{many}"
        );
    }
    /// A terminal of `width` columns as a grid: the cursor wraps when a character is written
    /// past the edge, as terminals do; `echo` types at the cursor, as the terminal echoes `^C`.
    #[derive(Debug, Clone)]
    struct Screen(Arc<Mutex<Grid>>);

    /// The screen's lines and the cursor's row and column.
    type Grid = (Vec<Vec<char>>, usize, usize);

    impl Screen {
        const WIDTH: usize = 30;

        fn new() -> Screen {
            Screen(Arc::new(Mutex::new((vec![Vec::new()], 0, 0))))
        }

        fn echo(&self, text: &str) {
            let mut g = self.0.lock().unwrap();
            let (lines, row, col) = &mut *g;
            for ch in text.chars() {
                if *col >= Self::WIDTH {
                    *row += 1;
                    *col = 0;
                }
                while lines.len() <= *row {
                    lines.push(Vec::new());
                }
                let line = &mut lines[*row];
                line.resize(line.len().max(*col + 1), ' ');
                line[*col] = ch;
                *col += 1;
            }
        }

        fn text(&self) -> Vec<String> {
            let g = self.0.lock().unwrap();
            (g.0.iter())
                .map(|l| l.iter().collect::<String>().trim_end().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        }
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            Self::WIDTH as u16
        }
        fn height(&self) -> u16 {
            24
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            let mut g = self.0.lock().unwrap();
            g.1 = g.1.saturating_sub(n);
            g.2 = g.2.min(Self::WIDTH - 1);
            Ok(())
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            let mut g = self.0.lock().unwrap();
            g.1 += n;
            g.2 = g.2.min(Self::WIDTH - 1);
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.echo(s);
            let mut g = self.0.lock().unwrap();
            g.1 += 1;
            g.2 = 0;
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.echo(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            let mut g = self.0.lock().unwrap();
            let row = g.1;
            while g.0.len() <= row {
                g.0.push(Vec::new());
            }
            g.0[row].clear();
            g.2 = 0;
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Bars drawn, Ctrl-C echoed at the cursor, then the interrupt note and the next frame:
    /// what the screen shows.
    fn after_ctrl_c(term: Box<dyn indicatif::TermLike>, screen: &Screen) -> Vec<String> {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::term_like(term));
        let style = ProgressStyle::with_template("{msg}").unwrap();
        let bars: Vec<ProgressBar> = (0..3)
            .map(|_| {
                let b = multi.add(ProgressBar::new(0));
                b.set_style(style.clone());
                b
            })
            .collect();
        for (i, b) in bars.iter().enumerate() {
            b.set_message(format!("model{i} 10/90 units"));
        }
        screen.echo("^C");
        multi.println("interrupted: saving").unwrap();
        for (i, b) in bars.iter().enumerate() {
            b.set_message(format!("model{i} 12/90 units, stopped"));
        }
        screen.text()
    }

    /// Issue 40: after Ctrl-C no stale bar line stays above the interrupt note and no model's
    /// line shows twice; indicatif's padding of the last line to the edge is what the echo
    /// wrapped.
    #[test]
    fn ctrl_c_leaves_no_stale_bar_line() {
        let screen = Screen::new();
        let shown = after_ctrl_c(Box::new(NoEdge(screen.clone())), &screen);
        assert_eq!(
            shown,
            [
                "interrupted: saving",
                "model0 12/90 units, stopped",
                "model1 12/90 units, stopped",
                "model2 12/90 units, stopped"
            ]
        );
        // The bare terminal keeps the first bar line of before the interrupt.
        let bare = Screen::new();
        let shown = after_ctrl_c(Box::new(bare.clone()), &bare);
        assert!(shown.iter().any(|l| l.contains("10/90")), "{shown:?}");
    }
}
