//! gpassk: exact, resumable G-Pass@k evaluation of language models.
//!
//! The layers and what each module owns are in `ARCHITECTURE.md` (read it first);
//! `scripts/check-layers.py` reads its layer list and checks every import against it in CI.
pub mod error;
pub mod util;

pub mod dataset;
pub mod grade;
pub mod metrics;
pub mod prompt;
pub mod stats;

pub mod client;
pub mod config;
pub mod cost;
pub mod rundir;

pub mod import;
pub mod plan;
pub mod sampling;
pub mod scoring;
pub mod search;

pub mod analysis;
pub mod pipeline;
pub mod report;
pub mod store;

pub mod view;

pub mod cli;
pub mod commands;
