//! The run directory: its layout (the one place a path inside it is spelled), its life (claimed
//! new, locked, resumed, settled), one checkpoint record per finished unit (`record`), the
//! manifest (`manifest`) and the lock that keeps a second writer out (`lock`).

pub mod difference;
pub mod lock;
pub mod manifest;
pub mod merge;
pub mod provenance;
pub mod record;

use crate::error::BadInput;
use crate::util::{now_rfc3339, path_component};
use lock::{LockError, RunLock};
use manifest::{Manifest, Status};
use std::path::{Path, PathBuf};

/// The manifest's file name inside a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("{0}")]
    Bad(#[from] BadInput),
    #[error("{0}")]
    Lock(#[from] LockError),
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A new run's id: UTC time plus the config hash's first 8 hex digits.
pub fn new_run_id(config_hash: &str) -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{}", &config_hash[..8.min(config_hash.len())])
}

/// A run directory: where its manifest, checkpoints, verdicts, caches, trees, batch files and
/// reports live. Nothing outside this type joins a path inside a run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// The run directory at `root` (which may not exist yet).
    pub fn at(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    /// An existing run: `root` must hold a manifest; `what` names the flag or place it came from.
    pub fn existing(root: impl Into<PathBuf>, what: &str) -> Result<RunDir, BadInput> {
        let dir = RunDir::at(root);
        if !dir.is_run() {
            return Err(BadInput::new(format!(
                "{what} {}: no {MANIFEST_FILE} there; is it a gpassk run directory?",
                dir.display()
            )));
        }
        Ok(dir)
    }

    /// Whether a manifest is there (readable or not).
    pub fn is_run(&self) -> bool {
        self.manifest_path().is_file()
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn display(&self) -> std::path::Display<'_> {
        self.root.display()
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.root.join(MANIFEST_FILE)
    }

    pub fn read_manifest(&self) -> Result<Manifest, BadInput> {
        Manifest::read(&self.manifest_path())
    }

    pub fn write_manifest(&self, manifest: &Manifest) -> std::io::Result<()> {
        manifest.write(&self.manifest_path())
    }

    /// Where this run is: `host:/absolute/folder` (symlinks resolved), as a new run's manifest
    /// records it.
    pub fn origin(&self) -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown-host".into());
        let path = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        format!("{host}:{}", path.display())
    }

    /// Takes the run's lock without waiting.
    pub fn lock(&self) -> Result<RunLock, LockError> {
        RunLock::acquire(&self.root)
    }

    pub fn checkpoints_dir(&self) -> PathBuf {
        self.root.join("checkpoints")
    }

    /// A model's checkpoint (`checkpoints/<model>.jsonl`).
    pub fn checkpoint(&self, model: &str) -> PathBuf {
        self.model_file("checkpoints", model)
    }

    /// A model's judge verdicts and per-sample grades (`grades/<model>.jsonl`).
    pub fn grades(&self, model: &str) -> PathBuf {
        self.model_file("grades", model)
    }

    /// A model's verifier step scores (`verifier/<model>.jsonl`, `gpassk verify`).
    pub fn verifier_scores(&self, model: &str) -> PathBuf {
        self.model_file("verifier", model)
    }

    /// The verifier settings of the run's latest verification pass (`verifier/settings.json`).
    pub fn verifier_settings(&self) -> PathBuf {
        self.root.join("verifier").join("settings.json")
    }

    /// Step labels of the run's samples (`labels/labels.jsonl`: `gpassk label --from-run` writes
    /// its folder `labels/` inside the run unless told otherwise).
    pub fn labels_dir(&self) -> PathBuf {
        self.root.join("labels")
    }

    /// A model's replayable search replies (`cache/<model>.jsonl`).
    pub fn cache(&self, model: &str) -> PathBuf {
        self.model_file("cache", model)
    }

    fn model_file(&self, folder: &str, model: &str) -> PathBuf {
        let name = path_component(model);
        self.root.join(folder).join(format!("{name}.jsonl"))
    }

    pub fn trees_dir(&self) -> PathBuf {
        self.root.join("trees")
    }

    /// Where a search's tree is written, relative to the run directory (records keep this form).
    /// Problem ids (and any model name) that are not plain file names are made so by
    /// [`path_component`], which hashes them apart.
    pub fn tree_relative(model: &str, problem_id: &str, index: u32) -> PathBuf {
        Path::new("trees")
            .join(&*path_component(model))
            .join(&*path_component(problem_id))
            .join(format!("{index}.json"))
    }

    /// A path a record holds relative to the run (a tree), made absolute.
    pub fn resolve(&self, relative: &Path) -> PathBuf {
        self.root.join(relative)
    }

    /// The request file of a model's Batch API batch (`batch-<model hex>.requests.jsonl`).
    pub fn batch_requests(&self, model: &str) -> PathBuf {
        self.batch_stem(model).with_extension("requests.jsonl")
    }

    /// A batch's downloaded output file, by kind (`output`, `errors`).
    pub fn batch_download(&self, model: &str, kind: &str) -> PathBuf {
        self.batch_stem(model)
            .with_extension(format!("{kind}.jsonl"))
    }

    fn batch_stem(&self, model: &str) -> PathBuf {
        let hex = crate::util::hex(model.as_bytes());
        self.root.join(format!("batch-{hex}"))
    }

    /// A scored run's exact parts and what they rest on (`scores.json`, see `scoring::stored`).
    pub fn scores(&self) -> PathBuf {
        self.root.join("scores.json")
    }

    /// A report or other file at the top of the run (`report.html`, `labels.jsonl`…).
    pub fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Where an imported run keeps its problems and gold answers, relative to the run:
    /// `dataset/<task>.jsonl`.
    pub fn imported_dataset(task: &str) -> PathBuf {
        Path::new("dataset").join(format!("{}.jsonl", path_component(task)))
    }

    /// Claims a fresh run directory under `output_dir`, named `base` (or `base-1`, `base-2`… when
    /// taken: `create_dir` decides, so two runs started in the same second never share one), with
    /// its checkpoint folder, locked. `manifest` builds the new manifest from the run id; it is
    /// marked running and written. On any failure the directory is removed again.
    pub fn create(
        output_dir: &Path,
        base: &str,
        manifest: impl FnOnce(&str) -> Manifest,
    ) -> Result<OpenRun, RunDirError> {
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| RunDirError::Io { what, path, source }
        };
        std::fs::create_dir_all(output_dir).map_err(io("create output_dir", output_dir))?;
        let (mut run_id, mut i) = (base.to_string(), 0);
        let dir = loop {
            let dir = RunDir::at(output_dir.join(&run_id));
            match std::fs::create_dir(dir.path()) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    i += 1;
                    run_id = format!("{base}-{i}");
                }
                Err(e) => return Err(io("create run directory", dir.path())(e)),
            }
        };
        let claimed = dir.lock().map_err(RunDirError::from).and_then(|lock| {
            std::fs::create_dir(dir.checkpoints_dir())
                .map_err(io("create run directory", dir.path()))?;
            let mut manifest = manifest(&run_id);
            manifest.origin = Some(dir.origin());
            let mut run = OpenRun {
                manifest,
                dir: dir.clone(),
                _lock: lock,
            };
            run.mark_running()?;
            Ok(run)
        });
        if claimed.is_err() {
            let _ = std::fs::remove_dir_all(dir.path());
        }
        claimed
    }

    /// Locks the run (before reading: the manifest checked is the one this process then
    /// updates), reads its manifest, lets `update` check it and return the manifest to go on
    /// with, and marks it running.
    pub fn resume<E: From<RunDirError>>(
        self,
        update: impl FnOnce(Manifest) -> Result<Manifest, E>,
    ) -> Result<OpenRun, E> {
        let lock = self.lock().map_err(RunDirError::from)?;
        let old = self.read_manifest().map_err(RunDirError::from)?;
        let mut run = OpenRun {
            manifest: update(old)?,
            dir: self,
            _lock: lock,
        };
        run.mark_running()?;
        Ok(run)
    }

    /// Every run directory directly under `root` with a readable manifest, and the reasons of
    /// those whose manifest cannot be read, sorted by directory name.
    pub fn runs_under(root: &Path) -> std::io::Result<Found> {
        let mut dirs: Vec<RunDir> = std::fs::read_dir(root)?
            .filter_map(|e| e.ok().map(|e| RunDir::at(e.path())))
            .filter(RunDir::is_run)
            .collect();
        dirs.sort();
        let (mut runs, mut skipped) = (Vec::new(), Vec::new());
        for dir in dirs {
            match dir.read_manifest() {
                Ok(m) => runs.push((dir, m)),
                Err(e) => skipped.push(e.0),
            }
        }
        Ok(Found { runs, skipped })
    }

    /// Marks the manifest on disk interrupted (a second Ctrl-C quits at once: it must not be
    /// left saying `running`); best effort, for a process about to exit.
    pub fn mark_interrupted_now(&self) {
        if let Ok(mut m) = self.read_manifest() {
            m.mark_interrupted();
            m.updated_at = now_rfc3339();
            let _ = self.write_manifest(&m);
        }
    }
}

