//! Server-sent events: a rendered chat completion split into `chat.completion.chunk` events.

use serde_json::{json, Value};

/// Stages of one choice's deltas: role (and the first half of the reasoning), the rest of the
/// reasoning, the first half of the content, the rest, then the finish reason.
const STAGES: usize = 5;

/// Splits `s` in two at the middle character.
fn halves(s: &str) -> (&str, &str) {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    s.split_at(mid)
}

fn event(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// One chunk: the reply's envelope with these choices.
fn chunk(full: &Value, choices: Vec<Value>) -> Value {
    json!({
        "id": full["id"], "object": "chat.completion.chunk", "created": full["created"],
        "model": full["model"], "system_fingerprint": full["system_fingerprint"],
        "choices": choices,
    })
}

/// The delta of choice `c` at `stage`, or None when that stage has nothing to send.
fn delta(c: &Value, stage: usize) -> Option<Value> {
    let msg = &c["message"];
    let content = msg["content"].as_str().unwrap_or("");
    let reasoning = msg["reasoning_content"].as_str();
    let (r1, r2) = halves(reasoning.unwrap_or(""));
    let (c1, c2) = halves(content);
    let d = match stage {
        0 if reasoning.is_some() => json!({"role": "assistant", "reasoning_content": r1}),
        0 => json!({"role": "assistant", "content": ""}),
        1 if reasoning.is_some() => json!({"reasoning_content": r2}),
        2 => json!({"content": c1}),
        3 => json!({"content": c2}),
        4 => {
            return Some(
                json!({"index": c["index"], "delta": {}, "finish_reason": c["finish_reason"]}),
            )
        }
        _ => return None,
    };
    Some(json!({"index": c["index"], "delta": d, "finish_reason": null}))
}

/// The content events of every choice up to (not including) `stages`, choices interleaved.
fn staged(full: &Value, stages: usize) -> Vec<String> {
    let choices = full["choices"].as_array().cloned().unwrap_or_default();
    (0..stages)
        .flat_map(|stage| {
            choices
                .iter()
                .filter_map(|c| delta(c, stage))
                .map(|d| event(&chunk(full, vec![d])))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The whole reply as events: deltas, the usage chunk when asked for, `[DONE]`.
pub(crate) fn events(full: &Value, include_usage: bool) -> Vec<String> {
    let mut out = staged(full, STAGES);
    if include_usage {
        let mut last = chunk(full, Vec::new());
        last["usage"] = full["usage"].clone();
        out.push(event(&last));
    }
    out.push("data: [DONE]\n\n".to_string());
    out
}

/// The first events only: role, reasoning and half the content, no finish reason.
pub(crate) fn cut(full: &Value) -> Vec<String> {
    staged(full, 3)
}

/// The whole reply with a truncated JSON event after the first.
pub(crate) fn malformed(full: &Value) -> Vec<String> {
    let mut out = events(full, true);
    out.insert(1, "data: {\"choices\":[{\"index\":0,\n\n".to_string());
    out
}
