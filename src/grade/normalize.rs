//! String-level clean-up: Unicode folding of responses and LaTeX normalisation of extracted answers.

use regex::Regex;
use std::sync::LazyLock;

/// Folds the Unicode forms models emit into ASCII/LaTeX so later stages see one spelling.
pub fn normalize_unicode(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars();
    loop {
        // ASCII passes through unchanged: each run of it is copied whole, not char by char.
        let rest = chars.as_str();
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        out.push_str(&rest[..ascii]);
        chars = rest[ascii..].chars();
        let Some(c) = chars.next() else { break };
        match c {
            // Full-width ASCII block (digits, colon, letters, brackets).
            '\u{FF01}'..='\u{FF5E}' => {
                let ascii = char::from_u32(c as u32 - 0xFF01 + 0x21).unwrap_or(c);
                out.push(ascii);
            }
            '\u{3000}' | '\u{00A0}' | '\u{2009}' | '\u{200A}' | '\u{202F}' | '\u{2002}'
            | '\u{2003}' => out.push(' '),
            '\u{200B}' | '\u{FEFF}' => {}
            '−' | '‐' | '‑' | '﹣' => out.push('-'),
            '。' => out.push_str(". "),
            '、' => out.push(','),
            // "and"/"or" between two values (`1和3`, `x=1或x=3`) joins them into a list.
            '和' | '与' | '或' if between_values(&out, chars.as_str()) => out.push_str(", "),
            // 根号 is the word for a square root (`根号3`).
            '根' if chars.as_str().starts_with('号') => {
                chars.next();
                chars = push_root(&mut out, chars.as_str()).chars();
            }
            '∅' => out.push_str("\\emptyset "),
            '×' => out.push_str("\\times "),
            '÷' => out.push_str("\\div "),
            '·' | '⋅' => out.push_str("\\cdot "),
            '½' => out.push_str("\\frac{1}{2}"),
            '⅓' => out.push_str("\\frac{1}{3}"),
            '⅔' => out.push_str("\\frac{2}{3}"),
            '¼' => out.push_str("\\frac{1}{4}"),
            '¾' => out.push_str("\\frac{3}{4}"),
            '√' => chars = push_root(&mut out, chars.as_str()).chars(),
            'π' => out.push_str("\\pi "),
            '∞' => out.push_str("\\infty "),
            '≤' | '⩽' => out.push_str("\\le "),
            '≥' | '⩾' => out.push_str("\\ge "),
            '≠' => out.push_str("\\ne "),
            '≈' => out.push_str("\\approx "),
            '±' => out.push_str("\\pm "),
            '∓' => out.push_str("\\mp "),
            '∪' => out.push_str("\\cup "),
            '∈' => out.push_str("\\in "),
            '°' => out.push_str("^\\circ "),
            '²' => out.push_str("^2"),
            '³' => out.push_str("^3"),
            _ => out.push(c),
        }
    }
    out
}

/// `\\sqrt` for a root sign before `rest`; `√23` is the root of 23, so the whole digit run is the
/// radicand. Returns the text after what was taken.
fn push_root<'a>(out: &mut String, rest: &'a str) -> &'a str {
    let (digits, after) = rest.split_at(rest.bytes().take_while(u8::is_ascii_digit).count());
    if digits.is_empty() {
        out.push_str("\\sqrt ");
    } else {
        out.push_str("\\sqrt{");
        out.push_str(digits);
        out.push('}');
    }
    after
}

/// Whether a Chinese "and"/"or" stands between two values: a value ends `out` and one starts
/// `rest` (spaces aside).
fn between_values(out: &str, rest: &str) -> bool {
    let before = out.trim_end().chars().next_back();
    let after = rest.trim_start().chars().next();
    before.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '$' | '}' | ')'))
        && after.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '$' | '\\' | '(' | '-'))
}