/// The runs [`RunDir::runs_under`] found.
#[derive(Debug, Default)]
pub struct Found {
    pub runs: Vec<(RunDir, Manifest)>,
    /// Why each run directory whose manifest cannot be read was left out.
    pub skipped: Vec<String>,
}

/// A run directory this process holds: locked while it lives, with the manifest it updates.
#[derive(Debug)]
pub struct OpenRun {
    pub dir: RunDir,
    pub manifest: Manifest,
    _lock: RunLock,
}

impl OpenRun {
    fn mark_running(&mut self) -> Result<(), RunDirError> {
        self.manifest.status = Status::Running;
        self.save()
    }

    /// Writes the manifest, stamped now.
    pub fn save(&mut self) -> Result<(), RunDirError> {
        self.manifest.updated_at = now_rfc3339();
        self.write()
    }

    /// Settles the run's status from its models (see [`Manifest::settle`]) and writes it; a run
    /// not interrupted is finished now.
    pub fn finish(&mut self, interrupted: bool) -> Result<(), RunDirError> {
        self.manifest.settle(interrupted);
        self.manifest.updated_at = now_rfc3339();
        if !interrupted {
            self.manifest.finished_at = Some(self.manifest.updated_at.clone());
        }
        self.write()
    }

    /// Stopped after sampling (while judging): the manifest says interrupted, not finished.
    pub fn interrupt(&mut self) -> Result<(), RunDirError> {
        self.manifest.mark_interrupted();
        self.write()
    }

