//! One run as history and compare read it ([`RunEntry`]: a run directory, or a run of a results
//! database with its results at hand), and what drifted for a model between two runs (served
//! model, system fingerprint).

use crate::rundir::manifest::{Manifest, ModelManifest};
use crate::rundir::RunDir;
use crate::scoring::RunResults;
use std::collections::BTreeSet;

/// One run directory found under a results folder, or one run of a results database.
#[derive(Debug, Clone)]
pub struct RunEntry {
    pub dir: RunDir,
    pub manifest: Manifest,
    /// A stored run: its results and fingerprint counts, read from the database, not the folder.
    pub stored: Option<std::sync::Arc<Stored>>,
}

/// A run's results already at hand (read from a results database, or kept by the viewer), so
/// its history does not score it again.
#[derive(Debug)]
pub struct Stored {
    pub results: RunResults,
    /// Per model, usable samples by system fingerprint (`""` for none); None: counted in the
    /// run directory's checkpoints when a drift needs them.
    pub fingerprints:
        Option<std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>>,
}

impl RunEntry {
    /// A run directory with its manifest.
    pub fn of_dir(dir: RunDir, manifest: Manifest) -> RunEntry {
        RunEntry {
            dir,
            manifest,
            stored: None,
        }
    }

    /// The run's name: its directory's name (a stored run's is its id).
    pub fn name(&self) -> String {
        self.dir.path().file_name().map_or_else(
            || self.manifest.run_id.clone(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// What changed for one model between two runs: served model or system fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub what: &'static str,
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Share of the later run's answered samples that came from a name or fingerprint the earlier
    /// run never saw; `None` when it cannot be counted.
    pub share: Option<f64>,
}

impl Drift {
    /// `served model: a → b (100.0% of samples)`.
    pub fn describe(&self) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.join(", ")
            }
        };
        let share = self
            .share
            .map_or_else(String::new, |s| format!(" ({:.1}% of samples)", 100.0 * s));
        format!(
            "{}: {} → {}{share}",
            self.what,
            list(&self.before),
            list(&self.after)
        )
    }
}

/// Served-model and fingerprint drift of model `name` from run `a` to run `b`.
pub fn drift(a: &RunEntry, b: &RunEntry, name: &str) -> Vec<Drift> {
    let (Some(ma), Some(mb)) = (a.manifest.models.get(name), b.manifest.models.get(name)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let served_a: Vec<String> = ma.served_models.keys().cloned().collect();
    let served_b: Vec<String> = mb.served_models.keys().cloned().collect();
    if served_a != served_b {
        let total: u64 = mb.served_models.values().sum();
        let new: u64 = mb
            .served_models
            .iter()
            .filter(|(k, _)| !ma.served_models.contains_key(*k))
            .map(|(_, v)| v)
            .sum();
        out.push(Drift {
            what: "served model",
            before: served_a,
            after: served_b,
            share: (total > 0).then(|| new as f64 / total as f64),
        });
    }
    if fingerprints(ma) != fingerprints(mb) {
        out.push(Drift {
            what: "system fingerprint",
            before: ma.system_fingerprints.clone(),
            after: mb.system_fingerprints.clone(),
            share: new_fingerprint_share(b, name, &fingerprints(ma)),
        });
    }
    out
}

fn fingerprints(m: &ModelManifest) -> BTreeSet<String> {
    m.system_fingerprints.iter().cloned().collect()
}

/// Share of a model's usable samples whose fingerprint is not in `known` (from the database
/// for a stored run, else its checkpoint); `None` when unreadable or no sample is usable.
fn new_fingerprint_share(run: &RunEntry, model: &str, known: &BTreeSet<String>) -> Option<f64> {
    let counts = match run.stored.as_ref().and_then(|s| s.fingerprints.as_ref()) {
        Some(f) => f.get(model).cloned()?,
        None => run.dir.fingerprint_counts(model)?,
    };
    let total: u64 = counts.values().sum();
    let new: u64 = (counts.iter())
        .filter(|(f, _)| !f.is_empty() && !known.contains(*f))
        .map(|(_, n)| n)
        .sum();
    (total > 0).then(|| new as f64 / total as f64)
}
