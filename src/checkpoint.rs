//! Per-model append-only JSONL checkpoints, torn-line recovery, and the run manifest.

use crate::client::Usage;
use crate::error::BadInput;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
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

/// One finished unit of work, as written to `checkpoints/<model>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub run_id: String,
    pub model: String,
    pub model_id: String,
    pub served_model: Option<String>,
    pub system_fingerprint: Option<String>,
    pub problem_id: String,
    pub sample_index: SampleIndex,
    pub seed: Option<u64>,
    pub temperature: f64,
    pub top_p: f64,
    pub max_tokens: Option<u32>,
    pub prompt_hash: String,
    pub response: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// Choices returned by the request this sample came from (usage covers them all).
    #[serde(default = "one")]
    pub choices_in_request: u32,
    pub latency_ms: u64,
    pub started_at: String,
    pub finished_at: String,
    pub attempts: u32,
    pub outcome: UnitOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn one() -> u32 {
    1
}

impl Record {
    /// A sample that can be graded (an API error cannot).
    pub fn usable(&self) -> bool {
        self.outcome != UnitOutcome::ApiError
    }
}

/// Appends records, one `write` per line so a crash tears at most the last line.
pub struct CheckpointWriter {
    path: PathBuf,
    file: Mutex<File>,
}

impl CheckpointWriter {
    /// Opens for appending, first cutting off a torn last line left by a crash.
    pub fn open(path: &Path) -> Result<CheckpointWriter, CheckpointError> {
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
        }
        Ok(CheckpointWriter {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    pub fn append(&self, record: &Record) -> Result<(), CheckpointError> {
        self.append_value(record)
    }

    /// Appends any serializable value as one JSON line.
    pub fn append_value<T: Serialize>(&self, value: &T) -> Result<(), CheckpointError> {
        let mut line = serde_json::to_vec(value).map_err(|e| CheckpointError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(&line).map_err(|source| CheckpointError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Forces the data to disk (at the end of a run or on shutdown).
    pub fn sync(&self) -> Result<(), CheckpointError> {
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.sync_data().map_err(|source| CheckpointError::Io {
            path: self.path.clone(),
            source,
        })
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
/// any other unreadable line is an error naming the file and line.
pub fn read_records(
    path: &Path,
    each: impl FnMut(Record) -> Result<(), CheckpointError>,
) -> Result<ReadStats, CheckpointError> {
    read_lines(path, each)
}

/// The fields of a record that resuming and counting need; the rest of each line is skipped unparsed.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordHead {
    pub problem_id: String,
    pub sample_index: SampleIndex,
    pub outcome: UnitOutcome,
    #[serde(default)]
    pub served_model: Option<String>,
    #[serde(default)]
    pub system_fingerprint: Option<String>,
}

impl RecordHead {
    pub fn usable(&self) -> bool {
        self.outcome != UnitOutcome::ApiError
    }
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
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReadStats::default()),
        Err(e) => return Err(io(e)),
    };
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let mut stats = ReadStats::default();
    let mut line_no = 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if buf.last() != Some(&b'\n') {
            stats.torn_tail = true;
            break;
        }
        let line = &buf[..buf.len() - 1];
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let rec: T = serde_json::from_slice(line).map_err(|e| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            line: line_no,
            source: BadInput::new(e.to_string()),
        })?;
        stats.records += 1;
        each(rec)?;
    }
    Ok(stats)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    pub records: usize,
    pub torn_tail: bool,
}

/// Where a model's checkpoint lives inside a run directory.
pub fn checkpoint_path(run_dir: &Path, model: &str) -> PathBuf {
    run_dir.join("checkpoints").join(format!("{model}.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;
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
            temperature: 0.7,
            top_p: 1.0,
            max_tokens: None,
            prompt_hash: "h".into(),
            response: Some("\\boxed{1}".into()),
            reasoning_content: None,
            finish_reason: Some("stop".into()),
            usage: None,
            choices_in_request: 1,
            latency_ms: 3,
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:00:01Z".into(),
            attempts: 1,
            outcome,
            error_class: None,
            error: None,
        }
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
        let w = CheckpointWriter::open(&path).unwrap();
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
        let w = CheckpointWriter::open(&path).unwrap();
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
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
