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

/// Every content event, no finish reason, then `[DONE]`.
pub(crate) fn unfinished(full: &Value) -> Vec<String> {
    let mut out = staged(full, STAGES - 1);
    out.push("data: [DONE]\n\n".to_string());
    out
}

/// The whole reply led by a UTF-8 byte-order mark, its bytes split over the first two writes.
pub(crate) fn bom_led(full: &Value, include_usage: bool) -> Vec<Vec<u8>> {
    let mut out = vec![b"\xEF\xBB".to_vec()];
    let mut rest = events(full, include_usage)
        .into_iter()
        .map(String::into_bytes);
    let mut first = b"\xBF".to_vec();
    first.extend(rest.next().unwrap_or_default());
    out.push(first);
    out.extend(rest);
    out
}

/// The whole reply with a truncated JSON event after the first.
pub(crate) fn malformed(full: &Value) -> Vec<String> {
    let mut out = events(full, true);
    out.insert(1, "data: {\"choices\":[{\"index\":0,\n\n".to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Value {
        json!({"id": "chatcmpl-1", "created": 0, "model": "m", "system_fingerprint": "fp",
            "choices": [
                {"index": 0, "message": {"content": "héllo", "reasoning_content": "ünd so"}, "finish_reason": "stop"},
                {"index": 1, "message": {"content": "x"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    }

    /// Every event's JSON; a non-JSON event panics.
    fn chunks(events: &[String]) -> Vec<Value> {
        events
            .iter()
            .filter(|e| *e != "data: [DONE]\n\n")
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap().trim()).unwrap())
            .collect()
    }

    fn joined(chunks: &[Value], index: u64, key: &str) -> String {
        chunks
            .iter()
            .flat_map(|c| c["choices"].as_array().unwrap().iter())
            .filter(|c| c["index"] == index)
            .filter_map(|c| c["delta"][key].as_str())
            .collect()
    }

    #[test]
    fn events_rebuild_the_reply_with_usage_last_and_done() {
        let all = events(&full(), true);
        assert_eq!(all.last().unwrap(), "data: [DONE]\n\n");
        let c = chunks(&all);
        assert_eq!(joined(&c, 0, "content"), "héllo");
        assert_eq!(joined(&c, 0, "reasoning_content"), "ünd so");
        assert_eq!(joined(&c, 1, "content"), "x");
        assert_eq!(c.last().unwrap()["usage"]["completion_tokens"], 4);
        assert!(chunks(&events(&full(), false))
            .iter()
            .all(|c| c.get("usage").is_none()));
        let finishes: Vec<&Value> = c
            .iter()
            .flat_map(|c| c["choices"].as_array().unwrap().iter())
            .map(|c| &c["finish_reason"])
            .filter(|f| !f.is_null())
            .collect();
        assert_eq!(finishes, [&json!("stop"), &json!("length")]);
    }

    #[test]
    fn cut_streams_stop_before_any_finish_and_malformed_ones_hold_bad_json() {
        let cut = cut(&full());
        assert!(!cut.is_empty() && !cut.iter().any(|e| e.contains("[DONE]")));
        assert!(chunks(&cut)
            .iter()
            .flat_map(|c| c["choices"].as_array().unwrap().iter())
            .all(|c| c["finish_reason"].is_null()));
        let bad = malformed(&full());
        let unparsable = bad
            .iter()
            .filter(|e| *e != "data: [DONE]\n\n")
            .filter(|e| serde_json::from_str::<Value>(e[6..].trim()).is_err())
            .count();
        assert_eq!(unparsable, 1);
    }
}
