//! gpassk: exact, resumable G-Pass@k evaluation of language models.
//!
//! Module map (data flows top to bottom):
//! - `cli`: clap definitions and exit codes; `calc`: the one-problem calculator command.
//! - `metrics`: exact combinatorics, per-problem metrics and aggregation.
//! - `fake_server`: fake OpenAI-compatible HTTP server for tests and benchmarks.
pub mod calc;
pub mod cli;
pub mod fake_server;
pub mod metrics;