    fn write(&self) -> Result<(), RunDirError> {
        self.dir
            .write_manifest(&self.manifest)
            .map_err(|source| RunDirError::Io {
                what: "write manifest in",
                path: self.dir.path().to_path_buf(),
                source,
            })
    }
}

impl RunDir {
    /// A model's usable samples by system fingerprint (`""` for none), read from its checkpoint;
    /// None when the checkpoint cannot be read.
    pub fn fingerprint_counts(
        &self,
        model: &str,
    ) -> Option<std::collections::BTreeMap<String, u64>> {
        let mut counts = std::collections::BTreeMap::new();
        record::read_records(&self.checkpoint(model), |r| {
            if r.usable() {
                *counts
                    .entry(r.system_fingerprint.clone().unwrap_or_default())
                    .or_insert(0u64) += 1;
            }
            Ok(())
        })
        .ok()?;
        Some(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_files_stay_inside_their_folder() {
        let dir = RunDir::at("/r");
        assert_eq!(dir.checkpoint("m"), Path::new("/r/checkpoints/m.jsonl"));
        assert_eq!(dir.grades("m"), Path::new("/r/grades/m.jsonl"));
        assert_eq!(dir.cache("m"), Path::new("/r/cache/m.jsonl"));
        for odd in ["../x", "a/b", "."] {
            let p = dir.checkpoint(odd);
            assert_eq!(p.parent(), Some(Path::new("/r/checkpoints")), "{odd}");
        }
        assert_eq!(
            dir.batch_requests("m"),
            Path::new("/r/batch-6d.requests.jsonl")
        );
        assert_eq!(
            dir.batch_download("m", "output"),
            Path::new("/r/batch-6d.output.jsonl")
        );
    }

    #[test]
    fn tree_paths_stay_inside_their_folder() {
        assert_eq!(
            RunDir::tree_relative("m+mcts", "p-1", 3),
            Path::new("trees/m+mcts/p-1/3.json")
        );
        for odd in ["../../etc", "a/b", "", ".", "x".repeat(300).as_str()] {
            let p = RunDir::tree_relative("m", odd, 0);
            let dir = p.parent().unwrap().file_name().unwrap().to_str().unwrap();
            assert!(
                !dir.starts_with('.') && !dir.contains('/') && dir.len() < 90,
                "{p:?}"
            );
            assert_eq!(p.components().count(), 4, "{p:?}");
        }
        assert_ne!(
            RunDir::tree_relative("m", "a/b", 0),
            RunDir::tree_relative("m", "a_b", 0)
        );
        for model in ["..", ".", "a/../..", ""] {
            let p = RunDir::tree_relative(model, "..", 0);
            assert!(p
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_))));
            assert_eq!(p.components().count(), 4, "{p:?}");
        }
    }

    fn manifest(run_id: &str) -> Manifest {
        Manifest {
            harness: "gpassk test".into(),
            git_commit: None,
            run_id: run_id.into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: String::new(),
            finished_at: None,
            status: Status::Pending,
            config_path: "c.toml".into(),
            config: serde_json::Value::Null,
            config_hash: "h".into(),
            settings: None,
            overrides: Vec::new(),
            task_name: None,
            dataset: manifest::DatasetInfo::default(),
            prompt_template: String::new(),
            prompt_hash: String::new(),
            few_shot_examples: 0,
            models: Default::default(),
            shard: None,
            merged_from: Vec::new(),
            imported: None,
            origin: None,
        }
    }

    #[test]
    fn a_new_run_is_claimed_once_locked_and_marked_running() {
        let out = tempfile::tempdir().unwrap();
        let first = RunDir::create(out.path(), "r", manifest).unwrap();
        let second = RunDir::create(out.path(), "r", manifest).unwrap();
        assert_eq!(first.dir.path(), out.path().join("r"));
        assert_eq!(second.dir.path(), out.path().join("r-1"));
        assert_eq!(second.manifest.run_id, "r-1");
        let on_disk = first.dir.read_manifest().unwrap();
        assert_eq!(on_disk.status, Status::Running);
        assert!(first.dir.checkpoints_dir().is_dir());
        // Held: a resume by another holder is refused and changes nothing.
        let err = first.dir.clone().resume(Ok::<_, RunDirError>);
        assert!(matches!(err, Err(RunDirError::Lock(_))), "{err:?}");
        assert_eq!(first.dir.read_manifest().unwrap(), on_disk);
    }

    #[test]
    fn resume_checks_before_writing_and_finish_settles_the_status() {
        let out = tempfile::tempdir().unwrap();
        let mut run = RunDir::create(out.path(), "r", manifest).unwrap();
        run.finish(false).unwrap();
        let dir = run.dir.clone();
        drop(run);
        let done = dir.read_manifest().unwrap();
        assert_eq!(
            done.status,
            Status::Complete,
            "no model: nothing incomplete"
        );
        assert_eq!(done.finished_at.as_deref(), Some(done.updated_at.as_str()));
        let refused = dir
            .clone()
            .resume(|_| Err(RunDirError::Bad(BadInput::new("no"))));
        assert!(refused.is_err());
        assert_eq!(
            dir.read_manifest().unwrap(),
            done,
            "a refused resume writes nothing"
        );
        let mut again = dir.clone().resume(Ok::<_, RunDirError>).unwrap();
        assert_eq!(dir.read_manifest().unwrap().status, Status::Running);
        again.finish(true).unwrap();
        let stopped = dir.read_manifest().unwrap();
        assert_eq!(stopped.status, Status::Interrupted);
    }

    #[test]
    fn a_run_that_cannot_be_claimed_leaves_nothing_behind() {
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let err = RunDir::create(&file, "r", manifest).unwrap_err();
        assert!(
            err.to_string().contains("cannot create output_dir"),
            "{err}"
        );
        assert!(RunDir::existing(out.path(), "--resume").is_err());
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
    }
}
