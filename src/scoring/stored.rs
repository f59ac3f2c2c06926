//! A scored run's exact parts kept beside its reports (`scores.json`): each model's per-problem
//! counts and votes, and the per-problem values its counts do not give (the verifier's), with
//! what they were scored from (the settings that decide a grade, and the size and time of every
//! file read). A reader that must not grade a million samples again (the viewer, `history`) reads
//! them back through [`ModelScore::from_stored`], the path the results database uses too, and
//! only while every file is as it was; otherwise it scores the run. A checkpoint that only grew
//! since (a run still being sampled) leaves the rest usable: [`read_kept`] says which grew, and
//! the viewer grades the problems with new lines alone (`grow`).

use super::found::{ModelFound, ProblemFound, WAYS};
use super::grow::ProblemUnits;
use super::{ModelScore, RunResults, ScoreParts};
use crate::metrics::{MetricKind, ProblemCounts, Tau};
use crate::plan::Plan;
use crate::rundir::manifest::Manifest;
use crate::rundir::RunDir;
use crate::stats::Vote;
use crate::util::Prefix;
use anyhow::Result;
use num_bigint::BigInt;
use num_rational::BigRational;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The layout of `scores.json`; another is read as absent.
const FORMAT: u32 = 3;

/// The largest `scores.json` read (a million problems of a few models fit).
const MAX_BYTES: u64 = 512 * 1024 * 1024;

/// One file scoring read, as it was: its name in the run, length and modification time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    pub file: String,
    pub len: u64,
    /// Nanoseconds since the epoch; None where the file system keeps no time.
    pub modified_ns: Option<u64>,
}

impl FileStamp {
    /// The stamp of `name` (relative to the run); length 0 and no time when it does not exist.
    pub fn of(dir: &RunDir, path: &Path) -> FileStamp {
        let file = path.strip_prefix(dir.path()).unwrap_or(path);
        let meta = std::fs::metadata(path).ok();
        let modified_ns = (meta.as_ref())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_nanos()).ok());
        FileStamp {
            file: file.to_string_lossy().into_owned(),
            len: meta.map_or(0, |m| m.len()),
            modified_ns,
        }
    }
}

/// What a scoring rests on: the settings that decide a grade and each file it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Basis {
    pub harness: String,
    /// sha256 of the grader settings, the k and τ lists and the verifier's settings.
    pub settings: String,
    pub dataset_sha256: String,
    pub files: Vec<FileStamp>,
    /// Per model in order, its checkpoint's complete lines as scoring found them: a later reader
    /// tells from it whether the checkpoint only grew since, and from where (None: unreadable).
    pub checkpoints: Vec<Option<Prefix>>,
}

impl Basis {
    /// The basis a scoring of `plan` in `dir` starts from, before any model's files are read.
    pub fn start(plan: &Plan, verifier: Option<&crate::config::VerifierSettings>) -> Basis {
        let ev = &plan.settings.evaluation;
        // A price changes no score: scores kept under another price still hold.
        let verifier = verifier.map(|v| crate::config::VerifierSettings {
            pricing: None,
            allow_unpriced: false,
            ..v.clone()
        });
        let key = format!(
            "{:?}|{:?}|{:?}|{:?}|{}",
            ev.grade_config(),
            ev.grader,
            ev.ks,
            ev.taus,
            serde_json::to_string(&verifier).unwrap_or_default()
        );
        Basis {
            harness: env!("CARGO_PKG_VERSION").to_string(),
            settings: crate::util::hex(&Sha256::digest(key.as_bytes())),
            dataset_sha256: plan.dataset.sha256.clone(),
            files: Vec::new(),
            checkpoints: Vec::new(),
        }
    }

    /// Adds one model's files, as they are just before its scoring reads them.
    pub fn add_model(&mut self, dir: &RunDir, model: &str) {
        for path in [
            dir.checkpoint(model),
            dir.grades(model),
            dir.verifier_scores(model),
        ] {
            self.files.push(FileStamp::of(dir, &path));
        }
        self.checkpoints
            .push(Prefix::of(&dir.checkpoint(model)).ok());
    }

