//! Reader of evalscope sample logs (being written).

use super::{ImportError, ReadOptions, Sink, SourceSummary};
use std::path::PathBuf;

/// Streams the files under `paths` into `sink`.
pub fn read(
    _paths: &[PathBuf],
    _opts: &ReadOptions,
    _sink: &mut dyn Sink,
) -> Result<SourceSummary, ImportError> {
    Err(ImportError::Input(
        "evalscope import is not written yet".into(),
    ))
}
