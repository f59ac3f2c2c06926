//! Math-Shepherd-style process labels. Each step prefix of a solution gets K rollouts from the
//! model; hard estimate HE = 1 when any reaches the gold answer, soft estimate SE = correct/K.
//!
//! Rollouts are units of the runner (same checkpoints, resume, retries, pacing, progress): the
//! "problem" of a rollout is `<solution_id>#<step>`, its sample index the rollout number. This
//! module builds the rollout prompts and turns graded rollouts into labels; `commands::label` runs it.

use crate::dataset::Problem;
use crate::error::BadInput;
use crate::grade::{grade_with_options, GradeConfig, Outcome};
use crate::plan::Plan;
use crate::plan::Prepared;
use crate::prompt::ChatMessage;
use crate::rundir::record::read_records;
use crate::rundir::RunDir;
use crate::scoring::for_each_unit;
use crate::scoring::steps::split;
use anyhow::Result;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The turn that asks the model to go on from the solution prefix.
pub const CONTINUE: &str =
    "Continue the solution above from where it stops, step by step, and put the final answer in \\boxed{}.";

/// One solution to label.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Solution {
    pub problem_id: String,
    pub solution_id: String,
    pub solution: String,
}

/// One labelled step, as written to `labels.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLabel {
    pub problem_id: String,
    pub solution_id: String,
    pub step_index: usize,
    pub step_text: String,
    pub rollouts: u32,
    pub correct: u32,
    pub he: u8,
    pub se: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SolutionRow {
    pub problem_id: String,
    pub solution_id: String,
    pub steps: usize,
    pub final_correct: bool,
    pub first_he0_step: Option<usize>,
    pub mean_se: Option<f64>,
}

pub fn read_solutions(path: &Path) -> Result<Vec<Solution>> {
    let text = crate::util::read_bounded_string(path, crate::util::MAX_DATA_FILE)
        .map_err(|e| BadInput(format!("{}: cannot read solutions: {e}", path.display())))?;
    let mut out = Vec::new();
    let mut ids = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let s: Solution = serde_json::from_str(line).map_err(|e| {
            BadInput(format!(
                "{}:{}: expected {{\"problem_id\",\"solution_id\",\"solution\"}}: {e}",
                path.display(),
                i + 1
            ))
        })?;
        if let Some(prev) = ids.insert(s.solution_id.clone(), i + 1) {
            return Err(BadInput(format!(
                "{}:{}: duplicate solution_id {:?} (first on line {prev})",
                path.display(),
                i + 1,
                s.solution_id
            ))
            .into());
        }
        out.push(s);
    }
    if out.is_empty() {
        return Err(BadInput(format!("{}: no solutions", path.display())).into());
    }
    Ok(out)
}

