//! Command-line definitions (clap) and the mapping from errors to exit codes.

use clap::{Parser, Subcommand};

/// Exit code for bad input: config, dataset, arguments, HTTP replies that cannot be used.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a run that finished with failed units (resumable) or an internal failure.
pub const EXIT_FAILED: u8 = 1;
/// Exit code after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

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
    Calc(crate::calc::CalcArgs),
    /// Sample every enabled model of a config, checkpointing each sample, then grade and report.
    Run(crate::run::RunArgs),
    /// Label solution steps with Math-Shepherd rollouts (hard and soft estimates).
    Label(crate::label::LabelArgs),
    /// Grade answers: one --gold/--pred pair or a --cases JSONL file.
    Grade(crate::grade::cli::Args),
    /// List the shipped datasets, or show rendered prompts of one.
    Datasets(crate::dataset::cli::DatasetsArgs),
    /// Re-grade every stored sample of a run offline and rewrite all its output files.
    Score(crate::score::ScoreArgs),
    /// Print or write one report format of a run (table, csv, per-problem, json, md, html).
    Report(crate::report::ReportArgs),
    /// Compare two runs per model and metric with paired bootstrap intervals (B − A).
    Compare(crate::compare::CompareArgs),
    /// Set a run's measurements beside published numbers and flag protocol differences.
    Audit(crate::audit::AuditArgs),
    /// Join the checkpoints of shard runs into one run directory.
    Merge(crate::merge::MergeArgs),
}

/// A user-caused error that has no richer type: it maps to exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Exit code for an error: 2 when anything in its chain is bad input, else 1.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    let bad_input = err.chain().any(|e| {
        e.is::<BadInput>()
            || e.is::<crate::metrics::MetricsError>()
            || e.is::<crate::config::ConfigError>()
            || e.is::<crate::dataset::DatasetError>()
            || e.is::<crate::prompt::PromptError>()
            || matches!(
                e.downcast_ref::<crate::checkpoint::CheckpointError>(),
                Some(crate::checkpoint::CheckpointError::Corrupt { .. })
            )
    });
    if bad_input {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILED
    }
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
