//! The OpenAI-shaped `chat.completion` body of a reply and the token estimate it and the pooling
//! reply share: used by live chat requests, Batch API output lines and pooling replies alike, so
//! none of them imports another's module.

use crate::{Recorded, Reply};
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// Rough token estimate (~4 characters per token) for usage when the responder gives none.
pub(crate) fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

/// Characters of every message's text content: what the prompt-token estimate counts.
pub(crate) fn prompt_chars(body: &Value) -> usize {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return 0;
    };
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .map(str::len)
        .sum()
}

/// The `chat.completion` body of `reply` to `rec`, with usage estimated when the reply has none.
pub(crate) fn render(rec: &Recorded, reply: &Reply) -> Value {
    let choices: Vec<Value> = reply
        .choices
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut message = json!({"role": "assistant", "content": c.content});
            if let Some(r) = &c.reasoning_content {
                message["reasoning_content"] = json!(r);
            }
            json!({"index": i, "message": message, "finish_reason": c.finish_reason})
        })
        .collect();
    let (prompt, completion) = reply.usage.unwrap_or_else(|| {
        let completion: u64 = reply
            .choices
            .iter()
            .map(|c| {
                let reasoning = c.reasoning_content.as_deref().map_or(0, str::len);
                estimate_tokens(c.content.len() + reasoning)
            })
            .sum();
        (estimate_tokens(prompt_chars(&rec.body)), completion)
    });
    let model = reply
        .served_model
        .as_deref()
        .or(rec.model())
        .unwrap_or("fake-model");
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    json!({
        "id": format!("chatcmpl-{}", rec.seq),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": reply.system_fingerprint,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    })
}
