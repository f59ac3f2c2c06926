//! What runs say side by side: two runs compared, a run audited against published numbers,
//! history across runs over time with what changed between them, and the runs a change needs
//! (`planner`).

pub mod audit;
pub mod compare;
pub mod entry;
pub mod history;
pub mod planner;
pub mod published;
pub mod trend;
