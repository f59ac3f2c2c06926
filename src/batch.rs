//! Batch files in the OpenAI Batch API format (also vLLM's `run_batch`): the missing units of a
//! plan exported as request lines, and the output lines imported as checkpoint records.
//!
//! A line's `custom_id` names one request: `<model hex>.<problem id hex>.<slots>`, slots being `g`
//! (greedy) or sample indices joined by `_` (several with `use_n_param`). Hex round-trips any id.

use crate::checkpoint::{checkpoint_path, CheckpointWriter, SampleIndex};
use crate::client::{decode_reply, ApiError, ChatResponse, ErrorClass};
use crate::config::ModelSettings;
use crate::error::BadInput;
use crate::plan::Plan;
use crate::runner::{load_done, missing_work, request_for, ModelEnd, Unit};
use crate::util::{hex, now_rfc3339, printable, write_atomic, Lines, MAX_LINE};
use anyhow::{Context, Result};
use serde::Deserialize;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;

/// The endpoint every request line names.
const URL: &str = "/v1/chat/completions";

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    pub requests: u64,
    pub units: u64,
}

/// The `custom_id` of one request.
pub fn custom_id(model: &str, problem_id: &str, slots: &[SampleIndex]) -> String {
    let slots: Vec<String> = slots
        .iter()
        .map(|s| match s {
            SampleIndex::Greedy => "g".to_string(),
            SampleIndex::Sample(i) => i.to_string(),
        })
        .collect();
    format!(
        "{}.{}.{}",
        hex(model.as_bytes()),
        hex(problem_id.as_bytes()),
        slots.join("_")
    )
}

