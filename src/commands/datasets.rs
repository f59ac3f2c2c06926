//! `gpassk datasets`: list the shipped datasets (a table, or a list where the table would not fit),
//! or show a few rendered prompts of one.

use std::collections::BTreeSet;
use std::io::Write;

use anyhow::Context;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

use crate::dataset::registry::{self, Entry, REGISTRY};
use crate::dataset::{load, Dataset, FewShot, Problem};
use crate::error::{bad_input, ExitStatus};
use crate::prompt;
use crate::report::{wrap, wrap_list};

/// Arguments of `gpassk datasets`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  gpassk datasets\n  gpassk datasets show math500 --limit 2\n  gpassk datasets show cmath --few-shot 2 --json"
)]
pub struct DatasetsArgs {
    #[command(subcommand)]
    pub command: Option<DatasetsCommand>,
    /// One JSON object per dataset (full sha256, files, subsets) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Subcommands of `gpassk datasets` (none lists the datasets).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum DatasetsCommand {
    /// Print a few rendered prompts of a dataset
    Show(ShowArgs),
}

/// Arguments of `gpassk datasets show`.
#[derive(Debug, Clone, clap::Args)]
pub struct ShowArgs {
    /// Registered dataset name, or a path to a .jsonl file
    pub name: String,
    /// How many problems to show
    #[arg(long, default_value_t = 3)]
    pub limit: usize,
    /// Only problems of this subset
    #[arg(long)]
    pub subset: Option<String>,
    /// Prompt template instead of the dataset's default (`{question}`, `{subset}`, extra fields)
    #[arg(long)]
    pub template: Option<String>,
    /// Number of solved examples shown as earlier chat turns
    #[arg(long, default_value_t = 0)]
    pub few_shot: usize,
    /// Dataset the few-shot examples come from (default: the shown dataset)
    #[arg(long)]
    pub few_shot_from: Option<String>,
    /// Print one JSON object a line (`id`, `subset`, `answer`, `messages`) instead of text
    #[arg(long)]
    pub json: bool,
}

/// Runs `gpassk datasets`: a failure when a shipped dataset fails to load; a dataset, subset or
/// template that `show` cannot use is bad input.
pub fn run(args: DatasetsArgs) -> anyhow::Result<ExitStatus> {
    let mut out = Vec::new();
    let result = match args.command {
        None if args.json => list_json(&mut out),
        None => list(&mut out),
        Some(DatasetsCommand::Show(show_args)) => show(&show_args, &mut out).map_err(bad_input),
    };
    crate::util::write_stdout(&out)?;
    result
}

fn list_json(out: &mut impl Write) -> anyhow::Result<ExitStatus> {
    let mut status = ExitStatus::Success;
    for entry in REGISTRY {
        let line = match load(entry.name, None) {
            Ok(d) => serde_json::json!({
                "dataset": entry.name,
                "problems": d.problems.len(),
                "language": d.language.code(),
                "subsets": d.subsets(),
                "sha256": d.sha256,
                "files": d.files,
                "note": note(entry),
            }),
            Err(e) => {
                status = ExitStatus::Failure;
                serde_json::json!({"dataset": entry.name, "error": e.to_string()})
            }
        };
        writeln!(out, "{line}")?;
    }
    Ok(status)
}

/// One dataset as the list shows it (a dataset that failed to load keeps its name and language).
struct Listed {
    name: &'static str,
    problems: String,
    language: &'static str,
    subsets: Vec<String>,
    sha256: String,
    note: &'static str,
}

fn list(out: &mut impl Write) -> anyhow::Result<ExitStatus> {
    let mut listed = Vec::new();
    let mut failures = Vec::new();
    for entry in REGISTRY {
        listed.push(match load(entry.name, None) {
            Ok(dataset) => Listed {
                name: entry.name,
                problems: dataset.problems.len().to_string(),
                language: dataset.language.code(),
                subsets: dataset.subsets().into_iter().map(String::from).collect(),
                sha256: crate::util::short(&dataset.sha256).to_string(),
                note: note(entry),
            },
            Err(error) => {
                failures.push(error);
                Listed {
                    name: entry.name,
                    problems: "?".into(),
                    language: entry.language.code(),
                    subsets: Vec::new(),
                    sha256: "-".into(),
                    note: "cannot load (see below)",
                }
            }
        });
    }
    // A table that does not fit would break names mid-word; a list keeps every name whole.
    let width = crate::util::terminal_width();
    let table = table(&listed).to_string();
    if table.lines().all(|l| l.chars().count() <= width) {
        writeln!(out, "{table}")?;
    } else {
        write!(out, "{}", as_list(&listed, width))?;
    }
    writeln!(
        out,
        "datasets folder: {}",
        crate::dataset::datasets_dir().display()
    )?;
    for error in &failures {
        eprintln!("error: {error}");
    }
    Ok(if failures.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The datasets as a table at its natural width.
fn table(listed: &[Listed]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "dataset",
        "problems",
        "lang",
        "subsets",
        "sha256 (--json: full)",
        "note",
    ]);
    for d in listed {
        let subsets = d.subsets.join(", ");
        table.add_row(vec![
            Cell::new(d.name),
            Cell::new(&d.problems).set_alignment(CellAlignment::Right),
            Cell::new(d.language),
            Cell::new(if subsets.is_empty() { "-" } else { &subsets }),
            Cell::new(&d.sha256),
            Cell::new(d.note),
        ]);
    }
    table
}

