//! Per-model append-only JSONL checkpoints, torn-line recovery, and the run manifest.

use crate::client::Usage;
use crate::error::BadInput;
use crate::util::Notes;
use crate::util::{Lines, MAX_LINE};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Bad input (exit 2): its source is the [`BadInput`] that says so.
    #[error("{path}:{line}: corrupt checkpoint line: {source}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        source: BadInput,
    },
}

/// A sample's position: an index in 0..n, or the greedy (temperature 0) answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SampleIndex {
    Sample(u32),
    Greedy,
}

impl SampleIndex {
    /// A compact key for resume sets: samples as themselves, greedy as -1.
    pub fn key(self) -> i64 {
        match self {
            SampleIndex::Sample(i) => i as i64,
            SampleIndex::Greedy => -1,
        }
    }

    /// Its place among a problem's `n` planned samples and greedy answer (greedy after the
    /// samples), or None when the plan has no such unit.
    pub fn slot(self, n: u32, greedy: bool) -> Option<usize> {
        match self {
            SampleIndex::Sample(i) if i < n => Some(i as usize),
            SampleIndex::Greedy if greedy => Some(n as usize),
            _ => None,
        }
    }
}

impl std::fmt::Display for SampleIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleIndex::Sample(i) => write!(f, "{i}"),
            SampleIndex::Greedy => f.write_str("greedy"),
        }
    }
}

impl Serialize for SampleIndex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SampleIndex::Sample(i) => s.serialize_u32(*i),
            SampleIndex::Greedy => s.serialize_str("greedy"),
        }
    }
}

impl<'de> Deserialize<'de> for SampleIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            N(u32),
            S(String),
        }
        match Wire::deserialize(d)? {
            Wire::N(i) => Ok(SampleIndex::Sample(i)),
            Wire::S(s) if s == "greedy" => Ok(SampleIndex::Greedy),
            Wire::S(s) => Err(serde::de::Error::custom(format!(
                "sample_index {s:?} is neither an integer nor \"greedy\""
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitOutcome {
    Ok,
    Truncated,
    ApiError,
}

/// One finished unit of work, as written to `checkpoints/<model>.jsonl`: the one schema of a
/// checkpoint line, for writing and for every read. Its texts are held as one of three types, by
/// who reads them:
/// - `H`, the head (`problem_id`, `served_model`, `system_fingerprint`, `error`): resuming,
///   counting, billing and scoring;
/// - `A`, the answer (`response`, `extracted`, `response_sha256`): scoring too;
/// - `R`, the rest: only a full read.
///
/// `Record` owns its texts; [`RecordRef`] borrows them to write a line without copying;
/// [`RecordHead`] and [`RecordAnswer`] are partial reads that [`Skip`] what they do not need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record<H = String, A = H, R = A> {
    pub run_id: R,
    pub model: R,
    pub model_id: R,
    pub served_model: Option<H>,
    pub system_fingerprint: Option<H>,
    pub problem_id: H,
    pub sample_index: SampleIndex,
    pub seed: Option<u64>,
    /// None on imported samples whose source did not record it.
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub prompt_hash: R,
    pub response: Option<A>,
    /// With `save_raw_responses = false`: the answer extracted at run time instead of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted: Option<A>,
    /// With `save_raw_responses = false`: sha256 of the response, hex (kept with the answer:
    /// `store push --samples` names the response by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_sha256: Option<A>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<R>,
    pub finish_reason: Option<R>,
    pub usage: Option<Usage>,
    /// Choices returned by the request this sample came from (usage covers them all).
    #[serde(default = "one")]
    pub choices_in_request: u32,
    pub latency_ms: u64,
    /// Streamed requests: milliseconds from sending to the first text (reasoning or answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    /// Streamed requests: completion tokens per second after the first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    pub started_at: R,
    pub finished_at: R,
    pub attempts: u32,
    /// Failed attempts of this request that the server may have billed (timeouts, cut streams):
    /// a budget counts each at its worst case when the run resumes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub billable_failures: u32,
    pub outcome: UnitOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<R>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<H>,
    /// A tree search's unit (`strategy = "mcts"`): its answer path and statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchRecord<R>>,
    /// An imported sample (`gpassk import`): where it was read and the source's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<super::provenance::SourceRef<R>>,
}

/// A record borrowed from the runner's state: the same line, written without copying its texts.
pub type RecordRef<'a> = Record<&'a str>;

/// The part of a record that resuming, counting and billing read: the answer and the rest are
/// skipped unkept.
pub type RecordHead = Record<String, Skip, Skip>;

/// The part of a record that scoring reads: the head and the answer.
pub type RecordAnswer = Record<String, String, Skip>;

/// A text that a partial read does not keep: read over as JSON (any value), never allocated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Skip)
    }
}

/// A search's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchStats {
    pub simulations: u32,
    pub policy_calls: u64,
    pub reward_calls: u64,
    /// Policy tokens, when every reply said.
    pub tokens: Option<u64>,
    pub code_executions: u64,
    /// Steps whose code failed or timed out (or that were empty).
    pub dead_steps: u64,
    /// Steps the policy proposed (every node but the root).
    #[serde(default)]
    pub steps: u64,
    pub reward_parse_failures: u64,
    /// Answer steps whose value could not be computed (no score), so nothing was propagated.
    pub unvalued_terminals: u64,
    /// `max_calls_per_search` stopped the search.
    pub cap_hit: bool,
    /// A model call failed for good; the search stopped there.
    pub failed: Option<String>,
    /// Calls answered from the request cache (a resumed search replaying what it had paid for).
    #[serde(default)]
    pub replayed_calls: u64,
}

