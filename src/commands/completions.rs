//! `gpassk completions SHELL` and `gpassk man`: shell completion scripts, roff man pages and the
//! Markdown command-line reference (docs/cli.md), generated from the same clap definitions the
//! parser uses, with the metrics explained.

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
    after_help = "Examples:\n  gpassk man | man -l -\n  gpassk man --out ~/.local/share/man/man1\n  gpassk man --markdown > docs/cli.md"
)]
pub struct ManArgs {
    /// Write gpassk.1 and one `gpassk-<command>.1` per subcommand into this folder instead of
    /// printing the main page.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the whole command-line reference as one Markdown page (the repository's docs/cli.md)
    /// instead of a man page.
    #[arg(long, conflicts_with = "out")]
    pub markdown: bool,
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
    if args.markdown {
        crate::util::write_stdout(markdown(cmd).as_bytes())?;
        return Ok(ExitStatus::Success);
    }
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

/// The command-line reference as one Markdown page: an index of every subcommand (nested ones
/// too), then per command its description, usage, arguments and examples. It is built from the
/// definitions alone, never from clap's rendered help, so it does not depend on the terminal.
pub fn markdown(mut cmd: clap::Command) -> String {
    cmd.build();
    let mut out = String::from("# Command-line reference\n\n");
    out.push_str(
        "<!-- Generated from the clap definitions by `gpassk man --markdown`; do not edit.\n     \
         Regenerate: cargo run --locked -q -- man --markdown > docs/cli.md -->\n\n",
    );
    md_description(&mut out, &cmd);
    out.push_str("| command | what it does |\n|---|---|\n");
    for (path, sub) in md_commands(&cmd, "gpassk") {
        let about = sub
            .get_about()
            .map(|a| md_text(&a.to_string()))
            .unwrap_or_default();
        let anchor = path.replace(' ', "-");
        out.push_str(&format!(
            "| [`{path}`](#{anchor}) | {} |\n",
            md_cell(&about)
        ));
    }
    out.push('\n');
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        md_block(&mut out, &after.to_string());
    }
    for (path, sub) in md_commands(&cmd, "gpassk") {
        md_command(&mut out, &path, sub);
    }
    out
}

/// Every visible subcommand, depth first, with its full name (`gpassk store push`); clap's own
/// `help` subcommand aside.
fn md_commands<'a>(cmd: &'a clap::Command, prefix: &str) -> Vec<(String, &'a clap::Command)> {
    let mut found = Vec::new();
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let path = format!("{prefix} {}", sub.get_name());
        found.push((path.clone(), sub));
        found.extend(md_commands(sub, &path));
    }
    found
}

/// One command's section: heading, description, usage, positionals, options, examples.
fn md_command(out: &mut String, path: &str, cmd: &clap::Command) {
    let depth = path.matches(' ').count() + 1;
    out.push_str(&format!("{} `{path}`\n\n", "#".repeat(depth.min(6))));
    md_description(out, cmd);
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    out.push_str(&format!("```text\n{usage}\n```\n\n"));
    let args: Vec<&clap::Arg> = cmd.get_arguments().filter(|a| md_shown(a)).collect();
    for (title, positional) in [("Arguments", true), ("Options", false)] {
        let list: Vec<&&clap::Arg> = args
            .iter()
            .filter(|a| a.is_positional() == positional)
            .collect();
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("{title}:\n\n"));
        for arg in list {
            md_arg(out, arg);
        }
        out.push('\n');
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        md_block(out, &after.to_string());
    }
}

/// Arguments a reader needs: not hidden, and not clap's own `--help` and `--version`.
fn md_shown(arg: &clap::Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

/// One argument as a list item: its spelling, then its help and what clap knows of its values.
fn md_arg(out: &mut String, arg: &clap::Arg) {
    let takes = arg.get_num_args().is_some_and(|r| r.takes_values());
    let names: Vec<String> = match arg.get_value_names() {
        Some(names) => names.iter().map(|n| format!("<{n}>")).collect(),
        None => vec![format!("<{}>", arg.get_id())],
    };
    let many = arg.get_num_args().is_some_and(|r| r.max_values() > 1);
    let value = format!("{}{}", names.join(" "), if many { "..." } else { "" });
    let mut spelling = match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}, --{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, Some(l)) => format!("--{l}"),
        (None, None) => String::new(),
    };
    if arg.is_positional() {
        spelling = value;
    } else if takes {
        spelling = format!("{spelling} {value}");
    }
    let mut facts = Vec::new();
    if arg.is_required_set() {
        facts.push("required".to_string());
    }
    // A positional's `...` already says it takes several.
    if !arg.is_positional() && matches!(arg.get_action(), clap::ArgAction::Append) {
        facts.push("repeatable".to_string());
    }
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(" ({})", facts.join(", "))
    };
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut text = md_paragraphs(&help, "  ");
    let extra = md_value_facts(arg, takes).join(" ");
    if !extra.is_empty() {
        // After a block, a paragraph of its own; after prose, the next sentence.
        if text.ends_with("```") {
            text.push_str(&format!("\n\n  {extra}"));
        } else if text.is_empty() || text.ends_with(['.', '!', '?', ':']) {
            text = format!("{text} {extra}");
        } else {
            text = format!("{text}. {extra}");
        }
    }
    let text = text.trim();
    let sep = if text.is_empty() { "" } else { ": " };
    out.push_str(&format!("- `{spelling}`{facts}{sep}{text}\n"));
}

