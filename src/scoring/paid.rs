//! What the judge's and the verifier's calls cost, priced from the `spend` their verdict and
//! score lines keep (at the price in force): the reports show it beside sampling's.

use crate::config::VerifierSettings;
use crate::cost::{Price, Tally};
use crate::plan::Plan;
use crate::rundir::manifest::CostEntry;
use crate::rundir::record::{read_spends, CheckpointError};
use crate::rundir::RunDir;
use std::path::PathBuf;

/// The cost of one caller's calls beyond sampling.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CallCost {
    /// `judge` or `verifier`.
    pub role: &'static str,
    pub model: String,
    /// As the manifest keeps a model's: a judged or verified sample counts as a sample.
    pub cost: CostEntry,
}

impl CallCost {
    /// How reports name it: `judge gpt-4o`.
    pub fn label(&self) -> String {
        format!("{} {}", self.role, crate::util::printable(&self.model))
    }
}

/// The judge's (when the grader asks it) and the verifier's costs in `run_dir`, each when it is
/// priced and some line of its files recorded what it used.
pub fn call_costs(
    plan: &Plan,
    run_dir: &RunDir,
    verifier: Option<&VerifierSettings>,
) -> Result<Vec<CallCost>, CheckpointError> {
    let models = &plan.settings.models;
    let files = |file: &dyn Fn(&str) -> PathBuf| -> Vec<PathBuf> {
        models.iter().map(|m| file(&m.name)).collect()
    };
    let problems = plan.problems.len();
    let mut out = Vec::new();
    if let Some(j) = plan.settings.judged() {
        let paths = files(&|m| run_dir.grades(m));
        out.extend(priced(
            "judge",
            &j.model_id,
            j.pricing.as_ref(),
            &paths,
            problems,
        )?);
    }
    if let Some(v) = verifier {
        let paths = files(&|m| run_dir.verifier_scores(m));
        let price = v.pricing.as_ref();
        out.extend(priced(
            "verifier",
            &v.reward_model_id,
            price,
            &paths,
            problems,
        )?);
    }
    Ok(out)
}

fn priced(
    role: &'static str,
    model: &str,
    price: Option<&Price>,
    paths: &[PathBuf],
    problems: usize,
) -> Result<Option<CallCost>, CheckpointError> {
    let Some(price) = price else {
        return Ok(None);
    };
    let (mut tally, mut lines) = (Tally::default(), 0);
    read_spends(paths, |s| {
        tally.add_spend(&s);
        lines += 1;
    })?;
    Ok((lines > 0).then(|| CallCost {
        role,
        model: model.to_string(),
        cost: CostEntry::of(price, &tally, problems),
    }))
}