    /// Per model of `plan` (in its order), whether its checkpoint in `dir` only grew since this
    /// basis found it; None when the basis is of other settings, another model list or gpassk
    /// version, or when any other file it rests on changed (or a checkpoint was rewritten).
    pub fn holds_for(&self, dir: &RunDir, plan: &Plan) -> Option<Vec<bool>> {
        let verifier =
            super::verifier_calls::run_settings(dir, plan.settings.verifier.as_ref()).ok()?;
        let mut expected = Basis::start(plan, verifier.as_ref());
        expected.files = self.files.clone();
        expected.checkpoints = self.checkpoints.clone();
        let names: Vec<&str> = plan
            .settings
            .models
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        let same = *self == expected && self.checkpoints.len() == names.len();
        same.then(|| self.grown_in(dir, &names)).flatten()
    }

    /// Per model, whether its checkpoint grew since this basis found it; None when a file
    /// changed otherwise (or a checkpoint was rewritten).
    fn grown_in(&self, dir: &RunDir, models: &[&str]) -> Option<Vec<bool>> {
        let mut grown = vec![false; models.len()];
        for f in &self.files {
            let path = dir.file(&f.file);
            if FileStamp::of(dir, &path) == *f {
                continue;
            }
            let i = models.iter().position(|m| dir.checkpoint(m) == path)?;
            let prefix = self.checkpoints.get(i)?.as_ref()?;
            grown[i] = prefix.holds(&path).then_some(true)?;
        }
        Some(grown)
    }
}

#[derive(Serialize, Deserialize)]
struct ScoresFile {
    format: u32,
    basis: Basis,
    /// The verifier settings file, as scoring read it (a re-aggregation rewrites it).
    verifier_settings: FileStamp,
    models: Vec<StoredModel>,
}

#[derive(Serialize, Deserialize)]
struct StoredModel {
    name: String,
    model_id: String,
    n: u32,
    correct: u64,
    wrong: u64,
    no_answer: u64,
    truncated: u64,
    missing: u64,
    served_models: BTreeMap<String, u64>,
    /// Per problem: id, subset, n, c, greedy (1, 0, none), voters, winners, winners correct.
    problems: Vec<StoredProblem>,
    columns: Vec<StoredColumn>,
    /// With a judge: per problem, the samples it judged otherwise than the rule grader.
    judge_overruled: Option<Vec<u32>>,
    /// Per problem: its samples with no answer and truncated, and how its graded answers were
    /// found (per way in `FoundBy::ALL` order, then those not recorded).
    units: Option<Vec<StoredUnits>>,
}

type StoredUnits = (u32, u32, [u32; WAYS], u32);

type StoredProblem = (String, Option<String>, u64, u64, Option<u8>, u32, u32, u32);

/// One metric column the counts do not give: its config name, and per problem its exact value
/// (numerator and denominator as text) and Monte Carlo error (as text: serde_json's own reading
/// of a float may miss the last bit, Rust's `parse` never does).
#[derive(Serialize, Deserialize)]
struct StoredColumn {
    metric: String,
    values: Vec<Option<(String, String)>>,
    std_errors: Option<Vec<Option<String>>>,
}

/// A metric column of a model beyond its counts' (see [`ModelScore::from_stored`]).
pub struct ExtraColumn {
    pub metric: MetricKind,
    pub values: Vec<Option<BigRational>>,
    pub std_errors: Option<Vec<Option<f64>>>,
}

impl ModelScore {
    /// A model's score from its parts and the per-problem values of the metrics its counts do not
    /// give, in their order after the counts' own: what grading its samples gives, but for the
    /// effort, the source's verdicts and the verifier's summary, which these do not hold.
    pub fn from_stored(
        parts: ScoreParts,
        extra: Vec<ExtraColumn>,
        ks: &[u64],
        taus: &[Tau],
    ) -> Result<ModelScore> {
        let mut m = ModelScore::from_parts(parts, ks, taus)?;
        if extra.is_empty() {
            return Ok(m);
        }
        let problems = m.problems.len();
        for column in extra {
            anyhow::ensure!(
                column.values.len() == problems,
                "model {}: {} holds {} problems, not {problems}",
                m.name,
                column.metric,
                column.values.len()
            );
            m.values.metrics.push(column.metric);
            m.values.std_errors.push(column.std_errors);
            for (row, v) in m.values.rows.iter_mut().zip(column.values) {
                row.push(v);
            }
        }
        m.estimates = crate::stats::estimates(&m.problems, &m.values, &m.aggregate, u64::from(m.n));
        Ok(m)
    }

