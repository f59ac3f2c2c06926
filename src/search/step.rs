//! rStar's code-augmented step format: reasoning in `#` comments, Python code, `<end_of_step>`;
//! an answer step holds `\boxed{}` (after `<end_of_code>`/`<answer>` in rStar-Math's prompts).

use serde::Serialize;

/// The marker that ends an intermediate step (a policy stop string).
pub const END_OF_STEP: &str = "<end_of_step>";
/// Markers after which a step's text is no longer code.
const CODE_ENDS: [&str; 4] = [END_OF_STEP, "<end_of_code>", "<output>", "<answer>"];

/// A step split into its runnable code and, for an answer step, the boxed answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The Python part (comments included); empty when the step has no code line.
    pub code: String,
    pub answer: Option<String>,
}

/// Splits one step's text.
pub fn parse_step(text: &str) -> Step {
    let end = CODE_ENDS
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    let code = text[..end].trim_end();
    let has_code = code
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    Step {
        code: if has_code {
            format!("{code}\n")
        } else {
            String::new()
        },
        answer: last_boxed(text),
    }
}

/// The content of the last `\boxed{...}` (braces balanced), trimmed; None without one.
pub fn last_boxed(text: &str) -> Option<String> {
    let start = text.rfind("\\boxed{")? + "\\boxed{".len();
    let mut depth = 1usize;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(text[start..start + i].trim().to_string());
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_code_from_the_answer() {
        let s = parse_step("# add them\nx = 1 + 2\nprint(x)\n<end_of_step>");
        assert_eq!(s.code, "# add them\nx = 1 + 2\nprint(x)\n");
        assert_eq!(s.answer, None);
        let a = parse_step("print(x)\n<end_of_code>\n<output>3<end_of_output>\n<answer>\\boxed{\\frac{1}{2}}<end_of_answer>");
        assert_eq!(a.code, "print(x)\n");
        assert_eq!(a.answer.as_deref(), Some("\\frac{1}{2}"));
        assert_eq!(parse_step("# only thinking\n<end_of_step>").code, "");
        assert_eq!(last_boxed("\\boxed{unclosed"), None);
    }
}
