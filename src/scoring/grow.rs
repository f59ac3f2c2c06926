//! A scored model kept current as its checkpoint grows, without grading it again: its parts
//! (per-problem counts, votes, and what each problem adds to the unit totals), where each
//! problem with new lines is graded again from all its lines, as [`super::score_model`] grades
//! it, and put in place; every metric then follows from the parts. The viewer keeps a run still
//! being sampled current this way (`gpassk view`).
//!
//! Parts hold no effort, served models or source verdicts (the viewer shows none of them), and
//! no verifier metrics: a model scored with a verifier has no parts, and is scored whole.

use super::found::{ModelFound, ProblemFound};
use super::{
    grade_one, Answers, Graders, ModelScore, ModelTally, ProblemGrader, ScoreInputs, ScoreParts,
};
use crate::metrics::Tau;
use crate::rundir::record::{RecordAnswer, UnitOutcome};
use crate::util::Prefix;
use anyhow::Result;

/// What one problem adds to a model's unit totals beyond its `c` and `n`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProblemUnits {
    /// Samples graded as giving no answer.
    pub no_answer: u32,
    /// Samples cut at the token limit.
    pub truncated: u32,
    /// How its graded answers (greedy too) were found.
    pub found: ProblemFound,
}

/// Sets the unit totals of `parts` from its problems and their `units`.
pub(super) fn sum_units(parts: &mut ScoreParts, units: &[ProblemUnits], greedy: bool) {
    let (mut correct, mut wrong, mut no_answer, mut truncated, mut missing) = (0, 0, 0, 0, 0);
    for (p, u) in parts.problems.iter().zip(units) {
        let (n, c, none) = (p.n, p.c.min(p.n), u64::from(u.no_answer));
        correct += c;
        no_answer += none;
        wrong += n.saturating_sub(c + none);
        truncated += u64::from(u.truncated);
        let greedy_missing = greedy && p.greedy.is_none();
        missing += u64::from(parts.n).saturating_sub(n) + u64::from(greedy_missing);
    }
    (parts.correct, parts.wrong, parts.no_answer) = (correct, wrong, no_answer);
    (parts.truncated, parts.missing) = (truncated, missing);
    parts.found_by = Some(ModelFound::sum(units.iter().map(|u| &u.found)));
}

/// One model's score as parts that can be brought up to date.
#[derive(Debug, Clone)]
pub struct ModelParts {
    parts: ScoreParts,
    units: Vec<ProblemUnits>,
    overruled: Option<Vec<u32>>,
    greedy: bool,
    /// The checkpoint's lines the parts rest on: those after it are not in them yet.
    pub checkpoint: Prefix,
}

impl ModelParts {
    /// The parts of a score of `ks` and `taus` graded from its checkpoint's `checkpoint` prefix
    /// (`greedy`: its plan has greedy answers); None when the score does not hold them (read from
    /// a database) or has columns its counts do not give (the verifier's).
    pub fn of(
        score: &ModelScore,
        (ks, taus): (&[u64], &[Tau]),
        greedy: bool,
        checkpoint: Prefix,
    ) -> Option<ModelParts> {
        let units = score.problem_units.clone()?;
        let counted = crate::stats::metric_list(ks, taus);
        let only_counted = score.values.metrics.iter().all(|m| counted.contains(m));
        if score.verifier.is_some() || !only_counted || units.len() != score.problems.len() {
            return None;
        }
        let mut parts = ScoreParts {
            name: score.name.clone(),
            model_id: score.model_id.clone(),
            n: score.n,
            problems: score.problems.clone(),
            votes: score.votes.clone(),
            correct: 0,
            wrong: 0,
            no_answer: 0,
            truncated: 0,
            missing: 0,
            served_models: score.served_models.clone(),
            found_by: None,
        };
        sum_units(&mut parts, &units, greedy);
        Some(ModelParts {
            parts,
            units,
            overruled: score.judge_overruled.clone(),
            greedy,
            checkpoint,
        })
    }

    pub fn name(&self) -> &str {
        &self.parts.name
    }

    /// The score: every metric, value per problem and interval from the parts.
    pub fn score(&self, ks: &[u64], taus: &[Tau]) -> Result<ModelScore> {
        let mut score = ModelScore::from_parts(self.parts.clone(), ks, taus)?;
        score.judge_overruled = self.overruled.clone();
        score.problem_units = Some(self.units.clone());
        Ok(score)
    }

    /// Grades problem `p` of `inputs.problems` again from all its records, in checkpoint order, as
    /// scoring grades them (each unit's first usable record counts), and puts it in place. The
    /// served-model counts are those of the parts' first scoring: units graded here add none.
    pub fn regrade(
        &mut self,
        p: usize,
        records: impl IntoIterator<Item = RecordAnswer>,
        inputs: &ScoreInputs,
    ) {
        let (n, greedy) = (self.parts.n, self.greedy);
        let one = &inputs.problems[p..=p];
        let inputs = ScoreInputs {
            problems: one,
            verifier: None,
            ..*inputs
        };
        let graders = Graders {
            problems: vec![ProblemGrader::default()],
            answers: Answers::default(),
            details: false,
        };
        let mut tally = ModelTally::new(1, n, self.overruled.is_some());
        let mut seen = vec![false; n as usize + 1];
        for r in records {
            if r.outcome == UnitOutcome::ApiError || r.problem_id != one[0].id {
                continue;
            }
            let Some(slot) = r.sample_index.slot(n, greedy) else {
                continue;
            };
            if !std::mem::replace(&mut seen[slot], true) {
                tally.add(grade_one(r, 0, slot, &inputs, &graders));
            }
        }
        let (parts, units) = tally.parts(&self.parts.name, &self.parts.model_id, greedy, one);
        self.parts.problems[p] = parts.problems[0].clone();
        self.parts.votes[p] = parts.votes[0];
        self.units[p] = units[0];
        if let (Some(all), Some(one)) = (self.overruled.as_mut(), tally.overruled) {
            all[p] = one[0];
        }
        sum_units(&mut self.parts, &self.units, greedy);
    }
}
