//! Prompt templates: `{field}` placeholders filled from a problem, `{{`/`}}` for literal braces, and
//! chat messages with few-shot examples as earlier user/assistant turns.

use serde::{Deserialize, Serialize};

use crate::dataset::Problem;
#[cfg(test)]
use crate::dataset::{DEFAULT_TEMPLATE_EN, DEFAULT_TEMPLATE_ZH};

/// One chat turn as sent to an OpenAI-compatible API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "user".to_string(),
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "assistant".to_string(),
            content: content.into(),
        }
    }
}

/// A template that cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("unknown placeholder `{{{name}}}` in the prompt template (problem `{problem_id}`); available: {available}")]
    UnknownPlaceholder {
        name: String,
        problem_id: String,
        available: String,
    },
    #[error("placeholder `{{{name}}}` cannot be used with few-shot examples, which carry only `{{question}}`")]
    FewShotPlaceholder { name: String },
    #[error(
        "prompt template: `{{` at byte {offset} is not closed; write `{{{{` for a literal brace"
    )]
    UnclosedBrace { offset: usize },
    #[error("prompt template: `}}` at byte {offset} has no opening brace; write `}}}}` for a literal brace")]
    UnmatchedCloseBrace { offset: usize },
    #[error("prompt template: `{{{text}}}` at byte {offset} is not a placeholder name (letters, digits, `_`); write `{{{{` and `}}}}` for literal braces")]
    InvalidPlaceholder { text: String, offset: usize },
}

enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

fn parse(template: &str) -> Result<Vec<Piece<'_>>, PromptError> {
    let bytes = template.as_bytes();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                pieces.push(Piece::Text(&template[start..=i]));
                i += 2;
                start = i;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                pieces.push(Piece::Text(&template[start..=i]));
                i += 2;
                start = i;
            }
            b'{' => {
                let close = template[i + 1..]
                    .find(['}', '{'])
                    .map(|n| i + 1 + n)
                    .filter(|&n| bytes[n] == b'}')
                    .ok_or(PromptError::UnclosedBrace { offset: i })?;
                let name = &template[i + 1..close];
                if !is_name(name) {
                    return Err(PromptError::InvalidPlaceholder {
                        text: name.to_string(),
                        offset: i,
                    });
                }
                pieces.push(Piece::Text(&template[start..i]));
                pieces.push(Piece::Placeholder(name));
                i = close + 1;
                start = i;
            }
            b'}' => return Err(PromptError::UnmatchedCloseBrace { offset: i }),
            _ => i += 1,
        }
    }
    pieces.push(Piece::Text(&template[start..]));
    Ok(pieces)
}

fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The placeholder names a template uses, in order of first use; checks the syntax.
pub fn placeholders(template: &str) -> Result<Vec<String>, PromptError> {
    let mut names: Vec<String> = Vec::new();
    for piece in parse(template)? {
        if let Piece::Placeholder(name) = piece {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    Ok(names)
}

fn lookup<'p>(problem: &'p Problem, name: &str) -> Option<&'p str> {
    match name {
        "question" => Some(&problem.question),
        "id" => Some(&problem.id),
        "subset" => problem.subset.as_deref(),
        _ => problem.fields.get(name).map(String::as_str),
    }
}

fn available(problem: &Problem) -> String {
    let mut names = vec!["question", "id"];
    if problem.subset.is_some() {
        names.push("subset");
    }
    names.extend(problem.fields.keys().map(String::as_str));
    names.join(", ")
}

/// Fill a template from a problem: `{question}`, `{id}`, `{subset}` and any extra field
/// (`{level}`, `{options}`, …). The reference answer is never available.
pub fn render(template: &str, problem: &Problem) -> Result<String, PromptError> {
    let mut out = String::with_capacity(template.len() + problem.question.len());
    for piece in parse(template)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(name) => match lookup(problem, name) {
                Some(value) => out.push_str(value),
                None => {
                    return Err(PromptError::UnknownPlaceholder {
                        name: name.to_string(),
                        problem_id: problem.id.clone(),
                        available: available(problem),
                    })
                }
            },
        }
    }
    Ok(out)
}

fn render_example(template: &str, question: &str) -> Result<String, PromptError> {
    let mut out = String::with_capacity(template.len() + question.len());
    for piece in parse(template)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder("question") => out.push_str(question),
            Piece::Placeholder(name) => {
                return Err(PromptError::FewShotPlaceholder {
                    name: name.to_string(),
                })
            }
        }
    }
    Ok(out)
}

