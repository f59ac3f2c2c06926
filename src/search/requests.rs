//! The wire form of a search's model calls: policy, chat-judge and pooling request bodies, and the
//! reading of their replies. Bodies are built only from the question and the steps (never the gold
//! answer), with sorted keys, so equal requests are equal bytes (the request cache's key).

use super::{Score, SearchInput, SearchSettings};
use crate::config::Prefix;
use serde_json::{json, Value};

mod score;
pub use score::parse_score;

/// Strings that end a policy step (rStar-Math's markers; the server drops them from the text).
pub const STOPS: [&str; 3] = [super::END_OF_STEP, "<end_of_code>", "<end_of_answer>"];

/// The policy's instructions: rStar's code-augmented step format.
pub const POLICY_SYSTEM: &str = "Solve the math problem one step at a time. Each step explains its \
reasoning in Python comments (lines starting with #), then gives Python code that computes what the step \
needs and prints it, then ends with the line <end_of_step>. The code of all steps runs as one program, \
so later steps may use earlier variables. When you know the final answer, write a last step that gives \
it as \\boxed{answer}.";

/// One solved example in that format, sent as an earlier exchange: small models copy its shape.
const EXAMPLE: [&str; 2] = [
    "What is 2*(3+4)?",
    "# Add the numbers in the brackets first.\ns = 3 + 4\nprint(s)\n<end_of_step>\n\
# Then multiply by 2.\nr = 2 * s\nprint(r)\n<end_of_step>\n# The result is 14.\n\\boxed{14}",
];

/// The chat judge's instructions: a 0–1 score of the last step.
pub const JUDGE_SYSTEM: &str = "You are a process reward model. You see a math problem and a partial \
solution written as steps. Judge only the LAST step: is it correct and useful for solving the problem? \
Reply with one number between 0 and 1 (1: certainly correct), and nothing else.";

/// The step tag a Qwen2.5-Math-PRM-style model scores after each step.
pub const PRM_STEP_TAG: &str = "<extra_0>";

/// The instruction Qwen2.5-Math-PRM is trained with.
const PRM_SYSTEM: &str = "Please reason step by step, and put your final answer within \\boxed{}.";

/// The steps so far as the policy wrote them, each closed by `<end_of_step>`.
pub fn prefix_text(prefix: &[String]) -> String {
    prefix
        .iter()
        .map(|s| {
            let s = s.trim_end();
            if s.ends_with(super::END_OF_STEP) {
                format!("{s}\n")
            } else {
                format!("{s}\n{}\n", super::END_OF_STEP)
            }
        })
        .collect()
}

/// The chat request for `n` candidate next steps.
pub fn policy_body(
    model_id: &str,
    s: &SearchSettings,
    top_p: f64,
    input: &SearchInput,
    prefix: &[String],
    n: u32,
    seed: u64,
) -> Vec<u8> {
    let mut messages = vec![
        json!({"role": "system", "content": POLICY_SYSTEM}),
        json!({"role": "user", "content": EXAMPLE[0]}),
        json!({"role": "assistant", "content": EXAMPLE[1]}),
    ];
    let done = prefix_text(prefix);
    let mut body = json!({
        "model": model_id,
        "temperature": s.policy_temperature,
        "top_p": top_p,
        "max_tokens": s.policy_max_tokens,
        "stop": STOPS,
        "seed": seed,
    });
    match s.prefix {
        Prefix::Continue if !prefix.is_empty() => {
            messages.push(json!({"role": "user", "content": input.question}));
            messages.push(json!({"role": "assistant", "content": done}));
            body["continue_final_message"] = true.into();
            body["add_generation_prompt"] = false.into();
        }
        Prefix::Restate if !prefix.is_empty() => {
            let text = format!(
                "{}\n\nThe solution so far:\n{done}\nWrite the next step.",
                input.question
            );
            messages.push(json!({"role": "user", "content": text}));
        }
        _ => messages.push(json!({"role": "user", "content": input.question})),
    }
    body["messages"] = Value::Array(messages);
    if n > 1 {
        body["n"] = n.into();
    }
    to_bytes(&body)
}

/// The chat-judge request scoring the last of `steps`, at temperature 0.
pub fn judge_body(model_id: &str, input: &SearchInput, steps: &[String]) -> Vec<u8> {
    let numbered: String = steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("Step {}:\n{}\n\n", i + 1, s.trim_end()))
        .collect();
    let user = format!(
        "Problem:\n{}\n\n{numbered}Score of step {} (0 to 1):",
        input.question,
        steps.len()
    );
    to_bytes(&json!({
        "model": model_id,
        "messages": [
            {"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": user},
        ],
        "temperature": 0.0,
        "max_tokens": crate::config::JUDGE_MAX_TOKENS,
        "seed": 0,
    }))
}