impl SearchStats {
    pub fn calls(&self) -> u64 {
        self.policy_calls + self.reward_calls
    }
}

/// What a checkpoint line of a search holds beyond a sample's fields; its texts are held as the
/// rest of its [`Record`]'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchRecord<T = String> {
    /// The chosen answer (None: no answer step was reached).
    pub answer: Option<T>,
    /// The chosen answer's steps, root first.
    pub path: Vec<T>,
    /// The tree's file, relative to the run directory.
    pub tree: T,
    pub stats: SearchStats,
}

fn one() -> u32 {
    1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl<H, A, R> Record<H, A, R> {
    /// A sample that can be graded (an API error cannot).
    pub fn usable(&self) -> bool {
        self.outcome != UnitOutcome::ApiError
    }
}

/// Appends records as JSON lines. Lines that arrive while another thread is writing are queued
/// and written by that thread right after its own (group commit): one `write` per batch of lines,
/// each line whole, so a crash tears at most the last line.
pub struct CheckpointWriter {
    path: PathBuf,
    /// The file, and the buffer of the batch last written (kept for its capacity: swapped with
    /// `queued` on each write, so lines are serialized into memory already allocated).
    file: Mutex<(File, Vec<u8>)>,
    queued: Mutex<Vec<u8>>,
}

/// Above this capacity a written batch's buffer is freed rather than kept.
const KEEP_BATCH_CAPACITY: usize = 1 << 20;

impl CheckpointWriter {
    /// Opens for appending, first cutting off a torn last line left by a crash.
    /// The cut is told to `notes`.
    pub fn open(path: &Path, notes: &Notes) -> Result<CheckpointWriter, CheckpointError> {
        let io = |source| CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let keep = complete_prefix_len(&mut file, len).map_err(io)?;
        if keep < len {
            file.set_len(keep).map_err(io)?;
            notes.note(&format!(
                "{}: dropped a torn last line ({} bytes) left by an interrupted write; its units are requested again",
                path.display(),
                len - keep
            ));
        }
        Ok(CheckpointWriter {
            path: path.to_path_buf(),
            file: Mutex::new((file, Vec::new())),
            queued: Mutex::new(Vec::new()),
        })
    }

    /// Appends one checkpoint line.
    pub fn append<T: Serialize>(&self, record: &Record<T>) -> Result<(), CheckpointError> {
        self.append_value(record)
    }

    /// Appends any serializable value as one JSON line.
    pub fn append_value<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), CheckpointError> {
        {
            let mut q = self.queued.lock().unwrap_or_else(|p| p.into_inner());
            let start = q.len();
            if let Err(e) = serde_json::to_writer(&mut *q, value) {
                q.truncate(start);
                return Err(self.io(std::io::Error::other(e)));
            }
            q.push(b'\n');
        }
        self.drain(false)
    }

    /// Writes queued lines unless another thread is writing (it will write them). With `wait`, waits
    /// for the file instead, so everything queued so far is written when it returns.
    fn drain(&self, wait: bool) -> Result<(), CheckpointError> {
        loop {
            let mut f = match self.file.try_lock() {
                Ok(f) => f,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if !wait => return Ok(()),
                Err(std::sync::TryLockError::WouldBlock) => {
                    self.file.lock().unwrap_or_else(|p| p.into_inner())
                }
            };
            let (file, batch) = &mut *f;
            batch.clear();
            if batch.capacity() > KEEP_BATCH_CAPACITY {
                *batch = Vec::new();
            }
            std::mem::swap(
                batch,
                &mut *self.queued.lock().unwrap_or_else(|p| p.into_inner()),
            );
            if !batch.is_empty() {
                file.write_all(batch).map_err(|e| self.io(e))?;
            }
            drop(f);
            // A line queued while the file was held, after the take, is ours to write now.
            if self
                .queued
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
            {
                return Ok(());
            }
        }
    }

    fn io(&self, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes everything queued and forces the data to disk (at the end of a run or on shutdown).
    pub fn sync(&self) -> Result<(), CheckpointError> {
        self.drain(true)?;
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.0.sync_data().map_err(|e| self.io(e))
    }
}

/// The length of the file up to and including its last newline.
fn complete_prefix_len(file: &mut File, len: u64) -> std::io::Result<u64> {
    if len == 0 {
        return Ok(0);
    }
    let mut pos = len;
    let mut buf = [0u8; 4096];
    while pos > 0 {
        let start = pos.saturating_sub(buf.len() as u64);
        let n = (pos - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        std::io::Read::read_exact(file, &mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        pos = start;
    }
    Ok(0)
}

/// Reads a checkpoint record by record. A last line without its newline (a torn write) is skipped;
/// any other unreadable line is an error naming the file and line. (A partial read passes
/// [`RecordHead`] or [`RecordAnswer`] to [`read_lines`].)
pub fn read_records(
    path: &Path,
    each: impl FnMut(Record) -> Result<(), CheckpointError>,
) -> Result<ReadStats, CheckpointError> {
    read_lines(path, each)
}

/// Reads any JSON Lines file of `T` with the checkpoint rules: a torn last line is skipped, any other
/// bad line is an error naming the file and line; a missing file reads as empty.
pub fn read_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(T) -> Result<(), CheckpointError>,
) -> Result<ReadStats, CheckpointError> {
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut lines = match Lines::open(path, MAX_LINE) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReadStats::default()),
        Err(e) => return Err(io(e)),
    };
    let mut buf = Vec::new();
    let mut stats = ReadStats::default();
    while let Some(line_no) = lines.next_into(&mut buf).map_err(io)? {
        if buf.last() != Some(&b'\n') {
            stats.torn_tail = true;
            break;
        }
        let Some(rec) = decode_line(path, line_no, &buf[..buf.len() - 1])? else {
            continue;
        };
        stats.records += 1;
        each(rec)?;
    }
    Ok(stats)
}

