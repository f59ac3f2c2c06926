//! The bottom of the crate: the user-input error type and how a command ends ([`ExitStatus`]).
//!
//! Library code returns errors; each command decides its [`ExitStatus`] at its boundary, as uv does.
//! An error is bad input (exit 2) when its chain holds a [`BadInput`]: modules that detect a user
//! mistake return one, and commands mark whole phases (loading a config or a run directory) with
//! [`bad_input`], so a new error type in such a phase needs no list to be classified.

use std::fmt;
use std::process::ExitCode;

/// A mistake the user can fix in their input: config, dataset, arguments, run directory. Exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

impl BadInput {
    /// A bad-input error from any message.
    pub fn new(message: impl Into<String>) -> BadInput {
        BadInput(message.into())
    }
}

/// Marks an error as the user's to fix (exit 2), keeping its whole chain and message.
pub fn bad_input(err: impl Into<anyhow::Error>) -> anyhow::Error {
    let err: anyhow::Error = err.into();
    if is_bad_input(&err) {
        return err;
    }
    err.context(Marked)
}

/// The context layer [`bad_input`] adds: it prints nothing of its own.
#[derive(Debug)]
struct Marked;

impl fmt::Display for Marked {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

impl std::error::Error for Marked {}

fn is_bad_input(err: &anyhow::Error) -> bool {
    // Context layers are found by `downcast_ref` (it looks through nested contexts), causes by
    // walking the chain.
    err.downcast_ref::<Marked>().is_some()
        || err.downcast_ref::<BadInput>().is_some()
        || err.chain().any(|e| e.is::<BadInput>() || refused_io(e))
}

/// An I/O error carrying a [`BadInput`]: an input file refused by its kind or size.
fn refused_io(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
        .is_some_and(|inner| inner.is::<BadInput>())
}

/// How a command ended; `main` turns it into the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything asked for was done.
    Success,
    /// The work ran but did not all succeed (failed units, a regression found, …): exit 1.
    Failure,
    /// The input was unusable: exit 2.
    BadInput,
    /// Stopped by a signal after saving what was done: exit 130.
    Interrupted,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::BadInput => 2,
            ExitStatus::Interrupted => 130,
        }
    }

    /// The status of a command that returned `err`: bad input or a failure.
    pub fn of_error(err: &anyhow::Error) -> ExitStatus {
        if is_bad_input(err) {
            ExitStatus::BadInput
        } else {
            ExitStatus::Failure
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s.code())
    }
}

/// An error as one line for the terminal: each layer of its chain once, empty layers skipped,
/// and a layer already contained in the one before it (an OS error repeated by a wrapper) dropped.
pub fn render(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in err.chain() {
        let text = e.to_string();
        let text = text.trim();
        if text.is_empty() || parts.iter().any(|p| p.contains(text)) {
            continue;
        }
        parts.push(text.to_string());
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn bad_input_anywhere_in_the_chain_exits_2() {
        let e = anyhow::Error::new(BadInput::new("no such model")).context("loading");
        assert_eq!(ExitStatus::of_error(&e), ExitStatus::BadInput);
        let plain = anyhow::anyhow!("disk on fire");
        assert_eq!(ExitStatus::of_error(&plain), ExitStatus::Failure);
        let marked = bad_input(anyhow::anyhow!("config.toml:3: unknown key"));
        assert_eq!(ExitStatus::of_error(&marked), ExitStatus::BadInput);
        assert_eq!(render(&marked), "config.toml:3: unknown key");
        let wrapped = marked.context("while planning");
        assert_eq!(ExitStatus::of_error(&wrapped), ExitStatus::BadInput);
        let refused = std::io::Error::new(std::io::ErrorKind::InvalidInput, BadInput::new("FIFO"));
        let e = anyhow::Error::new(refused).context("cannot read x");
        assert_eq!(ExitStatus::of_error(&e), ExitStatus::BadInput);
    }

    #[test]
    fn render_drops_repeated_os_errors() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e: anyhow::Error = Err::<(), _>(io)
            .context("cannot read x.toml: No such file")
            .unwrap_err();
        assert_eq!(render(&e), "cannot read x.toml: No such file");
    }
}
