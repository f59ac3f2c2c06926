//! A chat judge's reply read as a score: the number that is the score, never merely the first
//! digits in the text. The verifier (`gpassk verify`) and the search's reward calls both read
//! through [`parse_score`].
//!
//! What is read: a number with its sign, decimals and exponent (`-0.9`, `.25`, `1e-3`); a percent
//! (`80%`) as its fraction (0.8). Labels are not scores: the step number of "Score of step 3",
//! the range of "(0 to 1)" or "between 0 and 1". When the reply names a score (`score`, `rating`,
//! `reward`), the first number after each such word on its line is the score; otherwise the reply
//! must hold one number (`0.7 out of 1` and `0.7/1` name the scale asked for). Anything else is
//! unreadable, never a guess: numbers that disagree, a fraction (`7/10`), a value outside [0, 1],
//! no number at all.

use super::bounded;
use crate::search::Score;

/// Words that introduce the score itself.
const SCORE_WORDS: [&str; 3] = ["score", "rating", "reward"];

/// One number as written in the reply.
#[derive(Debug, Clone, Copy)]
struct Token {
    start: usize,
    end: usize,
    /// Its value (a percent already divided by 100); None for a fraction such as `7/10`.
    value: Option<f64>,
    /// A label rather than a candidate score (a step number, a bound of the stated range).
    label: bool,
}

/// A judge's reply as a score in [0, 1], or unparseable (the reply kept, bounded).
pub fn parse_score(text: &str) -> Score {
    // A reasoning model's thoughts are not its answer.
    let answer = text.rfind("</think>").map_or(text, |i| &text[i + 8..]);
    match read(answer) {
        Some(v) if (0.0..=1.0).contains(&v) => Score::Value(v + 0.0), // -0 as 0
        _ => Score::Unparseable(bounded(text)),
    }
}

/// The reply's score, before the range check; None when there is no single readable one.
fn read(text: &str) -> Option<f64> {
    let mut tokens = numbers(text);
    mark_labels(text, &mut tokens);
    let candidates: Vec<Token> = tokens.into_iter().filter(|t| !t.label).collect();
    let labelled = labelled(text, &candidates);
    let chosen: Vec<Option<f64>> = if labelled.is_empty() {
        candidates.iter().map(|t| t.value).collect()
    } else {
        labelled
    };
    let first = *chosen.first()?;
    // Several readings must agree, and a fraction is never read.
    chosen
        .iter()
        .all(|v| *v == first)
        .then_some(first)
        .flatten()
}

/// The first candidate after each score word, on that word's line.
fn labelled(text: &str, candidates: &[Token]) -> Vec<Option<f64>> {
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    for word in SCORE_WORDS {
        for (at, _) in lower.match_indices(word) {
            let after = at + word.len();
            let line_end = lower[after..].find('\n').map_or(lower.len(), |i| after + i);
            let next = candidates.iter().find(|t| t.start >= after);
            if let Some(t) = next.filter(|t| t.start < line_end) {
                out.push(t.value);
            }
        }
    }
    out
}

/// Every number in `text`: a sign only where it cannot be a minus between two terms; digits
/// glued to letters (`step1`, `2nd`, `x2`) are not numbers.
fn numbers(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let word = |i: usize| {
        b.get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let glued = i.checked_sub(1).is_some_and(|p| word(p) || b[p] == b'.');
        let at = i + usize::from(matches!(b[i], b'-' | b'+'));
        let starts = digit(at) || (b.get(at) == Some(&b'.') && digit(at + 1));
        if glued || !starts {
            i += 1;
            continue;
        }
        let (end, token) = number_at(b, i, at);
        if let Some(t) = token {
            out.push(t);
        }
        i = end.max(i + 1);
    }
    out
}

/// The number starting at `start` (its digits at `at`): where it ends, and the token unless it is
/// glued to a following letter.
fn number_at(b: &[u8], start: usize, at: usize) -> (usize, Option<Token>) {
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let mut j = at;
    while digit(j) {
        j += 1;
    }
    if b.get(j) == Some(&b'.') && digit(j + 1) {
        j += 1;
        while digit(j) {
            j += 1;
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let k = j + 1 + usize::from(matches!(b.get(j + 1), Some(b'-' | b'+')));
        if digit(k) {
            j = k;
            while digit(j) {
                j += 1;
            }
        }
    }
    let written = std::str::from_utf8(&b[start..j]).ok();
    let mut value = written.and_then(|s| s.parse::<f64>().ok());
    let mut end = j;
    let spaced_percent = b.get(j) == Some(&b' ') && b.get(j + 1) == Some(&b'%');
    if b.get(j) == Some(&b'%') || spaced_percent {
        end = j + 1 + usize::from(spaced_percent);
        value = value.map(|v| v / 100.0);
    } else if b.get(j).is_some_and(u8::is_ascii_alphabetic) {
        return (j, None);
    }
    // `0.8/1` is 0.8 on the asked scale; any other fraction (`7/10`) is not read.
    let digit_or_dot = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'.');
    if b[end..].starts_with(b"/1") && !digit_or_dot(end + 2) {
        end += 2;
    }
    let fraction = (b.get(end) == Some(&b'/') && b.get(end + 1).is_some_and(u8::is_ascii_digit))
        || (start > 0 && b[start - 1] == b'/');
    let token = Token {
        start,
        end,
        value: value.filter(|_| !fraction),
        label: false,
    };
    (end, Some(token))
}

