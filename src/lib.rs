//! gpassk: exact, resumable G-Pass@k evaluation of language models.
//!
//! - `dataset`: shipped benchmarks, JSONL loading, answer post-processing, few-shot sources.
//! - `prompt`: templates rendered into chat messages.
//! - `metrics`: exact combinatorics.
pub mod dataset;
pub mod metrics;
pub mod prompt;
