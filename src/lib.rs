//! gpassk: exact, resumable G-Pass@k evaluation of language models.
//!
//! Module map (data flows top to bottom):
//! - `cli`: clap definitions and exit codes; `calc`: the one-problem calculator command.
//! - `config`: config.toml → validated `Settings`.
//! - `dataset`: shipped benchmarks, JSONL loading, answer post-processing, few-shot sources.
//! - `prompt`: templates rendered into chat messages.
//! - `grade`: answer extraction, normalisation and math equivalence.
//! - `client`: one OpenAI-compatible request and its error classes.
//! - `checkpoint`: per-model JSONL checkpoints and atomic writes.
//! - `runner`: sampling units with retries, pacing and checkpoints; `run`: the `gpassk run` command.
//! - `score`: grading stored samples into counts and loading run directories (`gpassk score`);
//!   `report`: exporters (`gpassk report`).
//! - `stats`: bootstrap intervals over problems, paired differences, majority voting.
//! - `compare`, `audit`, `merge`: the commands of the same names; `shard`: `--shard I/N`.
//! - `manifest`: the run manifest; `label`: Math-Shepherd step labels built on the runner.
//! - `metrics`: exact combinatorics, per-problem metrics and aggregation.
pub mod audit;
pub mod calc;
pub mod checkpoint;
pub mod cli;
pub mod client;
pub mod compare;
pub mod config;
pub mod dataset;
pub mod grade;
pub mod label;
pub mod manifest;
pub mod merge;
pub mod metrics;
pub mod prompt;
pub mod report;
pub mod run;
pub mod runner;
pub mod score;
pub mod shard;
pub mod stats;
