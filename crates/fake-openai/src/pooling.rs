//! vLLM's pooling API (`POST /pooling`): the reply shape and the default step-reward rows of a
//! Qwen2.5-Math-PRM-style process reward model.

use crate::Recorded;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The step tag a Qwen2.5-Math-PRM-style model scores: one reward row per occurrence.
pub const STEP_TAG: &str = "<extra_0>";

/// The `[p_bad, p_good]` pair of every step from [`default_pooling_responder`].
pub const DEFAULT_STEP_PAIR: [f64; 2] = [0.2, 0.8];

/// Decides the `data[0].data` rows of a pooling reply (one `[p_bad, p_good]` per step tag).
pub type PoolingResponder = Arc<dyn Fn(&Recorded) -> Value + Send + Sync>;

/// One [`DEFAULT_STEP_PAIR`] per [`STEP_TAG`] in [`Recorded::pooled_text`].
pub fn default_pooling_responder() -> PoolingResponder {
    Arc::new(|r: &Recorded| {
        let steps = r.pooled_text().map_or(0, |t| t.matches(STEP_TAG).count());
        Value::Array(vec![json!(DEFAULT_STEP_PAIR); steps])
    })
}

/// Why a pooling body cannot be answered: the 400's message.
pub(crate) fn check(body: &Value) -> Result<(), String> {
    if !body.is_object() {
        return Err("pooling request body must be a JSON object".into());
    }
    if body.get("model").and_then(Value::as_str).is_none() {
        return Err("pooling request needs a string `model`".into());
    }
    match (body.get("messages"), body.get("input")) {
        (Some(Value::Array(msgs)), None) => match msgs.iter().position(|m| !is_message(m)) {
            Some(i) => Err(format!(
                "messages[{i}] needs a string `role` and a string `content`"
            )),
            None => Ok(()),
        },
        (None, Some(Value::String(_))) => Ok(()),
        (Some(_), Some(_)) => Err("pooling request takes `messages` or `input`, not both".into()),
        _ => Err("pooling request needs `messages` (array) or `input` (string)".into()),
    }
}

fn is_message(m: &Value) -> bool {
    m.get("role").and_then(Value::as_str).is_some()
        && m.get("content").and_then(Value::as_str).is_some()
}

/// The full reply around the responder's rows, with usage estimated from the text.
pub(crate) fn render(rec: &Recorded, rows: Value) -> Value {
    let chars = match rec.body.get("input").and_then(Value::as_str) {
        Some(input) => input.len(),
        None => crate::completion::prompt_chars(&rec.body),
    };
    let tokens = crate::completion::estimate_tokens(chars);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    json!({
        "id": format!("pool-{}", rec.seq),
        "object": "list",
        "created": created,
        "model": rec.model().unwrap_or("fake-model"),
        "data": [{"index": 0, "object": "pooling", "data": rows}],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
    })
}