/// The chat for one problem: each few-shot (question, answer text) pair as a user turn (the
/// template filled with that question) and an assistant turn, then the problem's own user turn.
pub fn messages(
    template: &str,
    problem: &Problem,
    few_shot: &[(String, String)],
) -> Result<Vec<ChatMessage>, PromptError> {
    let mut chat = Vec::with_capacity(few_shot.len() * 2 + 1);
    for (question, answer) in few_shot {
        chat.push(ChatMessage::user(render_example(template, question)?));
        chat.push(ChatMessage::assistant(answer.clone()));
    }
    chat.push(ChatMessage::user(render(template, problem)?));
    Ok(chat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn problem() -> Problem {
        let mut fields = BTreeMap::new();
        fields.insert("level".to_string(), "3".to_string());
        Problem {
            id: "test/algebra/1.json".to_string(),
            question: "What is $1+1$?".to_string(),
            answer: "2".to_string(),
            subset: Some("Algebra".to_string()),
            fields,
        }
    }

    #[test]
    fn fills_question_subset_and_fields() {
        let text = render("[{subset}, level {level}, {id}] {question}", &problem()).unwrap();
        assert_eq!(
            text,
            "[Algebra, level 3, test/algebra/1.json] What is $1+1$?"
        );
    }

    #[test]
    fn doubled_braces_are_literal() {
        let text = render("Answer in \\boxed{{}}: {question} {{x}}", &problem()).unwrap();
        assert_eq!(text, "Answer in \\boxed{}: What is $1+1$? {x}");
        let text = render("$\\frac{{1}}{{2}}$ {{{question}}}", &problem()).unwrap();
        assert_eq!(text, "$\\frac{1}{2}$ {What is $1+1$?}");
    }

    #[test]
    fn braces_in_values_are_not_parsed() {
        let mut p = problem();
        p.question = "Is {level} a set {x}?".to_string();
        assert_eq!(render("{question}", &p).unwrap(), "Is {level} a set {x}?");
    }

    #[test]
    fn unknown_placeholder_names_itself() {
        let err = render("{question} {options}", &problem()).unwrap_err();
        assert!(matches!(&err, PromptError::UnknownPlaceholder { name, .. } if name == "options"));
        let message = err.to_string();
        assert!(message.contains("`{options}`"), "{message}");
        assert!(message.contains("level"), "{message}");
    }

    #[test]
    fn answer_is_not_a_placeholder() {
        let err = render("{question} {answer}", &problem()).unwrap_err();
        assert!(matches!(err, PromptError::UnknownPlaceholder { name, .. } if name == "answer"));
    }

    #[test]
    fn subset_without_subset_is_unknown() {
        let mut p = problem();
        p.subset = None;
        assert!(render("{subset}", &p).is_err());
    }

    #[test]
    fn syntax_errors_give_offsets() {
        assert_eq!(
            render("ab {question", &problem()).unwrap_err(),
            PromptError::UnclosedBrace { offset: 3 }
        );
        assert_eq!(
            render("a } b", &problem()).unwrap_err(),
            PromptError::UnmatchedCloseBrace { offset: 2 }
        );
        assert_eq!(
            render("\\frac{1}{2}", &problem()).unwrap_err(),
            PromptError::InvalidPlaceholder {
                text: "1".to_string(),
                offset: 5
            }
        );
        assert!(matches!(
            render("{ question }", &problem()).unwrap_err(),
            PromptError::InvalidPlaceholder { .. }
        ));
        assert!(matches!(
            render("{que{stion}", &problem()).unwrap_err(),
            PromptError::UnclosedBrace { offset: 0 }
        ));
    }

    #[test]
    fn placeholders_lists_names_once() {
        assert_eq!(
            placeholders("{question} {{no}} {level} {question}").unwrap(),
            ["question", "level"]
        );
    }

    #[test]
    fn default_templates_render() {
        let english = render(DEFAULT_TEMPLATE_EN, &problem()).unwrap();
        assert!(english.contains("step by step"));
        assert!(english.contains("\\boxed{}"));
        assert!(english.ends_with("What is $1+1$?"));
        let chinese = render(DEFAULT_TEMPLATE_ZH, &problem()).unwrap();
        assert!(chinese.contains("\\boxed{}"));
        assert!(chinese.contains("一步一步"));
    }

    #[test]
    fn few_shot_turns_come_first_in_order() {
        let shots = vec![
            ("What is 2+3?".to_string(), "\\boxed{5}".to_string()),
            ("What is 6*2?".to_string(), "\\boxed{12}".to_string()),
        ];
        let chat = messages("Q: {question}", &problem(), &shots).unwrap();
        let roles: Vec<&str> = chat.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
        assert_eq!(chat[0].content, "Q: What is 2+3?");
        assert_eq!(chat[1].content, "\\boxed{5}");
        assert_eq!(chat[2].content, "Q: What is 6*2?");
        assert_eq!(chat[3].content, "\\boxed{12}");
        assert_eq!(chat[4].content, "Q: What is $1+1$?");
    }

    #[test]
    fn zero_shot_is_one_user_turn() {
        let chat = messages("{question}", &problem(), &[]).unwrap();
        assert_eq!(chat, [ChatMessage::user("What is $1+1$?")]);
    }

    #[test]
    fn few_shot_refuses_fields_examples_lack() {
        let shots = vec![("q".to_string(), "a".to_string())];
        let err = messages("{level}: {question}", &problem(), &shots).unwrap_err();
        assert_eq!(
            err,
            PromptError::FewShotPlaceholder {
                name: "level".to_string()
            }
        );
    }

    #[test]
    fn chat_message_serializes_openai_shape() {
        let json = serde_json::to_string(&ChatMessage::user("hi")).unwrap();
        assert_eq!(json, r#"{"role":"user","content":"hi"}"#);
    }
}
