//! The `[store]` table and store URLs: where a run's results are written when it ends
//! (`sqlite:PATH`), parsed once for the config and for `--db`.

use crate::error::BadInput;
use std::path::PathBuf;

/// Where results go: `sqlite:PATH` (a file, created with its folder on first use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    Sqlite(PathBuf),
}

impl StoreUrl {
    /// Reads a store URL; `what` names where it came from (`store.url`, `--db`) for errors.
    pub fn parse(url: &str, what: &str) -> Result<StoreUrl, BadInput> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(BadInput(format!(
                    "{what}: `sqlite:` needs a file path, as in sqlite:results/gpassk.db"
                )));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        // Never echo the rest: a URL may hold a password.
        let scheme = url.split(':').next().unwrap_or("");
        Err(BadInput(format!(
            "{what}: unknown store `{}:`: expected sqlite:PATH",
            crate::util::printable(scheme)
        )))
    }
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreUrl::Sqlite(p) => write!(f, "sqlite:{}", p.display()),
        }
    }
}

/// The resolved `[store]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub url: StoreUrl,
}
