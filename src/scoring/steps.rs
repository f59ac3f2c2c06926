//! Splitting a solution into steps: `Step N:` lines, else paragraphs, else lines; or a user regex.

use regex::Regex;
use std::sync::OnceLock;

/// Byte ranges of the steps of `text`, in order, covering it from the first step's start; at most
/// `max_steps` (the rest joins the last step).
pub fn split(text: &str, custom: Option<&Regex>, max_steps: usize) -> Vec<(usize, usize)> {
    let starts = match custom {
        Some(re) => re.find_iter(text).map(|m| m.start()).collect(),
        None => {
            let step = step_marker();
            let marked: Vec<usize> = line_starts(text)
                .filter(|&i| step.is_match(&text[i..]))
                .collect();
            if !marked.is_empty() {
                marked
            } else if blank_line().is_match(text.trim()) {
                paragraph_starts(text)
            } else {
                line_starts(text)
                    .filter(|&i| !line_at(text, i).trim().is_empty())
                    .collect()
            }
        }
    };
    ranges(text, starts, max_steps)
}

fn step_marker() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[ \t#*]*(?i:step)\s*\d+\s*[:.)]").expect("valid regex"))
}

fn blank_line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\n[ \t]*\n").expect("valid regex"))
}

fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(move |&i| i < text.len())
}

fn line_at(text: &str, i: usize) -> &str {
    text[i..].split('\n').next().unwrap_or("")
}

fn paragraph_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut prev_blank = true;
    for i in line_starts(text) {
        let blank = line_at(text, i).trim().is_empty();
        if !blank && prev_blank {
            starts.push(i);
        }
        prev_blank = blank;
    }
    starts
}

fn ranges(text: &str, mut starts: Vec<usize>, max_steps: usize) -> Vec<(usize, usize)> {
    let end = text.trim_end().len();
    starts.retain(|&s| s < end);
    starts.dedup();
    if starts.is_empty() {
        return if end > 0 { vec![(0, end)] } else { vec![] };
    }
    // Text before the first marker belongs to the first step.
    starts[0] = 0;
    starts.truncate(max_steps.max(1));
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(end);
        out.push((s, text[..e].trim_end().len().max(s)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps<'a>(text: &'a str, re: Option<&Regex>, max: usize) -> Vec<&'a str> {
        split(text, re, max)
            .into_iter()
            .map(|(s, e)| text[s..e].trim())
            .collect()
    }

    #[test]
    fn step_markers_win() {
        let t = "We solve 2x + 3 = 11.\nStep 1: subtract 3, 2x = 8\nmore on step one\nStep 2: divide by 2, x = 4\n";
        assert_eq!(
            steps(t, None, 20),
            [
                "We solve 2x + 3 = 11.\nStep 1: subtract 3, 2x = 8\nmore on step one",
                "Step 2: divide by 2, x = 4"
            ]
        );
    }

    #[test]
    fn paragraphs_then_lines() {
        assert_eq!(steps("a\nb\n\nc\n\n\nd", None, 20), ["a\nb", "c", "d"]);
        assert_eq!(steps("a\nb\n\n", None, 20), ["a", "b"]);
        assert_eq!(steps("only", None, 20), ["only"]);
        assert!(steps("   ", None, 20).is_empty());
    }

    #[test]
    fn max_steps_keeps_the_rest_in_the_last() {
        assert_eq!(steps("1\n2\n3\n4", None, 2), ["1", "2\n3\n4"]);
    }

    #[test]
    fn custom_regex_marks_step_starts() {
        let re = Regex::new(r"(?m)^- ").unwrap();
        assert_eq!(
            steps("intro\n- a\n- b", Some(&re), 20),
            ["intro\n- a", "- b"]
        );
    }

    #[test]
    fn prefixes_end_exactly_at_step_ends() {
        let t = "Step 1: x\nStep 2: y";
        let r = split(t, None, 20);
        assert_eq!(&t[..r[0].1], "Step 1: x");
        assert_eq!(&t[..r[1].1], t);
    }
}