/// Default, possible values and environment variable, each as one sentence.
fn md_value_facts(arg: &clap::Arg, takes: bool) -> Vec<String> {
    let mut facts = Vec::new();
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| match v.get_help() {
            Some(h) => format!("`{}` ({})", v.get_name(), md_text(&h.to_string())),
            None => format!("`{}`", v.get_name()),
        })
        .collect();
    if takes && !values.is_empty() && !arg.is_hide_possible_values_set() {
        facts.push(format!("Values: {}.", values.join(", ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| format!("`{}`", d.to_string_lossy()))
        .collect();
    if takes && !defaults.is_empty() && !arg.is_hide_default_value_set() {
        facts.push(format!("Default: {}.", defaults.join(", ")));
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        facts.push(format!("Environment: `{}`.", env.to_string_lossy()));
    }
    facts
}

/// A command's long description (else its one line), as Markdown paragraphs.
fn md_description(out: &mut String, cmd: &clap::Command) {
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        out.push_str(&md_paragraphs(&about.to_string(), ""));
        out.push_str("\n\n");
    }
}

/// Help text as Markdown: paragraphs of prose joined into lines; a paragraph with indented lines
/// (an example, a table) kept as it is in a text block.
fn md_paragraphs(text: &str, indent: &str) -> String {
    let mut parts = Vec::new();
    for para in text
        .split("\n\n")
        .map(|p| p.trim_end())
        .filter(|p| !p.trim().is_empty())
    {
        if para.lines().skip(1).any(|l| l.starts_with(' ')) {
            let body: Vec<String> = para.lines().map(|l| format!("{indent}{l}")).collect();
            parts.push(format!("{indent}```text\n{}\n{indent}```", body.join("\n")));
        } else {
            let joined: Vec<&str> = para.lines().map(str::trim).collect();
            parts.push(format!("{indent}{}", md_text(&joined.join(" "))));
        }
    }
    parts.join("\n\n").trim_start().to_string()
}

/// Markdown text as a table cell: a `|` that is not escaped yet (one in a code span) escaped, as
/// GitHub reads `|` as a column break even there.
fn md_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for c in text.chars() {
        if c == '|' && !escaped {
            out.push('\\');
        }
        escaped = c == '\\' && !escaped;
        out.push(c);
    }
    out
}

/// Examples and notes after a command's options, verbatim in a text block.
fn md_block(out: &mut String, text: &str) {
    out.push_str(&format!("```text\n{}\n```\n\n", text.trim_end()));
}

/// Prose for Markdown: code spans (between backticks) kept, characters that would become markup
/// elsewhere escaped. A text with an odd number of backticks has no code spans.
fn md_text(text: &str) -> String {
    let spans = text.matches('`').count().is_multiple_of(2);
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split('`').enumerate() {
        if spans && i % 2 == 1 {
            out.push('`');
            out.push_str(part);
            out.push('`');
            continue;
        }
        if !spans && i > 0 {
            out.push_str("\\`");
        }
        for c in part.chars() {
            if matches!(c, '\\' | '*' | '_' | '<' | '>' | '[' | ']' | '|' | '#') {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_text_escapes_markup_and_keeps_code_spans() {
        assert_eq!(
            md_text("results/<run> with *one* `a_b <c>` max_tokens"),
            "results/\\<run\\> with \\*one\\* `a_b <c>` max\\_tokens"
        );
        // An odd backtick opens no span: it is escaped with the rest.
        assert_eq!(md_text("a ` b_c"), "a \\` b\\_c");
        assert_eq!(md_cell("`a|b` and c\\|d"), "`a\\|b` and c\\|d");
    }

    #[test]
    fn markdown_reference_has_every_nested_command_and_its_arguments() {
        let cmd = clap::Command::new("gpassk")
            .about("Top")
            .subcommand(
                clap::Command::new("store")
                    .about("Store things")
                    .subcommand(
                        clap::Command::new("push").about("Push runs").arg(
                            clap::Arg::new("runs")
                                .required(true)
                                .num_args(1..)
                                .help("Run directories"),
                        ),
                    )
                    .subcommand(clap::Command::new("secret").hide(true)),
            )
            .subcommand(
                clap::Command::new("view").arg(
                    clap::Arg::new("port")
                        .long("port")
                        .default_value("8040")
                        .help("The port (0: any free port)"),
                ),
            );
        let md = markdown(cmd);
        assert!(
            md.contains("| [`gpassk store push`](#gpassk-store-push) | Push runs |"),
            "{md}"
        );
        assert!(md.contains("### `gpassk store push`\n"), "{md}");
        assert!(md.contains("gpassk store push <runs>..."), "{md}");
        assert!(
            md.contains("- `<runs>...` (required): Run directories\n"),
            "{md}"
        );
        assert!(
            md.contains("- `--port <port>`: The port (0: any free port). Default: `8040`.\n"),
            "{md}"
        );
        assert!(!md.contains("secret"), "hidden commands stay hidden: {md}");
        assert!(
            !md.contains("gpassk help"),
            "clap's own help command is left out: {md}"
        );
    }
}
