//! `gpassk exec`: one Python file in the code sandbox; prints its stdout, stderr and status.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::search::sandbox::{Limits, Sandbox, Status};
use crate::util::printable;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// What bounds one execution; kept equal to `Limits::default()` by a test.
const BOUNDS: &str = "Bounds of one execution: wall-clock --timeout (CPU time: timeout + 1 s), 32 \
processes, 1 GiB address space per process, 16 MiB per file, 64 MiB of tmpfs in all (/tmp 56 MiB, \
/dev/shm 8 MiB; nothing else is writable), 64 KiB kept of stdout and of stderr. Host memory held \
is at most 32 x 1 GiB + 64 MiB + 128 KiB.\n\nExamples:\n  gpassk exec step.py\n  gpassk exec \
step.py --timeout 2.5";

/// The longest `--timeout` accepted, in seconds.
const MAX_TIMEOUT: f64 = 3600.0;

#[derive(Debug, Args)]
#[command(after_help = BOUNDS)]
pub struct ExecArgs {
    /// The Python program to run.
    pub file: PathBuf,
    /// Wall-clock seconds before every process of the sandbox is killed.
    #[arg(long, default_value = "5", allow_hyphen_values = true)]
    pub timeout: String,
}

pub fn run(args: ExecArgs) -> Result<ExitStatus> {
    let timeout = parse_timeout(&args.timeout)?;
    let code = crate::util::read_bounded(&args.file, crate::util::MAX_TEXT_FILE)
        .with_context(|| format!("cannot read {}", args.file.display()))
        .map_err(bad_input)?;
    let code = String::from_utf8(code)
        .map_err(|_| BadInput(format!("{}: not UTF-8 text", args.file.display())))?;
    let sandbox = Sandbox::detect().map_err(bad_input)?;
    let limits = Limits {
        timeout,
        ..Limits::default()
    };
    let outcome = sandbox.run_python(&code, &limits)?;
    // The program is untrusted: its bytes never reach the terminal unescaped.
    for line in outcome.stdout.lines() {
        println!("{}", printable(line));
    }
    for line in outcome.stderr.lines() {
        eprintln!("{}", printable(line));
    }
    let secs = outcome.elapsed.as_secs_f64();
    let status = match outcome.status {
        Status::Exited(code) => format!("exited with code {code}"),
        Status::Killed(signal) => format!("killed by signal {signal}"),
        Status::TimedOut => format!("timed out after {} s, killed", args.timeout.trim()),
        Status::OutputCapped => format!("output passed {} KiB, killed", limits.output_bytes / 1024),
    };
    eprintln!("exec: {status} ({secs:.3} s)");
    Ok(if outcome.success() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn parse_timeout(text: &str) -> Result<Duration, BadInput> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= MAX_TIMEOUT => Ok(Duration::from_secs_f64(s)),
        _ => Err(BadInput(format!(
            "--timeout: expected seconds in (0, {MAX_TIMEOUT}], got {:?}",
            printable(text)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_states_the_default_limits() {
        let l = Limits::default();
        let text = BOUNDS.replace('\n', " ");
        for (what, value) in [
            ("processes", format!("{} processes", l.processes)),
            (
                "memory",
                format!("{} GiB address space", l.memory_bytes >> 30),
            ),
            ("file", format!("{} MiB per file", l.file_bytes >> 20)),
            ("tmpfs", format!("{} MiB of tmpfs", l.tmp_bytes >> 20)),
            ("output", format!("{} KiB kept", l.output_bytes >> 10)),
        ] {
            assert!(text.contains(&value), "{what}: {value} not in {text}");
        }
    }

    #[test]
    fn timeout_accepts_seconds_and_rejects_the_rest() {
        assert_eq!(parse_timeout("2.5").unwrap(), Duration::from_millis(2500));
        for bad in ["0", "-1", "nan", "inf", "5s", "", "7200"] {
            let e = parse_timeout(bad).unwrap_err().to_string();
            assert!(e.starts_with("--timeout:"), "{bad}: {e}");
        }
    }
}
