//! Batch files in the OpenAI Batch API format (also vLLM's `run_batch`): the missing units of a
//! plan exported as request lines, and the output lines imported as checkpoint records.
//!
//! A line's `custom_id` names one request: `<model hex>.<problem id hex>.<slots>.<shape>`, slots
//! being `g` (greedy) or sample indices joined by `_` (several with `use_n_param`), and shape the
//! first 16 hex digits of the sha256 of the request body. Hex round-trips any id; each request
//! has exactly one id, so an alias or a line made for other settings is refused by name.

use crate::client::{decode_reply, ApiError, ApiKey, ChatResponse, ErrorClass};
use crate::config::ModelSettings;
use crate::error::BadInput;
use crate::plan::Plan;
use crate::rundir::record::{CheckpointWriter, SampleIndex};
use crate::rundir::RunDir;
use crate::sampling::{load_done, missing_work, request_for, Attempted, ModelEnd, Unit};
use crate::util::Notes;
use crate::util::{hex, now_rfc3339, printable, write_atomic, Lines, MAX_LINE};
use anyhow::{Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};
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
    /// Requests left out because their worst case would pass the budget.
    pub over_budget: u64,
}

/// The `custom_id` of one request, whose body is `body`.
pub fn custom_id(model: &str, problem_id: &str, slots: &[SampleIndex], body: &[u8]) -> String {
    format!("{}.{}", unit_part(model, problem_id, slots), shape(body))
}