/// (model, problem id, slots) of a `custom_id`, or why it is not one gpassk wrote.
pub fn parse_custom_id(id: &str) -> Result<(String, String, Vec<SampleIndex>), String> {
    let parts: Vec<&str> = id.split('.').collect();
    let [model, problem, slots] = parts[..] else {
        return Err("not of the form <model hex>.<problem hex>.<slots>".into());
    };
    let text = |h: &str, what: &str| {
        unhex(h)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| format!("its {what} part is not hex of UTF-8 text"))
    };
    let slots = slots
        .split('_')
        .map(|s| match s {
            "g" => Ok(SampleIndex::Greedy),
            _ => s
                .parse()
                .map(SampleIndex::Sample)
                .map_err(|_| format!("sample slot {s:?} is neither an index nor g")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((text(model, "model")?, text(problem, "problem id")?, slots))
}

fn unhex(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) || !h.is_ascii() {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
        .collect()
}

/// Writes every unit still missing in `run_dir` as a batch request line to `out`, with the same
/// body (seed, `n` grouping) the live runner would send.
pub fn export(plan: &Plan, run_dir: &Path, out: &Path) -> Result<Exported> {
    export_for(plan, run_dir, out, None)
}

/// [`export`] of one model's units only (`only`), or of all models.
pub fn export_for(plan: &Plan, run_dir: &Path, out: &Path, only: Option<&str>) -> Result<Exported> {
    let index = plan.id_index();
    let mut text = String::new();
    let mut n = Exported {
        requests: 0,
        units: 0,
    };
    let chosen = |m: &&ModelSettings| only.is_none_or(|name| m.name == name);
    for m in plan.settings.models.iter().filter(chosen) {
        let done = load_done(&checkpoint_path(run_dir, &m.name), &index)?;
        for w in missing_work(plan.prepared.len(), &m.sampling, &done) {
            let prep = &plan.prepared[w.problem];
            let (_, body) = request_for(m, prep, &w.slots);
            let body = String::from_utf8(body).context("request body is not UTF-8")?;
            let id = custom_id(&m.name, &prep.id, &w.slots);
            text.push_str(&format!(
                "{{\"custom_id\":\"{id}\",\"method\":\"POST\",\"url\":\"{URL}\",\"body\":{body}}}\n"
            ));
            n.requests += 1;
            n.units += w.slots.len() as u64;
        }
    }
    write_atomic(out, text.as_bytes())
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(n)
}

/// One output line as the Batch API (or `run_batch`) writes it; other fields are ignored.
#[derive(Deserialize)]
struct OutputLine {
    custom_id: String,
    #[serde(default)]
    response: Option<OutputResponse>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct OutputResponse {
    status_code: u16,
    #[serde(default)]
    body: Option<serde_json::Value>,
}

/// One validated output line: which request it answers and how it ended.
struct Answer {
    model: usize,
    problem: usize,
    slots: Vec<SampleIndex>,
    outcome: Result<ChatResponse, ApiError>,
}

/// What an import recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Imported {
    pub units: u64,
    pub api_errors: u64,
    /// Units already finished in the run (a second import of the same file), left as they were.
    pub skipped: u64,
}

/// Records the results in `file` as checkpoint records of the run in `run_dir`, exactly as the
/// live runner would. Every line is checked before anything is written: an unknown or repeated
/// `custom_id` is an error naming the line.
pub fn import(
    plan: &Plan,
    run_dir: &Path,
    run_id: &str,
    file: &Path,
) -> Result<(Imported, Vec<(String, ModelEnd)>)> {
    let answers = parse_output(plan, file)?;
    let index = plan.id_index();
    let strip = (!plan.settings.evaluation.save_raw_responses)
        .then(|| plan.settings.evaluation.grade_config());
    let mut got = Imported::default();
    let mut errors = vec![0u64; plan.settings.models.len()];
    let mut writers: HashMap<usize, (CheckpointWriter, crate::runner::DoneSet)> = HashMap::new();
    let started_at = now_rfc3339();
    for a in &answers {
        let m = &plan.settings.models[a.model];
        let (writer, done) = match writers.entry(a.model) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let path = checkpoint_path(run_dir, &m.name);
                let done = load_done(&path, &index)?;
                e.insert((CheckpointWriter::open(&path)?, done))
            }
        };
        let unit = Unit {
            settings: m,
            run_id,
            strip: strip.as_ref(),
        };
        let prep = &plan.prepared[a.problem];
        let (seed, _) = request_for(m, prep, &a.slots);
        let timing = (started_at.as_str(), 0, 1);
        for (i, &slot) in a.slots.iter().enumerate() {
            if done.contains(&(a.problem as u32, slot.key())) {
                got.skipped += 1;
                continue;
            }
            let missing;
            let outcome = match &a.outcome {
                Ok(resp) if i < resp.choices.len() => Ok((resp, i)),
                Ok(resp) => {
                    missing = ApiError {
                        class: ErrorClass::EmptyChoices,
                        status: None,
                        message: format!(
                            "asked for {} choices, got {}",
                            a.slots.len(),
                            resp.choices.len()
                        ),
                        retry_after: None,
                    };
                    Err(&missing)
                }
                Err(e) => Err(e),
            };
            if outcome.is_err() {
                errors[a.model] += 1;
                got.api_errors += 1;
            }
            unit.write(writer, prep, slot, seed, timing, outcome)?;
            got.units += 1;
        }
    }
    for (w, _) in writers.values() {
        w.sync()?;
    }
    let ends = plan
        .settings
        .models
        .iter()
        .zip(errors)
        .map(|(m, e)| {
            let end = if e > 0 {
                ModelEnd::Incomplete
            } else {
                ModelEnd::Complete
            };
            (m.name.clone(), end)
        })
        .collect();
    Ok((got, ends))
}

/// Parses and validates every line; the first bad one is an error naming it.
fn parse_output(plan: &Plan, file: &Path) -> Result<Vec<Answer>, BadInput> {
    let index = plan.id_index();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut answers = Vec::new();
    let unread =
        |e: std::io::Error| BadInput::new(format!("--import-batch {}: {e}", file.display()));
    let mut lines = Lines::open(file, MAX_LINE).map_err(unread)?;
    let mut line = Vec::new();
    while let Some(line_no) = lines.next_into(&mut line).map_err(unread)? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = |msg: String| BadInput::new(format!("{}:{line_no}: {msg}", file.display()));
        let out: OutputLine = serde_json::from_slice(&line)
            .map_err(|e| at(format!("not a batch output line: {e}")))?;
        let id = printable(&out.custom_id).into_owned();
        let (model, problem, slots) =
            parse_custom_id(&out.custom_id).map_err(|e| at(format!("custom_id {id:?}: {e}")))?;
        let m = plan
            .settings
            .models
            .iter()
            .position(|m| m.name == model)
            .ok_or_else(|| {
                at(format!(
                    "custom_id {id:?}: model {model:?} is not in this run"
                ))
            })?;
        let p = *index.get(problem.as_str()).ok_or_else(|| {
            at(format!(
                "custom_id {id:?}: problem {:?} is not in this run",
                printable(&problem)
            ))
        })?;
        check_slots(&plan.settings.models[m], &slots)
            .map_err(|e| at(format!("custom_id {id:?}: {e}")))?;
        if let Some(first) = seen.insert(out.custom_id.clone(), line_no) {
            return Err(at(format!(
                "custom_id {id:?} was already answered on line {first}; remove one of the two"
            )));
        }
        answers.push(Answer {
            model: m,
            problem: p,
            slots,
            outcome: outcome_of(out),
        });
    }
    Ok(answers)
}

