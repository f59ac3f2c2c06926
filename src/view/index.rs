//! The byte offsets of each problem's lines in one checkpoint file: built on first use, extended
//! from where it stopped when the file grows (checkpoints are append-only), rebuilt when it
//! shrinks; a problem's records are then read by seeking, never by scanning the file again.

use crate::rundir::record::Record;
use crate::util::MAX_LINE;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: the line at byte {at}: {source}", path.display())]
    Line {
        path: PathBuf,
        at: u64,
        source: serde_json::Error,
    },
}

/// A file's size and modification time: when both are unchanged, nothing was appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stamp {
    pub len: u64,
    pub mtime: Option<SystemTime>,
}

impl Stamp {
    /// The stamp of `path`, or the default (empty) when it does not exist.
    pub fn of(path: &Path) -> Stamp {
        std::fs::metadata(path).map_or_else(
            |_| Stamp::default(),
            |m| Stamp {
                len: m.len(),
                mtime: m.modified().ok(),
            },
        )
    }
}

/// One checkpoint's line offsets by problem id.
#[derive(Debug, Default)]
pub struct LineIndex {
    /// The file as last indexed.
    stamp: Stamp,
    /// Where the first line not yet indexed starts (after the last complete line).
    end: u64,
    lines: HashMap<Box<str>, Vec<u64>>,
    count: u64,
    /// Where the first complete line that names no problem starts (scoring refuses such a file).
    unreadable: Option<u64>,
}

impl LineIndex {
    /// Brings the index up to date with `path`: reads only what was appended since.
    pub fn refresh(&mut self, path: &Path) -> Result<(), IndexError> {
        let now = Stamp::of(path);
        if now == self.stamp {
            return Ok(());
        }
        if now.len < self.end {
            *self = LineIndex::default();
        }
        let io = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        if now.len == 0 {
            self.stamp = now;
            return Ok(());
        }
        let mut file = File::open(path).map_err(io)?;
        file.seek(SeekFrom::Start(self.end)).map_err(io)?;
        self.scan(BufReader::with_capacity(1 << 20, file))
            .map_err(io)?;
        self.stamp = now;
        Ok(())
    }

    fn scan(&mut self, mut reader: impl BufRead) -> std::io::Result<()> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut line)?;
            if read == 0 || line.last() != Some(&b'\n') {
                // End of file or a line still being written: indexed when it is complete.
                return Ok(());
            }
            match problem_id(&line) {
                Some(id) => {
                    self.lines.entry(id.into()).or_default().push(self.end);
                    self.count += 1;
                }
                None if !line.trim_ascii().is_empty() => {
                    self.unreadable.get_or_insert(self.end);
                }
                None => {}
            }
            self.end += read as u64;
        }
    }

    /// What the index holds in memory, estimated: each problem's id and offsets.
    pub fn bytes(&self) -> u64 {
        let per_problem = |(id, at): (&str, &Vec<u64>)| id.len() + 64 + 8 * at.capacity();
        let bytes: usize = (self.lines.iter())
            .map(|(id, at)| per_problem((id, at)))
            .sum();
        bytes as u64
    }

    /// Complete lines indexed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Where the indexed lines end: the next line to index starts there.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Where the first line that names no problem starts, if any line does.
    pub fn unreadable(&self) -> Option<u64> {
        self.unreadable
    }

    /// The problems with a line starting at or after byte `from`.
    pub fn problems_since(&self, from: u64) -> Vec<&str> {
        (self.lines.iter())
            .filter(|(_, at)| at.last().is_some_and(|&a| a >= from))
            .map(|(id, _)| &**id)
            .collect()
    }

    /// The records of one problem, in file order; unreadable lines are skipped.
    pub fn records(&self, path: &Path, problem_id: &str) -> Result<Vec<Record>, IndexError> {
        let mut out = Vec::new();
        self.lines_of(path, problem_id, |_, line| {
            if let Ok(r) = serde_json::from_slice::<Record>(line) {
                out.push(r);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The records of one problem read as `T`, in file order; an unreadable line is an error.
    pub fn records_as<T: serde::de::DeserializeOwned>(
        &self,
        path: &Path,
        problem_id: &str,
    ) -> Result<Vec<T>, IndexError> {
        let mut out = Vec::new();
        self.lines_of(path, problem_id, |at, line| {
            let r = serde_json::from_slice::<T>(line).map_err(|source| IndexError::Line {
                path: path.to_path_buf(),
                at,
                source,
            })?;
            out.push(r);
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `each(offset, line)` for every line of one problem, in file order.
    fn lines_of(
        &self,
        path: &Path,
        problem_id: &str,
        mut each: impl FnMut(u64, &[u8]) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        let Some(offsets) = self.lines.get(problem_id) else {
            return Ok(());
        };
        let io = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut line = Vec::new();
        for &at in offsets {
            reader.seek(SeekFrom::Start(at)).map_err(io)?;
            line.clear();
            (&mut reader)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut line)
                .map_err(io)?;
            each(at, &line)?;
        }
        Ok(())
    }
}

/// The top-level `problem_id` of a checkpoint line. Fast path: the key as written, its value
/// without escapes (a quote inside a JSON string is always escaped, so the key cannot be
/// mistaken); anything else is parsed properly.
fn problem_id(line: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"problem_id\":";
    if let Some(at) = memchr::memmem::find(line, KEY) {
        let rest = &line[at + KEY.len()..];
        let rest = rest.strip_prefix(b" ").unwrap_or(rest);
        if let Some(value) = rest.strip_prefix(b"\"") {
            if let Some(close) = memchr::memchr2(b'"', b'\\', value) {
                if value[close] == b'"' {
                    return std::str::from_utf8(&value[..close]).ok().map(str::to_owned);
                }
            }
        }
    }
    #[derive(serde::Deserialize)]
    struct Id {
        problem_id: String,
    }
    serde_json::from_slice::<Id>(line)
        .ok()
        .map(|i| i.problem_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_fast_or_parsed_and_nested_keys_are_not_taken() {
        assert_eq!(
            problem_id(br#"{"problem_id":"p1","x":1}"#).as_deref(),
            Some("p1")
        );
        assert_eq!(
            problem_id(br#"{"a":"\"problem_id\":\"no\"","problem_id":"a\"b"}"#).as_deref(),
            Some("a\"b")
        );
        assert_eq!(problem_id(b"{\"x\":1}"), None);
    }

    #[test]
    fn the_index_grows_with_the_file_and_skips_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "{\"problem_id\":\"a\"}\n{\"problem_id\":\"b\"").unwrap();
        let mut index = LineIndex::default();
        index.refresh(&path).unwrap();
        assert_eq!(index.count(), 1);
        std::fs::write(
            &path,
            "{\"problem_id\":\"a\"}\n{\"problem_id\":\"b\"}\n{\"problem_id\":\"a\"}\n",
        )
        .unwrap();
        index.refresh(&path).unwrap();
        assert_eq!(index.count(), 3);
        assert_eq!(index.lines["a"], vec![0, 38]);
        std::fs::write(&path, "{\"problem_id\":\"c\"}\n").unwrap();
        index.refresh(&path).unwrap();
        assert_eq!(index.count(), 1, "a shorter file is indexed afresh");
    }
}
