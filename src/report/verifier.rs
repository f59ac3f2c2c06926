//! "Verifier versus voting", the section every human report carries for a run with a verifier:
//! per model and N, pass@N (the ceiling), maj@N (maj@n at N = n), and per aggregation wmaj@N,
//! bon@N and bon − maj paired over problems; what the verifier could not score; how its step
//! scores agree with step labels. As text cells (Markdown, HTML) and as the terminal's compact
//! curve per model (a row per metric, a column per N, and a trend of each row).

use super::layout::{layout, Corner};
use super::markup::Grid;
use super::text::wrap;
use super::Interval;
use crate::metrics::agreement::{Agreement, THRESHOLD};
use crate::metrics::{to_f64, Aggregation, MetricKind};
use crate::scoring::verifier_metrics::{VerifierSummary, Versus};
use crate::scoring::{ModelScore, RunResults};
use crate::stats::Estimate;
use crate::util::abbreviate;

/// The section's title.
pub(super) const TITLE: &str = "Verifier versus voting";

/// What the rows mean, for every format.
pub(super) const MEANING: &str = "Each value is the expected accuracy of N samples drawn without \
replacement from a problem's n, averaged over problems (% with 95% CI over problems). pass@N: any \
of the N is correct (the ceiling a perfect verifier reaches). maj@N: the N vote by answer (ties \
split evenly; at N = n it is maj@n). wmaj@N: the N vote, each weighed by its verifier score. \
bon@N: the verifier's highest-scored of the N (ties split evenly). A solution's score comes from \
its step scores by the aggregation named (min: the weakest step). bon − maj: percentage points, \
paired over the problems both score, with the sign-flip test's p-value, not corrected for the \
many N (exploratory; declare bon@N_AGG in `metrics` to test it in compare and history).";

/// Models with samples for the verifier, with their summaries (a model that failed before its
/// first sample has no curve).
pub(super) fn models(results: &RunResults) -> Vec<(&ModelScore, &VerifierSummary)> {
    (results.models.iter())
        .filter_map(|m| Some((m, m.verifier.as_ref().filter(|v| v.samples > 0)?)))
        .collect()
}

/// One line of a model's curve: its label and its estimate at each N of the summary.
pub(super) struct Series<'a> {
    pub label: String,
    pub metric: Kind,
    pub values: Vec<Option<&'a Estimate>>,
}

/// What a series is, for the plot's legend and styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Pass,
    Majority,
    Weighted(Aggregation),
    Best(Aggregation),
}

/// A model's series in report order: pass@N, maj@N, then per aggregation wmaj@N and bon@N.
pub(super) fn series<'a>(m: &'a ModelScore, v: &VerifierSummary) -> Vec<Series<'a>> {
    let n = u64::from(m.n);
    let line = |label: String, metric: Kind, kind: &dyn Fn(u64) -> MetricKind| Series {
        label,
        metric,
        values: v
            .sizes
            .iter()
            .map(|&s| m.estimate(&kind(s), None))
            .collect(),
    };
    let mut out = vec![
        line("pass@N".into(), Kind::Pass, &|k| MetricKind::PassAtK { k }),
        line("maj@N".into(), Kind::Majority, &|size| match size < n {
            true => MetricKind::MajorityAt { size },
            false => MetricKind::Majority,
        }),
    ];
    for &a in &v.aggregations {
        let name = a.name();
        out.push(line(format!("wmaj@N {name}"), Kind::Weighted(a), &|size| {
            MetricKind::WeightedMajority {
                size,
                aggregation: a,
            }
        }));
        out.push(line(format!("bon@N {name}"), Kind::Best(a), &|size| {
            MetricKind::BestOfN {
                size,
                aggregation: a,
            }
        }));
    }
    out
}

/// bon − maj at `size` for aggregation `a`, when tested.
fn versus(v: &VerifierSummary, size: u64, a: Aggregation) -> Option<&Versus> {
    (v.versus.iter()).find(|x| x.size == size && x.aggregation == a)
}

/// `+3.1` points, `*` when the uncorrected p-value is below 5%.
fn delta_short(x: Option<&Versus>) -> String {
    let Some(x) = x else { return "-".into() };
    let star = if x.test.p.is_some_and(|p| p < 0.05) {
        "*"
    } else {
        ""
    };
    format!("{:+.1}{star}", 100.0 * x.test.delta)
}

/// `+3.1 (p 0.021)`, or without a p-value below ten shared problems.
fn delta_long(x: Option<&Versus>) -> String {
    let Some(x) = x else { return "-".into() };
    let points = format!("{:+.1}", 100.0 * x.test.delta);
    match x.test.p {
        Some(p) if p < 1e-4 => format!("{points} (p < 0.0001)"),
        Some(p) if p < 1e-3 => format!("{points} (p {p:.4})"),
        Some(p) => format!("{points} (p {p:.3})"),
        None => points,
    }
}

