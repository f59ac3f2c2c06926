//! The sandbox for model-written code: one Python program per call inside bubblewrap, with no
//! network, a read-only system, sized private tmpfs mounts, an empty environment, a non-root uid,
//! rlimits, capped output and a wall-clock timeout that kills every process of the sandbox.

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The uid and gid the program runs as, outside and inside the sandbox (`nobody`).
const NOBODY: u32 = 65534;

/// The smallest tmpfs size handed to bwrap (the kernel rounds sizes up to pages anyway).
const PAGE: u64 = 4096;

/// Why no sandbox can be made; never a silent fallback to running code unsandboxed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "no sandbox: `bwrap` is not on PATH (install bubblewrap: apt-get install -y bubblewrap)"
    )]
    NoBwrap,
    #[error(
        "no sandbox: no python3 under /usr (looked for /usr/bin/python3, /usr/local/bin/python3)"
    )]
    NoPython,
    #[error("no sandbox: /usr/bin/prlimit (util-linux) is missing, so no rlimits can be set")]
    NoPrlimit,
    #[error("no sandbox: cannot start bwrap: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("no sandbox: bwrap cannot create its namespaces here (user namespaces off?): {0}")]
    Refused(String),
}

/// Resource limits of one execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time before the whole sandbox is killed.
    pub timeout: Duration,
    /// Address space of each process.
    pub memory_bytes: u64,
    /// Largest file a process may write.
    pub file_bytes: u64,
    /// Processes (and threads) of the sandbox uid inside its user namespace.
    pub processes: u64,
    /// Bytes kept of stdout and of stderr; more ends the run as [`Status::OutputCapped`].
    pub output_bytes: usize,
    /// Total size of the writable tmpfs mounts (`/tmp` and `/dev/shm`), which live in host memory.
    pub tmp_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(5),
            memory_bytes: 1 << 30,
            file_bytes: 16 << 20,
            processes: 32,
            output_bytes: 64 << 10,
            tmp_bytes: 64 << 20,
        }
    }
}

impl Limits {
    /// CPU seconds: the timeout rounded up plus one, a backstop should the wall clock fail.
    fn cpu_seconds(&self) -> u64 {
        self.timeout.as_secs() + 1 + u64::from(self.timeout.subsec_nanos() > 0)
    }

    /// Sizes of `/tmp` and `/dev/shm`: an eighth for shared memory, the rest for files, so together
    /// they hold at most [`Limits::tmp_bytes`] (at least a page each).
    fn tmpfs_sizes(&self) -> (u64, u64) {
        let shm = (self.tmp_bytes / 8).max(PAGE);
        let tmp = self.tmp_bytes.saturating_sub(shm).max(PAGE);
        (tmp, shm)
    }

    /// The most host memory one execution can hold: every process's address space plus the
    /// tmpfs mounts plus the output kept of both streams.
    pub fn memory_bound(&self) -> u64 {
        let output = 2 * self.output_bytes as u64;
        self.processes
            .saturating_mul(self.memory_bytes)
            .saturating_add(self.tmp_bytes)
            .saturating_add(output)
    }
}

/// How an execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The program exited with this code.
    Exited(i32),
    /// The program died of this signal (bwrap reports it as 128 + signal, like a shell).
    Killed(i32),
    /// The timeout passed; every process of the sandbox was killed.
    TimedOut,
    /// stdout or stderr passed [`Limits::output_bytes`]; every process was killed.
    OutputCapped,
}

/// What one execution produced: both streams cut at [`Limits::output_bytes`].
#[derive(Debug, Clone)]
pub struct ExecOutcome {
    pub stdout: String,
    pub stderr: String,
    pub status: Status,
    pub elapsed: Duration,
}

impl ExecOutcome {
    /// True when the program ran to completion and exited 0.
    pub fn success(&self) -> bool {
        self.status == Status::Exited(0)
    }
}

