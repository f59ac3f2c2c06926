//! gpassk: exact, resumable G-Pass@k evaluation of language models.
pub mod grade;
pub mod metrics;
