//! `gpassk import`: other harnesses' sample logs (lm-eval, OpenCompass, lighteval, EvalScope,
//! Inspect AI, NeMo-Skills, τ-bench, Qwen2.5-Math, any JSONL) turned into ordinary run
//! directories, one per dataset, one checkpoint record per imported sample with its provenance
//! and the source's own verdict.
//!
//! Each format is a [`Reader`] (listed once in [`formats::READERS`]) that streams its files into
//! a [`Sink`]; `sink` is the one sink, which keeps what `--model`/`--task` ask for and writes
//! through [`crate::rundir::RunDir`] and [`crate::rundir::record::Record`]; [`writer`] stages
//! the runs and moves them into place.

mod disagree;
pub mod evalscope;
mod files;
pub mod formats;
pub mod inspect;
pub mod jsonl;
pub mod lighteval;
pub mod lm_eval;
mod metric;
pub mod nemo_skills;
pub mod opencompass;
pub mod qwen_math;
mod sink;
pub mod source;
mod stream;
pub mod tau_bench;
pub mod writer;

pub use crate::rundir::provenance::{AggregateCheck, SourceSettings};
pub use formats::{detect, Format, READERS};
pub use sink::Errored;
pub use source::{At, ImportError, Note, ReadOptions, Reader, Sink, SourceSample, SourceSummary};
pub use writer::{stage, write_disagreements, ImportOptions, Imported, Staged};

/// A sink that keeps what it is sent, for the readers' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::source::Role;
    use super::*;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    #[derive(Default)]
    pub(crate) struct Collect {
        pub files: Vec<PathBuf>,
        pub samples: Vec<SourceSample>,
        pub bad: Vec<String>,
        /// Count bad records instead of failing (as `--skip-bad`).
        pub skip_bad: bool,
        /// Keep only this dataset's (or subset's) samples, as `--task` does.
        pub task: Option<String>,
        /// Per file read beside the samples: the datasets the reader said it belongs to.
        pub belongs: BTreeMap<usize, Vec<String>>,
    }

    impl Collect {
        /// Per (model, problem): samples and source-correct samples (None when any sample of the
        /// problem has no source verdict).
        pub(crate) fn counts(&self) -> BTreeMap<(String, String), (u32, Option<u32>)> {
            let mut out: BTreeMap<(String, String), (u32, Option<u32>)> = BTreeMap::new();
            for s in &self.samples {
                let e = out
                    .entry((s.model.clone(), s.problem_id.clone()))
                    .or_insert((0, Some(0)));
                e.0 += 1;
                e.1 = match (e.1, s.verdict) {
                    (Some(c), Some(v)) => Some(c + v as u32),
                    _ => None,
                };
            }
            out
        }

        /// The datasets the samples name, in order.
        pub(crate) fn datasets(&self) -> Vec<String> {
            let mut d: Vec<String> = self.samples.iter().map(|s| s.dataset.clone()).collect();
            d.sort();
            d.dedup();
            d
        }
    }

    impl Sink for Collect {
        fn open(&mut self, path: &Path, _role: Role) -> Result<usize, ImportError> {
            if let Some(i) = self.files.iter().position(|f| f == path) {
                return Ok(i);
            }
            self.files.push(path.to_path_buf());
            Ok(self.files.len() - 1)
        }
        fn belongs(&mut self, file: usize, dataset: &str) {
            let of = self.belongs.entry(file).or_default();
            if !of.iter().any(|d| d == dataset) {
                of.push(dataset.to_string());
            }
        }
        fn sample(&mut self, sample: SourceSample) -> Result<(), ImportError> {
            let wanted = self
                .task
                .as_ref()
                .is_none_or(|t| *t == sample.dataset || sample.subset.as_ref() == Some(t));
            if wanted {
                self.samples.push(sample);
            }
            Ok(())
        }
        fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError> {
            let path = self.files[file].clone();
            if !self.skip_bad {
                return Err(ImportError::Bad { path, at, message });
            }
            self.bad.push(format!("{}{at}: {message}", path.display()));
            Ok(())
        }
        fn path(&self, file: usize) -> &Path {
            &self.files[file]
        }
        fn wants(&mut self, _file: &Path, _model: Option<&str>, dataset: Option<&str>) -> bool {
            self.task
                .as_deref()
                .zip(dataset)
                .is_none_or(|(t, d)| t == d)
        }
    }

    /// Runs the reader named `format` over `paths` into a fresh [`Collect`].
    pub(crate) fn read_into(
        format: &str,
        paths: &[PathBuf],
        opts: &ReadOptions,
        skip_bad: bool,
    ) -> (Collect, Result<SourceSummary, ImportError>) {
        let mut sink = Collect {
            skip_bad,
            task: opts.task.clone(),
            ..Collect::default()
        };
        let out = Format::named(format).and_then(|f| f.read(paths, opts, &mut sink));
        (sink, out)
    }

    /// Each stored aggregate of `summary`: its name, stored value and recomputation (as the sink
    /// would make it from the collected samples' verdicts), and whether the two match.
    pub(crate) fn checks(
        sink: &Collect,
        summary: &SourceSummary,
    ) -> Vec<(String, f64, Option<f64>, bool)> {
        use super::source::Recompute;
        let mut out = Vec::new();
        for s in &summary.aggregates {
            let recomputed = match &s.recompute {
                Recompute::Done { value, .. } => *value,
                Recompute::Verdicts {
                    metric,
                    scale,
                    subset,
                    files,
                } => {
                    let mut by: BTreeMap<&str, Vec<(u32, bool)>> = BTreeMap::new();
                    let mine = sink.samples.iter().filter(|x| {
                        x.model == s.model
                            && x.dataset == s.dataset
                            && (subset.is_none() || x.subset == *subset)
                            && (files.is_empty() || files.contains(&x.file))
                    });
                    for x in mine {
                        let e = by.entry(&x.problem_id).or_default();
                        e.push((x.repeat.unwrap_or(0), x.verdict.unwrap_or(false)));
                    }
                    let lists: Vec<Vec<bool>> = (by.into_values())
                        .map(|mut v| {
                            v.sort_by_key(|x| x.0);
                            v.into_iter().map(|x| x.1).collect()
                        })
                        .collect();
                    super::metric::mean_over_problems(&lists, metric)
                        .ok()
                        .map(|v| scale * v)
                }
            };
            let check = AggregateCheck {
                model: s.model.clone(),
                name: s.name.clone(),
                source: s.value,
                recomputed,
                basis: String::new(),
            };
            out.push((
                s.name.clone(),
                s.value,
                recomputed,
                check.matches() == Some(true),
            ));
        }
        out
    }

    /// The `expected.json` of a fixture folder under `tests/fixtures/import/`.
    pub(crate) fn expected(dir: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(fixture(&format!("{dir}/expected.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Copies the folder `from` into `to`, leaving out what is named `skip`.
    pub(crate) fn copy_tree(from: &Path, to: &Path, skip: &str) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap();
            if name == skip {
                continue;
            }
            if p.is_dir() {
                copy_tree(&p, &to.join(name), skip);
            } else {
                std::fs::copy(&p, to.join(name)).unwrap();
            }
        }
    }

    /// A fixture under `tests/fixtures/import/`.
    pub(crate) fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/import")
            .join(rel)
    }
}
