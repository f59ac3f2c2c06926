//! Small helpers every layer may use: hex and short hashes, the problem-id index, atomic writes,
//! bounded reads of input files, names that become path components, shell quoting, timestamps,
//! names' nearest match, names shortened to a width, terminal-safe text, colour on a terminal, a chat message's text, the fixed [`SplitMix64`] generator, the [`Prefix`] of an append-only file as it was read, and the [`Shutdown`] signal passed down to
//! long-running work.

pub mod chat;
mod input;
mod notes;
mod paint;
mod prefix;
mod rng;
mod shorten;
pub mod tasks;

pub use notes::Notes;
pub use paint::{unpainted, Paint, Tone};
pub use prefix::Prefix;
pub use rng::SplitMix64;
pub use shorten::{abbreviate, name_legend, name_width, shorten_names, SHORT_NAME};

pub use input::{
    open_regular, read_bounded, read_bounded_string, Lines, MAX_DATA_FILE, MAX_LINE, MAX_TEXT_FILE,
};

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::watch;

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// A hash abbreviated for messages: its first 12 characters (never splits a character).
pub fn short(hash: &str) -> &str {
    match hash.char_indices().nth(12) {
        Some((i, _)) => &hash[..i],
        None => hash,
    }
}

/// Position of each id in a list: problem id → index, built once per list.
pub fn id_index<'a, T: 'a>(
    items: impl IntoIterator<Item = &'a T>,
    id: impl Fn(&'a T) -> &'a str,
) -> HashMap<&'a str, usize> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, t)| (id(t), i))
        .collect()
}

/// Writes bytes to `path` atomically: a temporary file in the same folder, then a rename. The
/// temporary file is removed when anything fails (a full disk leaves no `.tmp` behind).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// [`write_atomic`] of what `write` streams into the file (an export too large to hold).
pub fn write_atomic_with<T, E: From<std::io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<T, E> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let written = File::create(&tmp).map_err(E::from).and_then(|mut f| {
        let out = write(&mut f)?;
        f.sync_data()?;
        Ok(out)
    });
    let result = written.and_then(|out| {
        std::fs::rename(&tmp, path)?;
        Ok(out)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The longest name that becomes a path component (`<name>.jsonl` stays far below 255 bytes).
pub const MAX_NAME: usize = 100;

/// Why `name` cannot be one path component of a run directory (a model's checkpoint, cache,
/// grades and tree folder), or `None` when it can: 1 to [`MAX_NAME`] letters, digits, `.`, `_`,
/// `-` and `+`, not starting with `.` (so never `.`, `..` or a hidden file).
pub fn path_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')))
    {
        return Some(format!(
            "{:?} holds {:?}; only letters, digits, '.', '_', '-' and '+' are allowed",
            printable(name),
            c
        ));
    }
    if name.starts_with('.') {
        return Some(format!("{name:?} starts with '.'"));
    }
    if name.len() > MAX_NAME {
        return Some(format!(
            "is {} characters long; at most {MAX_NAME}",
            name.len()
        ));
    }
    None
}

/// `name` as one safe path component: itself when [`path_name_problem`] finds nothing, else its
/// letters and digits (at most 60) and a hash of the whole name, so distinct names stay apart.
pub fn path_component(name: &str) -> Cow<'_, str> {
    use sha2::{Digest, Sha256};
    if path_name_problem(name).is_none() {
        return Cow::Borrowed(name);
    }
    let safe: String = name
        .chars()
        .take(60)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let hash = hex(&Sha256::digest(name.as_bytes()));
    Cow::Owned(format!("{safe}-{}", &hash[..12]))
}

/// `s` as one POSIX shell word: bare when it holds only safe characters, else single-quoted, so a
/// printed command can be pasted without `$(…)`, backticks or spaces doing anything.
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Now as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    use std::fmt::Write as _;
    // "2026-12-01T16:30:00.123Z": 24 bytes, written into one allocation of that size.
    let mut s = String::with_capacity(24);
    let _ = write!(
        s,
        "{}",
        humantime::format_rfc3339_millis(std::time::SystemTime::now())
    );
    s
}

