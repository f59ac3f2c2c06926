//! The run-directory lock: one process at a time may write a run, held by an OS file lock for the
//! process's life (the kernel drops it when the process dies, even by kill -9).

use crate::error::BadInput;
use crate::util::now_rfc3339;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file inside a run directory; it also names the holder (pid and start time).
pub const LOCK_FILE: &str = ".lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{0}")]
    Busy(#[from] BadInput),
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// An exclusive lock on a run directory, released when dropped or when the process ends.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock of `run_dir` without waiting; a directory another process holds is bad
    /// input naming that process.
    pub fn acquire(run_dir: &Path) -> Result<RunLock, LockError> {
        let path = run_dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        // Never truncate on open: the file names the current holder until the lock is ours.
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // The holder wrote one short line; a bigger file is not read past it.
                let _ = (&mut file).take(4096).read_to_string(&mut holder);
                return Err(BadInput(busy_message(run_dir, holder.trim())).into());
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let me = format!("pid {} started {}\n", std::process::id(), now_rfc3339());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(me.as_bytes()))
            .map_err(io)?;
        Ok(RunLock { _file: file })
    }
}

fn busy_message(run_dir: &Path, holder: &str) -> String {
    let who = if holder.is_empty() {
        "another gpassk process".to_string()
    } else {
        format!("another gpassk process ({holder})")
    };
    format!(
        "run directory {} is in use by {who}; wait for it to finish or stop it, then resume",
        run_dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path()).unwrap();
        let err = RunLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {} started 20", std::process::id())),
            "{err}"
        );
        drop(first);
        RunLock::acquire(dir.path()).unwrap();
    }
}
