//! The text of a chat message's `content`, read one way wherever messages come from: a model's
//! reply (`client`) and the logs other harnesses wrote (`import`).

use serde_json::Value;

/// A message's content as text: a string as it is, or the text parts of a list (`"…"` or
/// `{"type": "text", "text": "…"}`) joined; None for null, for any other value and for a list
/// with no text part (images, reasoning parts and tool parts hold none).
pub fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let mut texts = parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .peekable();
            texts.peek()?;
            Some(texts.collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_and_text_parts_read_alike_and_other_parts_hold_no_text() {
        assert_eq!(content_text(&json!("a")).as_deref(), Some("a"));
        assert_eq!(content_text(&json!("")).as_deref(), Some(""));
        let parts = json!(["x", {"type": "text", "text": "y"}, {"type": "image_url"}, 5]);
        assert_eq!(content_text(&parts).as_deref(), Some("xy"));
        let reasoning = json!([{"type": "reasoning", "reasoning": "hidden"}]);
        assert_eq!(content_text(&reasoning), None);
        assert_eq!(content_text(&json!([])), None);
        assert_eq!(content_text(&Value::Null), None);
        assert_eq!(content_text(&json!({"text": "not a list"})), None);
    }
}