/// The candidate closest to a misspelt name by edit distance, when it is close enough to be a typo.
pub fn closest<'a>(bad: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::damerau_levenshtein(bad, c), c))
        .filter(|(d, c)| *d <= 3.max(c.len() / 3) && *d < c.len().max(bad.len()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Text from outside (a server's error, a served model name) made safe to print on a terminal:
/// control characters (ESC, CR, LF, C1, …) and bidi overrides become visible `\u{…}` escapes, so a
/// server can neither move the cursor, clear the screen nor forge a line of output.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The note printed once when the largest k is more than half of some model's n.
pub fn coarse_k_note(k: u64, models: &[(&str, u64)]) -> Option<String> {
    let coarse: Vec<&str> = models
        .iter()
        .filter(|(_, n)| 2 * k > *n)
        .map(|(name, _)| *name)
        .collect();
    let every = coarse.len() == models.len() && models.len() > 1;
    let which = if every {
        "every model".to_string()
    } else {
        coarse.join(", ")
    };
    (!coarse.is_empty()).then(|| {
        format!(
            "note: k = {k} > n/2 for {which}: G-Pass@k is coarse there; the paper uses n = 48 for k = 16 (n ≥ 3k)"
        )
    })
}

/// `f` over `items` on every core, results in input order (so output never depends on timing).
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    par_map_from(items, 64, f)
}

/// [`par_map`] for work that is worth a thread from `least` items on (1: each item is heavy);
/// the threads take the next item as they finish one, so uneven items share the cores.
pub fn par_map_from<T: Sync, R: Send>(
    items: &[T],
    least: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = workers.min(items.len());
    if workers < 2 || items.len() < least {
        return items.iter().map(f).collect();
    }
    // In chunks when items are many and cheap, one by one when they are few.
    let chunk = (items.len() / (8 * workers)).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let (f, next) = (&f, &next);
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let at = next.fetch_add(chunk, std::sync::atomic::Ordering::Relaxed);
                        if at >= items.len() {
                            return out;
                        }
                        let part = &items[at..(at + chunk).min(items.len())];
                        out.push((at, part.iter().map(f).collect()));
                    }
                })
            })
            .collect();
        (handles.into_iter())
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_unstable_by_key(|d| d.0);
    done.into_iter().flat_map(|d| d.1).collect()
}

/// Writes bytes to stdout; a reader that went away (`gpassk … | head`) is not an error: the
/// command's files are written, and nobody is left to read the rest.
pub fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The width human tables must fit: `COLUMNS` when set, else the terminal's, else 80.
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c >= 20)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .unwrap_or(80)
}

/// A stop request passed into long-running work (mini-redis style): the command layer triggers it on
/// a signal; samplers and the judge stop queueing work and wind down when it fires.
#[derive(Clone)]
pub struct Shutdown {
    tx: Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
    /// What must still happen when a second signal quits at once (the manifest says so).
    last_words: Arc<std::sync::Mutex<Option<LastWords>>>,
}