/// The `spend` of a judge verdict or verifier score line (the rest of the line is not read).
#[derive(Deserialize)]
struct SpendLine {
    #[serde(default)]
    spend: Option<crate::cost::Spend>,
}

/// Calls `each` with the `spend` of every line of these judge verdict or verifier score files
/// (a missing file reads as empty); lines stored before calls were priced carry none.
pub fn read_spends(
    paths: &[PathBuf],
    mut each: impl FnMut(crate::cost::Spend),
) -> Result<(), CheckpointError> {
    for path in paths {
        read_lines(path, |l: SpendLine| {
            l.spend.map(&mut each);
            Ok(())
        })?;
    }
    Ok(())
}

/// One line (without its `\n`) as [`read_lines`] reads it: a blank line is `None`, an unreadable
/// one an error naming the file and line.
fn decode_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    line_no: usize,
    line: &[u8],
) -> Result<Option<T>, CheckpointError> {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    // Checked as UTF-8 once, the line's strings are not checked one by one; a line that is not
    // UTF-8 is decoded from bytes, so its error reads as it always has.
    let decoded = match std::str::from_utf8(line) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(line),
    };
    decoded.map(Some).map_err(|e| CheckpointError::Corrupt {
        path: path.to_path_buf(),
        line: line_no,
        source: BadInput::new(e.to_string()),
    })
}

