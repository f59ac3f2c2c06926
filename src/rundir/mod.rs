//! The run directory: one checkpoint record per finished unit (`record`), the run's manifest
//! (`manifest`) and the lock that keeps a second writer out (`lock`).

pub mod lock;
pub mod manifest;
pub mod record;
