//! `per_problem.csv`: one row per model × problem with n, c, the greedy verdict and every
//! per-problem metric (columns named like the config's metrics: `pass@4`, `g_pass@4_t0.5`, …);
//! in a run with a verifier, its metrics and each problem's samples without a verifier score;
//! last, `guessed`: the problem's answers (samples and greedy) found by a guess, the last math
//! span or number (empty where the results do not keep it).

use super::Exporter;
use crate::metrics::{to_f64, MetricKind};
use crate::scoring::RunResults;

pub struct PerProblemCsv;

impl Exporter for PerProblemCsv {
    fn file_name(&self) -> &'static str {
        "per_problem.csv"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut metrics = crate::stats::metric_list(&results.ks, &results.taus);
        // Columns some model adds (the verifier's, and its pass@n), in the order models have them.
        for m in &results.models {
            for metric in &m.values.metrics {
                if !metrics.contains(metric) {
                    metrics.push(metric.clone());
                }
            }
        }
        let verifier = results.models.iter().any(|m| m.verifier.is_some());
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let mut header: Vec<String> = [
            "model",
            "problem_id",
            "subset",
            "n",
            "c",
            "greedy_correct",
            "votes",
        ]
        .map(String::from)
        .to_vec();
        header.extend(
            metrics
                .iter()
                .filter(|m| **m != MetricKind::Greedy)
                .map(|m| m.to_string()),
        );
        if verifier {
            header.push("verifier_unscored".into());
        }
        header.push("guessed".into());
        w.write_record(&header)?;
        for m in &results.models {
            for (i, p) in m.problems.iter().enumerate() {
                let mut rec = vec![
                    m.name.clone(),
                    p.id.clone(),
                    p.subset.clone().unwrap_or_default(),
                    p.n.to_string(),
                    p.c.to_string(),
                    p.greedy.map(|g| g.to_string()).unwrap_or_default(),
                    m.votes.get(i).map_or(0, |v| v.voters).to_string(),
                ];
                for metric in metrics.iter().filter(|m| **m != MetricKind::Greedy) {
                    let cell = m
                        .values
                        .column(metric)
                        .and_then(|c| m.values.rows[i][c].as_ref())
                        .map(|v| to_f64(v).to_string())
                        .unwrap_or_default();
                    rec.push(cell);
                }
                if verifier {
                    let unscored = m.verifier.as_ref().and_then(|v| v.unscored.get(i));
                    rec.push(unscored.map_or_else(String::new, u32::to_string));
                }
                let units = m.problem_units.as_ref().and_then(|u| u.get(i));
                rec.push(units.map_or_else(String::new, |u| u.found.heuristic().to_string()));
                w.write_record(rec.iter().map(|c| super::csv::safe_cell(c).into_owned()))?;
            }
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
    }
}