struct Rules {
    double_backslash_cmd: Regex,
    thousands_brace: Regex,
    thousands_bang: Regex,
    thousands_thin: Regex,
    frac_dd: Regex,
    frac_d_brace: Regex,
    frac_brace_d: Regex,
    frac_d: Regex,
    sqrt_d: Regex,
    text_cmd: Regex,
    spacing: Regex,
    percent_word: Regex,
    times_ten: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).expect("static regex");
    Rules {
        // `\\le` written by JSON-escaping tools means `\le`; three backslashes stay a row break.
        double_backslash_cmd: re(r"(^|[^\\])\\\\([a-zA-Z])"),
        thousands_brace: re(r"(\d)\s*\{\s*,\s*\}\s*(\d)"),
        thousands_bang: re(r",\\!\s*"),
        thousands_thin: re(r"(\d)\\,(\d{3})"),
        frac_dd: re(r"\\frac\s*(\d)\s*(\d)"),
        frac_d_brace: re(r"\\frac\s*(\d)\s*\{"),
        frac_brace_d: re(r"\\frac\s*(\{[^{}]*\})\s*(\d)"),
        frac_d: re(r"\\frac\s*(\d)"),
        sqrt_d: re(r"\\sqrt\s*(\d)"),
        text_cmd: re(
            r"\\(?:text|textbf|textit|textnormal|textrm|mbox|mathrm|mathbf|mathit|mathsf|mathnormal|operatorname|boxed|fbox|hbox|emph)\s*\{",
        ),
        spacing: re(
            r"\\\\|\\(?:left|right|big|Big|bigg|Bigg|bigl|bigr|Bigl|Bigr|displaystyle|textstyle|limits|middle)\b|\\q?quad|\\[,;:! ]|~",
        ),
        percent_word: re(r"(?i)\b(?:percentage|percent|pct)\b"),
        times_ten: re(r"(\d)\s*[xX]\s*10\s*\^"),
    }
});

/// Canonical LaTeX spelling of an extracted answer: no wrappers, no spacing, no units of display.
pub(super) fn normalize_latex(s: &str) -> String {
    let r = &*RULES;
    // Each rewrite is guarded by a cheap substring test (a text every match of its regex holds):
    // most answers are short and plain. A rewrite that changes nothing leaves `t` as it is.
    let mut t = s.to_string();
    if holds(s, "\\\\") {
        rewrite(&mut t, &r.double_backslash_cmd, "$1\\$2");
    }
    if t.contains('$') {
        replace(&mut t, "\\$", " ");
        replace(&mut t, "$", " ");
    }
    if t.contains('{') && t.contains(',') {
        rewrite(&mut t, &r.thousands_brace, "$1$2");
    }
    if t.contains('\\') {
        for delimiter in ["\\(", "\\)", "\\[", "\\]"] {
            replace(&mut t, delimiter, " ");
        }
        if holds(&t, ",\\!") {
            rewrite(&mut t, &r.thousands_bang, ",");
        }
        if holds(&t, "\\,") {
            // Twice, because the regex consumes the leading digit of the next group.
            rewrite(&mut t, &r.thousands_thin, "$1$2");
            rewrite(&mut t, &r.thousands_thin, "$1$2");
        }
        if holds(&t, "frac") {
            for variant in ["\\dfrac", "\\tfrac", "\\cfrac"] {
                replace(&mut t, variant, "\\frac");
            }
            rewrite(&mut t, &r.frac_dd, "\\frac{$1}{$2}");
            rewrite(&mut t, &r.frac_d_brace, "\\frac{$1}{");
            rewrite(&mut t, &r.frac_brace_d, "\\frac$1{$2}");
            rewrite(&mut t, &r.frac_d, "\\frac{$1}");
        }
        if holds(&t, "\\sqrt") {
            rewrite(&mut t, &r.sqrt_d, "\\sqrt{$1}");
        }
        t = unwrap_text_commands(&t, &r.text_cmd);
    }
    if t.contains('\\') || t.contains('~') {
        // Row breaks `\\` are matched first so their second backslash is not read as `\ `.
        rewrite(&mut t, &r.spacing, |c: &regex::Captures| {
            if &c[0] == "\\\\" {
                "\\\\"
            } else {
                " "
            }
        });
    }
    if holds(&t, "circ") || holds(&t, "degree") {
        // Inside sin/cos/… a degree sign changes the value, so it is kept as a token there.
        let trig = has_trig(&t);
        let mark = if trig { " \\degree " } else { " " };
        for sign in ["^{\\circ}", "^\\circ", "\\circ", "\\degree"] {
            replace(&mut t, sign, mark);
        }
        if trig && holds(&t, "degree") {
            // `\tan 45 degrees` as well; the marker itself is left as it is.
            rewrite(&mut t, &DEGREE_WORD, " \\degree ");
        }
    }
    if holds(&t, "10^") || holds(&t, "10 ^") {
        // `2.0 x 10^-25`: scientific notation typed with the letter x.
        rewrite(&mut t, &r.times_ten, "$1 \\times 10^");
    }
    if t.contains('%') {
        replace(&mut t, "\\%", " ");
        replace(&mut t, "%", " ");
    }
    // `(?i)` folds no other letter into these ASCII ones (only i, k and s have such folds).
    if has_ascii_ignoring_case(&t, "percent") || has_ascii_ignoring_case(&t, "pct") {
        rewrite(&mut t, &r.percent_word, " ");
    }
    // Markdown emphasis (`**5**`) and code ticks wrap answers but are not part of them.
    let trimmed = t
        .trim()
        .trim_matches(['*', '`'])
        .trim_end_matches(['.', ',', ';', ' ', '\n', '\t'])
        .trim_matches(['*', '`'])
        .trim();
    let trimmed = trimmed.trim_start_matches([',', ';', ':', ' ']).trim();
    trimmed.to_string()
}