type LastWords = Box<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        let (tx, rx) = watch::channel(false);
        Shutdown {
            tx: Arc::new(tx),
            rx,
            last_words: Arc::default(),
        }
    }

    /// Sets what [`Shutdown::quit_now`] does before the process ends (replacing any earlier).
    pub fn on_quit_now(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.last_words.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// Runs the last words set by [`Shutdown::on_quit_now`]; the caller then exits.
    pub fn quit_now(&self) {
        if let Some(f) = &*self.last_words.lock().unwrap_or_else(|p| p.into_inner()) {
            f();
        }
    }

    /// Asks everything holding a clone to stop.
    pub fn trigger(&self) {
        let _ = self.tx.send(true);
    }

    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    /// Completes once the stop is requested.
    pub async fn triggered(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stays whole);
/// continuation lines start with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    // True while the line holds nothing but its indent.
    let mut fresh = true;
    for word in text.split(' ') {
        if !fresh && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    lines.push(line);
    lines.join("\n")
}

/// A shell command in lines of at most `width` characters for a person to copy: broken at
/// spaces, each line but the last ending in ` \` so the shell reads one command; an argument
/// longer than a line (a path) stays whole on a line of its own. Continuation lines start with
/// `indent`.
pub fn wrap_command(command: &str, width: usize, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    // The command's own indent is kept.
    let mut line: String = command.chars().take_while(|c| *c == ' ').collect();
    for word in command.split(' ').filter(|w| !w.is_empty()) {
        let room = width.saturating_sub(2);
        if !line.trim().is_empty() && line.chars().count() + 1 + word.chars().count() > room {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
        } else if !line.is_empty() && !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines.join(" \\\n")
}

/// `text` in at most `max` characters, cut at a word boundary with `…` when longer: a server's
/// message is bounded, never cut mid-word (one word longer than `max` alone is cut inside it).
pub fn clip_words(text: &str, max: usize) -> Cow<'_, str> {
    if text.chars().count() <= max {
        return Cow::Borrowed(text);
    }
    let room = max.saturating_sub(1);
    let end = text.char_indices().nth(room).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    // Cut at the last space when the cut fell inside a word (the next character is not a space).
    let inside = !text[end..].starts_with(char::is_whitespace);
    let head = match head.rfind(char::is_whitespace) {
        Some(i) if inside && i > 0 => &head[..i],
        _ => head,
    };
    Cow::Owned(format!("{}…", head.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_breaks_at_spaces_and_reads_as_one_command() {
        let cmd =
            "gpassk run --config config.toml --resume /tmp/live/results/20261205T180147Z-e4743fb7";
        let wrapped = wrap_command(cmd, 60, "    ");
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 60),
            "{wrapped}"
        );
        assert!(
            wrapped.contains("/tmp/live/results/20261205T180147Z-e4743fb7"),
            "{wrapped}"
        );
        // The shell joins the lines back into the command.
        let joined = wrapped.replace(" \\\n    ", " ");
        assert_eq!(joined, cmd);
        assert_eq!(wrap_command(cmd, 200, "    "), cmd);
        assert_eq!(wrap_command("  gpassk run", 80, "    "), "  gpassk run");
        // A path longer than the line stays whole, on a line of its own.
        let long = format!("gpassk run --resume /{}", "x".repeat(90));
        let wrapped = wrap_command(&long, 40, "  ");
        let lines: Vec<&str> = wrapped.lines().collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[1].trim_start().starts_with('/'));
    }

    #[test]
    fn clipped_text_ends_at_a_word_boundary() {
        assert_eq!(
            clip_words("an illegal memory access", 30),
            "an illegal memory access"
        );
        assert_eq!(
            clip_words("an illegal memory access", 20),
            "an illegal memory…"
        );
        assert_eq!(
            clip_words("an illegal memory access", 18),
            "an illegal memory…"
        );
        assert_eq!(clip_words("an illegal memory access", 11), "an illegal…");
        assert_eq!(clip_words("aaaaaaaaaaaa", 5), "aaaa…");
        assert_eq!(clip_words("é é é é", 4).chars().count(), 4);
    }

    #[test]
    fn short_never_splits_a_character() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("ééééééééééééééé"), "éééééééééééé");
        assert_eq!(short("abc"), "abc");
        assert_eq!(hex(&[0, 15, 255]), "000fff");
    }

    #[test]
    fn par_map_keeps_input_order() {
        let items: Vec<u64> = (0..1000).collect();
        assert_eq!(
            par_map(&items, |x| x * 2),
            items.iter().map(|x| x * 2).collect::<Vec<_>>()
        );
        // Few uneven items, one by one: the first is the slowest and still comes first.
        let few: Vec<u64> = vec![3, 0, 1, 2, 0];
        let slow = |x: &u64| {
            std::thread::sleep(std::time::Duration::from_millis(5 * x));
            x + 1
        };
        assert_eq!(par_map_from(&few, 1, slow), vec![4, 1, 2, 3, 1]);
        assert_eq!(par_map_from(&[] as &[u64], 1, slow), Vec::<u64>::new());
    }

    #[test]
    fn path_names_never_leave_their_folder() {
        for good in ["gpt-4o", "m+mcts", "Qwen2.5-7B", "-x", "a..b"] {
            assert_eq!(path_name_problem(good), None, "{good}");
            assert_eq!(path_component(good), good);
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "é",
            &"x".repeat(101),
        ] {
            assert!(path_name_problem(bad).is_some(), "{bad:?}");
            let c = path_component(bad);
            assert!(path_name_problem(&c).is_none(), "{bad:?} → {c}");
        }
        assert_ne!(path_component("a/b"), path_component("a_b"));
    }

    #[test]
    fn shell_quote_neutralises_substitutions_and_quotes() {
        assert_eq!(shell_quote("results/2026-x"), "results/2026-x");
        assert_eq!(shell_quote("a $(rm -rf ~)"), "'a $(rm -rf ~)'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn printable_escapes_every_control_character() {
        assert_eq!(printable("plain é text"), "plain é text");
        assert_eq!(
            printable("a\x1b[2Jb\r\nerror: forged\u{202e}"),
            "a\\u{1b}[2Jb\\u{d}\\u{a}error: forged\\u{202e}"
        );
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
    }

    #[test]
    fn coarse_note_names_every_model_once() {
        let note = coarse_k_note(16, &[("a", 16), ("b", 48), ("c", 20)]).unwrap();
        assert!(note.contains("a, c"), "{note}");
        let all = coarse_k_note(16, &[("a", 16), ("b", 16)]).unwrap();
        assert!(all.contains("for every model:"), "{all}");
        assert!(coarse_k_note(4, &[("a", 16)]).is_none());
    }

    #[test]
    fn atomic_write_leaves_no_temporary_file_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        std::fs::create_dir(&target).unwrap();
        // Renaming a file over a directory fails after the temporary file was written.
        assert!(write_atomic(&target, b"x").is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
