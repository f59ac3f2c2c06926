//! How each model's graded answers were found, for every report: per model the share found by a
//! guess (the weak heuristics `last_math` and `last_number`: the response's last math span or
//! number, not a box, an answer marker or the whole reply), and a warning naming the models past
//! `[evaluation] heuristic_warn` with what to do; as terminal text, a Markdown grid, HTML (the
//! report's and the viewer's), and raw for metrics.json.

use super::markup::Grid;
use super::{esc, md_text, wrap, wrap_list};
use crate::grade::FoundBy;
use crate::scoring::found::ModelFound;
use crate::scoring::RunResults;
use crate::util::printable;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How the run's models' answers were found, and whether any passes the threshold.
#[derive(Debug, Clone, Serialize)]
pub struct FoundSummary {
    /// `[evaluation] heuristic_warn`: the share past which a model is warned about.
    pub heuristic_warn: f64,
    pub models: Vec<ModelWays>,
    /// The warning (plain text), when some model's share passes the threshold.
    pub warning: Option<String>,
}

/// One model's answers by how they were found.
#[derive(Debug, Clone, Serialize)]
pub struct ModelWays {
    pub model: String,
    /// Answers (samples and greedy answers) per way that found any, by its `found_by` name;
    /// None when the results do not keep it (a run stored by a gpassk before `found_by`).
    pub found_by: Option<BTreeMap<&'static str, u64>>,
    /// Answers kept without saying how they were found (left out of the share).
    pub unrecorded: u64,
    /// Answers whose way is known.
    pub answers: u64,
    /// Of those, found by a guess (`last_math` + `last_number`).
    pub heuristic: u64,
    /// `heuristic / answers`; None without answers.
    pub heuristic_share: Option<f64>,
    /// The share passes `heuristic_warn`.
    pub over: bool,
}

impl FoundSummary {
    /// Whether any model says how its answers were found (else every output leaves it out).
    pub fn any(&self) -> bool {
        self.models.iter().any(|m| m.found_by.is_some())
    }
}

/// The summary of a run's results.
pub fn found_summary(results: &RunResults) -> FoundSummary {
    let threshold = results.heuristic_warn;
    let models: Vec<ModelWays> = (results.models.iter())
        .map(|m| ways(&m.name, m.found_by.as_ref(), threshold))
        .collect();
    let warning = warning(&models, threshold);
    FoundSummary {
        heuristic_warn: threshold,
        models,
        warning,
    }
}

fn ways(model: &str, found: Option<&ModelFound>, threshold: f64) -> ModelWays {
    ModelWays {
        model: model.to_string(),
        found_by: found.map(|f| f.nonzero().map(|(w, n)| (w.as_str(), n)).collect()),
        unrecorded: found.map_or(0, |f| f.unrecorded),
        answers: found.map_or(0, |f| f.known()),
        heuristic: found.map_or(0, |f| f.heuristic()),
        heuristic_share: found.and_then(|f| f.share()),
        over: found.is_some_and(|f| f.over(threshold)),
    }
}