/// The datasets as a list for narrow terminals: each name on its own line, the details indented
/// and broken only between words and between subsets.
fn as_list(listed: &[Listed], width: usize) -> String {
    let mut text = String::new();
    for d in listed {
        let facts = format!(
            "  {} problems · {} · sha256 {}",
            d.problems, d.language, d.sha256
        );
        text.push_str(&format!("{}\n{}\n", d.name, wrap(&facts, width, "  ")));
        if !d.subsets.is_empty() {
            let subsets: Vec<&str> = d.subsets.iter().map(String::as_str).collect();
            let line = wrap_list("  subsets: ", &subsets, width, "    ");
            text.push_str(&format!("{line}\n"));
        }
        text.push_str(&format!(
            "{}\n\n",
            wrap(&format!("  {}", d.note), width, "  ")
        ));
    }
    text.push_str("sha256: the first 12 digits (--json: whole)\n");
    text
}

fn note(entry: &Entry) -> &'static str {
    entry.description
}

fn show(args: &ShowArgs, out: &mut impl Write) -> anyhow::Result<ExitStatus> {
    let dataset = load(&args.name, None)?;
    let template = args
        .template
        .clone()
        .unwrap_or_else(|| dataset.default_template.clone());
    let chosen: Vec<_> = dataset
        .problems
        .iter()
        .filter(|p| args.subset.is_none() || p.subset == args.subset)
        .take(args.limit)
        .collect();
    if chosen.is_empty() {
        if let Some(subset) = &args.subset {
            anyhow::bail!(
                "dataset `{}` has no subset `{subset}`; its subsets: {}",
                dataset.name,
                dataset.subsets().join(", ")
            );
        }
    }
    let examples = few_shot_examples(args, &dataset.name, &chosen)?;
    if args.json {
        for problem in chosen {
            let chat = prompt::messages(&template, problem, &examples)
                .with_context(|| format!("rendering problem `{}`", problem.id))?;
            let line = serde_json::json!({
                "id": problem.id,
                "subset": problem.subset,
                "answer": problem.answer,
                "messages": chat,
            });
            writeln!(out, "{line}")?;
        }
        return Ok(ExitStatus::Success);
    }
    show_text(&dataset, &chosen, (&template, &examples), out)?;
    Ok(ExitStatus::Success)
}

/// The shown problems as text: the dataset's line, then each problem's rendered messages.
fn show_text(
    dataset: &Dataset,
    chosen: &[&Problem],
    (template, examples): (&str, &[(String, String)]),
    out: &mut impl Write,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{} — {} problems, sha256 {}",
        dataset.name,
        dataset.problems.len(),
        dataset.sha256
    )?;
    if let Some(entry) = registry::lookup(&dataset.name) {
        writeln!(out, "{}", note(entry))?;
    }
    for &problem in chosen {
        let chat = prompt::messages(template, problem, examples)
            .with_context(|| format!("rendering problem `{}`", problem.id))?;
        writeln!(out)?;
        let subset = problem
            .subset
            .as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        writeln!(
            out,
            "=== {}{subset} (reference answer: {})",
            problem.id, problem.answer
        )?;
        for message in chat {
            writeln!(out, "--- {}", message.role)?;
            writeln!(out, "{}", message.content)?;
        }
    }
    Ok(())
}

/// `--few-shot N` examples (from `--few-shot-from`, else the dataset itself), none of them shown.
fn few_shot_examples(
    args: &ShowArgs,
    dataset: &str,
    chosen: &[&Problem],
) -> anyhow::Result<Vec<(String, String)>> {
    if args.few_shot == 0 {
        return Ok(Vec::new());
    }
    let source = (args.few_shot_from.clone()).unwrap_or_else(|| dataset.to_string());
    let shown: BTreeSet<String> = chosen.iter().map(|p| p.id.clone()).collect();
    Ok(FewShot::FromDataset {
        source,
        fields: None,
        count: args.few_shot,
    }
    .examples(dataset, &shown)?)
}
