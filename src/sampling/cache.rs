//! The request cache of tree searches: every paid reply, keyed by its search and canonical request,
//! appended to `cache/<model>.jsonl` so an interrupted search resumes by replay without paying twice.

use crate::client::Usage;
use crate::rundir::record::{read_lines, CheckpointError, CheckpointWriter};
use crate::util::Notes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

/// What a search needs of a reply: chat texts or a pooling reply, and its usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cached {
    #[serde(default)]
    pub texts: Vec<String>,
    #[serde(default)]
    pub value: Option<serde_json::Value>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub served_model: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Line {
    /// The search: `<problem id>#<search index>`.
    unit: String,
    key: String,
    reply: Cached,
}

/// The replies of unfinished searches (finished ones are never replayed, so they are not loaded).
pub struct RequestCache {
    /// Search → request key → reply.
    map: Mutex<HashMap<String, HashMap<String, Cached>>>,
    writer: CheckpointWriter,
}

/// The cache key of a request: sha256 of its URL and body bytes.
pub fn request_key(url: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(url.as_bytes());
    h.update(b"\n");
    h.update(body);
    crate::util::hex(&h.finalize())
}

impl RequestCache {
    /// Loads the replies of the searches not in `finished`; a torn last line is cut off.
    pub fn open(
        path: &Path,
        finished: &HashSet<String>,
        notes: &Notes,
    ) -> Result<RequestCache, CheckpointError> {
        // Opening the writer first cuts a torn last line, so appends never follow half a line.
        let writer = CheckpointWriter::open(path, notes)?;
        let mut map: HashMap<String, HashMap<String, Cached>> = HashMap::new();
        read_lines(path, |l: Line| {
            if !finished.contains(&l.unit) {
                map.entry(l.unit).or_default().insert(l.key, l.reply);
            }
            Ok(())
        })?;
        Ok(RequestCache {
            map: Mutex::new(map),
            writer,
        })
    }

    pub fn get(&self, unit: &str, key: &str) -> Option<Cached> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(unit)?.get(key).cloned()
    }

    /// Appends a paid reply (one whole line) before the search goes on with it.
    pub fn put(&self, unit: &str, key: &str, reply: &Cached) -> Result<(), CheckpointError> {
        let line = Line {
            unit: unit.to_string(),
            key: key.to_string(),
            reply: reply.clone(),
        };
        self.writer.append_value(&line)
    }

    /// Drops a finished search's replies from memory.
    pub fn forget(&self, unit: &str) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(unit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_survive_a_reopen_and_finished_searches_are_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::rundir::RunDir::at(dir.path()).cache("m");
        let c = RequestCache::open(&path, &HashSet::new(), &Notes::default()).unwrap();
        let reply = Cached {
            texts: vec!["x = 1".into()],
            ..Cached::default()
        };
        let k = request_key("http://h/v1/chat/completions", b"{}");
        assert_ne!(k, request_key("http://h/pooling", b"{}"));
        c.put("0#0", &k, &reply).unwrap();
        c.put("0#1", &k, &reply).unwrap();
        drop(c);
        // A torn last line (a crash mid-write) is cut off, not an error.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"unit\":\"0#2\",\"ke")
            .unwrap();
        let again = RequestCache::open(
            &path,
            &HashSet::from(["0#1".to_string()]),
            &Notes::default(),
        )
        .unwrap();
        assert_eq!(again.get("0#0", &k), Some(reply));
        assert_eq!(again.get("0#1", &k), None);
        again.forget("0#0");
        assert_eq!(again.get("0#0", &k), None);
        again.put("0#3", &k, &Cached::default()).unwrap();
        drop(again);
        let third = RequestCache::open(&path, &HashSet::new(), &Notes::default()).unwrap();
        assert_eq!(third.get("0#3", &k), Some(Cached::default()));
    }
}