/// A checked bubblewrap set-up; cheap to clone and share between threads.
#[derive(Debug, Clone)]
pub struct Sandbox {
    bwrap: PathBuf,
    python: PathBuf,
    /// Root must start bwrap as `nobody`: the kernel never enforces RLIMIT_NPROC for uid 0.
    drop_root: bool,
}

impl Sandbox {
    /// Finds bwrap, python3 and prlimit, and proves the sandbox starts by running `pass` in it.
    pub fn detect() -> Result<Sandbox, SandboxError> {
        let bwrap = on_path("bwrap").ok_or(SandboxError::NoBwrap)?;
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or(SandboxError::NoPython)?;
        if !Path::new("/usr/bin/prlimit").is_file() {
            return Err(SandboxError::NoPrlimit);
        }
        let drop_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let sandbox = Sandbox {
            bwrap,
            python,
            drop_root,
        };
        let probe = sandbox
            .start(&Limits::default())
            .map_err(SandboxError::Spawn)?;
        let out = probe.wait_with_output().map_err(SandboxError::Spawn)?;
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stderr);
            let first = text.lines().next().unwrap_or("no message").trim();
            return Err(SandboxError::Refused(format!(
                "{} ({})",
                crate::util::printable(first),
                out.status
            )));
        }
        Ok(sandbox)
    }

    /// Runs `code` as a Python program in a fresh sandbox and waits for it, at most the timeout.
    pub fn run_python(&self, code: &str, limits: &Limits) -> Result<ExecOutcome, SandboxError> {
        let started = Instant::now();
        let mut child = self.start_program(limits).map_err(SandboxError::Spawn)?;
        let capped = Arc::new(AtomicBool::new(false));
        let feed = child.stdin.take().map(|mut stdin| {
            let code = code.to_owned();
            // A program that stops reading early closes the pipe: that error is the program's.
            std::thread::spawn(move || {
                let _ = stdin.write_all(code.as_bytes());
            })
        });
        let out = child
            .stdout
            .take()
            .map(|s| read_capped(s, limits.output_bytes, &capped));
        let err = child
            .stderr
            .take()
            .map(|s| read_capped(s, limits.output_bytes, &capped));
        let status = supervise(&mut child, limits.timeout, started, &capped);
        let elapsed = started.elapsed();
        if let Some(feed) = feed {
            let _ = feed.join();
        }
        let text = |h: Option<JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        Ok(ExecOutcome {
            stdout: text(out),
            stderr: text(err),
            status: status.map_err(SandboxError::Spawn)?,
            elapsed,
        })
    }

    /// The sandbox running `python3 -I -c pass`: proves namespaces and mounts work.
    fn start(&self, limits: &Limits) -> std::io::Result<Child> {
        let mut cmd = self.command(limits);
        cmd.args(["-c", "pass"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd.spawn()
    }

    /// The sandbox running a program read from its stdin.
    fn start_program(&self, limits: &Limits) -> std::io::Result<Child> {
        let mut cmd = self.command(limits);
        cmd.arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn()
    }

    /// `bwrap … -- prlimit … -- python3 -I`; the caller adds the program.
    fn command(&self, limits: &Limits) -> Command {
        let mut cmd = Command::new(&self.bwrap);
        let nobody = NOBODY.to_string();
        cmd.args(["--unshare-all", "--unshare-user", "--die-with-parent"])
            .args(["--new-session", "--uid", &nobody, "--gid", &nobody])
            .args(["--ro-bind", "/usr", "/usr"]);
        for dir in ["bin", "lib", "lib64", "sbin"] {
            let host = Path::new("/").join(dir);
            match std::fs::read_link(&host) {
                Ok(target) => cmd.arg("--symlink").arg(target).arg(&host),
                Err(_) if host.is_dir() => cmd.arg("--ro-bind").arg(&host).arg(&host),
                Err(_) => &mut cmd,
            };
        }
        // bwrap's /dev is an unsized tmpfs: made read-only, with a sized tmpfs on /dev/shm.
        let (tmp, shm) = limits.tmpfs_sizes();
        cmd.args(["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"])
            .arg("--size")
            .arg(shm.to_string())
            .args(["--tmpfs", "/dev/shm", "--size"])
            .arg(tmp.to_string())
            .args(["--tmpfs", "/tmp"])
            .args(["--chdir", "/tmp", "--remount-ro", "/", "--clearenv"])
            .args(["--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"])
            .args(["--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8"])
            .args(["--", "/usr/bin/prlimit"])
            .arg(format!("--cpu={}", limits.cpu_seconds()))
            .arg(format!("--as={}", limits.memory_bytes))
            .arg(format!("--fsize={}", limits.file_bytes))
            .arg(format!("--nproc={}", limits.processes))
            .args(["--core=0", "--"])
            .arg(&self.python)
            .arg("-I");
        // Its own process group: a terminal's Ctrl-C reaches gpassk, which then kills the sandbox.
        cmd.process_group(0).env_clear().current_dir("/");
        if self.drop_root {
            cmd.uid(NOBODY).gid(NOBODY);
        }
        cmd
    }
}

/// Waits for `child` until it exits, the timeout passes or an output stream is capped; in the
/// last two cases kills bwrap, whose PID namespace takes every sandboxed process with it.
fn supervise(
    child: &mut Child,
    timeout: Duration,
    started: Instant,
    capped: &AtomicBool,
) -> std::io::Result<Status> {
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(status) = child.try_wait()? {
            if capped.load(Ordering::SeqCst) {
                return Ok(Status::OutputCapped);
            }
            return Ok(match (status.code(), status.signal()) {
                (Some(code), _) if code > 128 && code < 128 + 65 => Status::Killed(code - 128),
                (Some(code), _) => Status::Exited(code),
                (None, Some(signal)) => Status::Killed(signal),
                (None, None) => Status::Killed(0),
            });
        }
        let verdict = if capped.load(Ordering::SeqCst) {
            Some(Status::OutputCapped)
        } else if started.elapsed() >= timeout {
            Some(Status::TimedOut)
        } else {
            None
        };
        if let Some(verdict) = verdict {
            let _ = child.kill();
            child.wait()?;
            return Ok(verdict);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// Reads a stream on its own thread, keeping at most `cap` bytes; past that it flags `capped`
/// and stops reading (the writer then blocks or gets EPIPE until it is killed).
fn read_capped(
    mut stream: impl Read + Send + 'static,
    cap: usize,
    capped: &Arc<AtomicBool>,
) -> JoinHandle<Vec<u8>> {
    let capped = Arc::clone(capped);
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) if kept.len() + n > cap => {
                    kept.extend_from_slice(&buf[..cap - kept.len()]);
                    capped.store(true, Ordering::SeqCst);
                    break;
                }
                Ok(n) => kept.extend_from_slice(&buf[..n]),
            }
        }
        kept
    })
}

