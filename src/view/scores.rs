//! A run's scores as the pages show them, kept current without grading the run again: read back
//! from the `scores.json` scoring kept beside the reports (`scoring::stored`) while every file
//! it rests on is as it was; when only checkpoints grew since (a run still being sampled), the
//! problems with lines past what was scored are graded again through the offset index and the
//! rest kept (`scoring::grow`), in memory; graded whole when nothing can be reused (no kept
//! scores, other settings, judge verdicts that changed, a checkpoint rewritten or with an
//! unreadable line, a verifier's metrics).

use super::{lock, Loaded, ViewError, Viewer};
use crate::config::GraderMode;
use crate::rundir::record::RecordAnswer;
use crate::scoring::grow::ModelParts;
use crate::scoring::judge::JudgeVerdicts;
use crate::scoring::stored::{self, Basis};
use crate::scoring::{score_run, RunResults, ScoreInputs};
use crate::util::Prefix;
use std::sync::Arc;

/// What is cached of a run's scores between requests.
pub(super) struct Scores {
    pub results: Arc<RunResults>,
    /// What the scores were first graded from, and every model's parts (kept current with the
    /// checkpoints since), when they can be kept current (no verifier).
    grows: Option<(Basis, Vec<ModelParts>)>,
}

fn run_error(e: impl std::fmt::Display) -> ViewError {
    ViewError::Run(e.to_string())
}

/// Whether the run's grading asks the stored judge verdicts (as scoring decides).
pub(super) fn judged(loaded: &Loaded) -> bool {
    let s = &loaded.plan.settings;
    s.judge.is_some() && s.evaluation.grader != GraderMode::Rule
}

/// Every model's parts of `results`, from the checkpoint prefixes of its basis; None when some
/// model has none (its scores were not graded from this run, or hold verifier metrics).
fn parts_of(results: &RunResults, loaded: &Loaded) -> Option<(Basis, Vec<ModelParts>)> {
    let basis = results.basis.clone()?;
    let ev = &loaded.plan.settings.evaluation;
    let models = loaded.plan.settings.models.iter().zip(&basis.checkpoints);
    let parts = (results.models.iter().zip(models))
        .map(|(score, (m, prefix))| {
            let prefix = prefix.clone().filter(|_| score.name == m.name)?;
            ModelParts::of(score, (&ev.ks, &ev.taus), m.sampling.greedy, prefix)
        })
        .collect::<Option<Vec<_>>>()?;
    (parts.len() == loaded.plan.settings.models.len()).then_some((basis, parts))
}

impl Viewer {
    /// The run's scores now: what was kept in memory or in `scores.json` brought up to date while
    /// only checkpoints grew, else graded whole.
    pub(super) fn rescore(
        &self,
        loaded: &Loaded,
        old: Option<Scores>,
    ) -> Result<Scores, ViewError> {
        let (dir, plan) = (&loaded.dir, &loaded.plan);
        if let Some((basis, parts)) = old.and_then(|s| s.grows) {
            let same = (parts.iter().map(ModelParts::name)).eq(plan
                .settings
                .models
                .iter()
                .map(|m| m.name.as_str()));
            if same && basis.holds_for(dir, plan).is_some() {
                if let Some(scores) = self.grow(loaded, basis, parts)? {
                    return Ok(scores);
                }
            }
        }
        if let Some(kept) = stored::read_kept(dir, plan, &loaded.manifest) {
            let grows = parts_of(&kept.results, loaded);
            if !kept.grown.contains(&true) {
                let results = Arc::new(kept.results);
                return Ok(Scores { results, grows });
            }
            if let Some((basis, parts)) = grows {
                if let Some(scores) = self.grow(loaded, basis, parts)? {
                    return Ok(scores);
                }
            }
        }
        let (notes, _said) = crate::util::Notes::collect();
        let manifest = Some(loaded.manifest.clone());
        let results = score_run(plan, dir, manifest, None, &notes)
            .map_err(|e| ViewError::Run(crate::error::render(&e)))?;
        let grows = parts_of(&results, loaded);
        Ok(Scores {
            results: Arc::new(results),
            grows,
        })
    }