    /// The columns of this score that its counts do not give, for keeping.
    pub fn extra_columns(&self, ks: &[u64], taus: &[Tau]) -> Vec<ExtraColumn> {
        let counted = crate::stats::metric_list(ks, taus);
        let v = &self.values;
        (v.metrics.iter().enumerate())
            .filter(|(_, m)| !counted.contains(m))
            .map(|(col, metric)| ExtraColumn {
                metric: metric.clone(),
                values: v.rows.iter().map(|r| r[col].clone()).collect(),
                std_errors: v.std_errors[col].clone(),
            })
            .collect()
    }
}

/// `scores.json` of scored results (None for results without a basis: not scored from a run).
pub fn bytes(dir: &RunDir, results: &RunResults) -> Option<Vec<u8>> {
    let basis = results.basis.clone()?;
    let models = (results.models.iter())
        .map(|m| StoredModel {
            name: m.name.clone(),
            model_id: m.model_id.clone(),
            n: m.n,
            correct: m.correct,
            wrong: m.wrong,
            no_answer: m.no_answer,
            truncated: m.truncated,
            missing: m.missing,
            served_models: m.served_models.clone(),
            problems: (m.problems.iter().zip(&m.votes))
                .map(|(p, v)| {
                    let greedy = p.greedy.map(u8::from);
                    let (id, subset) = (p.id.clone(), p.subset.clone());
                    (
                        id,
                        subset,
                        p.n,
                        p.c,
                        greedy,
                        v.voters,
                        v.winners,
                        v.winners_correct,
                    )
                })
                .collect(),
            columns: (m.extra_columns(&results.ks, &results.taus).into_iter())
                .map(|c| StoredColumn {
                    metric: c.metric.to_string(),
                    values: (c.values.iter())
                        .map(|v| {
                            v.as_ref()
                                .map(|v| (v.numer().to_string(), v.denom().to_string()))
                        })
                        .collect(),
                    std_errors: (c.std_errors.as_ref())
                        .map(|e| e.iter().map(|x| x.map(|x| format!("{x:?}"))).collect()),
                })
                .collect(),
            judge_overruled: m.judge_overruled.clone(),
            units: (m.problem_units.as_ref()).map(|u| {
                (u.iter())
                    .map(|u| (u.no_answer, u.truncated, u.found.by, u.found.unrecorded))
                    .collect()
            }),
        })
        .collect();
    let file = ScoresFile {
        format: FORMAT,
        verifier_settings: FileStamp::of(dir, &dir.verifier_settings()),
        basis,
        models,
    };
    serde_json::to_vec(&file).ok()
}

/// The results scoring `plan` in `dir` would give, read back from `scores.json`; None when the
/// file is absent, unreadable, of another layout or gpassk version, or when any file or setting
/// it rests on changed since (then the caller scores the run).
pub fn read_back(dir: &RunDir, plan: &Plan, manifest: &Manifest) -> Option<RunResults> {
    let kept = read_kept(dir, plan, manifest)?;
    (!kept.grown.contains(&true)).then_some(kept.results)
}

/// What `scores.json` holds of a run whose checkpoints may have grown since: the results as
/// scored, and per model whether its checkpoint grew.
pub struct Kept {
    pub results: RunResults,
    pub grown: Vec<bool>,
}