/// The first `name` in the directories of PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_limit_rounds_the_timeout_up() {
        let mut l = Limits::default();
        assert_eq!(l.cpu_seconds(), 6);
        l.timeout = Duration::from_millis(1500);
        assert_eq!(l.cpu_seconds(), 3);
    }

    #[test]
    fn tmpfs_mounts_share_the_tmp_bound() {
        let mut l = Limits::default();
        assert_eq!(l.tmpfs_sizes(), (56 << 20, 8 << 20));
        l.tmp_bytes = 0;
        assert_eq!(l.tmpfs_sizes(), (PAGE, PAGE));
        assert_eq!(
            Limits::default().memory_bound(),
            (32 << 30) + (64 << 20) + (128 << 10)
        );
    }

    #[test]
    fn capped_reader_keeps_exactly_the_cap() {
        let capped = Arc::new(AtomicBool::new(false));
        let kept = read_capped(std::io::Cursor::new(vec![b'x'; 10_000]), 100, &capped)
            .join()
            .unwrap();
        assert_eq!(kept.len(), 100);
        assert!(capped.load(Ordering::SeqCst));
        let small = read_capped(std::io::Cursor::new(b"hi".to_vec()), 100, &capped);
        assert_eq!(small.join().unwrap(), b"hi");
    }
}