/// `t` with every match of `re` replaced; untouched (not copied) when nothing matches.
fn rewrite(t: &mut String, re: &Regex, with: impl regex::Replacer) {
    if let std::borrow::Cow::Owned(changed) = re.replace_all(t, with) {
        *t = changed;
    }
}

/// `t` with every `from` replaced by `to`; untouched (not copied) when it holds none.
fn replace(t: &mut String, from: &str, to: &str) {
    if holds(t, from) {
        *t = t.replace(from, to);
    }
}

/// Whether `s` holds `word` with any ASCII letter case.
fn has_ascii_ignoring_case(s: &str, word: &str) -> bool {
    s.as_bytes()
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

fn has_trig(s: &str) -> bool {
    ["sin", "cos", "tan", "sec", "csc", "cot"]
        .iter()
        .any(|f| holds(s, f))
}

/// Whether `hay` holds `needle` (as `str::contains`): see [`find_literal`].
pub(super) fn holds(hay: &str, needle: &str) -> bool {
    find_literal(hay, needle).is_some()
}

/// Where `needle` first occurs in `hay` (as `str::find`): each place its first byte occurs (found
/// by `memchr`) is compared with the rest. The texts searched are short and the needles a few
/// bytes, where this costs a fraction of a general substring search, which first analyses its
/// needle; it is linear all the same, the needles being constants of at most ten bytes.
pub(super) fn find_literal(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some(&first) = n.first() else {
        return Some(0);
    };
    memchr::memchr_iter(first, h).find(|&at| h[at..].starts_with(n))
}

static DEGREE_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\\?degrees?").expect("static regex"));

static STYLED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\(?:mathcal|mathbb|mathscr|mathfrak)\s*\{").expect("static regex")
});

/// `\mathcal{B}` → `B` (and `\mathbb`, `\mathscr`, `\mathfrak`), for the `styled_letters = "same"` policy.
pub(super) fn strip_styled_letters(s: &str) -> Option<String> {
    STYLED.is_match(s).then(|| unwrap_text_commands(s, &STYLED))
}