/// The slots of a request must be units this model's plan has.
fn check_slots(m: &ModelSettings, slots: &[SampleIndex]) -> Result<(), String> {
    for s in slots {
        let planned = match s {
            SampleIndex::Sample(i) => *i < m.sampling.n,
            SampleIndex::Greedy => m.sampling.greedy && slots.len() == 1,
        };
        if !planned {
            return Err(format!(
                "sample {s} is not planned for model {} (n = {}, greedy = {})",
                m.name, m.sampling.n, m.sampling.greedy
            ));
        }
    }
    Ok(())
}

/// A line's outcome: its response decoded as the live client decodes a reply; `error` set, no
/// response or a status other than 200 is an API error.
fn outcome_of(out: OutputLine) -> Result<ChatResponse, ApiError> {
    let fail = |class, status, message: String| ApiError {
        class,
        status,
        message,
        retry_after: None,
    };
    if let Some(e) = out.error.filter(|e| !e.is_null()) {
        let message = e
            .get("message")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| e.to_string(), str::to_string);
        let code = e.get("code").and_then(serde_json::Value::as_str);
        let text = match code {
            Some(c) => format!("batch error {c}: {message}"),
            None => format!("batch error: {message}"),
        };
        return Err(fail(ErrorClass::Server, None, bounded(&text)));
    }
    let Some(r) = out.response else {
        return Err(fail(
            ErrorClass::EmptyChoices,
            None,
            "batch line has neither a response nor an error".into(),
        ));
    };
    let body = r.body.map(|b| b.to_string()).unwrap_or_default();
    if (201..300).contains(&r.status_code) {
        let text = "batch line status is not 200".to_string();
        return Err(fail(ErrorClass::BadRequest, Some(r.status_code), text));
    }
    decode_reply(r.status_code, body.as_bytes(), None, |s| s)
}

/// Server text kept in a record: at most 500 characters.
fn bounded(text: &str) -> String {
    if text.chars().count() > 500 {
        text.chars().take(499).chain(['…']).collect()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_round_trip_any_id() {
        for (model, problem) in [("m", "p1"), ("a.b_c", "test/alg.1_2 ü\n\"x\""), ("", "")] {
            for slots in [
                vec![SampleIndex::Greedy],
                vec![SampleIndex::Sample(0)],
                vec![SampleIndex::Sample(3), SampleIndex::Sample(7)],
            ] {
                let id = custom_id(model, problem, &slots);
                assert!(id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_'));
                assert_eq!(
                    parse_custom_id(&id),
                    Ok((model.to_string(), problem.to_string(), slots.clone()))
                );
            }
        }
        for bad in [
            "x",
            "6d.70",
            "zz.70.0",
            "6d.70.q",
            "6d.7.0",
            "6d.70.0.1",
            "6d.ff.0",
        ] {
            assert!(parse_custom_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn failed_lines_become_api_errors() {
        let line = |s: &str| outcome_of(serde_json::from_str(s).unwrap());
        let e = line(r#"{"custom_id":"x","response":null,"error":{"code":"batch_expired","message":"expired"}}"#).unwrap_err();
        assert_eq!(e.to_string(), "server: batch error batch_expired: expired");
        let e = line(r#"{"custom_id":"x","response":{"status_code":429,"body":{"error":{"message":"slow down"}}}}"#).unwrap_err();
        assert_eq!(e.class, ErrorClass::RateLimited);
        assert_eq!(e.status, Some(429));
        let ok = line(r#"{"custom_id":"x","response":{"status_code":200,"body":{"model":"s","choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}},"error":null}"#).unwrap();
        assert_eq!(ok.choices[0].content, "hi");
        assert_eq!(ok.served_model.as_deref(), Some("s"));
        assert!(line(r#"{"custom_id":"x"}"#).is_err());
    }
}