/// `<model hex>.<problem id hex>.<slots>`: the part of a `custom_id` naming its units.
fn unit_part(model: &str, problem_id: &str, slots: &[SampleIndex]) -> String {
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

/// What shapes a request's answers, as 16 hex digits: its body without the transport's fields.
fn shape(body: &[u8]) -> String {
    hex(&Sha256::digest(body)[..8])
}

/// A `custom_id` taken apart: (model, problem id, slots, shape).
type IdParts = (String, String, Vec<SampleIndex>, String);

/// The parts of a `custom_id`, or why it is not one gpassk writes: anything but the one form
/// [`custom_id`] gives (upper-case hex, `00`, `+0`, repeated slots…) is refused.
pub fn parse_custom_id(id: &str) -> Result<IdParts, String> {
    let parts: Vec<&str> = id.split('.').collect();
    let [model, problem, slots, shape] = parts[..] else {
        return Err(if parts.len() == 3 {
            "has no request hash (written by a gpassk before 0.2?); export the batch again".into()
        } else {
            "not of the form <model hex>.<problem hex>.<slots>.<request hash>".into()
        });
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
    let parsed = (text(model, "model")?, text(problem, "problem id")?, slots);
    let canonical = unit_part(&parsed.0, &parsed.1, &parsed.2);
    let valid_shape = shape.len() == 16
        && shape
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    if id.rsplit_once('.').map(|(head, _)| head) != Some(canonical.as_str()) || !valid_shape {
        return Err("is not in the one form gpassk writes (lower-case hex, plain indices)".into());
    }
    Ok((parsed.0, parsed.1, parsed.2, shape.to_string()))
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

/// The body a batch line carries for `slots` of `prep`: the live request without streaming
/// (the Batch API answers whole replies).
fn batch_body(
    m: &ModelSettings,
    prep: &crate::plan::Prepared,
    slots: &[SampleIndex],
) -> (u64, Vec<u8>) {
    if !m.api.stream {
        return request_for(m, prep, slots);
    }
    let mut plain = m.clone();
    plain.api.stream = false;
    request_for(&plain, prep, slots)
}

/// Writes every unit still missing in `run_dir` as a batch request line to `out`, with the same
/// body (seed, `n` grouping) the live runner would send; with a budget, only the requests whose
/// worst case still fits it.
pub fn export(plan: &Plan, run_dir: &RunDir, out: &Path) -> Result<Exported> {
    export_for(plan, run_dir, out, None)
}

/// [`export`] of one model's units only (`only`), or of all models.
pub fn export_for(
    plan: &Plan,
    run_dir: &RunDir,
    out: &Path,
    only: Option<&str>,
) -> Result<Exported> {
    let index = plan.id_index();
    let budgets = crate::sampling::BudgetBook::open(&plan.settings, &plan.prepared, run_dir)?;
    let mut text = String::new();
    let mut n = Exported {
        requests: 0,
        units: 0,
        over_budget: 0,
    };
    let chosen = |m: &&ModelSettings| only.is_none_or(|name| m.name == name);
    for m in plan.settings.models.iter().filter(chosen) {
        let done = load_done(&run_dir.checkpoint(&m.name), &index)?;
        let work: Vec<_> = missing_work(plan.prepared.len(), &m.sampling, &done).collect();
        let mut left: u64 = work.iter().map(|w| w.slots.len() as u64).sum();
        for w in work {
            let prep = &plan.prepared[w.problem];
            if n.over_budget > 0
                || budgets
                    .reserve_request(m, prep, w.slots.len(), left)
                    .is_err()
            {
                n.over_budget += 1;
                continue;
            }
            left -= w.slots.len() as u64;
            let (_, body) = batch_body(m, prep, &w.slots);
            let id = custom_id(&m.name, &prep.id, &w.slots, &body);
            let body = String::from_utf8(body).context("request body is not UTF-8")?;
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

/// Which request a validated output line answers.
struct Target {
    model: usize,
    problem: usize,
    slots: Vec<SampleIndex>,
}

/// What an import recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Imported {
    pub units: u64,
    pub api_errors: u64,
    /// Units already finished in the run (a second import of the same file), left as they were.
    pub skipped: u64,
}

/// Calls `each(line number, line)` for every non-blank line of `file`, read as a stream; a line
/// longer than [`MAX_LINE`] or not UTF-8 is an error naming it.
fn for_each_line(
    file: &Path,
    mut each: impl FnMut(usize, &str) -> Result<(), BadInput>,
) -> Result<(), BadInput> {
    let unread =
        |e: std::io::Error| BadInput::new(format!("--import-batch {}: {e}", file.display()));
    let mut lines = Lines::open(file, MAX_LINE).map_err(unread)?;
    let mut buf = Vec::new();
    while let Some(line_no) = lines.next_into(&mut buf).map_err(unread)? {
        let line = std::str::from_utf8(&buf).map_err(|_| {
            BadInput::new(format!("{}:{line_no}: line is not UTF-8", file.display()))
        })?;
        if !line.trim().is_empty() {
            each(line_no, line)?;
        }
    }
    Ok(())
}

/// Records the results in `file` as checkpoint records of the run in `run_dir`, exactly as the
/// live runner would. Every line is checked before anything is written: an unknown, foreign or
/// repeated request is an error naming the line. The file is read as a stream, twice.
pub fn import(
    plan: &Plan,
    run_dir: &RunDir,
    run_id: &str,
    file: &Path,
    (keys, notes): (&[&ApiKey], &Notes),
) -> Result<(Imported, Vec<(String, ModelEnd)>)> {
    let checker = Checker::new(plan);
    let mut seen = HashMap::new();
    for_each_line(file, |line_no, line| {
        let at = |msg: String| BadInput::new(format!("{}:{line_no}: {msg}", file.display()));
        let out: OutputLine =
            serde_json::from_str(line).map_err(|e| at(format!("not a batch output line: {e}")))?;
        let t = checker.target(&out.custom_id).map_err(&at)?;
        for &slot in &t.slots {
            if let Some(first) = seen.insert((t.model, t.problem, slot.key()), line_no) {
                return Err(at(format!(
                    "custom_id {:?} answers a unit already answered on line {first}; remove one of the two",
                    printable(&out.custom_id)
                )));
            }
        }
        Ok(())
    })?;
    let mut w = Writers::new(plan, run_dir, run_id, notes);
    for_each_line(file, |_, line| {
        let out: OutputLine =
            serde_json::from_str(line).map_err(|e| BadInput::new(e.to_string()))?;
        let t = checker.target(&out.custom_id).map_err(BadInput::new)?;
        w.record(&t, outcome_of(out, keys))
            .map_err(|e| BadInput::new(format!("{e:#}")))
    })?;
    w.finish()
}

/// Validates `custom_id`s against the plan: ids, models, problems, slots and request hashes.
struct Checker<'a> {
    plan: &'a Plan,
    index: HashMap<&'a str, usize>,
}

impl<'a> Checker<'a> {
    fn new(plan: &'a Plan) -> Checker<'a> {
        Checker {
            plan,
            index: plan.id_index(),
        }
    }

    fn target(&self, id: &str) -> Result<Target, String> {
        let shown = printable(id).chars().take(200).collect::<String>();
        let (model, problem, slots, hash) =
            parse_custom_id(id).map_err(|e| format!("custom_id {shown:?} {e}"))?;
        let models = &self.plan.settings.models;
        let m = models.iter().position(|m| m.name == model).ok_or_else(|| {
            format!(
                "custom_id {shown:?}: model {:?} is not in this run",
                printable(&model)
            )
        })?;
        let p = *self.index.get(problem.as_str()).ok_or_else(|| {
            format!(
                "custom_id {shown:?}: problem {:?} is not in this run",
                printable(&problem)
            )
        })?;
        check_slots(&models[m], &slots).map_err(|e| format!("custom_id {shown:?}: {e}"))?;
        let (_, body) = batch_body(&models[m], &self.plan.prepared[p], &slots);
        if shape(&body) != hash {
            return Err(format!(
                "custom_id {shown:?} was made for another request (model id, sampling settings, prompt or seed differ from this run's); import only output of requests exported from this run"
            ));
        }
        Ok(Target {
            model: m,
            problem: p,
            slots,
        })
    }
}

/// Checkpoint writers of an import, opened on first use, and what they recorded.
struct Writers<'a> {
    plan: &'a Plan,
    run_dir: &'a RunDir,
    run_id: &'a str,
    notes: &'a Notes,
    strip: Option<crate::grade::GradeConfig>,
    open: HashMap<usize, (CheckpointWriter, crate::sampling::DoneSet)>,
    got: Imported,
    errors: Vec<u64>,
    started_at: String,
}

impl<'a> Writers<'a> {
    fn new(plan: &'a Plan, run_dir: &'a RunDir, run_id: &'a str, notes: &'a Notes) -> Writers<'a> {
        Writers {
            plan,
            run_dir,
            run_id,
            notes,
            strip: (!plan.settings.evaluation.save_raw_responses)
                .then(|| plan.settings.evaluation.grade_config()),
            open: HashMap::new(),
            got: Imported::default(),
            errors: vec![0; plan.settings.models.len()],
            started_at: now_rfc3339(),
        }
    }

    /// Writes one record per slot of `t` not already done.
    fn record(&mut self, t: &Target, outcome: Result<ChatResponse, ApiError>) -> Result<()> {
        let m = &self.plan.settings.models[t.model];
        let (writer, done) = match self.open.entry(t.model) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let path = self.run_dir.checkpoint(&m.name);
                let done = load_done(&path, &self.plan.id_index())?;
                e.insert((CheckpointWriter::open(&path, self.notes)?, done))
            }
        };
        let unit = Unit {
            settings: m,
            run_id: self.run_id,
            strip: self.strip.as_ref(),
        };
        let prep = &self.plan.prepared[t.problem];
        let (seed, _) = request_for(m, prep, &t.slots);
        let carried = outcome
            .as_ref()
            .map_or(0, |r| r.choices.len().min(t.slots.len()));
        let timing = Attempted {
            started_at: &self.started_at,
            latency_ms: 0,
            attempts: 1,
            billable_failures: 0,
            shared_by: carried as u32,
        };
        for (i, &slot) in t.slots.iter().enumerate() {
            if done.contains(&(t.problem as u32, slot.key())) {
                self.got.skipped += 1;
                continue;
            }
            let missing;
            let outcome = match &outcome {
                Ok(resp) if i < resp.choices.len() => Ok((resp, i)),
                Ok(resp) => {
                    missing = ApiError {
                        class: ErrorClass::EmptyChoices,
                        status: None,
                        message: format!(
                            "asked for {} choices, got {}",
                            t.slots.len(),
                            resp.choices.len()
                        ),
                        retry_after: None,
                    };
                    Err(&missing)
                }
                Err(e) => Err(e),
            };
            if outcome.is_err() {
                self.errors[t.model] += 1;
                self.got.api_errors += 1;
            }
            unit.write(writer, prep, slot, seed, &timing, outcome)?;
            self.got.units += 1;
        }
        Ok(())
    }

    fn finish(self) -> Result<(Imported, Vec<(String, ModelEnd)>)> {
        for (w, _) in self.open.values() {
            w.sync()?;
        }
        let ends = self
            .plan
            .settings
            .models
            .iter()
            .zip(self.errors)
            .map(|(m, e)| {
                let end = if e > 0 {
                    ModelEnd::Incomplete
                } else {
                    ModelEnd::Complete
                };
                (m.name.clone(), end)
            })
            .collect();
        Ok((self.got, ends))
    }
}

/// The slots of a request must be units this model's plan has, each once, in the order an
/// export writes them (greedy alone; sample indices rising).
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
    let rising = slots.windows(2).all(|w| match (w[0], w[1]) {
        (SampleIndex::Sample(a), SampleIndex::Sample(b)) => a < b,
        _ => false,
    });
    if !rising {
        return Err("its sample slots repeat or are out of order".into());
    }
    Ok(())
}

