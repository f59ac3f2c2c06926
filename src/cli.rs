//! The command line: clap's parser over the subcommands of [`crate::commands`].
#![allow(clippy::print_stdout, clippy::print_stderr)] // the command layer prints

use clap::{Parser, Subcommand};

/// Shown under `gpassk --help`.
const EXAMPLES: &str = "\
Examples:
  gpassk run --config configs/local.toml --dry-run   # the plan: units, tokens
  gpassk run --config configs/config.toml            # sample, grade, report
  gpassk run --config configs/config.toml --resume latest
  gpassk score results/<run>                         # re-grade, rewrite files
  gpassk report results/<run> --format html --out report.html
  gpassk compare results/<last week> results/<this week> --fail-on-regression 5
  gpassk history results --format html > history.html
  gpassk calc --n 48 --c 30 --k 16

More: gpassk <command> --help; completions: gpassk completions bash|zsh|fish";

/// The name line of `gpassk -h` and the man page.
const ABOUT: &str = "Exact, resumable G-Pass@k evaluation of language models";

/// `gpassk --help`'s description: [`ABOUT`] and, in one line, what the headline metric is.
fn long_about() -> String {
    format!(
        "{ABOUT}\n\nG-Pass@k_τ: the chance that ⌈τ·k⌉ or more of k samples drawn from n are correct"
    )
}

#[derive(Debug, Parser)]
#[command(
    name = "gpassk",
    version,
    about = ABOUT,
    long_about = long_about(),
    arg_required_else_help = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(
        about = crate::commands::calc::ABOUT,
        long_about = crate::commands::calc::long_about()
    )]
    Calc(crate::commands::calc::CalcArgs),
    /// Sample every enabled model of a config, checkpointing each sample, then grade and report.
    Run(crate::commands::run::RunArgs),
    /// Label solution steps with Math-Shepherd rollouts (hard and soft estimates).
    Label(crate::commands::label::LabelArgs),
    /// Score a run's stored samples with the process reward model of `[verifier]` (resumable).
    Verify(crate::commands::verify::VerifyArgs),
    /// Grade answers: one --gold/--pred pair or a --cases JSONL file.
    Grade(crate::commands::grade::Args),
    /// List the shipped datasets, or show rendered prompts of one.
    Datasets(crate::commands::datasets::DatasetsArgs),
    /// Re-grade every stored sample of a run offline and rewrite all its output files.
    Score(crate::commands::score::ScoreArgs),
    /// Turn another harness's sample logs into gpassk runs (one per dataset): exact G-Pass@k,
    /// intervals, both verdicts. `gpassk import --help` lists the formats.
    Import(crate::commands::import::ImportArgs),
    /// Print or write one report format of a run (table, csv, per-problem, json, md, html).
    Report(crate::commands::report::ReportArgs),
    /// Compare two runs per model and metric (B − A) with exact paired tests, Holm-corrected.
    Compare(crate::commands::compare::CompareArgs),
    /// Every run of a results folder in date order: trends, paired differences, drift markers.
    History(crate::commands::history::HistoryArgs),
    /// From a run: the problems and samples per problem next runs need for compare to detect a
    /// change of D points, their cost, and what the current size detects.
    Plan(crate::commands::plan::PlanArgs),
    /// Serve the runs of a results folder as local, read-only web pages: from every number to its samples.
    View(crate::commands::view::ViewArgs),
    /// Set a run's measurements beside published numbers and flag protocol differences.
    Audit(crate::commands::audit::AuditArgs),
    /// Join the checkpoints of shard runs into one run directory.
    Merge(crate::commands::merge::MergeArgs),
    /// Write scored runs to the results database (SQLite or PostgreSQL), list it, export its tables.
    Store(crate::commands::store::StoreArgs),
    /// Run one Python file in the code sandbox and print its stdout, stderr and status.
    Exec(crate::commands::exec::ExecArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(crate::commands::completions::CompletionsArgs),
    /// Print the man page, write all pages into a folder, or print the Markdown reference.
    Man(crate::commands::completions::ManArgs),
}
