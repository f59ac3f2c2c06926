//! `gpassk view`: a read-only local viewer over the run directories of one folder. It owns the
//! served folder and what is cached of each run (plan, checkpoint offsets, scores), re-read when a
//! file under the run changes; `data` builds what each page shows (also the JSON API), `page`
//! renders it as HTML, `server` is the HTTP side. Runs are found by name among those the folder
//! lists, never joined from a request's path; the cache is bounded by runs and estimated bytes and
//! keyed only by runs and models that exist.

pub mod data;
pub mod index;
pub mod math;
pub mod page;
mod scores;
pub mod server;

use crate::analysis::history::{discover, previous_run, RunEntry};
use crate::plan::Plan;
use crate::rundir::manifest::Manifest;
use crate::rundir::RunDir;
use crate::scoring::judge::JudgeVerdicts;
use crate::scoring::{load_plan, RunResults};
use index::{LineIndex, Stamp};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// Asked for something the served folder does not hold (or may not show).
    #[error("not found: {0}")]
    NotFound(String),
    /// A request the viewer refuses to read (a path that would leave the folder, a bad id).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A run that cannot be loaded: its own message.
    #[error("{0}")]
    Run(String),
}

/// The served folder: a results folder of run directories, or one run directory.
pub struct Viewer {
    root: PathBuf,
    /// When the folder is one run: its name.
    single: Option<String>,
    runs: Mutex<Runs>,
    history: Mutex<Option<(Vec<Stamp>, Arc<data::RunsView>)>>,
    /// Runs kept at most, and their estimated bytes together.
    limits: (usize, u64),
    compares: Mutex<Compares>,
}

/// Comparisons by (A, B), each with the stamps of both runs' files it was built from.
type Compares = HashMap<(String, String), (Vec<Stamp>, data::CompareView)>;

/// Comparisons kept at most (the cache is emptied when it would hold more).
const COMPARES: usize = 16;

/// The runs kept in memory: at most [`MAX_RUNS`], and about [`MAX_CACHE_BYTES`] together; the
/// least recently asked for goes first (the one in use never). Only runs found in the folder
/// and models of their config are ever keys, so no request can add entries of its own making.
#[derive(Default)]
struct Runs {
    kept: HashMap<String, (u64, Arc<RunCache>)>,
    /// Ticks at each use, for least recently used.
    clock: u64,
}

/// What the viewer holds in memory ([`Viewer::cached`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cached {
    pub runs: usize,
    pub indexes: usize,
    pub verdicts: usize,
    pub bytes: u64,
}

/// Runs kept at once.
const MAX_RUNS: usize = 16;
/// What the kept runs may hold together, as estimated ([`RunCache::bytes`]).
const MAX_CACHE_BYTES: u64 = 512 << 20;

/// What is kept of one run between requests, each part with the stamps it was built from and
/// its own lock (a problem page never waits for the run's scoring).
#[derive(Default)]
struct RunCache {
    plan: Mutex<Option<(Stamp, Arc<Loaded>)>>,
    indexes: Mutex<HashMap<String, LineIndex>>,
    results: Mutex<Option<(Vec<Stamp>, scores::Scores)>>,
    verdicts: Mutex<HashMap<String, (Stamp, Arc<JudgeVerdicts>)>>,
    /// Each part's estimated size, set when it is built: plan, indexes, results, verdicts.
    sizes: [AtomicU64; 4],
}

/// Which of [`RunCache::sizes`] a part is.
#[derive(Clone, Copy)]
enum Part {
    Plan = 0,
    Indexes = 1,
    Results = 2,
    Verdicts = 3,
}

impl RunCache {
    fn set_size(&self, part: Part, bytes: u64) {
        self.sizes[part as usize].store(bytes, Ordering::Relaxed);
    }