    /// The scores from `parts` brought up to date with each checkpoint's lines past them; None
    /// when a line there names no problem (scoring refuses the file: grade it whole to say why).
    fn grow(
        &self,
        loaded: &Loaded,
        basis: Basis,
        mut parts: Vec<ModelParts>,
    ) -> Result<Option<Scores>, ViewError> {
        for mp in &mut parts {
            let path = loaded.dir.checkpoint(mp.name());
            if !mp.checkpoint.holds(&path) {
                return Ok(None);
            }
            let len = std::fs::metadata(&path).map_or(0, |m| m.len());
            if len > mp.checkpoint.bytes && !self.catch_up(loaded, mp)? {
                return Ok(None);
            }
        }
        let ev = &loaded.plan.settings.evaluation;
        let models = (parts.iter())
            .map(|p| p.score(&ev.ks, &ev.taus))
            .collect::<anyhow::Result<Vec<_>>>()
            .map_err(|e| ViewError::Run(crate::error::render(&e)))?;
        let (run_id, manifest) = (
            loaded.manifest.run_id.clone(),
            Some(loaded.manifest.clone()),
        );
        // Not a scoring's results: no basis of their own.
        let results = RunResults::of_plan(&loaded.plan, run_id, manifest, models, None);
        Ok(Some(Scores {
            results: Arc::new(results),
            grows: Some((basis, parts)),
        }))
    }

    /// Grades again the problems of one model with lines past its parts' prefix; false when a
    /// line there names no problem.
    fn catch_up(&self, loaded: &Loaded, mp: &mut ModelParts) -> Result<bool, ViewError> {
        let model = mp.name().to_string();
        let verdicts = match judged(loaded) {
            true => Some(self.verdicts_of(loaded, &model).map_err(run_error)?),
            false => None,
        };
        let ev = &loaded.plan.settings.evaluation;
        let grade = ev.grade_config();
        let (notes, _said) = crate::util::Notes::collect();
        let inputs = ScoreInputs {
            problems: &loaded.plan.problems,
            ks: &ev.ks,
            taus: &ev.taus,
            grade: &grade,
            judge: verdicts.as_deref(),
            verifier: None,
            notes: &notes,
        };
        let from = mp.checkpoint.bytes;
        self.with_index(loaded, &model, |index, path| {
            if index.unreadable().is_some_and(|at| at >= from) {
                return Ok(false);
            }
            let positions = crate::util::id_index(&loaded.plan.problems, |p| p.id.as_str());
            for id in index.problems_since(from) {
                let Some(&p) = positions.get(id) else {
                    continue;
                };
                let records = index.records_as::<RecordAnswer>(path, id);
                mp.regrade(p, records.map_err(run_error)?, &inputs);
            }
            mp.checkpoint = Prefix::at(path, index.end()).map_err(run_error)?;
            Ok(true)
        })?
    }

    /// A model's stored judge verdicts, loaded again only when their file changed.
    pub(super) fn verdicts_of(
        &self,
        loaded: &Loaded,
        model: &str,
    ) -> Result<Arc<JudgeVerdicts>, String> {
        let path = loaded.dir.grades(model);
        let stamp = super::index::Stamp::of(&path);
        let cache = self.cache(&loaded.name);
        let mut kept = lock(&cache.verdicts);
        if let Some((s, v)) = kept.get(model) {
            if *s == stamp {
                return Ok(v.clone());
            }
        }
        let mode = loaded.plan.settings.evaluation.grader;
        let v = Arc::new(JudgeVerdicts::load(&path, mode).map_err(|e| e.to_string())?);
        kept.insert(model.to_string(), (stamp, v.clone()));
        // Estimated by the files read: verdicts keep less than their lines.
        let bytes = kept.values().map(|(s, _)| s.len).sum();
        cache.set_size(super::Part::Verdicts, bytes);
        Ok(v)
    }
}
