//! What runs say side by side: two runs compared, a run audited against published numbers, and
//! history across runs over time with what changed between them.

pub mod audit;
pub mod compare;
pub mod entry;
pub mod history;
pub mod published;
pub mod trend;