/// The curves of every model, one grid per aggregation: a row per model and N, with pass@N,
/// maj@N, wmaj@N and bon@N (values with intervals) and bon − maj.
pub(super) fn grids(results: &RunResults) -> Vec<Grid> {
    let all = models(results);
    let Some((_, first)) = all.first() else {
        return Vec::new();
    };
    let many = first.aggregations.len() > 1;
    let mut out = Vec::new();
    for (j, &a) in first.aggregations.iter().enumerate() {
        let name = a.name();
        let header = [
            "model",
            "N",
            "pass@N",
            "maj@N",
            &format!("wmaj@N {name}"),
            &format!("bon@N {name}"),
            "bon − maj",
        ];
        let mut rows = Vec::new();
        for (m, v) in &all {
            let lines = series(m, v);
            let shown = [&lines[0], &lines[1], &lines[2 + 2 * j], &lines[3 + 2 * j]];
            for (i, &size) in v.sizes.iter().enumerate() {
                let mut row = vec![m.name.clone(), size.to_string()];
                row.extend(shown.iter().map(|s| Interval::of(s.values[i]).to_string()));
                row.push(delta_long(versus(v, size, a)));
                rows.push(row);
            }
        }
        let of = if many {
            format!(", {name} of the step scores")
        } else {
            String::new()
        };
        out.push(Grid {
            title: format!("{TITLE}{of}: % with 95% CI over problems, by N"),
            header: header.map(String::from).to_vec(),
            rows,
        });
    }
    out
}

/// The verifier's step scores against the run's step labels, a row per model that has some.
pub(super) fn labels_grid(results: &RunResults) -> Option<Grid> {
    let header = [
        "model",
        "samples",
        "steps",
        "HE accuracy",
        "HE AUC",
        "SE accuracy",
        "SE AUC",
        "unpaired",
    ];
    let rows: Vec<Vec<String>> = models(results)
        .into_iter()
        .filter_map(|(m, v)| {
            let l = v.labels.as_ref()?;
            let a = &l.agreement;
            let mut row = vec![m.name.clone(), l.solutions.to_string(), a.steps.to_string()];
            row.extend(agreement_cells(&a.hard));
            row.extend(agreement_cells(&a.soft));
            row.push(l.unpaired.to_string());
            Some(row)
        })
        .collect();
    (!rows.is_empty()).then(|| Grid {
        title: "Verifier against step labels (gpassk label)".into(),
        header: header.map(String::from).to_vec(),
        rows,
    })
}

/// Accuracy as a percentage and the AUC to three places.
fn agreement_cells(a: &Agreement) -> [String; 2] {
    [
        format!("{:.1}%", 100.0 * to_f64(&a.accuracy)),
        a.auc
            .as_ref()
            .map_or_else(|| "-".into(), |x| format!("{:.3}", to_f64(x))),
    ]
}

/// What the label table's columns mean.
pub(super) fn labels_meaning() -> String {
    format!(
        "Each labelled step of a sample the verifier scored with as many steps: accuracy of \
         predicting a good step when its score is at least {THRESHOLD}, and the area under the \
         ROC curve (exact, by rank, ties counting one half). HE: good when any rollout from the \
         step reached the gold answer. SE: good with weight = the fraction that did (pairs of \
         steps weighed by SE·(1 − SE)); equal to HE's when every SE is 0 or 1. Unpaired: \
         labelled samples without a verifier score or with another number of steps."
    )
}

/// Per model, what its bon@N and wmaj@N rest on: every sample scored, or how many samples had
/// no score (unreadable replies among them) and how many problems each N rests on.
pub(super) fn coverage_notes(results: &RunResults) -> Vec<String> {
    models(results)
        .into_iter()
        .map(|(m, v)| {
            if v.partial_problems == 0 {
                return format!(
                    "{}: the verifier {} scored every one of the {} samples.",
                    m.name, v.reward_model, v.scored
                );
            }
            let problems = m.problems.iter().filter(|p| p.n > 0).count();
            let mut why = Vec::new();
            for (count, what) in [
                (v.unreadable, "unreadable replies"),
                (v.no_steps, "responses without steps"),
                (v.not_scored, "not scored yet (gpassk verify)"),
            ] {
                if count > 0 {
                    why.push(format!("{what}: {count}"));
                }
            }
            let mut at: Vec<String> = (v.sizes.iter().zip(&v.problems_at))
                .filter(|(_, &p)| p < problems)
                .map(|(n, p)| format!("{p} at N = {n}"))
                .collect();
            let full = full_up_to(v, problems);
            if full > 0 {
                at.insert(0, format!("all {problems} up to N = {full}"));
            }
            format!(
                "{}: bon@N and wmaj@N rest on each problem's scored samples: {} samples on {} of \
                 {problems} problems have none ({}), never read as 0. Problems counted: {}.",
                m.name,
                v.unreadable + v.no_steps + v.not_scored,
                v.partial_problems,
                why.join(", "),
                at.join(", ")
            )
        })
        .collect()
}