/// A line's outcome: its response decoded as the live client decodes a reply; `error` set, no
/// response or a status other than 200 is an API error. Every server text passes the key's
/// redaction before it is parsed or kept.
fn outcome_of(out: OutputLine, keys: &[&ApiKey]) -> Result<ChatResponse, ApiError> {
    let clean = |s: String| keys.iter().fold(s, |s, k| k.redact(&s));
    let fail = |class, status, message: String| ApiError {
        class,
        status,
        message: clean(message),
        retry_after: None,
    };
    if let Some(e) = out.error.filter(|e| !e.is_null()) {
        let message = e
            .get("message")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| e.to_string(), str::to_string);
        let code = e.get("code").and_then(serde_json::Value::as_str);
        let text = match code {
            Some(c) => format!("batch error {}: {message}", printable(c)),
            None => format!("batch error: {message}"),
        };
        return Err(fail(ErrorClass::Server, None, bounded(&clean(text))));
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
    let body = clean(body);
    decode_reply(r.status_code, body.as_bytes(), None, clean)
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
                let id = custom_id(model, problem, &slots, b"{}");
                assert!(id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_'));
                assert_eq!(
                    parse_custom_id(&id),
                    Ok((
                        model.to_string(),
                        problem.to_string(),
                        slots.clone(),
                        shape(b"{}")
                    ))
                );
            }
        }
        let h = shape(b"{}");
        for bad in [
            "x".to_string(),
            "6d.70".into(),
            format!("zz.70.0.{h}"),
            format!("6d.70.q.{h}"),
            format!("6d.7.0.{h}"),
            format!("6d.ff.0.{h}"),
            format!("6d.70.0.{}", h.to_uppercase()),
            format!("6d.70.0.{}", &h[1..]),
        ] {
            assert!(parse_custom_id(&bad).is_err(), "{bad}");
        }
        // Aliases of `6d.70.0.<h>`: one request has one id.
        for alias in ["6D.70.0", "6d.70.00", "6d.70.+0", "6d.70.0_0"] {
            let id = format!("{alias}.{h}");
            let parsed = parse_custom_id(&id);
            let refused = parsed.is_err() || {
                let (_, _, slots, _) = parsed.unwrap();
                slots.len() > 1 && slots.windows(2).any(|w| w[0] == w[1])
            };
            assert!(refused, "{alias}");
        }
        let old = parse_custom_id("6d.70.0").unwrap_err();
        assert!(old.contains("export the batch again"), "{old}");
    }

    #[test]
    fn failed_lines_become_api_errors_and_keys_never_stay() {
        let key = ApiKey::new("sk-batch-secret-77".into());
        let line = |s: &str| outcome_of(serde_json::from_str(s).unwrap(), &[&key]);
        let e = line(r#"{"custom_id":"x","response":null,"error":{"code":"batch_expired","message":"expired"}}"#).unwrap_err();
        assert_eq!(e.to_string(), "server: batch error batch_expired: expired");
        let e = line(r#"{"custom_id":"x","response":null,"error":{"code":"invalid_api_key","message":"Incorrect API key provided: sk-batch-secret-77"}}"#).unwrap_err();
        assert!(!e.to_string().contains("sk-batch"), "{e}");
        let e = line(r#"{"custom_id":"x","response":{"status_code":429,"body":{"error":{"message":"slow down"}}}}"#).unwrap_err();
        assert_eq!(e.class, ErrorClass::RateLimited);
        assert_eq!(e.status, Some(429));
        let ok = line(r#"{"custom_id":"x","response":{"status_code":200,"body":{"model":"sk-batch-secret-77","choices":[{"index":0,"message":{"content":"hi sk-batch-secret-77"},"finish_reason":"stop"}]}},"error":null}"#).unwrap();
        assert_eq!(ok.choices[0].content, "hi [REDACTED]");
        assert_eq!(ok.served_model.as_deref(), Some("[REDACTED]"));
        assert!(line(r#"{"custom_id":"x"}"#).is_err());
    }
}
