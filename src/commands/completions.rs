//! `gpassk completions SHELL` and `gpassk man`: shell completion scripts and roff man pages,
//! generated from the same clap definitions the parser uses, with the metrics explained.

use crate::error::{BadInput, ExitStatus};
use anyhow::{Context, Result};
use clap_complete::Shell;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    gpassk completions bash > ~/.local/share/bash-completion/completions/gpassk\n  \
    gpassk completions zsh > \"${fpath[1]}/_gpassk\"\n  \
    gpassk completions fish > ~/.config/fish/completions/gpassk.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpassk man | man -l -\n  gpassk man --out ~/.local/share/man/man1"
)]
pub struct ManArgs {
    /// Write gpassk.1 and one `gpassk-<command>.1` per subcommand into this folder instead of
    /// printing the main page.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Prints the completion script of `cmd` (the whole command line) for one shell.
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> Result<ExitStatus> {
    let name = cmd.get_name().to_string();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut out);
    crate::util::write_stdout(&out)?;
    Ok(ExitStatus::Success)
}

/// Prints the main man page, or writes every page into `--out`.
pub fn man(args: ManArgs, cmd: clap::Command) -> Result<ExitStatus> {
    let Some(dir) = args.out else {
        crate::util::write_stdout(&page(cmd)?)?;
        return Ok(ExitStatus::Success);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| BadInput(format!("--out {}: cannot create: {e}", dir.display())))?;
    let mut pages = vec![("gpassk.1".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let page = sub.clone().name(format!("gpassk-{}", sub.get_name()));
        pages.push((format!("gpassk-{}.1", sub.get_name()), page));
    }
    for (file, cmd) in pages {
        let bytes = page(cmd)?;
        let path = dir.join(&file);
        crate::util::write_atomic(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(ExitStatus::Success)
}

/// One man page; the main page and `calc`'s gain a METRICS section (calc's description is then
/// its one line, as the section says the rest in man's own layout).
fn page(cmd: clap::Command) -> Result<Vec<u8>> {
    let explained = cmd.get_name() == "gpassk" || cmd.get_name() == "gpassk-calc";
    let cmd = if cmd.get_name() == "gpassk-calc" {
        cmd.long_about(None)
    } else {
        cmd
    };
    let mut bytes = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut bytes)?;
    if !explained {
        return Ok(bytes);
    }
    let text = String::from_utf8(bytes)?;
    // Before OPTIONS, right after the description; at the end when a page has no options.
    let at = text.find("\n.SH OPTIONS").map_or(text.len(), |i| i + 1);
    Ok(format!("{}{}{}", &text[..at], metrics_section(), &text[at..]).into_bytes())
}

/// The METRICS section in roff: the opening sentence, then one tagged paragraph per term.
fn metrics_section() -> String {
    use crate::metrics::{GLOSSARY, GLOSSARY_INTRO};
    let mut roff = format!(".SH METRICS\n{}\n", roff_text(GLOSSARY_INTRO));
    for (term, meaning) in GLOSSARY {
        roff.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(term),
            roff_text(meaning)
        ));
    }
    roff
}

/// Text as a roff line: backslashes escaped, and a leading `.` or `'` kept from reading as a request.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}