    /// What the run's cached parts hold, estimated.
    fn bytes(&self) -> u64 {
        self.sizes.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

/// A plan's size: its problems and prompts.
fn plan_bytes(plan: &Plan) -> u64 {
    let problems: usize = (plan.problems.iter())
        .map(|p| p.id.len() + p.question.len() + p.answer.len() + 128)
        .sum();
    let prompts: usize = (plan.prepared.iter())
        .map(|p| p.id.len() + p.messages_json.len() + p.prompt_hash.len() + 64)
        .sum();
    (problems + prompts) as u64
}

/// Scores' size: per model and problem its counts, votes and every metric's value.
fn results_bytes(results: &RunResults) -> u64 {
    let metrics = results.ks.len() * (results.taus.len() + 4);
    let per_problem = 192 + 64 * metrics;
    let cells: usize = (results.models.iter())
        .map(|m| {
            m.problems
                .iter()
                .map(|p| p.id.len() + per_problem)
                .sum::<usize>()
        })
        .sum();
    cells as u64 + 4096
}

/// A run's plan (problems, gold answers, grading settings) and manifest.
pub struct Loaded {
    pub dir: RunDir,
    pub name: String,
    pub plan: Plan,
    pub manifest: Manifest,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A path segment naming a run: one plain file name (the request's own decoding done).
pub fn plain_name(name: &str) -> Result<&str, ViewError> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0'])
        || name.len() > 255;
    if bad {
        return Err(ViewError::BadRequest(format!("not a run name: {name:?}")));
    }
    Ok(name)
}

impl Viewer {
    /// Serves `dir`: a run directory, or a folder of them. A bad folder is refused here.
    pub fn new(dir: &Path) -> Result<Viewer, crate::error::BadInput> {
        let root = dir.canonicalize().map_err(|e| {
            crate::error::BadInput::new(format!("{}: cannot open: {e}", dir.display()))
        })?;
        if !root.is_dir() {
            return Err(crate::error::BadInput::new(format!(
                "{}: not a folder (give a results folder or a run directory)",
                dir.display()
            )));
        }
        let single = RunDir::at(&root)
            .is_run()
            .then(|| root.file_name().map(|n| n.to_string_lossy().into_owned()))
            .flatten();
        if single.is_none() {
            discover(&root)?;
        }
        Ok(Viewer {
            root,
            single,
            runs: Mutex::default(),
            history: Mutex::default(),
            limits: (MAX_RUNS, MAX_CACHE_BYTES),
            compares: Mutex::default(),
        })
    }

    /// Keeps at most `runs` runs cached, about `bytes` together (by default 16 runs and 512 MiB).
    pub fn with_cache_limits(mut self, runs: usize, bytes: u64) -> Viewer {
        self.limits = (runs.max(1), bytes);
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The runs served, oldest first, and why any was skipped.
    pub fn entries(&self) -> (Vec<RunEntry>, Vec<String>) {
        if self.single.is_some() {
            let dir = RunDir::at(&self.root);
            return match dir.read_manifest() {
                Ok(manifest) => (vec![RunEntry::of_dir(dir, manifest)], Vec::new()),
                Err(e) => (Vec::new(), vec![e.0]),
            };
        }
        let (entries, skipped) = discover(&self.root).unwrap_or_default();
        let inside = entries.into_iter().filter(|e| self.confined(e.dir.path()));
        (inside.collect(), skipped)
    }

    /// Whether `path` resolves (symlinks followed) inside the served folder.
    fn confined(&self, path: &Path) -> bool {
        path.canonicalize().is_ok_and(|p| p.starts_with(&self.root))
    }

    /// The run directory named `name`, found among those served (never joined from the name).
    pub fn find(&self, name: &str) -> Result<RunDir, ViewError> {
        plain_name(name)?;
        if self.single.as_deref() == Some(name) {
            return Ok(RunDir::at(&self.root));
        }
        let found = RunDir::runs_under(&self.root).ok().and_then(|f| {
            f.runs
                .into_iter()
                .map(|(d, _)| d)
                .find(|d| d.path().file_name().is_some_and(|n| n == name))
        });
        match found {
            Some(d) if self.single.is_none() && self.confined(d.path()) => Ok(d),
            _ => Err(ViewError::NotFound(format!("run {name}"))),
        }
    }

    /// The cache of the run `name` (a run [`Viewer::find`] found), made the most recently used;
    /// the least recently used others go while the kept ones are too many or too big.
    fn cache(&self, name: &str) -> Arc<RunCache> {
        let mut runs = lock(&self.runs);
        runs.clock += 1;
        let now = runs.clock;
        let entry = runs.kept.entry(name.to_string()).or_default();
        entry.0 = now;
        let cache = entry.1.clone();
        loop {
            let total: u64 = runs.kept.values().map(|(_, c)| c.bytes()).sum();
            if runs.kept.len() <= self.limits.0 && total <= self.limits.1 {
                break;
            }
            let oldest = (runs.kept.iter())
                .filter(|(n, _)| n.as_str() != name)
                .min_by_key(|(_, (used, _))| *used)
                .map(|(n, _)| n.clone());
            match oldest {
                Some(n) => runs.kept.remove(&n),
                None => break,
            };
        }
        cache
    }

    /// What is cached: runs, checkpoint indexes and judge verdicts kept, and their estimated
    /// bytes (for tests and benchmarks).
    pub fn cached(&self) -> Cached {
        let runs = lock(&self.runs);
        let mut out = Cached {
            runs: runs.kept.len(),
            ..Cached::default()
        };
        for (_, c) in runs.kept.values() {
            out.indexes += lock(&c.indexes).len();
            out.verdicts += lock(&c.verdicts).len();
            out.bytes += c.bytes();
        }
        out
    }

    /// `model` when the run's config names it; any other name is not found (and never a key).
    fn model_of<'a>(loaded: &Loaded, model: &'a str) -> Result<&'a str, ViewError> {
        let known = (loaded.plan.settings.models.iter()).any(|m| m.name == model);
        if known {
            Ok(model)
        } else {
            Err(ViewError::NotFound(format!(
                "model {model:?} in run {}",
                loaded.name
            )))
        }
    }

    /// A run's plan, loaded once per manifest version.
    pub fn loaded(&self, name: &str) -> Result<Arc<Loaded>, ViewError> {
        let dir = self.find(name)?;
        let stamp = Stamp::of(&dir.manifest_path());
        let cache = self.cache(name);
        let mut cached = lock(&cache.plan);
        if let Some((s, l)) = &*cached {
            if *s == stamp {
                return Ok(l.clone());
            }
        }
        let (plan, manifest) =
            load_plan(&dir, &[]).map_err(|e| ViewError::Run(crate::error::render(&e)))?;
        cache.set_size(Part::Plan, plan_bytes(&plan));
        let loaded = Arc::new(Loaded {
            dir,
            name: name.to_string(),
            plan,
            manifest,
        });
        *cached = Some((stamp, loaded.clone()));
        Ok(loaded)
    }

    /// The stamps of every file a run's scores rest on (its manifest; per model its checkpoint,
    /// judge verdicts and verifier scores; the verifier's settings; `scores.json`): a new line
    /// anywhere rescores.
    fn run_stamps<'a>(dir: &RunDir, models: impl Iterator<Item = &'a str>) -> Vec<Stamp> {
        let mut out = vec![Stamp::of(&dir.manifest_path())];
        for m in models {
            out.push(Stamp::of(&dir.checkpoint(m)));
            out.push(Stamp::of(&dir.grades(m)));
            out.push(Stamp::of(&dir.verifier_scores(m)));
        }
        out.push(Stamp::of(&dir.verifier_settings()));
        out.push(Stamp::of(&dir.scores()));
        out
    }

    fn stamps(l: &Loaded) -> Vec<Stamp> {
        Self::run_stamps(
            &l.dir,
            l.plan.settings.models.iter().map(|m| m.name.as_str()),
        )
    }

    /// A run's scores as `gpassk report` gives them (but effort, served models of units graded
    /// here, source verdicts and the verifier's summary), made current only when one of its files
    /// changed: read back from its `scores.json`, with only the problems of lines past it graded
    /// again, where it can (`view::scores`); else graded whole.
    pub fn results(&self, name: &str) -> Result<(Arc<Loaded>, Arc<RunResults>), ViewError> {
        let loaded = self.loaded(name)?;
        let stamps = Self::stamps(&loaded);
        let cache = self.cache(name);
        let mut cached = lock(&cache.results);
        if let Some((s, r)) = &*cached {
            if *s == stamps {
                return Ok((loaded, r.results.clone()));
            }
        }
        let old = cached.take().map(|c| c.1);
        let scores = self.rescore(&loaded, old)?;
        let results = scores.results.clone();
        cache.set_size(Part::Results, results_bytes(&results));
        *cached = Some((stamps, scores));
        Ok((loaded, results))
    }

    /// Calls `f` with the up-to-date offset index of one model's checkpoint.
    pub fn with_index<T>(
        &self,
        loaded: &Loaded,
        model: &str,
        f: impl FnOnce(&LineIndex, &Path) -> T,
    ) -> Result<T, ViewError> {
        let model = Self::model_of(loaded, model)?;
        let path = loaded.dir.checkpoint(model);
        let cache = self.cache(&loaded.name);
        let mut indexes = lock(&cache.indexes);
        let index = indexes.entry(model.to_string()).or_default();
        let refreshed = index.refresh(&path);
        cache.set_size(Part::Indexes, indexes.values().map(LineIndex::bytes).sum());
        refreshed.map_err(|e| ViewError::Run(e.to_string()))?;
        let index = &indexes[model];
        Ok(f(index, &path))
    }

    /// A model's stored judge verdicts, when the run's grader uses the judge (kept while their
    /// file is unchanged).
    pub fn verdicts(&self, loaded: &Loaded, model: &str) -> Option<Arc<JudgeVerdicts>> {
        let model = Self::model_of(loaded, model).ok()?;
        scores::judged(loaded)
            .then(|| self.verdicts_of(loaded, model).ok())
            .flatten()
    }

    /// The run before `name` from the same config on the same data, when it is served too.
    pub fn previous(&self, name: &str) -> Option<String> {
        if self.single.is_some() {
            return None; // the folder around one run is not served
        }
        let dir = self.find(name).ok()?;
        let prev = previous_run(dir.path()).ok()??;
        let prev_name = prev.file_name()?.to_string_lossy().into_owned();
        self.find(&prev_name).ok().map(|_| prev_name)
    }

    /// The runs page's data, rebuilt when any manifest or checkpoint changed.
    pub fn runs_view(&self) -> Arc<data::RunsView> {
        let (entries, skipped) = self.entries();
        let stamps: Vec<Stamp> = (entries.iter())
            .flat_map(|e| Self::run_stamps(&e.dir, e.manifest.models.keys().map(String::as_str)))
            .collect();
        let mut cached = lock(&self.history);
        if let Some((s, v)) = &*cached {
            if *s == stamps {
                return v.clone();
            }
        }
        let view = Arc::new(data::runs_view(self, &entries, skipped));
        *cached = Some((stamps, view.clone()));
        view
    }
}

impl Viewer {
    /// The comparison of runs `a` and `b`: the one `build` made before while neither run's files
    /// changed (drift counts every checkpoint's fingerprints), else `build`'s.
    fn compared(
        &self,
        a: &str,
        b: &str,
        build: impl FnOnce() -> Result<data::CompareView, ViewError>,
    ) -> Result<data::CompareView, ViewError> {
        let mut stamps = Vec::new();
        for name in [a, b] {
            stamps.extend(Self::stamps(&*self.loaded(name)?));
        }
        let key = (a.to_string(), b.to_string());
        if let Some((s, view)) = lock(&self.compares).get(&key) {
            if *s == stamps {
                return Ok(view.clone());
            }
        }
        let view = build()?;
        let mut cache = lock(&self.compares);
        if cache.len() >= COMPARES {
            cache.clear();
        }
        cache.insert(key, (stamps, view.clone()));
        Ok(view)
    }

    /// A token that changes when any file the pages read changes: of one run, or of them all.
    /// The pages' script polls it and reloads on a change (a run still being sampled grows).
    pub fn stamp(&self, run: Option<&str>) -> Result<String, ViewError> {
        use std::hash::{Hash, Hasher};
        let dirs = match run {
            Some(name) => vec![self.find(name)?],
            None => self.entries().0.into_iter().map(|e| e.dir).collect(),
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for dir in &dirs {
            let models = dir.read_manifest().map(|m| m.models).unwrap_or_default();
            Self::run_stamps(dir, models.keys().map(String::as_str)).hash(&mut h);
        }
        Ok(format!("{:016x}", h.finish()))
    }
}