/// Marks the numbers that label rather than score: a whole number after the word "step", the
/// bounds of a stated range ("0 to 1", "0-1", "between 0 and 1") and the scale of "0.7 out of 1".
fn mark_labels(text: &str, tokens: &mut [Token]) {
    for t in tokens.iter_mut() {
        let before = text[..t.start].trim_end_matches([' ', '\t', '#']);
        let lower = before.to_ascii_lowercase();
        // A step number is a whole number: "rate this step 0.7" scores it.
        let whole = text[t.start..t.end].bytes().all(|c| c.is_ascii_digit());
        if let Some(rest) = lower.strip_suffix("step") {
            t.label = whole && !rest.ends_with(|c: char| c.is_ascii_alphabetic());
        }
    }
    for i in 1..tokens.len() {
        let (a, b) = (tokens[i - 1], tokens[i]);
        let between = text[a.end..b.start].trim().to_ascii_lowercase();
        let joins = ["to", "-", "–", "and"].contains(&between.as_str());
        if joins && a.value == Some(0.0) && b.value == Some(1.0) {
            tokens[i - 1].label = true;
            tokens[i].label = true;
        }
        if between == "out of" && b.value == Some(1.0) {
            tokens[i].label = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Option<f64> {
        match parse_score(text) {
            Score::Value(v) => Some(v),
            Score::Unparseable(kept) => {
                assert_eq!(kept, bounded(text), "the reply is kept as written");
                None
            }
        }
    }

    #[test]
    fn the_score_is_the_number_that_scores_not_the_first_digits() {
        let cases: [(&str, Option<f64>); 28] = [
            ("0.8", Some(0.8)),
            ("Score: .25\n", Some(0.25)),
            ("1.", Some(1.0)),
            ("Score of step 1: 0.2", Some(0.2)),
            ("Score of step 3 (0 to 1): 0.7", Some(0.7)),
            ("**Score:** 0.35", Some(0.35)),
            ("Step 2 looks right. Score: 0.9", Some(0.9)),
            ("Score: 0.8\nReason: step 2 computes 2+3=5.", Some(0.8)),
            ("Between 0 and 1, I would say 0.6.", Some(0.6)),
            ("1e-3", Some(0.001)),
            ("2.5E-1", Some(0.25)),
            ("80%", Some(0.8)),
            ("0.5%", Some(0.005)),
            ("Rating: 95 %", Some(0.95)),
            ("<think>step 1 says 7, hmm</think>0.4", Some(0.4)),
            ("-0", Some(0.0)),
            ("-0.9", None),
            ("1.5", None),
            ("150%", None),
            ("7/10", None),
            ("Score: 8/10", None),
            ("0.3 or maybe 0.6", None),
            ("Score of step 1: 0.9. Score of step 2: 0.3.", None),
            ("great step!", None),
            ("I would rate this step 0.7 out of 1.", Some(0.7)),
            ("Score: 0.9 out of 1.0", Some(0.9)),
            ("0.8/1", Some(0.8)),
            ("7 out of 10", None),
        ];
        for (text, want) in cases {
            assert_eq!(value(text), want, "{text:?}");
        }
    }

    #[test]
    fn labels_and_glued_digits_are_not_scores() {
        assert_eq!(value(""), None);
        assert_eq!(value("Step 4"), None, "a step number alone is no score");
        assert_eq!(value("step1 is fine: 1"), Some(1.0));
        assert_eq!(value("the 2nd step: 0"), Some(0.0));
        assert_eq!(value("0-1: 0.45"), Some(0.45));
        assert_eq!(value("1e999"), None, "infinite");
        assert_eq!(value("NaN"), None);
        assert_eq!(value("x2 = 0.5"), Some(0.5));
        assert_eq!(value("0.6 0.6"), Some(0.6), "repeated, agreeing");
    }
}
