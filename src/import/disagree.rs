//! `gpassk import … --disagreements FILE`: the samples where the source's verdict and gpassk's
//! re-grade differ, one JSON line each, for a person to judge.

use crate::dataset::Problem;
use crate::grade::{FoundBy, GradeConfig, Outcome};
use crate::rundir::provenance::ImportInfo;
use crate::rundir::RunDir;
use crate::scoring::{for_each_unit, gold_of, rule_grade};
use anyhow::Result;
use serde::Serialize;

/// Characters of a response kept at each end of its excerpt.
const EXCERPT_END: usize = 400;

#[derive(Serialize)]
struct Line<'a> {
    /// The dataset, when the import made one run per dataset.
    #[serde(skip_serializing_if = "Option::is_none")]
    dataset: Option<&'a str>,
    model: &'a str,
    problem_id: &'a str,
    sample_index: String,
    gold: &'a str,
    source_verdict: bool,
    gpassk_verdict: &'static str,
    source_extracted: Option<&'a str>,
    gpassk_extracted: Option<&'a str>,
    /// How gpassk found its answer (`boxed`, `marker`, …, `last_number`, `none`).
    gpassk_found_by: Option<FoundBy>,
    /// The input file and place the sample was read from.
    from: String,
    response_excerpt: String,
}

/// Appends the disagreeing samples of every model of one run to `bytes`; returns how many.
pub(super) fn lines(
    bytes: &mut Vec<u8>,
    dir: &RunDir,
    info: &ImportInfo,
    problems: &[Problem],
    (models, cfg): (&[(String, u32)], &GradeConfig),
    dataset: Option<&str>,
) -> Result<u64> {
    let mut count = 0u64;
    for (model, n) in models {
        for_each_unit(
            &dir.checkpoint(model),
            problems,
            *n,
            false,
            |p, _slot, r| {
                let Some(src) = &r.source else { return Ok(()) };
                let Some(source_verdict) = src.verdict else {
                    return Ok(());
                };
                let problem = &problems[p];
                let g = rule_grade(&gold_of(problem), &r, cfg);
                let (v, response) = (&g.verdict, g.text);
                if (v.outcome == Outcome::Correct) == source_verdict {
                    return Ok(());
                }
                let file = (info.files.get(src.file as usize)).map_or("?", |f| f.path.as_str());
                let line = Line {
                    dataset,
                    model,
                    problem_id: &problem.id,
                    sample_index: r.sample_index.to_string(),
                    gold: &problem.answer,
                    source_verdict,
                    gpassk_verdict: match v.outcome {
                        Outcome::Correct => "correct",
                        Outcome::Wrong => "wrong",
                        Outcome::NoAnswer => "no answer",
                    },
                    source_extracted: src.extracted.as_deref(),
                    gpassk_extracted: v.extracted.as_deref(),
                    gpassk_found_by: g.found_by,
                    from: format!("{file} {}", src.at),
                    response_excerpt: excerpt(response),
                };
                serde_json::to_writer(&mut *bytes, &line)?;
                bytes.push(b'\n');
                count += 1;
                Ok(())
            },
        )?;
    }
    Ok(count)
}

/// The start and end of a long response (where the reasoning begins and the answer is).
fn excerpt(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= 2 * EXCERPT_END + 20 {
        return text.to_string();
    }
    let head: String = text.chars().take(EXCERPT_END).collect();
    let tail: String = text.chars().skip(chars - EXCERPT_END).collect();
    format!("{head} […{} characters…] {tail}", chars - 2 * EXCERPT_END)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_responses_keep_both_ends() {
        let text = format!("start {} \\boxed{{7}}", "x".repeat(5000));
        let e = excerpt(&text);
        assert!(e.starts_with("start ") && e.ends_with("\\boxed{7}"));
        assert!(e.chars().count() < 900);
        assert_eq!(excerpt("short"), "short");
    }
}
