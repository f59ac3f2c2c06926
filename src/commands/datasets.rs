//! `gpassk datasets`: list the shipped datasets, or show a few rendered prompts of one.

use std::collections::BTreeSet;
use std::io::Write;

use anyhow::Context;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};

use crate::dataset::registry::{self, Entry, REGISTRY};
use crate::dataset::{load, FewShot};
use crate::error::{bad_input, ExitStatus};
use crate::prompt;

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

fn list(out: &mut impl Write) -> anyhow::Result<ExitStatus> {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    // Fit the terminal: long subset lists and notes wrap inside their cells.
    table.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    table.set_width(u16::try_from(crate::util::terminal_width()).unwrap_or(u16::MAX));
    table.set_header(vec![
        "dataset",
        "problems",
        "lang",
        "subsets",
        "sha256 (--json: full)",
        "note",
    ]);
    let mut failures = Vec::new();
    for entry in REGISTRY {
        match load(entry.name, None) {
            Ok(dataset) => {
                let subsets = dataset.subsets().join(", ");
                table.add_row(vec![
                    Cell::new(entry.name),
                    Cell::new(dataset.problems.len()).set_alignment(CellAlignment::Right),
                    Cell::new(dataset.language.code()),
                    Cell::new(if subsets.is_empty() { "-" } else { &subsets }),
                    Cell::new(crate::util::short(&dataset.sha256)),
                    Cell::new(note(entry)),
                ]);
            }
            Err(error) => {
                table.add_row(vec![
                    Cell::new(entry.name),
                    Cell::new("?").set_alignment(CellAlignment::Right),
                    Cell::new(entry.language.code()),
                    Cell::new("-"),
                    Cell::new("-"),
                    Cell::new("cannot load (see below)"),
                ]);
                failures.push(error);
            }
        }
    }
    writeln!(out, "{table}")?;
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
    let examples = if args.few_shot > 0 {
        let source = args
            .few_shot_from
            .clone()
            .unwrap_or_else(|| dataset.name.clone());
        let shown: BTreeSet<String> = chosen.iter().map(|p| p.id.clone()).collect();
        FewShot::FromDataset {
            source,
            fields: None,
            count: args.few_shot,
        }
        .examples(&dataset.name, &shown)?
    } else {
        Vec::new()
    };
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
    for problem in chosen {
        let chat = prompt::messages(&template, problem, &examples)
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
    Ok(ExitStatus::Success)
}