/// Whole lines of a JSON Lines file, read by [`read_batches`] and not yet decoded.
#[derive(Debug, Default)]
pub struct LineBatch {
    /// The number of its first line in the file.
    first: usize,
    /// Its lines, each ending in `\n`.
    bytes: Vec<u8>,
    /// Where each line ends (after its `\n`): the reader knows, so nobody scans for it again.
    ends: Vec<usize>,
}

impl LineBatch {
    /// Its lines, blank ones included.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Decodes its lines in order as [`read_lines`] does: blank lines skipped, an unreadable one
    /// an error naming `path` (the file it came from) and its line.
    pub fn decode<'a, T: serde::de::DeserializeOwned>(
        &'a self,
        path: &'a Path,
    ) -> impl Iterator<Item = Result<T, CheckpointError>> + 'a {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .enumerate()
            .filter_map(move |(i, (start, &end))| {
                decode_line(path, self.first + i, &self.bytes[start..end - 1]).transpose()
            })
    }
}

/// Reads a JSON Lines file with the rules of [`read_lines`] (a torn last line is skipped, a
/// missing file reads as empty) into batches of whole lines of about `bytes` each, left for the
/// caller to decode, on any thread, with [`LineBatch::decode`]. Stops when `each` breaks.
pub fn read_batches(
    path: &Path,
    bytes: usize,
    mut each: impl FnMut(LineBatch) -> ControlFlow<()>,
) -> Result<(), CheckpointError> {
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut lines = match Lines::open(path, MAX_LINE) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    // Room for the line that crosses `bytes`, so a batch is seldom reallocated.
    let empty = || LineBatch {
        bytes: Vec::with_capacity(bytes + bytes / 4),
        ..LineBatch::default()
    };
    let mut batch = empty();
    while let Some(line_no) = lines.append_next(&mut batch.bytes).map_err(io)? {
        if batch.bytes.last() != Some(&b'\n') {
            batch
                .bytes
                .truncate(batch.ends.last().copied().unwrap_or(0));
            break;
        }
        if batch.ends.is_empty() {
            batch.first = line_no;
        }
        batch.ends.push(batch.bytes.len());
        if batch.bytes.len() >= bytes && each(std::mem::replace(&mut batch, empty())).is_break() {
            return Ok(());
        }
    }
    if !batch.is_empty() {
        let _ = each(batch);
    }
    Ok(())
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    pub records: usize,
    pub torn_tail: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::provenance::SourceRef;
    use crate::util::write_atomic;

    pub(crate) fn record(problem: &str, idx: SampleIndex, outcome: UnitOutcome) -> Record {
        Record {
            run_id: "r".into(),
            model: "m".into(),
            model_id: "m-id".into(),
            served_model: Some("m-served".into()),
            system_fingerprint: None,
            problem_id: problem.into(),
            sample_index: idx,
            seed: Some(1),
            temperature: Some(0.7),
            top_p: Some(1.0),
            max_tokens: None,
            prompt_hash: "h".into(),
            response: Some("\\boxed{1}".into()),
            extracted: None,
            response_sha256: None,
            reasoning_content: None,
            finish_reason: Some("stop".into()),
            usage: None,
            choices_in_request: 1,
            latency_ms: 3,
            ttft_ms: None,
            tokens_per_s: None,
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:00:01Z".into(),
            attempts: 1,
            billable_failures: 0,
            outcome,
            error_class: None,
            error: None,
            search: None,
            source: None,
        }
    }

    /// `r` with each text turned into the type of its kind. The list of fields is exhaustive: a
    /// field added to `Record` does not compile here until it is handled.
    fn view<'a, H, A, R>(
        r: &'a Record,
        h: impl Fn(&'a String) -> H,
        a: impl Fn(&'a String) -> A,
        x: impl Fn(&'a String) -> R,
    ) -> Record<H, A, R> {
        let Record {
            run_id,
            model,
            model_id,
            served_model,
            system_fingerprint,
            problem_id,
            sample_index,
            seed,
            temperature,
            top_p,
            max_tokens,
            prompt_hash,
            response,
            extracted,
            response_sha256,
            reasoning_content,
            finish_reason,
            usage,
            choices_in_request,
            latency_ms,
            ttft_ms,
            tokens_per_s,
            started_at,
            finished_at,
            attempts,
            billable_failures,
            outcome,
            error_class,
            error,
            search,
            source,
        } = r;
        let search = search.as_ref().map(|s| {
            let SearchRecord {
                answer,
                path,
                tree,
                stats,
            } = s;
            SearchRecord {
                answer: answer.as_ref().map(&x),
                path: path.iter().map(&x).collect(),
                tree: x(tree),
                stats: stats.clone(),
            }
        });
        Record {
            run_id: x(run_id),
            model: x(model),
            model_id: x(model_id),
            served_model: served_model.as_ref().map(&h),
            system_fingerprint: system_fingerprint.as_ref().map(&h),
            problem_id: h(problem_id),
            sample_index: *sample_index,
            seed: *seed,
            temperature: *temperature,
            top_p: *top_p,
            max_tokens: *max_tokens,
            prompt_hash: x(prompt_hash),
            response: response.as_ref().map(&a),
            extracted: extracted.as_ref().map(&a),
            response_sha256: response_sha256.as_ref().map(&a),
            reasoning_content: reasoning_content.as_ref().map(&x),
            finish_reason: finish_reason.as_ref().map(&x),
            usage: usage.clone(),
            choices_in_request: *choices_in_request,
            latency_ms: *latency_ms,
            ttft_ms: *ttft_ms,
            tokens_per_s: *tokens_per_s,
            started_at: x(started_at),
            finished_at: x(finished_at),
            attempts: *attempts,
            billable_failures: *billable_failures,
            outcome: *outcome,
            error_class: error_class.as_ref().map(&x),
            error: error.as_ref().map(&h),
            search,
            source: source.as_ref().map(|s| SourceRef {
                file: s.file,
                at: x(&s.at),
                verdict: s.verdict,
                extracted: s.extracted.as_ref().map(&x),
            }),
        }
    }

    /// A line as the first checkpoint format wrote it: none of the fields added since
    /// (`choices_in_request`, `ttft_ms`, `tokens_per_s`, `billable_failures`, `search`,
    /// `extracted`, `response_sha256`).
    const OLD_LINE: &str = r#"{"run_id":"r0","model":"m","model_id":"m-id","served_model":"m-served","system_fingerprint":null,"problem_id":"p1","sample_index":"greedy","seed":null,"temperature":0.0,"top_p":1.0,"max_tokens":null,"prompt_hash":"h","response":"so \\boxed{4}","finish_reason":"stop","usage":{"prompt_tokens":5,"completion_tokens":7},"latency_ms":3,"started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:01Z","attempts":1,"outcome":"ok"}"#;

    #[test]
    fn an_old_format_line_reads_with_the_defaults() {
        let r: Record = serde_json::from_str(OLD_LINE).unwrap();
        assert_eq!(r.sample_index, SampleIndex::Greedy);
        assert_eq!(r.response.as_deref(), Some("so \\boxed{4}"));
        assert_eq!(r.choices_in_request, 1);
        assert_eq!((r.ttft_ms, r.tokens_per_s), (None, None));
        assert_eq!(r.billable_failures, 0);
        assert_eq!((r.extracted, r.response_sha256), (None, None));
        assert!(r.search.is_none() && r.error.is_none() && r.reasoning_content.is_none());
    }

    /// Every field of a line set (none left to its default or skipped), as the writer writes it.
    const FULL_LINE: &str = r#"{"run_id":"run-1","model":"m","model_id":"m-id","served_model":"m-served","system_fingerprint":"fp_1","problem_id":"p\"1","sample_index":3,"seed":7,"temperature":0.7,"top_p":0.95,"max_tokens":64,"prompt_hash":"h","response":"so \\boxed{4}","extracted":"4","response_sha256":"ab12","reasoning_content":"think","finish_reason":"length","usage":{"prompt_tokens":5,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":3}},"choices_in_request":2,"latency_ms":3,"ttft_ms":120,"tokens_per_s":42.5,"started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:01Z","attempts":2,"billable_failures":1,"outcome":"truncated","error_class":"server","error":"server (HTTP 500): boom","search":{"answer":"4","path":["x = 2 + 2\n","\\boxed{4}"],"tree":"trees/m/p/3.json","stats":{"simulations":2,"policy_calls":3,"reward_calls":4,"tokens":9,"code_executions":5,"dead_steps":1,"steps":6,"reward_parse_failures":1,"unvalued_terminals":1,"cap_hit":true,"failed":"x","replayed_calls":2}},"source":{"file":1,"at":"line 12","verdict":true,"extracted":"4"}}"#;

    fn full_search() -> SearchRecord {
        SearchRecord {
            answer: Some("4".into()),
            path: vec!["x = 2 + 2\n".into(), "\\boxed{4}".into()],
            tree: "trees/m/p/3.json".into(),
            stats: SearchStats {
                simulations: 2,
                policy_calls: 3,
                reward_calls: 4,
                tokens: Some(9),
                code_executions: 5,
                dead_steps: 1,
                steps: 6,
                reward_parse_failures: 1,
                unvalued_terminals: 1,
                cap_hit: true,
                failed: Some("x".into()),
                replayed_calls: 2,
            },
        }
    }

    fn full_usage() -> Usage {
        Usage {
            prompt_tokens: Some(5),
            completion_tokens: Some(7),
            prompt_tokens_details: Some(crate::client::TokenDetails {
                cached_tokens: Some(2),
                reasoning_tokens: None,
            }),
            completion_tokens_details: Some(crate::client::TokenDetails {
                cached_tokens: None,
                reasoning_tokens: Some(3),
            }),
        }
    }

    /// A record with every field set: the literal is exhaustive, so a new field does not compile
    /// here until it has a value, and [`FULL_LINE`] then fails until it is written there.
    fn full() -> Record {
        Record {
            run_id: "run-1".into(),
            model: "m".into(),
            model_id: "m-id".into(),
            served_model: Some("m-served".into()),
            system_fingerprint: Some("fp_1".into()),
            problem_id: "p\"1".into(),
            sample_index: SampleIndex::Sample(3),
            seed: Some(7),
            temperature: Some(0.7),
            top_p: Some(0.95),
            max_tokens: Some(64),
            prompt_hash: "h".into(),
            response: Some("so \\boxed{4}".into()),
            extracted: Some("4".into()),
            response_sha256: Some("ab12".into()),
            reasoning_content: Some("think".into()),
            finish_reason: Some("length".into()),
            usage: Some(full_usage()),
            choices_in_request: 2,
            latency_ms: 3,
            ttft_ms: Some(120),
            tokens_per_s: Some(42.5),
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:00:01Z".into(),
            attempts: 2,
            billable_failures: 1,
            outcome: UnitOutcome::Truncated,
            error_class: Some("server".into()),
            error: Some("server (HTTP 500): boom".into()),
            search: Some(full_search()),
            source: Some(SourceRef {
                file: 1,
                at: "line 12".into(),
                verdict: Some(true),
                extracted: Some("4".into()),
            }),
        }
    }

    /// The names of the fields `T` reads, in their order (what its derived `Deserialize` declares).
    fn field_names<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
        use serde::de::{Error, Visitor};
        type E = serde::de::value::Error;
        struct Names(Option<&'static [&'static str]>);
        impl<'de> Deserializer<'de> for &mut Names {
            type Error = E;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, E> {
                Err(E::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, E> {
                self.0 = Some(fields);
                Err(E::custom("names only"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut names = Names(None);
        let _ = T::deserialize(&mut names);
        names.0.expect("a struct")
    }

    #[test]
    fn a_record_with_every_field_set_writes_todays_line_and_reads_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let w = CheckpointWriter::open(&path, &Notes::default()).unwrap();
        let r = full();
        w.append(&r).unwrap();
        let borrowed: RecordRef<'_> = view(&r, String::as_str, String::as_str, String::as_str);
        w.append(&borrowed).unwrap();
        w.sync().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{FULL_LINE}\n{FULL_LINE}\n"));
        let mut back = vec![];
        read_records(&path, |x| {
            back.push(x);
            Ok(())
        })
        .unwrap();
        assert_eq!(back, [r.clone(), r]);
        // Every field is in the line, in declaration order: none was left out as unset.
        assert_eq!(keys_of(FULL_LINE), field_names::<Record>());
        let search = serde_json::to_string(&full_search()).unwrap();
        assert_eq!(keys_of(&search), field_names::<SearchRecord>());
    }

    /// The keys of a JSON object, in the order written.
    fn keys_of(json: &str) -> Vec<String> {
        struct Keys(Vec<String>);
        impl<'de> Deserialize<'de> for Keys {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = Keys;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<M: serde::de::MapAccess<'de>>(
                        self,
                        mut m: M,
                    ) -> Result<Keys, M::Error> {
                        let mut keys = vec![];
                        while let Some((k, _)) = m.next_entry::<String, serde::de::IgnoredAny>()? {
                            keys.push(k);
                        }
                        Ok(Keys(keys))
                    }
                }
                d.deserialize_map(V)
            }
        }
        serde_json::from_str::<Keys>(json).unwrap().0
    }

    #[test]
    fn partial_reads_read_what_the_full_read_reads() {
        let mut failed = record("p2", SampleIndex::Sample(1), UnitOutcome::ApiError);
        failed.error_class = Some("timeout".into());
        failed.error = Some("timeout: no reply in 60 s".into());
        failed.response = None;
        let mut stripped = record("p3", SampleIndex::Greedy, UnitOutcome::Ok);
        stripped.response = None;
        stripped.extracted = Some("12".into());
        stripped.response_sha256 = Some("00ff".into());
        let mut lines = vec![FULL_LINE.to_string(), OLD_LINE.to_string()];
        for r in [
            record("p1", SampleIndex::Sample(0), UnitOutcome::Ok),
            failed,
            stripped,
        ] {
            lines.push(serde_json::to_string(&r).unwrap());
        }
        for line in &lines {
            let full: Record = serde_json::from_str(line).unwrap();
            let head: RecordHead = serde_json::from_str(line).unwrap();
            assert_eq!(
                head,
                view(&full, String::clone, |_| Skip, |_| Skip),
                "{line}"
            );
            let answer: RecordAnswer = serde_json::from_str(line).unwrap();
            assert_eq!(
                answer,
                view(&full, String::clone, String::clone, |_| Skip),
                "{line}"
            );
        }
    }

    #[test]
    fn concurrent_appends_write_every_line_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let w = CheckpointWriter::open(&path, &Notes::default()).unwrap();
        std::thread::scope(|s| {
            for t in 0..4 {
                let w = &w;
                s.spawn(move || {
                    for i in 0..500 {
                        let id = format!("t{t}-{i}");
                        w.append(&record(&id, SampleIndex::Sample(i), UnitOutcome::Ok))
                            .unwrap();
                    }
                });
            }
        });
        w.sync().unwrap();
        let mut ids = std::collections::HashSet::new();
        read_records(&path, |r| {
            ids.insert(r.problem_id);
            Ok(())
        })
        .unwrap();
        assert_eq!(ids.len(), 2000);
    }

    #[test]
    fn sample_index_serializes_as_int_or_greedy() {
        assert_eq!(serde_json::to_string(&SampleIndex::Sample(3)).unwrap(), "3");
        assert_eq!(
            serde_json::to_string(&SampleIndex::Greedy).unwrap(),
            "\"greedy\""
        );
        assert_eq!(
            serde_json::from_str::<SampleIndex>("\"greedy\"").unwrap(),
            SampleIndex::Greedy
        );
        assert!(serde_json::from_str::<SampleIndex>("\"best\"").is_err());
    }

    #[test]
    fn torn_last_line_is_skipped_then_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let w = CheckpointWriter::open(&path, &Notes::default()).unwrap();
        w.append(&record("p1", SampleIndex::Sample(0), UnitOutcome::Ok))
            .unwrap();
        w.append(&record("p1", SampleIndex::Sample(1), UnitOutcome::Ok))
            .unwrap();
        drop(w);
        // Simulate a crash mid-write.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"run_id\":\"r\",\"mod").unwrap();
        drop(f);
        let mut seen = vec![];
        let stats = read_records(&path, |r| {
            seen.push(r.sample_index);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            stats,
            ReadStats {
                records: 2,
                torn_tail: true
            }
        );
        let w = CheckpointWriter::open(&path, &Notes::default()).unwrap();
        w.append(&record("p1", SampleIndex::Greedy, UnitOutcome::Ok))
            .unwrap();
        let mut after = vec![];
        let stats = read_records(&path, |r| {
            after.push(r.sample_index);
            Ok(())
        })
        .unwrap();
        assert!(!stats.torn_tail);
        assert_eq!(
            after,
            vec![
                SampleIndex::Sample(0),
                SampleIndex::Sample(1),
                SampleIndex::Greedy
            ]
        );
    }

    #[test]
    fn corrupt_middle_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let good =
            serde_json::to_string(&record("p", SampleIndex::Sample(0), UnitOutcome::Ok)).unwrap();
        std::fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
        let err = read_records(&path, |_| Ok(())).unwrap_err().to_string();
        assert!(err.contains("m.jsonl:2:"), "{err}");
    }

    #[test]
    fn a_line_that_is_not_utf8_reads_as_the_same_error_as_before() {
        let line = b"{\"run_id\":\"\xff\"}";
        let from_bytes = serde_json::from_slice::<Record>(line).unwrap_err();
        let got = decode_line::<Record>(Path::new("m.jsonl"), 3, line).unwrap_err();
        let want = format!("m.jsonl:3: corrupt checkpoint line: {from_bytes}");
        assert_eq!(got.to_string(), want);
    }

    #[test]
    fn line_batches_keep_the_rules_of_read_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.jsonl");
        // Line 2 is blank, line 4 corrupt, line 6 torn; a batch closes once it holds 4 bytes.
        std::fs::write(&path, "1\n\n2\nx\n3\n4").unwrap();
        let mut batches = Vec::new();
        read_batches(&path, 4, |b| {
            let lines: Vec<_> = b
                .decode::<u32>(&path)
                .map(|r| r.map_err(|e| e.to_string()))
                .collect();
            batches.push((b.len(), lines));
            ControlFlow::Continue(())
        })
        .unwrap();
        let corrupt = batches[1].1[0].clone().unwrap_err();
        assert!(
            corrupt.contains("n.jsonl:4: corrupt checkpoint line"),
            "{corrupt}"
        );
        assert_eq!(
            batches,
            [(3, vec![Ok(1), Ok(2)]), (2, vec![Err(corrupt), Ok(3)])]
        );
        // Reading stops when asked; a missing file has no batch.
        let mut seen = 0;
        read_batches(&path, 1, |_| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(seen, 1);
        read_batches(&dir.path().join("none.jsonl"), 1, |_| panic!("no batch")).unwrap();
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
