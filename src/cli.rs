//! The command line: clap's parser over the subcommands of [`crate::commands`].

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "gpassk",
    version,
    about = "Exact, resumable G-Pass@k evaluation of language models"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compute pass@k, G-Pass@k_τ and mG-Pass@k for one problem from n, c and k.
    Calc(crate::commands::calc::CalcArgs),
    /// Sample every enabled model of a config, checkpointing each sample, then grade and report.
    Run(crate::commands::run::RunArgs),
    /// Label solution steps with Math-Shepherd rollouts (hard and soft estimates).
    Label(crate::commands::label::LabelArgs),
    /// Grade answers: one --gold/--pred pair or a --cases JSONL file.
    Grade(crate::commands::grade::Args),
    /// List the shipped datasets, or show rendered prompts of one.
    Datasets(crate::commands::datasets::DatasetsArgs),
    /// Re-grade every stored sample of a run offline and rewrite all its output files.
    Score(crate::commands::score::ScoreArgs),
    /// Print or write one report format of a run (table, csv, per-problem, json, md, html).
    Report(crate::commands::report::ReportArgs),
    /// Compare two runs per model and metric with paired bootstrap intervals (B − A).
    Compare(crate::commands::compare::CompareArgs),
    /// Set a run's measurements beside published numbers and flag protocol differences.
    Audit(crate::commands::audit::AuditArgs),
    /// Join the checkpoints of shard runs into one run directory.
    Merge(crate::commands::merge::MergeArgs),
}

/// Renders a clap usage error as one line: the message plus any tip.
pub fn one_line_clap_error(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let mut parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    if let Some(first) = parts.first_mut() {
        *first = first.strip_prefix("error: ").unwrap_or(first);
    }
    parts.join("; ")
}
