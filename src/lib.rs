//! gpassk: exact, resumable G-Pass@k evaluation of language models.
pub mod metrics;