/// A share as the human formats print it: `12.5%`.
fn percent(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// The threshold as written in prose: `20%`, `12.5%`.
fn threshold_text(t: f64) -> String {
    let p = format!("{:.1}", 100.0 * t);
    format!("{}%", p.strip_suffix(".0").unwrap_or(&p))
}

/// The warning (plain, unescaped): which models, why it matters, what to do.
fn warning(models: &[ModelWays], threshold: f64) -> Option<String> {
    let over: Vec<String> = (models.iter())
        .filter(|m| m.over)
        .map(|m| {
            format!(
                "{} ({})",
                m.model,
                percent(m.heuristic_share.unwrap_or(0.0))
            )
        })
        .collect();
    if over.is_empty() {
        return None;
    }
    let (who, their) = match over.len() {
        1 => ("model", "its"),
        _ => ("models", "their"),
    };
    Some(format!(
        "{who} {}: more than {} (heuristic_warn) of {their} answers were guessed from the \
         response's last number or math span, where grading goes wrong most, so {their} scores \
         may be off. Ask for the answer in \\boxed{{}} or after \"The answer is\" in the prompt, \
         set answer_extract_regex, or set grader = \"rule_then_judge_uncertain\" to have the \
         judge check the guesses.",
        over.join(", "),
        threshold_text(threshold)
    ))
}

/// One model's share as a phrase: `12.5% of 160`, `… (20 more not recorded)`, `not recorded`.
fn share_phrase(m: &ModelWays) -> String {
    if m.found_by.is_none() {
        return "not recorded".into();
    }
    let Some(share) = m.heuristic_share.map(percent) else {
        return "no answers".into();
    };
    match m.unrecorded {
        0 => format!("{share} of {}", m.answers),
        u => format!("{share} of {} ({u} more not recorded)", m.answers),
    }
}

/// The terminal's footnote after the table (and summary.txt's): each model's guessed share on
/// lines of at most `width`, then the warning; empty when no model says how its answers were
/// found.
pub fn found_block(results: &RunResults, width: usize) -> String {
    let s = found_summary(results);
    if !s.any() {
        return String::new();
    }
    let items: Vec<String> = (s.models.iter())
        .map(|m| format!("{} {}", printable(&m.model), share_phrase(m)))
        .collect();
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    let mut out = String::from("guessed answers (found by the last number or math span):\n");
    out.push_str(&wrap_list("  ", &items, width, "  "));
    out.push('\n');
    if let Some(w) = &s.warning {
        out.push_str(&wrap(&format!("warning: {}", printable(w)), width, "    "));
        out.push('\n');
    }
    out
}

/// The section's rules in report.html's stylesheet (the viewer's view.css has the same): long
/// model names wrap, so the share beside them stays on a narrow screen.
pub(super) const STYLE: &str = ".found td:first-child{white-space:normal;overflow-wrap:anywhere;\
min-width:7em}.found tr.over td{background:#fff3e8}";

/// What "guessed" means, under the grid.
const MEANING: &str = "Guessed: answers found by the response's last math span (last_math) or \
     last number (last_number), not by a box, an answer marker, a stated option, a final line or \
     the whole reply; the share is of the answers (samples and greedy answers) whose way is known.";

/// The grid "How answers were found": a row per model, a column per way some model's answers
/// were found by, then the guessed share; None when no model says.
pub(super) fn found_grid(s: &FoundSummary) -> Option<Grid> {
    if !s.any() {
        return None;
    }
    let used: Vec<FoundBy> = (FoundBy::ALL.into_iter())
        .filter(|f| (s.models.iter()).any(|m| way_count(m, *f) > 0))
        .collect();
    let unrecorded = s.models.iter().any(|m| m.unrecorded > 0);
    // The share first: a narrow page shows it before the counts scroll away.
    let mut header = vec!["model".to_string(), "guessed".into(), "answers".into()];
    header.extend(used.iter().map(|f| f.as_str().to_string()));
    if unrecorded {
        header.push("not recorded".into());
    }
    let rows = (s.models.iter())
        .map(|m| {
            let known = m.found_by.is_some();
            let cell = |n: u64| if known { n.to_string() } else { "-".into() };
            let guessed = match m.heuristic_share {
                Some(p) if m.over => {
                    format!("{} (over {})", percent(p), threshold_text(s.heuristic_warn))
                }
                Some(p) => percent(p),
                None => "-".into(),
            };
            let mut row = vec![m.model.clone(), guessed, cell(m.answers)];
            row.extend(used.iter().map(|f| cell(way_count(m, *f))));
            if unrecorded {
                row.push(cell(m.unrecorded));
            }
            row
        })
        .collect();
    Some(Grid {
        title: "How answers were found".into(),
        header,
        rows,
    })
}

fn way_count(m: &ModelWays, f: FoundBy) -> u64 {
    (m.found_by.as_ref()).map_or(0, |w| w.get(f.as_str()).copied().unwrap_or(0))
}

/// The Markdown notes under the grid: what "guessed" means, then the warning.
pub(super) fn found_md_notes(s: &FoundSummary) -> String {
    let mut md = format!("{}\n\n", md_text(MEANING));
    if let Some(w) = &s.warning {
        let _ = write!(md, "> **Warning:** {}\n\n", md_text(w));
    }
    md
}

/// The section as HTML, for report.html and the viewer's run page: the grid as a table in its
/// own scroller, what "guessed" means, the warning; empty when no model says.
pub fn found_html(s: &FoundSummary) -> String {
    let Some(grid) = found_grid(s) else {
        return String::new();
    };
    let mut out = format!(
        "<section class=\"found\"><h2>{}</h2><div class=\"scroll\"><table><tr>",
        esc(&grid.title)
    );
    for h in &grid.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for (row, m) in grid.rows.iter().zip(&s.models) {
        let class = if m.over { " class=\"over\"" } else { "" };
        let _ = write!(out, "<tr{class}>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    let _ = write!(out, "</table></div><p>{}</p>", esc(MEANING));
    if let Some(w) = &s.warning {
        let _ = write!(
            out,
            "<p class=\"banner warn\"><b>Warning:</b> {}</p>",
            esc(w)
        );
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoring::found::ProblemFound;

    fn found(ways: &[(FoundBy, u32)], unrecorded: u32) -> ModelFound {
        let mut p = ProblemFound::default();
        for &(f, n) in ways {
            p.by[f as usize] = n;
        }
        p.unrecorded = unrecorded;
        ModelFound::sum([&p])
    }

    #[test]
    fn the_warning_names_every_model_over_the_threshold_once_with_the_ways_out() {
        let boxed = found(&[(FoundBy::Boxed, 80)], 0);
        let guessy = found(&[(FoundBy::Boxed, 60), (FoundBy::LastNumber, 40)], 0);
        let edge = found(&[(FoundBy::Marker, 4), (FoundBy::LastMath, 1)], 0);
        let models = [
            ways("a", Some(&boxed), 0.2),
            ways("b", Some(&guessy), 0.2),
            ways("c", Some(&edge), 0.2),
        ];
        // c is at the threshold, not past it.
        assert_eq!(
            models.iter().map(|m| m.over).collect::<Vec<_>>(),
            [false, true, false]
        );
        let w = warning(&models, 0.2).unwrap();
        assert!(
            w.starts_with("model b (40.0%): more than 20% (heuristic_warn) of its answers"),
            "{w}"
        );
        for fix in [
            "\\boxed{}",
            "answer_extract_regex",
            "rule_then_judge_uncertain",
        ] {
            assert!(w.contains(fix), "{w}");
        }
        let two = [ways("a", Some(&guessy), 0.1), ways("c", Some(&edge), 0.1)];
        let w = warning(&two, 0.1).unwrap();
        assert!(
            w.starts_with("models a (40.0%), c (20.0%): more than 10% (heuristic_warn) of their"),
            "{w}"
        );
        assert_eq!(warning(&models[..1], 0.2), None);
    }

    #[test]
    fn unrecorded_answers_stay_out_of_the_share_and_are_said() {
        let m = ways(
            "a",
            Some(&found(&[(FoundBy::LastNumber, 1), (FoundBy::Boxed, 3)], 6)),
            0.5,
        );
        assert_eq!((m.answers, m.heuristic, m.unrecorded), (4, 1, 6));
        assert_eq!(m.heuristic_share, Some(0.25));
        assert_eq!(share_phrase(&m), "25.0% of 4 (6 more not recorded)");
        let none = ways("b", None, 0.5);
        assert_eq!(
            (share_phrase(&none), none.over),
            ("not recorded".into(), false)
        );
        assert_eq!(threshold_text(0.125), "12.5%");
        assert_eq!(threshold_text(0.2), "20%");
    }
}
