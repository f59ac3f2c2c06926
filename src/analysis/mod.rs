//! What runs say side by side: history across runs over time, and what changed between them.

pub mod history;