/// The `/pooling` request: the steps each followed by the PRM's step tag.
pub fn pooling_body(model_id: &str, input: &SearchInput, steps: &[String]) -> Vec<u8> {
    let tagged: String = steps
        .iter()
        .map(|s| format!("{}{PRM_STEP_TAG}", s.trim_end()))
        .collect();
    to_bytes(&json!({
        "model": model_id,
        "messages": [
            {"role": "system", "content": PRM_SYSTEM},
            {"role": "user", "content": input.question},
            {"role": "assistant", "content": tagged},
        ],
    }))
}

/// A `/pooling` reply: the last step's positive-label probability (`data[0].data[-1][1]`; a
/// scalar row is taken as the score itself).
pub fn parse_pooling(reply: &Value) -> Score {
    let last = reply
        .pointer("/data/0/data")
        .and_then(Value::as_array)
        .and_then(|rows| rows.last());
    let value = match last {
        Some(Value::Array(pair)) if pair.len() == 2 => pair[1].as_f64(),
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    };
    match value {
        Some(v) if (0.0..=1.0).contains(&v) => Score::Value(v),
        _ => Score::Unparseable(bounded(&reply.to_string())),
    }
}

/// Every step's score of a `/pooling` reply (`data[0].data[i][1]`, or scalar rows): one in
/// [0, 1] per step, else the reply (bounded) as unreadable.
pub fn parse_pooling_steps(reply: &Value, steps: usize) -> Result<Vec<f64>, String> {
    let rows = reply.pointer("/data/0/data").and_then(Value::as_array);
    let scores: Option<Vec<f64>> = rows.map(|rows| {
        rows.iter()
            .filter_map(|row| match row {
                Value::Array(pair) if pair.len() == 2 => pair[1].as_f64(),
                Value::Number(n) => n.as_f64(),
                _ => None,
            })
            .filter(|v| (0.0..=1.0).contains(v))
            .collect()
    });
    match scores {
        Some(v) if v.len() == steps && rows.is_some_and(|r| r.len() == steps) => Ok(v),
        _ => Err(bounded(&reply.to_string())),
    }
}

/// Server text kept in a tree: at most 200 characters.
fn bounded(text: &str) -> String {
    if text.chars().count() > 200 {
        text.chars().take(199).chain(['…']).collect()
    } else {
        text.to_string()
    }
}

fn to_bytes(v: &Value) -> Vec<u8> {
    // serde_json's map is a BTreeMap here (no preserve_order): keys come out sorted.
    serde_json::to_vec(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> SearchInput {
        SearchInput {
            problem_id: "p1".into(),
            question: "What is 2+3?".into(),
        }
    }

    #[test]
    fn scores_are_read_or_kept_as_unparseable() {
        assert_eq!(parse_score("0.8"), Score::Value(0.8));
        assert_eq!(parse_score("Score: .25\n"), Score::Value(0.25));
        assert_eq!(parse_score("1."), Score::Value(1.0));
        assert!(matches!(parse_score("great step!"), Score::Unparseable(_)));
        assert!(matches!(parse_score("7/10"), Score::Unparseable(_)));
        assert!(matches!(parse_score(""), Score::Unparseable(_)));
        let reply = json!({"data": [{"index": 0, "data": [[0.9, 0.1], [0.3, 0.7]]}]});
        assert_eq!(parse_pooling(&reply), Score::Value(0.7));
        assert!(matches!(
            parse_pooling(&json!({"data": []})),
            Score::Unparseable(_)
        ));
    }

    #[test]
    fn policy_requests_continue_or_restate_the_prefix() {
        let mut s = SearchSettings::default();
        let steps = vec!["# add\nx = 2 + 3\nprint(x)".to_string()];
        let body: Value =
            serde_json::from_slice(&policy_body("pol", &s, 0.95, &input(), &steps, 4, 9)).unwrap();
        assert_eq!(body["messages"][4]["role"], "assistant");
        assert_eq!(
            body["messages"][4]["content"],
            "# add\nx = 2 + 3\nprint(x)\n<end_of_step>\n"
        );
        assert_eq!(body["continue_final_message"], true);
        assert_eq!(
            (body["n"].as_u64(), body["seed"].as_u64()),
            (Some(4), Some(9))
        );
        s.prefix = Prefix::Restate;
        let body: Value =
            serde_json::from_slice(&policy_body("pol", &s, 0.95, &input(), &steps, 1, 9)).unwrap();
        assert_eq!(body["messages"].as_array().unwrap().len(), 4);
        assert!(body.get("n").is_none() && body.get("continue_final_message").is_none());
        let tagged: Value = serde_json::from_slice(&pooling_body("prm", &input(), &steps)).unwrap();
        assert!(tagged["messages"][2]["content"]
            .as_str()
            .unwrap()
            .ends_with("print(x)<extra_0>"));
    }
}
