//! The start of an append-only file as it was read: its length (at a line end) and a hash of
//! blocks spread over it (its first and last bytes among them), so a later reader can tell whether
//! the file has only grown since, and from where, without reading it all again. An edit inside the
//! file that keeps its length and misses every block is not seen: checkpoints are only appended to.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The blocks a prefix's hash covers, and their size: enough to tell a rewritten file from one
/// that was appended to, cheap to read again (64 KiB at most).
const BLOCKS: u64 = 16;
const BLOCK: u64 = 4096;

/// The first `bytes` bytes of a file, ending after a newline (or empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix {
    pub bytes: u64,
    /// sha256 (hex) of 16 blocks of 4 KiB evenly spread over the prefix, the
    /// first at its start and the last ending at its end (all of it when it is shorter).
    pub blocks: String,
}

impl Prefix {
    /// The file's complete lines now (a line still being written is left out); a missing file
    /// is the empty prefix.
    pub fn of(path: &Path) -> std::io::Result<Prefix> {
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Prefix::empty()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let end = last_line_end(&mut file, len)?;
        Prefix::read(&mut file, end)
    }

    /// The first `bytes` bytes of `path` (a line end the caller knows).
    pub fn at(path: &Path, bytes: u64) -> std::io::Result<Prefix> {
        if bytes == 0 {
            return Ok(Prefix::empty());
        }
        Prefix::read(&mut File::open(path)?, bytes)
    }

    fn empty() -> Prefix {
        Prefix {
            bytes: 0,
            blocks: super::hex(&<sha2::Sha256 as sha2::Digest>::digest([])),
        }
    }

    fn read(file: &mut File, end: u64) -> std::io::Result<Prefix> {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        let mut buf = vec![0u8; BLOCK as usize];
        let mut done = 0; // blocks may overlap in a short file: each byte is read once
        for i in 0..BLOCKS {
            let start = (end.saturating_sub(BLOCK) * i / (BLOCKS - 1)).max(done);
            let stop = (start + BLOCK).min(end);
            if stop <= start {
                continue;
            }
            let chunk = &mut buf[..(stop - start) as usize];
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(chunk)?;
            h.update(chunk);
            done = stop;
        }
        Ok(Prefix {
            bytes: end,
            blocks: super::hex(&h.finalize()),
        })
    }

    /// Whether `path` still starts with this prefix (it has only been appended to since).
    pub fn holds(&self, path: &Path) -> bool {
        let now = match self.bytes {
            0 => Ok(Prefix::empty()),
            n => File::open(path).and_then(|mut f| Prefix::read(&mut f, n)),
        };
        now.is_ok_and(|p| p == *self)
    }
}

/// Where the file's last complete line ends (0 when it has none).
fn last_line_end(file: &mut File, len: u64) -> std::io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_holds_while_the_file_only_grows_and_leaves_out_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        assert_eq!(Prefix::of(&path).unwrap().bytes, 0, "missing: empty");
        std::fs::write(&path, "a\nbb\ncc").unwrap();
        let p = Prefix::of(&path).unwrap();
        assert_eq!(p.bytes, 5, "the torn line is not in it");
        assert_eq!(p, Prefix::at(&path, 5).unwrap());
        std::fs::write(&path, "a\nbb\ncccc\nd\n").unwrap();
        assert!(p.holds(&path), "appended to");
        assert!(Prefix::of(&dir.path().join("none")).unwrap().holds(&path));
        std::fs::write(&path, "a\nbx\ncccc\nd\n").unwrap();
        assert!(!p.holds(&path), "rewritten");
        std::fs::write(&path, "a\n").unwrap();
        assert!(!p.holds(&path), "shorter");
        // A long file: an edit at its start, in its last bytes or in a sampled block is seen.
        let long = "x".repeat(1_000_000) + "\n";
        std::fs::write(&path, &long).unwrap();
        let p = Prefix::of(&path).unwrap();
        assert_eq!(p.bytes, long.len() as u64);
        let inside = ((long.len() as u64 - BLOCK) * 8 / (BLOCKS - 1)) as usize + 10;
        for at in [0, inside, 999_999] {
            let mut edited = long.clone().into_bytes();
            edited[at] = b'y';
            std::fs::write(&path, &edited).unwrap();
            assert!(!p.holds(&path), "an edit at {at}");
        }
        std::fs::write(&path, long + "more\n").unwrap();
        assert!(p.holds(&path));
    }
}
