//! gpassk: exact, resumable G-Pass@k evaluation of language models.
//!
//! Layers, each importing only from the ones above it in this list (checked by
//! `scripts/check-layers.py` in CI):
//! 1. `error` (bad input, exit statuses), `util` (hashes, id index, atomic writes, shutdown).
//! 2. Pure engines: `metrics`, `stats`, `grade`, `dataset`, `prompt`, `shard`, `steps`.
//! 3. `config` (config.toml → validated settings), `client` (one request, the retry policy and
//!    its loop), `checkpoint` (per-model JSONL), `lock` (one writer per run directory), `manifest`,
//!    `sandbox` (bubblewrap for model-written code),
//!    `cost` (prices, the cost of usage, estimates).
//! 4. `runner` (sampling units), `judge` (LLM judge), `plan` (config + dataset → prompts),
//!    `scoring` (checkpoints → graded counts, metrics and intervals), `label` (step labels),
//!    `batch` (batch request/output files), `search` (test-time MCTS over code-augmented steps).
//! 5. `report`: one exporter per output format; `history`: runs over time and what changed.
//! 6. `commands`: one file per subcommand, its clap arguments and `run`; `cli`: the parser.
pub mod error;
pub mod util;

pub mod dataset;
pub mod grade;
pub mod metrics;
pub mod prompt;
pub mod shard;
pub mod stats;
pub mod steps;

pub mod checkpoint;
pub mod client;
pub mod config;
pub mod cost;
pub mod lock;
pub mod manifest;
pub mod sandbox;

pub mod batch;
pub mod batch_api;
pub mod judge;
pub mod label;
pub mod plan;
pub mod runner;
pub mod scoring;
pub mod search;

pub mod history;
pub mod report;

pub mod cli;
pub mod commands;
