//! gpassk: exact, resumable G-Pass@k evaluation of language models.
//!
//! Module map (data flows top to bottom):
//! - `cli`: clap definitions and exit codes; `calc`: the one-problem calculator command.
//! - `metrics`: exact combinatorics, per-problem metrics and aggregation.
pub mod calc;
pub mod checkpoint;
pub mod cli;
pub mod client;
pub mod config;
pub mod metrics;