/// The largest N of the curve every problem has N scored samples for (0: none).
fn full_up_to(v: &VerifierSummary, problems: usize) -> u64 {
    (v.sizes.iter().zip(&v.problems_at))
        .take_while(|(_, &p)| p >= problems)
        .last()
        .map_or(0, |(n, _)| *n)
}

/// Where some vote metric was estimated from random subsets: how, and how large its error is.
pub(super) fn estimation_note(results: &RunResults) -> Option<String> {
    let (_, v) = models(results).into_iter().next()?;
    let sampled = (results.models.iter())
        .flat_map(|m| m.estimates.iter())
        .filter_map(|e| e.mc_std_error)
        .fold(None, |acc: Option<f64>, se| {
            Some(acc.map_or(se, |a| a.max(se)))
        })?;
    Some(format!(
        "maj@N and wmaj@N enumerate every N-subset while there are at most {} of them; past \
         that they average {} seeded random subsets per problem (largest Monte Carlo standard \
         error of a reported value: {:.2} points; metrics.csv and metrics.json give each).",
        v.budget.exact_subsets,
        v.budget.draws,
        100.0 * sampled
    ))
}

/// The shares 0–100% as eight block heights; a gap where there is no value.
fn trend(values: &[Option<f64>]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    values
        .iter()
        .map(|v| match v {
            Some(v) => BLOCKS[((v.clamp(0.0, 1.0) * 8.0) as usize).min(7)],
            None => '·',
        })
        .collect()
}

/// The section for the terminal: per model its curve, a row per series and bon − maj, a column
/// per N and the row's trend, laid out within `width`; `None`: every value with its interval.
pub(super) fn terminal(results: &RunResults, width: Option<usize>) -> String {
    let all = models(results);
    if all.is_empty() {
        return String::new();
    }
    let fit = width.unwrap_or(usize::MAX / 4);
    let wrapped = |text: &str| match width {
        Some(w) => format!("{}\n", wrap(text, w, "")),
        None => format!("{text}\n"),
    };
    let scale = if width.is_some() { "%" } else { "% [95% CI]" };
    let mut out = format!("\n{TITLE} ({scale}; bon − maj in points, * p < 0.05):\n");
    for (m, v) in &all {
        out.push_str(&format!("{}\n", abbreviate(&m.name, fit.min(200))));
        // Compact: the first aggregation only (--wide and the files have every one).
        let shown = match width {
            Some(_) => &v.aggregations[..v.aggregations.len().min(1)],
            None => &v.aggregations[..],
        };
        let mut lines = series(m, v);
        lines.truncate(2 + 2 * shown.len());
        let mut names: Vec<String> = lines.iter().map(|s| s.label.clone()).collect();
        let mut cells: Vec<Vec<String>> = lines
            .iter()
            .map(|s| {
                let mut row: Vec<String> = (s.values.iter())
                    .map(|e| match width {
                        Some(_) => Interval::of(*e).value_text(),
                        None => Interval::of(*e).to_string(),
                    })
                    .collect();
                let shares: Vec<Option<f64>> =
                    s.values.iter().map(|e| e.and_then(|e| e.value)).collect();
                row.push(trend(&shares));
                row
            })
            .collect();
        for &a in shown {
            names.push(format!("bon−maj {}", a.name()));
            let mut row: Vec<String> = (v.sizes.iter())
                .map(|&s| delta_short(versus(v, s, a)))
                .collect();
            row.push(String::new());
            cells.push(row);
        }
        let mut header: Vec<String> = v.sizes.iter().map(u64::to_string).collect();
        header.push("trend".into());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let corner = Corner {
            rows: "N",
            columns: "metric",
        };
        out.push_str(&layout(corner, &names, &header, &cells, fit));
    }
    let mut notes = coverage_notes(results);
    if width.is_some() {
        // Compact: only the models whose curves leave problems out.
        let complete: Vec<bool> = all.iter().map(|(_, v)| v.partial_problems == 0).collect();
        let mut i = 0;
        notes.retain(|_| {
            i += 1;
            !complete[i - 1]
        });
        let more = all.iter().any(|(_, v)| v.aggregations.len() > 1);
        if more {
            notes.push("--wide: every aggregation, with intervals.".into());
        }
    }
    notes.extend(estimation_note(results));
    for (m, v) in &all {
        if let Some(l) = &v.labels {
            let [ha, hauc] = agreement_cells(&l.agreement.hard);
            let [sa, sauc] = agreement_cells(&l.agreement.soft);
            notes.push(format!(
                "{}: against step labels ({} steps of {} samples): HE accuracy {ha}, AUC {hauc}; \
                 SE accuracy {sa}, AUC {sauc}.",
                m.name, l.agreement.steps, l.solutions
            ));
        }
    }
    for note in notes {
        out.push_str(&wrapped(&note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trends_use_one_scale_and_show_gaps() {
        assert_eq!(trend(&[Some(0.0), Some(0.5), Some(1.0), None]), "▁▅█·");
        assert_eq!(trend(&[Some(0.124), Some(0.126)]), "▁▂");
    }
}