pub fn solutions_from_run(dir: &RunDir) -> Result<Vec<Solution>> {
    let ck = dir.checkpoints_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&ck)
        .map_err(|e| {
            BadInput(format!(
                "--from-run {}: no checkpoints folder: {e}",
                dir.display()
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        read_records(&f, |r| {
            // A run with save_raw_responses = false stored no response to label.
            if r.usable() && r.response.is_some() {
                out.push(Solution {
                    solution_id: format!("{}:{}:{}", r.model, r.problem_id, r.sample_index),
                    problem_id: r.problem_id,
                    solution: r.response.unwrap_or_default(),
                });
            }
            Ok(())
        })?;
    }
    // A unit stored twice (a resumed duplicate) is labelled once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.solution_id.clone()));
    if out.is_empty() {
        return Err(BadInput(format!(
            "--from-run {}: no stored responses (a run with save_raw_responses = false keeps none)",
            dir.display()
        ))
        .into());
    }
    Ok(out)
}

/// A step prefix waiting for rollouts.
pub struct Item {
    pub solution: usize,
    pub step_index: usize,
    pub step_text: String,
}

/// The rollout work of a set of solutions: one item per step prefix, with its prompt and the
/// pseudo-problem (the prefix's id and the gold answer) its rollouts are graded against.
pub struct Rollouts {
    pub items: Vec<Item>,
    pub prepared: Vec<Prepared>,
    pub pseudo: Vec<Problem>,
}

/// Splits every solution into steps and builds each prefix's chat: the problem's own prompt, the
/// prefix as the model's turn, then "continue".
pub fn rollouts(
    plan: &Plan,
    solutions: &[Solution],
    custom: Option<&Regex>,
    max_steps: usize,
) -> Result<Rollouts> {
    let index = plan_index(plan);
    let mut out = Rollouts {
        items: Vec::new(),
        prepared: Vec::new(),
        pseudo: Vec::new(),
    };
    for (si, s) in solutions.iter().enumerate() {
        let p = index[s.problem_id.as_str()];
        for (i, &(start, end)) in split(&s.solution, custom, max_steps).iter().enumerate() {
            let id = format!("{}#{}", s.solution_id, i + 1);
            let mut messages: Vec<ChatMessage> =
                serde_json::from_str(&plan.prepared[p].messages_json)?;
            messages.push(ChatMessage {
                role: "assistant".into(),
                content: s.solution[..end].to_string(),
            });
            messages.push(ChatMessage {
                role: "user".into(),
                content: CONTINUE.into(),
            });
            out.prepared.push(Prepared::new(id.clone(), messages));
            out.pseudo.push(Problem {
                id,
                question: String::new(),
                answer: plan.problems[p].answer.clone(),
                subset: None,
                // Kept for the problem's choice options, which the grader reads from its fields.
                fields: plan.problems[p].fields.clone(),
            });
            out.items.push(Item {
                solution: si,
                step_index: i + 1,
                step_text: s.solution[start..end].trim().to_string(),
            });
        }
    }
    Ok(out)
}

fn plan_index(plan: &Plan) -> HashMap<&str, usize> {
    crate::util::id_index(&plan.problems, |p| p.id.as_str())
}

/// Refuses solutions whose problem is not in the plan's dataset.
pub fn check_problems(plan: &Plan, solutions: &[Solution]) -> Result<()> {
    let index = plan_index(plan);
    for s in solutions {
        if !index.contains_key(s.problem_id.as_str()) {
            return Err(BadInput(format!(
                "solution {:?}: problem {:?} is not in dataset {}",
                s.solution_id, s.problem_id, plan.dataset.name
            ))
            .into());
        }
    }
    Ok(())
}

/// Grades the stored rollouts of every item into step labels.
pub fn labels(
    checkpoint: &Path,
    work: &Rollouts,
    solutions: &[Solution],
    k: u32,
    grade_cfg: &GradeConfig,
) -> Result<Vec<StepLabel>> {
    let n = work.items.len();
    let (mut done, mut correct) = (vec![0u32; n], vec![0u32; n]);
    for_each_unit(checkpoint, &work.pseudo, k, false, |i, _slot, r| {
        done[i] += 1;
        let response = r.response.as_deref().unwrap_or("");
        let problem = &work.pseudo[i];
        let verdict = grade_with_options(
            &problem.answer,
            response,
            &problem.choice_options(),
            grade_cfg,
        );
        correct[i] += (verdict.outcome == Outcome::Correct) as u32;
        Ok(())
    })?;
    Ok(work
        .items
        .iter()
        .enumerate()
        .map(|(i, it)| StepLabel {
            problem_id: solutions[it.solution].problem_id.clone(),
            solution_id: solutions[it.solution].solution_id.clone(),
            step_index: it.step_index,
            step_text: it.step_text.clone(),
            rollouts: done[i],
            correct: correct[i],
            he: (correct[i] > 0) as u8,
            se: if done[i] > 0 {
                correct[i] as f64 / done[i] as f64
            } else {
                0.0
            },
        })
        .collect())
}

/// One row per solution: its steps, whether its own final answer is right, its first HE-0 step.
pub fn solution_rows(
    plan: &Plan,
    work: &Rollouts,
    solutions: &[Solution],
    labels: &[StepLabel],
    grade_cfg: &GradeConfig,
) -> Vec<SolutionRow> {
    let index = plan_index(plan);
    let mut by_solution: Vec<Vec<&StepLabel>> = vec![Vec::new(); solutions.len()];
    for (it, l) in work.items.iter().zip(labels) {
        by_solution[it.solution].push(l);
    }
    let mut rows = Vec::new();
    for (s, steps) in solutions.iter().zip(&by_solution) {
        let problem = &plan.problems[index[s.problem_id.as_str()]];
        let final_correct = grade_with_options(
            &problem.answer,
            &s.solution,
            &problem.choice_options(),
            grade_cfg,
        )
        .outcome
            == Outcome::Correct;
        let scored: Vec<&&StepLabel> = steps.iter().filter(|l| l.rollouts > 0).collect();
        rows.push(SolutionRow {
            problem_id: s.problem_id.clone(),
            solution_id: s.solution_id.clone(),
            steps: steps.len(),
            final_correct,
            first_he0_step: steps
                .iter()
                .find(|l| l.rollouts > 0 && l.he == 0)
                .map(|l| l.step_index),
            mean_se: (!scored.is_empty())
                .then(|| scored.iter().map(|l| l.se).sum::<f64>() / scored.len() as f64),
        });
    }
    rows
}

/// The terminal summary of a labelling pass.
pub fn summary(labels: &[StepLabel], rows: &[SolutionRow]) -> String {
    let he1 = labels.iter().filter(|l| l.he == 1).count();
    let mut buckets = [0usize; 5];
    for l in labels {
        buckets[((l.se * 4.0).round() as usize).min(4)] += 1;
    }
    let with_he0: Vec<&SolutionRow> = rows.iter().filter(|r| r.first_he0_step.is_some()).collect();
    let wrong = rows.iter().filter(|r| !r.final_correct).count();
    let he0_then_wrong = with_he0.iter().filter(|r| !r.final_correct).count();
    let wrong_with_he0 = rows
        .iter()
        .filter(|r| !r.final_correct && r.first_he0_step.is_some())
        .count();
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * a as f64 / b as f64)
        }
    };
    format!(
        "{} steps in {} solutions: HE = 1 for {he1}, HE = 0 for {}\n\
         SE ≈ 0: {}, 0.25: {}, 0.5: {}, 0.75: {}, 1: {}\n\
         solutions with an HE-0 step whose final answer is wrong: {he0_then_wrong}/{} ({})\n\
         wrong final answers that have an HE-0 step: {wrong_with_he0}/{wrong} ({})\n",
        labels.len(),
        rows.len(),
        labels.len() - he1,
        buckets[0],
        buckets[1],
        buckets[2],
        buckets[3],
        buckets[4],
        with_he0.len(),
        pct(he0_then_wrong, with_he0.len()),
        pct(wrong_with_he0, wrong),
    )
}