/// Replaces `\text{X}`-style wrappers by ` X ` (brace-matched), keeping the inner text.
fn unwrap_text_commands(s: &str, re: &Regex) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    // Bounded: every iteration consumes at least the matched command.
    while let Some(m) = re.find(rest) {
        out.push_str(&rest[..m.start()]);
        let after = &rest[m.end()..];
        match matching_brace(after) {
            Some(close) => {
                out.push(' ');
                out.push_str(&after[..close]);
                out.push(' ');
                rest = &after[close + 1..];
            }
            None => {
                out.push(' ');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Byte index of the `}` closing a group whose `{` was just consumed.
pub(super) fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 1usize;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Lower-cased text form used for textual and multiple-choice comparison.
pub(super) fn text_form(s: &str) -> String {
    let mut t = String::with_capacity(s.len());
    // `1 2` is two numbers: the space between digits is kept, so it never reads as `12`.
    let mut digit_gap = false;
    let mut last_digit = false;
    for c in s.chars() {
        if c.is_whitespace() {
            digit_gap |= last_digit;
            continue;
        }
        let digit = c.is_ascii_digit();
        if digit && digit_gap {
            t.push(' ');
        }
        digit_gap = false;
        last_digit = digit;
        if c.is_ascii() {
            t.push(c.to_ascii_lowercase());
        } else {
            t.extend(c.to_lowercase());
        }
    }
    // `(C)` and `C` are the same choice.
    while t.len() >= 2
        && t.starts_with('(')
        && t.ends_with(')')
        && !t[1..t.len() - 1].contains(['(', ')'])
    {
        t = t[1..t.len() - 1].to_string();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unicode_is_folded() {
        assert_eq!(normalize_unicode("１２：３"), "12:3");
        assert_eq!(normalize_unicode("−3"), "-3");
        assert_eq!(normalize_unicode("√23"), "\\sqrt{23}");
        assert_eq!(normalize_unicode("x √ 2 √4y"), "x \\sqrt  2 \\sqrt{4}y");
        assert_eq!(normalize_unicode("a−b ≤ c½"), "a-b \\le  c\\frac{1}{2}");
        assert!(normalize_unicode("2×3").contains("\\times"));
        assert!(normalize_unicode("6÷3").contains("\\div"));
        assert_eq!(normalize_unicode("3½"), "3\\frac{1}{2}");
        assert!(normalize_unicode("2π").contains("\\pi"));
    }

    #[test]
    fn fractions_and_roots() {
        assert_eq!(normalize_latex("\\dfrac{1}{3}"), "\\frac{1}{3}");
        assert_eq!(normalize_latex("\\tfrac12"), "\\frac{1}{2}");
        assert_eq!(normalize_latex("\\frac3{3}"), "\\frac{3}{3}");
        assert_eq!(normalize_latex("\\frac{1}2"), "\\frac{1}{2}");
        assert_eq!(normalize_latex("\\sqrt3"), "\\sqrt{3}");
    }

    #[test]
    fn wrappers_and_spacing() {
        assert_eq!(
            normalize_latex("$\\left( 1 \\right)$").replace(' ', ""),
            "(1)"
        );
        assert_eq!(normalize_latex("\\text{Evelyn}"), "Evelyn");
        assert_eq!(normalize_latex("90^\\circ"), "90");
        assert_eq!(normalize_latex("28\\%"), "28");
        assert_eq!(normalize_latex("28 percent"), "28");
        assert_eq!(normalize_latex("\\$16386.17"), "16386.17");
        assert_eq!(normalize_latex("a\\,b"), "a b");
        assert_eq!(normalize_latex("**5**."), "5");
        assert_eq!(normalize_latex("`x = 3`"), "x = 3");
        assert_eq!(normalize_latex("-2 \\\\le x"), "-2 \\le x");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(normalize_latex("7\\,425\\,000"), "7425000");
        assert_eq!(normalize_latex("14{,}916"), "14916");
        assert_eq!(normalize_latex("14 {, }916"), "14916");
        assert_eq!(
            normalize_latex("11,\\! 111,\\! 111,\\! 100"),
            "11,111,111,100"
        );
    }

    #[test]
    fn commas_between_digits_are_left_as_written() {
        // Whether `0,1` is a list or a decimal is the gold's and the setting's question
        // (`Gold`, `DecimalMark`), not normalisation's.
        for s in ["1000,99", "0,111", "1,22", "1,2", "1,234", "0,1"] {
            assert_eq!(normalize_latex(s), s);
        }
        assert_eq!(normalize_latex("2.0 x 10^{-25}"), "2.0 \\times 10^{-25}");
    }

    #[test]
    fn text_form_folds_choices() {
        assert_eq!(text_form("(C)"), "c");
        assert_eq!(text_form(" Even "), "even");
        // Braces matter: these are different numbers.
        assert_ne!(text_form("\\frac{12}{3}"), text_form("\\frac{1}{23}"));
    }
}