/// [`read_back`], but a checkpoint that only grew since it was scored (lines appended after
/// those scored) is said, not refused; None when anything else changed, as for `read_back`.
pub fn read_kept(dir: &RunDir, plan: &Plan, manifest: &Manifest) -> Option<Kept> {
    let path = dir.scores();
    let text = crate::util::read_bounded_string(&path, MAX_BYTES).ok()?;
    let file: ScoresFile = serde_json::from_str(&text).ok()?;
    let names = plan.settings.models.iter().map(|m| m.name.as_str());
    let ids = plan.problems.iter().map(|p| p.id.as_str());
    let fits = file.format == FORMAT
        && FileStamp::of(dir, &dir.verifier_settings()) == file.verifier_settings
        && file.models.iter().map(|m| m.name.as_str()).eq(names)
        && (file.models.iter()).all(|m| m.problems.iter().map(|p| p.0.as_str()).eq(ids.clone()));
    if !fits {
        return None;
    }
    let grown = file.basis.holds_for(dir, plan)?;
    let ev = &plan.settings.evaluation;
    let models = (file.models.into_iter())
        .map(|m| model_of(m, &plan.problems, &ev.ks, &ev.taus))
        .collect::<Result<Vec<_>>>()
        .ok()?;
    let (run_id, manifest) = (manifest.run_id.clone(), Some(manifest.clone()));
    let results = RunResults::of_plan(plan, run_id, manifest, models, Some(file.basis));
    Some(Kept { results, grown })
}

/// A stored model's score; `dataset` (the problems in the stored order) gives each its group.
fn model_of(
    m: StoredModel,
    dataset: &[crate::dataset::Problem],
    ks: &[u64],
    taus: &[Tau],
) -> Result<ModelScore> {
    let overruled = m.judge_overruled;
    let units = m.units;
    let (mut problems, mut votes) = (Vec::new(), Vec::new());
    for (i, (id, subset, n, c, greedy, voters, winners, winners_correct)) in
        m.problems.into_iter().enumerate()
    {
        let greedy = greedy.map(|g| g != 0);
        problems.push(ProblemCounts {
            id,
            subset,
            group: dataset.get(i).and_then(|p| p.fields.get("group").cloned()),
            n,
            c,
            greedy,
        });
        votes.push(Vote {
            voters,
            winners,
            winners_correct,
        });
    }
    let extra = (m.columns.into_iter())
        .map(|c| {
            let values = (c.values.into_iter())
                .map(|v| v.map(|(n, d)| exact(&n, &d)).transpose())
                .collect::<Result<Vec<_>>>()?;
            let std_errors = (c.std_errors.map(|e| {
                (e.into_iter())
                    .map(|x| x.map(|x| x.parse::<f64>()).transpose())
                    .collect::<Result<Vec<_>, _>>()
            }))
            .transpose()?;
            Ok(ExtraColumn {
                metric: c.metric.parse::<MetricKind>()?,
                values,
                std_errors,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let parts = ScoreParts {
        name: m.name,
        model_id: m.model_id,
        n: m.n,
        problems,
        votes,
        correct: m.correct,
        wrong: m.wrong,
        no_answer: m.no_answer,
        truncated: m.truncated,
        missing: m.missing,
        served_models: m.served_models,
        found_by: None,
    };
    let mut score = ModelScore::from_stored(parts, extra, ks, taus)?;
    anyhow::ensure!(overruled
        .as_ref()
        .is_none_or(|o| o.len() == score.problems.len()));
    score.judge_overruled = overruled;
    let problems = score.problems.len();
    anyhow::ensure!(units.as_ref().is_none_or(|u| u.len() == problems));
    score.problem_units = units.map(|u| {
        (u.into_iter())
            .map(|(no_answer, truncated, by, unrecorded)| ProblemUnits {
                no_answer,
                truncated,
                found: ProblemFound { by, unrecorded },
            })
            .collect()
    });
    score.found_by =
        (score.problem_units.as_ref()).map(|u| ModelFound::sum(u.iter().map(|u| &u.found)));
    Ok(score)
}

/// A fraction from its numerator and denominator as text.
pub fn exact(numer: &str, denom: &str) -> Result<BigRational> {
    let parse = |t: &str| {
        t.parse::<BigInt>()
            .map_err(|_| anyhow::anyhow!("{t:?} is no integer"))
    };
    let denom = parse(denom)?;
    anyhow::ensure!(denom != BigInt::from(0), "a zero denominator");
    Ok(BigRational::new(parse(numer)?, denom))
}
