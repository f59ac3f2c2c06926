//! Answer extraction: user regexes, `\boxed{}`, answer phrases, math environments, last number.

use super::expr::parse;
use super::normalize::{find_literal, holds, matching_brace, normalize_latex, normalize_unicode};
use super::{FoundBy, Gold, GradeConfig};
use regex::Regex;
use std::sync::LazyLock;

/// Only the tail of very long responses is searched; answers live at the end.
const MAX_SCAN_BYTES: usize = 300_000;
/// Longest extracted answer kept: the whole scanned tail, so a long answer is never cut short
/// (equivalence compares over-long answers as text).
const MAX_ANSWER_BYTES: usize = MAX_SCAN_BYTES;
/// Longest prose-free response taken whole as the answer.
const MAX_WHOLE_BYTES: usize = 20_000;
/// Longer prose-free responses that do not parse are still taken whole.
const MAX_PARSED_WHOLE: usize = 200;
/// Widest gap (bytes) across which adjacent boxes or math spans are joined into one set answer.
const MAX_JOIN_GAP: usize = 80;
const MAX_JOINED: usize = 32;

static DOUBLE_BACKSLASH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(^|[^\\])\\\\([a-zA-Z])").expect("static regex"));
/// A number in prose: mixed number `2 3/4`, clock time or ratio `10:45`, grouped thousands,
/// decimal (point or comma), fraction.
const NUMBER_PATTERN: &str = r"-?(?:\d+ \d+/\d+(?-u:\b)|\d+:\d\d(?::\d\d)?(?-u:\b)|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?: \d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)(?:/\d+)?";
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(NUMBER_PATTERN).expect("static regex"));
/// A number stated by the words before it (`there are 56`, `is $8$`, `= 30`, `a total of 12`):
/// group 1 is the number.
static STATED: LazyLock<Regex> = LazyLock::new(|| Regex::new(STATING).expect("static regex"));
/// A number at the start of the text.
static NUMBER_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^(?:{NUMBER_PATTERN})")).expect("static regex"));
const STATING: &str = concat!(
    r"(?i)(?:(?-u:\b)(?:there\s+(?:are|is|were|was|will\s+be|would\s+be)|is|are|was|were|equals?|be|gives?|giving|yields?|totals?|total\s+of|comes\s+to|amounts\s+to|results?\s+in)(?-u:\b)|=)",
    r"(?:\s+(?:approximately|about|around|roughly|exactly|only|just|precisely|a\s+total\s+of|equal\s+to))*\s*(?:\$|\\\()?\s*"
);
/// Words that open a clause qualifying a stated value (`56 ways … with 3 toppings`, `8 kHz (2
/// times …)`): a number inside such a clause describes the value, it is not the answer.
const QUALIFIERS: [&str; 16] = [
    "with", "using", "for", "of", "from", "in", "on", "at", "by", "when", "where", "if", "given",
    "among", "between", "per",
];
/// Words that start a new conclusion: a number after them is the answer after all.
const CONCLUDERS: [&str; 8] = [
    "so",
    "thus",
    "hence",
    "therefore",
    "answer",
    "total",
    "altogether",
    "overall",
];
/// Phrases that announce the final answer (English, French, Chinese); they override a box.
static PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?:final answer is|answer is|answer (?:should|would|must|will) be|final answer\s*:|answer\s*:|(?:correct|right|closest|nearest|best|matching) (?:option|choice) is|",
        r"is (?:option|choice)(?-u:\b)|réponse (?:finale |correcte |exacte )?est|",
        r"答案(?:是|为|應為|应为|选)|答案\s*:|【答案】|【答】|",
        r"(?:故|所以|因此|则|应)选(?:择)?|####|<answer>|\x22(?:final_)?answer\x22\s*:)\s*:?\s*"
    ))
    .expect("static regex")
});
/// "Option B is correct", "both (A) and (B) are correct", `选项 A 和 B 都正确`: the letters come
/// before the verdict; several letters are a set.
static LETTER_IS_CORRECT: LazyLock<Regex> = LazyLock::new(|| {
    let list = r"\(?[A-J]\)?(?:\s*(?:,|和|与|以及|及|and|&)\s*\(?[A-J]\)?)*";
    Regex::new(&format!(
        r"(?i)(?-u:\b)(?:(?:options?|choices?|answers?)\s*|both\s+)({list})\s+(?:is|are)\s+(?:both\s+|all\s+)?(?:the\s+)?(?:correct|right)(?-u:\b)|选项\s*({list})\s*(?:都|均|皆|全)?\s*(?:是|为)?\s*(?:正确|对)"
    ))
    .expect("static regex")
});

/// The option letters of a list matched by [`LETTER_IS_CORRECT`] (`(A) and (B)`, `A和B`): one
/// letter, or several as a set `A, B`.
fn listed_letters(list: &str) -> String {
    let mut letters: Vec<char> = list
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() == 1)
        .filter_map(|w| w.chars().next())
        .map(|c| c.to_ascii_uppercase())
        .collect();
    letters.sort_unstable();
    letters.dedup();
    let out: Vec<String> = letters.iter().map(char::to_string).collect();
    out.join(", ")
}

/// An option letter in bold or a text command (`\textbf{(A)}`, `\text{B}`, `**(C)**`): group 1
/// or 2 is the letter. It starts with the command, so the search skips ahead by literal.
static STYLED_LETTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\(?:textbf|textrm|text|mathrm|mathbf|bf)\s*\{\s*(\(?[A-J]\)?)\s*\}|\*\*\s*(\([A-Ja-e]\)|[A-J])\s*\*\*")
        .expect("static regex")
});

/// Option letters in bold or a text command as the letters themselves (`$\textbf{(A)}$` →
/// `(A)`, `**B**` → `B`), so that lists of them read as letters; the `$…$` around one goes too.
/// A command glued to a value (`5\text{A}`) is a unit and stays. `None`: nothing to change.
fn unstyled_letters(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut at = 0;
    for c in STYLED_LETTER.captures_iter(text) {
        let (Some(m), Some(letter)) = (c.get(0), c.get(1).or_else(|| c.get(2))) else {
            continue;
        };
        let (mut start, mut end) = (m.start(), m.end());
        let before = text[..start].trim_end_matches(' ');
        let after = text[end..].trim_start_matches(' ');
        if before.ends_with('$') && !before.ends_with("$$") && after.starts_with('$') {
            start = before.len() - 1;
            end = text.len() - after.len() + 1;
        }
        let glued = text[..start]
            .bytes()
            .next_back()
            .is_some_and(|p| p.is_ascii_alphanumeric() || b"_^{}\\".contains(&p));
        if glued || start < at {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(letter.as_str());
        at = end;
    }
    (at > 0).then(|| {
        out.push_str(&text[at..]);
        out
    })
}
/// "… or (D)": a second option offered after the first.
static HEDGED_LETTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u:\b)or\s+(?:option\s+)?\(([A-J])\)").expect("static regex"));
/// Weaker non-English cues ("Réponse :", 所以, 因此, 故, 即, 得到 …); like a bare "answer:", they never
/// override a box.
static CUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:réponse\s*:|答\s*:|所以|因此|故|即|则|解得|(?:可|求|从而|最终|最后)?得到|可得|求得|综上(?:所述)?|结果(?:是|为))\s*,?\s*",
    )
    .expect("static regex")
});

/// One candidate span in the (normalised) response.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    content_start: usize,
    content_end: usize,
}

/// GSM8K's calculator annotations `<<9*2=18>>`: a tool trace inside the prose, not part of it.
static CALCULATOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<<[^<>\n]{0,200}>>").expect("static regex"));

/// Prepares a response for scanning: Unicode folding, `\\cmd` unescaping, tail window; calculator
/// annotations dropped; the end-of-section tokens of exam prompts (`<eoa>`, `<eoe>`) end a line.
pub(crate) fn prepare(response: &str) -> String {
    let mut start = response.len().saturating_sub(MAX_SCAN_BYTES);
    while !response.is_char_boundary(start) {
        start += 1;
    }
    let mut text = normalize_unicode(&response[start..]);
    let mut marks = Marks::of(&text);
    if marks.double_backslash {
        text = DOUBLE_BACKSLASH.replace_all(&text, "$1\\$2").into_owned();
    }
    if marks.calculator {
        text = CALCULATOR.replace_all(&text, "").into_owned();
        // Dropping a trace can join what was around it; the marks below are read again.
        marks = Marks::of(&text);
    }
    if marks.end_token {
        text = END_TOKEN.replace_all(&text, "\n").into_owned();
    }
    if marks.styled {
        if let Some(plain) = unstyled_letters(&text) {
            text = plain;
        }
    }
    text
}

/// What [`prepare`] may have to rewrite, read in one pass over the bytes that can start it
/// (`\`, `<`, `*`): most responses need none of it, and one pass costs less than a substring
/// search per rewrite. Un-escaping `\\cmd` or turning an end token into a newline creates none
/// of these marks.
struct Marks {
    /// `\\`: a doubly escaped command may follow.
    double_backslash: bool,
    /// `<<`: a calculator annotation may follow.
    calculator: bool,
    /// `<eo`, `</s>`, `<|`: an end token may follow.
    end_token: bool,
    /// `\text`, `\math`, `\bf`, `**`: a styled option letter may follow.
    styled: bool,
}

impl Marks {
    fn of(text: &str) -> Marks {
        let b = text.as_bytes();
        let mut m = Marks {
            double_backslash: false,
            calculator: false,
            end_token: false,
            styled: false,
        };
        for at in memchr::memchr3_iter(b'\\', b'<', b'*', b) {
            let rest = &b[at + 1..];
            // Dispatch on the byte pair: most marks are rejected by their second byte.
            match (b[at], rest.first()) {
                (b'\\', Some(b'\\')) => m.double_backslash = true,
                (b'\\', Some(b't')) => m.styled |= rest.starts_with(b"text"),
                (b'\\', Some(b'm')) => m.styled |= rest.starts_with(b"math"),
                (b'\\', Some(b'b')) => m.styled |= rest.starts_with(b"bf"),
                (b'<', Some(b'<')) => m.calculator = true,
                (b'<', Some(b'e')) => m.end_token |= rest.starts_with(b"eo"),
                (b'<', Some(b'/')) => m.end_token |= rest.starts_with(b"/s>"),
                (b'<', Some(b'|')) => m.end_token = true,
                (b'*', Some(b'*')) => m.styled = true,
                _ => {}
            }
        }
        m
    }
}

/// End-of-section and end-of-text tokens left in a response (`<eoa>`, `</s><s>`, `<|im_end|>`).
static END_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<eo[ae]>|</?s>|<\|(?:im_end|endoftext|eot_id|end|im_start)\|>")
        .expect("static regex")
});

/// An answer found in a response, and the rule that found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extraction {
    /// The answer's raw text, if one was found.
    pub answer: Option<String>,
    /// How it was found; [`FoundBy::None`] exactly when `answer` is `None`.
    pub found_by: FoundBy,
}

/// An answer and how it was found.
type Found = (String, FoundBy);

/// Extracts the final answer from a model response, without knowing the gold answer.
pub fn extract(response: &str, cfg: &GradeConfig) -> Option<String> {
    extraction(response, None, cfg).answer
}

/// Finds the final answer of a response and says how ([`FoundBy`]): the user's regexes first,
/// then boxes and answer markers (the one stated last wins over weaker cues before it), a
/// prose-free response taken whole, then the last math span or number.
///
/// With a gold answer, the gold's type steers what is looked for: a gold that is an option
/// letter (or several) wants letters, so a letter is taken from the end of a response whose
/// marker or box holds a value. Deterministic: no model is asked.
pub fn extraction(response: &str, gold: Option<&Gold>, cfg: &GradeConfig) -> Extraction {
    let mut text = prepare(response);
    if let Some(at) = recital_start(&text) {
        text.truncate(at);
    }
    let found = cfg
        .extract_regex
        .iter()
        .find_map(|re| last_regex_match(re, &text))
        .map(|a| (a, FoundBy::Regex))
        .or_else(|| {
            let found = extract_structured(&text)
                .or_else(|| whole_short_answer(&text).map(|a| (a, FoundBy::Whole)))
                .or_else(|| program_output(&text).map(|a| (a, FoundBy::Marker)))
                .or_else(|| {
                    // Both need to know whether the response was cut off mid-formula.
                    let cut = cut_short(&text);
                    (!cut)
                        .then(|| closing_line(&text).map(|a| (a, FoundBy::FinalLine)))
                        .flatten()
                        .or_else(|| heuristic(&text, cut))
                });
            match gold {
                Some(g) => steer(&text, found, g),
                None => found,
            }
        });
    match found {
        Some((answer, found_by)) => Extraction {
            answer: Some(answer),
            found_by,
        },
        None => Extraction {
            answer: None,
            found_by: FoundBy::None,
        },
    }
}

/// Where a closing run of three or more `The answer is …` lines with different answers starts: a
/// few-shot model reciting the prompt's examples after its own answer (`The answer is (B).` then
/// `The answer is A. 1000 times more`, `The answer is H. 4`, …), answers to other questions. (One
/// answer said again and again is the answer.)
fn recital_start(text: &str) -> Option<usize> {
    let t = text.trim_end();
    if t.len() < 60 || !holds(t, "nswer is") {
        return None;
    }
    let mut lines = t.rsplit('\n').peekable();
    let mut end = t.len();
    // A last line cut short inside the phrase (`The`).
    if let Some(l) = lines.peek() {
        let l = l.trim();
        if l.len() < 14 && "the answer is".starts_with(&l.to_ascii_lowercase()) {
            end -= lines.next().map_or(0, |l| l.len() + 1);
        }
    }
    let (mut run, mut start, mut answers) = (0, end, Vec::new());
    for line in lines {
        let l = line.trim();
        let phrase = l.len() > 14 && l.as_bytes()[..14].eq_ignore_ascii_case(b"the answer is ");
        if !phrase {
            break;
        }
        answers.push(l[14..].trim_end_matches('.'));
        run += 1;
        start = start.saturating_sub(line.len() + 1);
    }
    answers.sort_unstable();
    answers.dedup();
    (run >= 3 && answers.len() >= 2).then_some(start)
}

/// The last math span or number, unless the response was cut off mid-formula (`9 * 6 * 0 *`,
/// `then $2^3 + c`): the value it was working on then is not an answer.
fn heuristic(text: &str, cut_short: bool) -> Option<Found> {
    if cut_short {
        return None;
    }
    fallback(text, NumberRule::LaterSentence)
}

/// A response that ends inside a formula: after an operator, or in a math span left open. Its
/// last line is not a closing answer and its last value not a guess.
fn cut_short(text: &str) -> bool {
    let t = text.trim_end();
    // `6 * 0 *`, not Markdown's `**bold**`.
    let operator = t.ends_with(" *")
        || t.ends_with(['+', '=', '(', '^', '/', '{'])
        || t.ends_with("\\times")
        || t.ends_with("\\cdot");
    if operator {
        return true;
    }
    if display_left_open(t) {
        return true;
    }
    // An inline `$…` left open on the last line; a dollar amount (`$5`) is not math, and a
    // finished sentence is not cut off.
    let line = t
        .rsplit('\n')
        .next()
        .unwrap_or(t)
        .trim_end_matches(['*', '_']);
    let dollars = line.matches('$').count() - 2 * line.matches("$$").count();
    let after = line.rfind('$').map_or("", |at| &line[at + 1..]);
    dollars % 2 == 1 && !line.ends_with(['.', '!', '?']) && after.contains(['+', '^', '=', '\\'])
}

/// Whether the last `\\[` (or `\\(`) of `t` is never closed by a `\\]` (`\\)`) after it: one
/// backward pass over the backslashes, not a substring search of the whole text per delimiter.
fn display_left_open(t: &str) -> bool {
    let b = t.as_bytes();
    let (mut closed_square, mut closed_round) = (false, false);
    let (mut square_seen, mut round_seen) = (false, false);
    for at in memchr::memrchr_iter(b'\\', b) {
        match b.get(at + 1) {
            Some(b']') => closed_square = true,
            Some(b')') => closed_round = true,
            Some(b'[') if !square_seen => {
                if !closed_square {
                    return true;
                }
                square_seen = true;
            }
            Some(b'(') if !round_seen => {
                if !closed_round {
                    return true;
                }
                round_seen = true;
            }
            _ => {}
        }
        if square_seen && round_seen {
            break;
        }
    }
    false
}

/// A letter gold wants a letter: when only a guess (or nothing) was found, the option letter
/// the response states last is the answer. A truth-value gold wants a verdict: the one the
/// closing sentence gives a statement wins over anything but a verdict word.
fn steer(text: &str, found: Option<Found>, gold: &Gold) -> Option<Found> {
    if gold.wants_verdict() {
        let verdict_found = found
            .as_ref()
            .is_some_and(|(a, _)| is_verdict(a.trim().trim_end_matches('.')));
        if !verdict_found {
            if let Some(v) = closing_verdict(text) {
                return Some((v.to_string(), FoundBy::Marker));
            }
        }
    }
    if found.as_ref().is_some_and(|(_, by)| !by.is_heuristic()) {
        return found;
    }
    // A number gold and a last math span with no digits (`such that $y(t) = x(t)$ is 50 Hz`):
    // the number after the span is the answer.
    let digitless_math =
        |(a, by): &Found| *by == FoundBy::LastMath && !a.contains(char::is_numeric);
    if gold.wants_number() && found.as_ref().is_some_and(digitless_math) {
        if let Some((n, FoundBy::LastNumber)) = fallback(text, NumberRule::After) {
            return Some((n, FoundBy::LastNumber));
        }
    }
    let letter = if gold.wants_letters() {
        last_stated_letter(text)
    } else {
        named_option(text, gold.option_words())
    };
    letter.map(|c| (c.to_string(), FoundBy::Choice)).or(found)
}

/// A truth value or yes/no, alone (`True`, `\text{False}`, `no`).
fn is_verdict(answer: &str) -> bool {
    let a = answer.trim_start_matches("\\text{").trim_end_matches('}');
    ["true", "false", "yes", "no"]
        .iter()
        .any(|w| a.eq_ignore_ascii_case(w))
}

/// A statement's verdict at the very end of an English sentence: `… is true`, `is not
/// necessarily true`, `is incorrect`, `holds`, `does not hold`. Group 1 is a negation.
static VERDICT_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?-u:\b)(?:(?:is|are|was|were|be|remains?)\s+(not\s+)?(?:(?:always|necessarily|generally|indeed|also|therefore|thus|then|in fact)\s+)?",
        r"(true|false|correct|incorrect|valid|invalid|wrong|right)|(does not|doesn't|do not|don't|cannot|can't|never)?\s*(holds?))\s*$"
    ))
    .expect("static regex")
});

/// A sentence that is only a verdict: `So, yes`, `Hence true`.
static VERDICT_ALONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:(?:so|thus|hence|therefore|then|in conclusion|in summary)\s*,?\s*)?(yes|no|true|false)$")
        .expect("static regex")
});

/// The verdict (`True` or `False`) the response's closing sentence gives a statement: `the
/// statement "…" is true`, `Hence the claim is false`, `the inequality holds`, `So, yes`,
/// `该命题正确`. Quoted text is the statement, never the verdict: its own "not", "true" or
/// "false" do not count.
fn closing_verdict(text: &str) -> Option<&'static str> {
    let mut from = text.len().saturating_sub(1_000);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let tail = without_quotations(&text[from..]);
    let t = tail
        .trim_end()
        .trim_end_matches(['*', '_', '.', '!', ' ', '$'])
        .trim_end();
    let start = [". ", "! ", "? ", "\n", ": "]
        .iter()
        .filter_map(|b| t.rfind(b).map(|at| at + b.len()))
        .max()
        .unwrap_or(0);
    let sentence = t[start..].trim().trim_start_matches(['*', '_', '#', ' ']);
    if sentence.is_empty() || sentence.len() > 400 {
        return None;
    }
    let truth = |yes: bool| if yes { "True" } else { "False" };
    if has_cjk(sentence) {
        let s = sentence.trim_end_matches(['的', ',']);
        let negative = ["不正确", "错误", "不成立", "是错", "不对", "为假", "是假"];
        if negative.iter().any(|w| s.ends_with(w)) {
            return Some("False");
        }
        let positive = ["正确", "成立", "是对", "说法对", "为真", "是真"];
        return positive.iter().any(|w| s.ends_with(w)).then_some("True");
    }
    if let Some(c) = VERDICT_ALONE.captures(sentence) {
        let w = c[1].to_ascii_lowercase();
        return Some(truth(w == "yes" || w == "true"));
    }
    let c = VERDICT_END.captures(sentence)?;
    if c.get(4).is_some() {
        return Some(truth(c.get(3).is_none()));
    }
    let word = c[2].to_ascii_lowercase();
    let positive = matches!(word.as_str(), "true" | "correct" | "valid" | "right");
    Some(truth(positive != c.get(1).is_some()))
}

/// Text with its quotations (`"…"`, `“…”`, `「…」`) replaced by a placeholder word: a quoted
/// statement's words are not the speaker's.
fn without_quotations(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['"', '\u{201C}', '\u{300C}']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['"', '\u{201C}', '\u{300C}']) {
        let open = rest[at..].chars().next().unwrap_or('"');
        let close = match open {
            '\u{201C}' => '\u{201D}',
            '\u{300C}' => '\u{300D}',
            _ => '"',
        };
        let body = &rest[at + open.len_utf8()..];
        // A quotation closes within a line or two; an unmatched mark is kept as it is.
        match body.find(close).filter(|&end| end <= 600) {
            Some(end) => {
                out.push_str(&rest[..at]);
                out.push_str("statement");
                rest = &body[end + close.len_utf8()..];
            }
            None => {
                out.push_str(&rest[..at + open.len_utf8()]);
                rest = body;
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// A multiple-choice answer given in words: the one option whose text (`surplus`, `no`) the
/// response's last sentence uses as a word, else the one option of three words or more the
/// response states word for word (`the population of tuna will increase`). None when none or
/// several are.
fn named_option(text: &str, options: &[String]) -> Option<char> {
    if options.is_empty() {
        return None;
    }
    let text = text.trim_end().trim_end_matches(['.', '!']);
    let from = text.rfind(['.', '\n', '!', '?']).map_or(0, |at| at + 1);
    let words = |s: &str| -> Vec<String> {
        (s.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let states = |words: &[String], min: usize| {
        let mut named = options.iter().enumerate().filter(|(_, o)| {
            let o: Vec<&str> = o.split_whitespace().collect();
            o.len() >= min.max(1) && words.windows(o.len()).any(|w| w.iter().eq(o.iter()))
        });
        let first = named.next().map(|(i, _)| i);
        first.filter(|_| named.next().is_none())
    };
    let i = states(&words(&text[from..]), 1).or_else(|| states(&words(text), 3))?;
    u8::try_from(i)
        .ok()
        .filter(|&i| i < 26)
        .map(|i| (b'A' + i) as char)
}

/// The option letter stated last in the response's last paragraph: `(B)`, or a letter standing
/// alone as a word other than the article "A".
fn last_stated_letter(text: &str) -> Option<char> {
    static LETTER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\(([A-Ja-e])\)|(?-u:\b)([B-E])(?-u:\b)").expect("static regex")
    });
    let text = text.trim_end();
    let last = text.rfind("\n\n").map_or(text, |at| &text[at..]);
    let caps = LETTER.captures_iter(last).last()?;
    let letter = caps
        .get(1)
        .or_else(|| caps.get(2))?
        .as_str()
        .chars()
        .next()?;
    Some(letter.to_ascii_uppercase())
}

/// The answer a tool-using response printed: the last ` ```output ` block when it holds one value
/// and the closing text after it restates that value (`60.0` … "60% of the students …",
/// `3.0` … "Three trucks …") or is empty.
fn program_output(text: &str) -> Option<String> {
    // Most responses have no backtick at all: one byte search rules them out.
    memchr::memchr(b'`', text.as_bytes())?;
    let open = text.rfind("```output")?;
    let body = &text[open + "```output".len()..];
    let close = body.find("```")?;
    let value = body[..close].trim();
    let after = body[close + 3..].trim();
    if value.is_empty() || value.len() > 40 || value.contains('\n') || after.len() > 400 {
        return None;
    }
    let v: f64 = value.parse().ok()?;
    if after.is_empty() {
        return Some(value.to_string());
    }
    let said = NUMBER
        .find_iter(after)
        .filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok())
        .chain(
            after
                .split(|c: char| !c.is_ascii_alphabetic())
                .filter_map(number_word),
        )
        .any(|n| (n - v).abs() <= 1e-9 * v.abs().max(1.0));
    said.then(|| value.to_string())
}

/// The value of a number word (`Three` → 3), zero to twenty and the tens.
fn number_word(w: &str) -> Option<f64> {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    const TENS: [&str; 7] = [
        "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let w = w.to_ascii_lowercase();
    if let Some(i) = WORDS.iter().position(|x| *x == w) {
        return Some(i as f64);
    }
    TENS.iter()
        .position(|x| *x == w)
        .map(|i| (30 + 10 * i) as f64)
}

/// The response's last line when it is set apart as the answer: a bold line (`**The total is
/// $70,000.**`), or a line holding only a value, after an optional short label
/// (`### Response: [1,2,4,5,6]`).
/// The caller has checked that the response was not cut off mid-formula ([`cut_short`]).
fn closing_line(text: &str) -> Option<String> {
    // A one-line response is taken whole or not at all (`whole_if_math`).
    let (before, line) = text.trim_end().rsplit_once('\n')?;
    let line = line.trim();
    // A label on a line of its own (`### Response:` then `True.`).
    let label_above = (before.trim_end().rsplit('\n').next())
        .is_some_and(|l| l.trim_end().ends_with(':') && l.trim().len() <= 30 && !l.contains('$'));
    if line.is_empty() || line.len() > 300 {
        return None;
    }
    let unbolded = line.strip_prefix("**").and_then(|l| l.strip_suffix("**"));
    if let Some(inner) = unbolded.filter(|i| !i.contains("**")) {
        return answer_in(inner.trim(), false);
    }
    let label_end =
        find_literal(line, ": ").filter(|&at| at <= 30 && !line[..at].contains(['$', '\\', '=']));
    let value = label_end.map_or(line, |at| line[at + 1..].trim());
    let value = value
        .trim_start_matches(['#', '>', ' '])
        .trim_end_matches('.');
    let bare = value.trim_matches('$').trim();
    // After a label, one word is an answer too (`### Response: True.`).
    let word = bare.len() <= 24 && bare.chars().all(|c| c.is_ascii_alphabetic());
    if (label_end.is_some() || label_above) && word && !bare.is_empty() {
        return Some(bare.to_string());
    }
    let math_only = !bare.is_empty()
        && !bare.contains('$')
        && !has_cjk(bare)
        && !has_word(&normalize_latex(bare), 2);
    (math_only && parse(&normalize_latex(bare)).is_some()).then(|| clip(bare))
}

/// Prose-free one-line responses (`\\frac{10}{9}`) are the answer as a whole.
fn whole_if_math(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() || t.len() > MAX_WHOLE_BYTES || t.contains('\n') || has_cjk(t) {
        return None;
    }
    if has_word(t, 2) {
        return None;
    }
    let norm = normalize_latex(t);
    // Too long or deep for the parser (a 2,000-element set, a chain of fractions): still one
    // answer, compared as text; a line of working (`a = b = c`) is not.
    let big = norm.len() > MAX_PARSED_WHOLE;
    let whole =
        (big && norm.len() > 2_000) || parse(&norm).is_some() || (big && !norm.contains('='));
    whole.then(|| t.to_string())
}

/// A one-line response that is a single word (`odd`, `\text{Evelyn}`) or starts with an option
/// label (`C. x = 42`) is the answer as a whole.
fn whole_short_answer(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() || t.len() > 80 || t.contains('\n') {
        return None;
    }
    if choice_at_start(t).is_some() && t.len() > 1 {
        return Some(t.to_string());
    }
    if t.contains(char::is_whitespace) {
        return None;
    }
    let bare = normalize_latex(t);
    let word =
        !bare.is_empty() && bare.len() <= 24 && bare.chars().all(|c| c.is_ascii_alphabetic());
    word.then(|| t.to_string())
}

/// The value of a JSON field whose key was just read: a string up to its closing quote, or a
/// bare number or word up to `,` or `}`.
fn json_value(seg: &str) -> Option<&str> {
    if let Some(body) = seg.strip_prefix('"') {
        let b = body.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(body[..i].trim()).filter(|v| !v.is_empty()),
                _ => i += 1,
            }
        }
        return None;
    }
    let end = seg.find([',', '}', '\n']).unwrap_or(seg.len());
    Some(seg[..end].trim()).filter(|v| !v.is_empty())
}

/// The option letter a phrase states: at its start (`D`, `(B),`, `option (C)`), or after a few
/// filler words (`therefore choice (B)`, `still **(B) No**`).
fn stated_letter(seg: &str) -> Option<char> {
    let mut rest = seg;
    for _ in 0..3 {
        let bare = rest.trim_start_matches(['*', '_', ' ']);
        if let Some(c) = choice_at_start(bare) {
            return Some(c);
        }
        let lower = bare.get(..bare.find(' ')?)?.to_ascii_lowercase();
        let filler = [
            "option",
            "choice",
            "therefore",
            "thus",
            "so",
            "still",
            "clearly",
            "indeed",
        ];
        if !filler.contains(&lower.trim_end_matches([',', ':'])) {
            return None;
        }
        rest = &bare[lower.len()..];
    }
    None
}

/// `(c) 18`: an option letter followed by its value, kept together so that a letter gold matches
/// the letter and a value gold the value.
fn lettered_value(seg: &str) -> Option<String> {
    let b = seg.as_bytes();
    let letter = match b {
        [b'(', l, b')', b' ', ..] if l.is_ascii_alphabetic() => l.to_ascii_uppercase() as char,
        _ => return None,
    };
    let value = seg[4..]
        .trim()
        .trim_end_matches('.')
        .trim_matches('$')
        .trim();
    let plain = !value.is_empty() && value.len() <= 40 && !has_word(value, 2) && !has_cjk(value);
    (plain && parse(&normalize_latex(value)).is_some()).then(|| format!("({letter}) {value}"))
}

/// A bracketed value opening the text and followed only by words about it (`[1, 0, 1], where
/// …`, `(2, 3) is the point`).
fn leading_group(seg: &str) -> Option<&str> {
    let close = match seg.as_bytes().first()? {
        b'[' => ']',
        b'(' => ')',
        _ => return None,
    };
    let end = seg.find(close)? + 1;
    let (group, rest) = seg.split_at(end);
    let rest = rest.trim_start_matches([',', ' ', ';', ':']);
    let words = rest.is_empty() || has_word(rest.split(['$', '\\']).next().unwrap_or(""), 3);
    (words && group.contains(',') && parse(&normalize_latex(group)).is_some()).then_some(group)
}

/// Several option letters a phrase starts with, as one set answer `A, C`: `A, C`, `A、C`,
/// `(A)(C)`, `B and D`, or, when `joined` allows it, letters run together in order (`ACD`:
/// after a final-answer marker; after a weaker cue `BE` is more likely a segment's name).
/// `None` for one letter.
pub(super) fn choice_letters(seg: &str, joined_ok: bool) -> Option<String> {
    let b = seg.as_bytes();
    let mut letters: Vec<u8> = Vec::new();
    let mut i = 0;
    // Letters written together (`ACD`) must be in order, so a name such as `BA` is not read.
    let mut joined = false;
    loop {
        let open = b.get(i) == Some(&b'(');
        let at = i + usize::from(open);
        let Some(&c) = b.get(at).filter(|c| (b'A'..=b'H').contains(c)) else {
            break;
        };
        if joined && !open && (!joined_ok || letters.last().is_some_and(|&p| p >= c)) {
            return None;
        }
        let mut next = at + 1;
        if open {
            if b.get(next) != Some(&b')') {
                break;
            }
            next += 1;
        }
        letters.push(c);
        i = next;
        let gap_start = i;
        while let Some(&g) = b.get(i) {
            if matches!(g, b' ' | b',' | b';' | b'&' | b'/') {
                i += 1;
            } else if seg[i..].starts_with("and ") {
                i += 4;
            } else if seg[i..].starts_with(['和', '与', '及']) {
                i += '和'.len_utf8();
            } else if seg[i..].starts_with("以及") {
                i += "以及".len();
            } else {
                break;
            }
        }
        joined = i == gap_start && !open;
    }
    if letters.len() < 2 || letters.len() > 8 {
        return None;
    }
    // After the letters: the end, punctuation or Chinese text, not more of a word or formula.
    let rest = seg[i..].trim_start();
    let ends = rest.is_empty()
        || rest.starts_with(['.', ':', '!', ')'])
        || rest.chars().next().is_some_and(is_cjk)
        || (i > 0
            && !b[i - 1].is_ascii_alphabetic()
            && rest.starts_with(|c: char| c.is_ascii_lowercase()));
    if !ends {
        return None;
    }
    letters.sort_unstable();
    letters.dedup();
    let out: Vec<String> = letters.iter().map(|&c| (c as char).to_string()).collect();
    (out.len() >= 2).then(|| out.join(", "))
}

/// The option letter a phrase starts with: `D`, `(B),`, `C.` — not the article in "A total".
fn choice_at_start(seg: &str) -> Option<char> {
    let b = seg.as_bytes();
    let paren = b.first() == Some(&b'(');
    let at = usize::from(paren);
    let letter = *b.get(at)?;
    // Lower-case options (TheoremQA's `(a)`) only in parentheses; F–J (ten-option sets) only
    // in parentheses or alone, so "I think" is not option I.
    let known = match letter {
        b'A'..=b'E' => true,
        b'F'..=b'J' | b'a'..=b'e' => paren,
        _ => false,
    };
    let alone = |next: usize| matches!(b.get(next), None | Some(b'.' | b',' | b';' | b':' | b')'));
    if !(known || (matches!(letter, b'F'..=b'J') && alone(at + 1))) {
        return None;
    }
    let mut next = at + 1;
    if paren {
        if b.get(next) != Some(&b')') {
            return None;
        }
        next += 1;
    }
    let letter = letter.to_ascii_uppercase();
    match b.get(next) {
        None => Some(letter as char),
        Some(b'.' | b',' | b';' | b':' | b')' | b'!' | b'*') => Some(letter as char),
        Some(b' ' | b'\n') if paren || letter != b'A' => Some(letter as char),
        Some(b' ') => {
            // "A" then a lower-case word is the article.
            let rest = seg[next..].trim_start();
            (!rest.starts_with(|c: char| c.is_ascii_lowercase())).then_some('A')
        }
        _ => None,
    }
}

fn has_cjk(s: &str) -> bool {
    !s.is_ascii() && s.chars().any(is_cjk)
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}')
}

/// In a Chinese phrase (`共有 6 种方法`, `交点坐标为(1,2)`), the last run of non-CJK text that holds
/// a value.
fn cjk_value(seg: &str) -> Option<String> {
    let run = seg
        .split(is_cjk)
        .map(|r| r.trim_matches(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ';' | ':')))
        .rfind(|r| r.bytes().any(|b| b.is_ascii_alphanumeric()))?;
    parse(&normalize_latex(run))
        .map(|_| run.to_string())
        .or_else(|| last_number(run).map(|(_, _, n)| n))
}

/// Extraction for gold answers: like [`extract`] but the whole string when nothing is marked.
pub(super) fn extract_gold(gold: &str) -> String {
    // Most golds are a plain value or word (`18`, `-3/4`, `B`, `True`): nothing to unwrap, no
    // marker or math span to find, so the trimmed text is the gold (as the full path finds).
    let plain = gold.is_ascii() && !gold.contains(['$', '\\', '#', '<', '"', '*']) && {
        let lower = gold.to_ascii_lowercase();
        !["answer", "option", "choice", "both"]
            .iter()
            .any(|w| lower.contains(w))
    };
    if plain {
        return gold.trim().to_string();
    }
    let text = prepare(gold);
    if let Some((a, _)) = extract_structured(&text) {
        return a;
    }
    // A sentence with some math in it ("For all $n$, Bob wins.") is a text answer as a whole.
    let envs = find_math(&text);
    let mut outside = String::new();
    let mut at = 0;
    for e in &envs {
        outside.push_str(&text[at..e.start]);
        outside.push(' ');
        at = e.end;
    }
    outside.push_str(&text[at..]);
    if envs.is_empty() || is_prose(&outside.replace("and", " ").replace("or", " ")) {
        return text.trim().to_string();
    }
    fallback(&text, NumberRule::Never).map_or_else(|| text.trim().to_string(), |(a, _)| a)
}

fn last_regex_match(re: &Regex, text: &str) -> Option<String> {
    let caps = re.captures_iter(text).last()?;
    let m = caps.get(1).or_else(|| caps.get(0))?;
    let s = m.as_str().trim();
    (!s.is_empty()).then(|| clip(s))
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_ANSWER_BYTES {
        return s.to_string();
    }
    let mut end = MAX_ANSWER_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Boxed answers and answer phrases; the one stated last wins.
fn extract_structured(text: &str) -> Option<Found> {
    let boxes = find_boxes(text);
    if let Some(p) = last_phrase(text) {
        let boxed_end = boxes.last().map_or(0, |b| b.end);
        // A bare "answer:" ("check our answer: …") never overrides an earlier box.
        if boxes.is_empty() || (p.strong && p.start >= boxed_end) {
            return Some((p.answer, p.by));
        }
    }
    if !boxes.is_empty() {
        return Some((join_spans(text, &boxes, gap_joins_boxes), FoundBy::Boxed));
    }
    None
}

/// An answer stated after a phrase.
struct Phrased {
    /// Where the phrase starts.
    start: usize,
    /// A final-answer phrase, which overrides an earlier box.
    strong: bool,
    answer: String,
    by: FoundBy,
}

fn find_boxes(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + off;
        let rest = &text[at..];
        let cmd_len = if rest.starts_with("\\boxed") {
            6
        } else if rest.starts_with("\\fbox") {
            5
        } else {
            i = at + 1;
            continue;
        };
        let mut j = at + cmd_len;
        // `\boxedx` is a different command.
        if j < bytes.len() && bytes[j].is_ascii_alphabetic() {
            i = j;
            continue;
        }
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'{' {
            let inner = &text[j + 1..];
            let close = matching_brace(inner).unwrap_or(inner.len());
            let (cs, ce) = (j + 1, j + 1 + close);
            let end = (ce + 1).min(text.len());
            if !text[cs..ce].trim().is_empty() {
                out.push(Span {
                    start: at,
                    end,
                    content_start: cs,
                    content_end: ce,
                });
            }
            i = end.max(at + 1);
        } else {
            // `\boxed 12`: one token up to whitespace or a math delimiter.
            let cs = j;
            let mut ce = j;
            while ce < bytes.len() && !matches!(bytes[ce], b' ' | b'\n' | b'$' | b'\\' | b'}') {
                ce += 1;
            }
            while !text.is_char_boundary(ce) {
                ce += 1;
            }
            if ce > cs {
                out.push(Span {
                    start: at,
                    end: ce,
                    content_start: cs,
                    content_end: ce,
                });
            }
            i = ce.max(at + 1);
        }
        if i >= text.len() {
            break;
        }
    }
    out
}

/// Joins the last span with immediately preceding ones separated by connector-only gaps.
fn join_spans(text: &str, spans: &[Span], joinable: fn(&str) -> bool) -> String {
    let mut k = spans.len() - 1;
    let mut taken = 1;
    while k > 0 && taken < MAX_JOINED {
        let gap_start = spans[k - 1].end;
        let gap_end = spans[k].start;
        if gap_end < gap_start || gap_end - gap_start > MAX_JOIN_GAP {
            break;
        }
        if !joinable(&text[gap_start..gap_end]) {
            break;
        }
        k -= 1;
        taken += 1;
    }
    let parts: Vec<&str> = spans[k..]
        .iter()
        .map(|s| text[s.content_start..s.content_end].trim())
        .collect();
    clip(&parts.join(", "))
}

fn gap_words(gap: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_cmd = false;
    for c in gap.chars() {
        if c.is_alphabetic() {
            if !in_cmd {
                cur.push(c);
            }
        } else {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur).to_lowercase());
            }
            in_cmd = c == '\\';
        }
    }
    if !cur.is_empty() {
        words.push(cur.to_lowercase());
    }
    words
}

/// Boxes join when the gap is only punctuation or mentions "and"/"or" (`\boxed{1} and \boxed{2}`).
fn gap_joins_boxes(gap: &str) -> bool {
    let words = gap_words(gap);
    words.is_empty() || words.iter().any(|w| w == "and" || w == "or")
}

/// Math spans join only across "and"/"or"/commas (`$1$, $2$ and $3$`).
fn gap_joins_math(gap: &str) -> bool {
    let words = gap_words(gap);
    let only_connectors = words.iter().all(|w| w == "and" || w == "or" || w == "text");
    only_connectors && (gap.contains(',') || words.iter().any(|w| w == "and" || w == "or"))
}

/// The answer after the last answer phrase.
fn last_phrase(text: &str) -> Option<Phrased> {
    // The last few phrases, latest first: a phrase left without an answer (a response cut short
    // after "the final answer is", or "the answer is no, there are …" with no value) gives way
    // to the one before it.
    let mut tail: Vec<(regex::Match, bool)> = Vec::with_capacity(PHRASES_TRIED + 1);
    for m in PHRASE.find_iter(text) {
        if tail.len() > PHRASES_TRIED {
            tail.remove(0);
        }
        tail.push((m, !is_bare_answer(text, m)));
    }
    if !text.is_ascii() {
        // Weaker Chinese and French cues, interleaved by position.
        let overlaps = |m: &regex::Match| {
            (tail.iter()).any(|(p, _)| p.start() <= m.start() && m.start() < p.end())
        };
        let cues: Vec<regex::Match> = CUE.find_iter(text).filter(|m| !overlaps(m)).collect();
        for &m in cues.iter().rev().take(2).rev() {
            let at = tail
                .iter()
                .position(|(p, _)| p.start() > m.start())
                .unwrap_or(tail.len());
            tail.insert(at, (m, false));
        }
    }
    let last_strong = tail
        .iter()
        .rev()
        .find(|(_, strong)| *strong)
        .map(|(m, _)| m.start());
    let verdict_word = VERDICT_WORDS
        .iter()
        .any(|w| w.find(text.as_bytes()).is_some());
    // "none of the choices (A, B, C, D) are correct" names no option.
    let denied = |c: &regex::Captures| {
        let at = c.get(0).map_or(0, |m| m.start());
        let mut from = at.saturating_sub(24);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let before = text[from..at].to_ascii_lowercase();
        ["none", "neither", "not ", "no "]
            .iter()
            .any(|w| before.contains(w))
    };
    let letter_first = verdict_word
        .then(|| LETTER_IS_CORRECT.captures_iter(text).last())
        .flatten()
        .filter(|c| !denied(c));
    if let Some(c) = letter_first {
        let at = c.get(0).map_or(0, |m| m.start());
        let list = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        if last_strong.is_none_or(|s| s < at) {
            return Some(Phrased {
                start: at,
                strong: true,
                answer: listed_letters(list),
                by: FoundBy::Choice,
            });
        }
    }
    tail.iter()
        .rev()
        .take(PHRASES_TRIED + 1)
        .find_map(|&(m, strong)| phrase_answer(text, m, strong))
}

/// Words that may call an option right (`correct`, `right`, `正确`, `对`): [`LETTER_IS_CORRECT`]
/// is searched only in a text that has one. Built once: a searcher built per call costs more
/// than the search of a short text.
static VERDICT_WORDS: LazyLock<[memchr::memmem::Finder<'static>; 4]> =
    LazyLock::new(|| ["orrect", "ight", "正确", "对"].map(memchr::memmem::Finder::new));

/// Phrases tried, from the last one back.
const PHRASES_TRIED: usize = 4;

/// A bare "answer:" is a weak cue ("check our answer: …"), unless it opens its line
/// (`Answer: 5`, `**Answer:** 5`).
fn is_bare_answer(text: &str, m: regex::Match) -> bool {
    let bare = m
        .as_str()
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("answer"));
    // The line before the phrase is read only for a bare "answer" (most phrases are not).
    let line_start = || {
        text[..m.start()]
            .rsplit('\n')
            .next()
            .is_some_and(|before| before.trim_matches(['*', '#', ' ', '_', '>']).is_empty())
    };
    bare && !line_start()
}

fn phrase_answer(text: &str, m: regex::Match, strong: bool) -> Option<Phrased> {
    let by = if m.as_str().contains('选') {
        FoundBy::Choice
    } else {
        FoundBy::Marker
    };
    let found = |answer: String| Phrased {
        start: m.start(),
        strong,
        answer,
        by,
    };
    let after = &text[m.end()..];
    let mut end = after.len().min(600);
    while !after.is_char_boundary(end) {
        end -= 1;
    }
    // `**Answer:**` then the answer on the next line: the markup and blank line are skipped.
    let mut seg = after[..end].trim_start_matches(['*', '_', ' ', '\n']);
    let phrase = m.as_str();
    if phrase.starts_with('"') {
        // `"answer": "9"` in a JSON reply: the string (or number) value.
        return json_value(seg).map(|v| found(clip(v)));
    }
    if phrase.starts_with("####") {
        seg = seg.split('\n').next().unwrap_or("");
        // A run of more `#` or a Markdown heading (`#### Step 2: add them`) is not GSM8K's
        // `#### 18`.
        let run_on = text[..m.start()].ends_with('#') || text[m.start() + 4..].starts_with('#');
        let heading = seg.starts_with(|c: char| c.is_ascii_alphabetic())
            && (seg.split_whitespace())
                .filter(|w| w.len() >= 2 && w.bytes().all(|b| b.is_ascii_alphabetic()))
                .count()
                >= 2;
        if run_on || heading || phrase.contains('\n') {
            return None;
        }
    } else {
        if let Some(close) = phrase
            .starts_with("<answer>")
            .then(|| seg.find("</answer>"))
            .flatten()
        {
            if let Some(list) = math_pieces(&seg[..close]) {
                return Some(found(list));
            }
        }
        for stop in ["I hope", "<|", "</answer>", "\n\n"] {
            if let Some(p) = find_literal(seg, stop) {
                seg = &seg[..p];
            }
        }
    }
    answer_in(seg, strong).map(found)
}

/// `\(\frac{3\pi}{2}\), 1` in an answer tag: math pieces with only commas and plain values
/// between them are one answer (the delimiters dropped), not just the first piece.
fn math_pieces(content: &str) -> Option<String> {
    let envs = find_math(content);
    let first = envs.first()?;
    let mut out = String::with_capacity(content.len());
    let mut at = 0;
    for env in &envs {
        out.push_str(&content[at..env.start]);
        out.push_str(&content[env.content_start..env.content_end]);
        at = env.end;
    }
    out.push_str(&content[at..]);
    let outside = |s: &str| !s.contains(|c: char| c.is_alphabetic() || c == '\\' || c == '$');
    let between = envs
        .windows(2)
        .all(|w| outside(&content[w[0].end..w[1].start]));
    let pieces = envs.len() > 1 || content.contains(',');
    (pieces
        && between
        && outside(&content[..first.start])
        && envs.last().is_some_and(|l| outside(&content[l.end..])))
    .then(|| clip(out.trim()))
}

/// The answer stated in the text after a phrase (or in a closing line): option letters, a value
/// in math, in Chinese or in prose, or a short text answer.
fn answer_in(seg: &str, strong: bool) -> Option<String> {
    // Markdown emphasis left over from `**Answer:** 5`.
    let seg = seg.trim().trim_start_matches(['*', '_']).trim_start();
    // "the answer is ... [1, 0, 1]": an ellipsis before the value.
    let seg = seg.trim_start_matches(['.', '\u{2026}']).trim_start();
    let seg = sentence_prefix(seg).trim();
    if seg.is_empty() {
        return None;
    }
    // `选项 (A) 和 (B) …`, `options A and C`: letters after the word for option.
    let labelled = ["选项", "options ", "Options ", "choices ", "Choices "]
        .iter()
        .find_map(|l| seg.strip_prefix(l))
        .map(str::trim_start);
    if let Some(letters) =
        choice_letters(seg, strong).or_else(|| labelled.and_then(|s| choice_letters(s, strong)))
    {
        return Some(letters);
    }
    if let Some(word) = verdict_word(seg) {
        return Some(word.to_string());
    }
    if let Some(value) = lettered_value(seg) {
        return Some(value);
    }
    if let Some(letter) = stated_letter(seg) {
        // "(F) with 5.4 or (D) with 8" names two options: a hedge, graded as both.
        return Some(match HEDGED_LETTER.captures(seg) {
            Some(c) if c[1].to_ascii_uppercase() != letter.to_string() => {
                let mut pair = [letter, c[1].chars().next().unwrap_or(letter)];
                pair.sort_unstable();
                format!("{}, {}", pair[0], pair[1].to_ascii_uppercase())
            }
            _ => letter.to_string(),
        });
    }
    // `[1, 0, 1], where 1 represents rain`: a bracketed value, then words about it.
    if let Some(v) = leading_group(seg) {
        return Some(clip(v));
    }
    let has_math = seg.contains('$') || holds(seg, "\\(") || holds(seg, "\\[");
    if has_math || holds(seg, "\\boxed") || holds(seg, "\\fbox") {
        return extract_structured_inner(seg);
    }
    if has_cjk(seg) {
        // A value in the phrase, else a short text answer (`分层抽样`).
        return match cjk_value(seg) {
            Some(v) => Some(v),
            None if seg.len() <= 60 => Some(clip(seg.trim_end_matches('.'))),
            None => None,
        };
    }
    if is_prose(seg) {
        // A value with a unit after it (`\frac{270}7\text{ degrees}`, `120 square units`).
        let mathy = seg.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '(' | '\\'));
        if mathy && !seg.starts_with("\\text") && parse(&normalize_latex(seg)).is_some() {
            return Some(clip(seg));
        }
        // Otherwise the answer is the last number (the one the phrase states, not one in a
        // clause about it: `56 ways to order a pizza with 3 toppings`), or a short text answer
        // ("sampling survey").
        return match last_number(seg) {
            Some((at, _, n)) => Some(stated_before(seg, at, true).unwrap_or(n)),
            None if seg.len() <= 60 => Some(clip(seg.trim_end_matches('.'))),
            None => None,
        };
    }
    let s = seg.trim_end_matches('.').trim();
    (!s.is_empty()).then(|| clip(s))
}

/// `True: the marginal …`, `No.`: a verdict word that opens the answer and ends its clause with
/// a colon, a full stop or a dash; after a comma, only when the prose after it states no value
/// and no condition (`False, the system is not stable`; "no, there are 3 …" may go on to the
/// value; `True, else False` is a rule, not a verdict).
fn verdict_word(seg: &str) -> Option<&str> {
    let end = seg
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(seg.len());
    let word = &seg[..end];
    let known = ["true", "false", "yes", "no"];
    if !known.iter().any(|k| word.eq_ignore_ascii_case(k)) {
        return None;
    }
    let rest = seg[end..].trim_start_matches(['*', '_']);
    let closes = rest.is_empty()
        || rest.starts_with([':', '.', '!', ';'])
        || rest.starts_with(" -")
        || rest.starts_with(" \u{2014}");
    let comment = rest.strip_prefix(',').is_some_and(|r| {
        let clause = r.split(['.', ';', '\n']).next().unwrap_or(r);
        // A condition (`True, else False`, `yes if …, otherwise no`) is no verdict.
        let hedge = clause.split(|c: char| !c.is_ascii_alphabetic()).any(|w| {
            [
                "true",
                "false",
                "yes",
                "no",
                "else",
                "otherwise",
                "if",
                "or",
                "unless",
            ]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k))
        });
        has_word(clause, 3)
            && !hedge
            && !clause.contains(|c: char| c.is_ascii_digit() || c == '$' || c == '\\')
    });
    (closes || comment).then_some(word)
}

/// Has an English-looking word (three letters or more, not a LaTeX command).
fn is_prose(s: &str) -> bool {
    has_word(s, 3)
}

/// Has a non-command letter run of at least `min` letters (other than math words).
fn has_word(s: &str, min: usize) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let word = &s[start..i];
            let head = &s[..start];
            let command = head.ends_with('\\')
                || (head.ends_with('{')
                    && (head.ends_with("\\begin{") || head.ends_with("\\end{")));
            let mathy = matches!(
                word,
                "and" | "or" | "sqrt" | "frac" | "pi" | "cdot" | "times"
            );
            if !command && word.len() >= min && !mathy {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

fn extract_structured_inner(seg: &str) -> Option<String> {
    let boxes = find_boxes(seg);
    if !boxes.is_empty() {
        return Some(join_spans(seg, &boxes, gap_joins_boxes));
    }
    // "The answer is $x$ because …": math right after the phrase is the answer.
    let envs = find_math(seg);
    if let Some(first) = envs.first() {
        if !seg[..first.start].chars().any(char::is_alphanumeric) {
            let mut k = 0;
            while k + 1 < envs.len() && gap_joins_math(&seg[envs[k].end..envs[k + 1].start]) {
                k += 1;
            }
            return Some(join_spans(seg, &envs[..=k], gap_joins_math));
        }
    }
    fallback(seg, NumberRule::After).map(|(a, _)| a)
}

/// Text up to the first sentence end (`. ` or a newline) outside inline math.
fn sentence_prefix(s: &str) -> &str {
    let b = s.as_bytes();
    let mut in_math = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'$' => in_math = !in_math,
            b'.' if !in_math && (i + 1 == b.len() || b[i + 1].is_ascii_whitespace()) => {
                return &s[..i]
            }
            b'\n' if !in_math => return &s[..i],
            _ => {}
        }
        i += 1;
    }
    s
}

/// How a trailing number competes with the last math span.
#[derive(Clone, Copy, PartialEq)]
enum NumberRule {
    /// Gold answers: never fall back to a number.
    Never,
    /// Inside an answer phrase: a number after the math wins ("The volume of $V$ is 120").
    After,
    /// Whole response: only a number in a later sentence, or after a bare name like `$x$`.
    LaterSentence,
}

/// Last math span or last number, by `rule`.
fn fallback(text: &str, rule: NumberRule) -> Option<Found> {
    let envs = find_math(text);
    if rule != NumberRule::Never {
        if envs.is_empty() {
            if let Some(w) = whole_if_math(text) {
                return Some((w, FoundBy::Whole));
            }
        }
        if let Some((num_start, _, n)) = last_number(text) {
            let wins = match envs.last() {
                None => true,
                Some(env) if num_start < env.end => false,
                Some(_) if rule == NumberRule::After => true,
                Some(env) => {
                    let between = &text[env.end..num_start];
                    let content = &text[env.content_start..env.content_end];
                    // Display math is a block of its own, so text after it is a new sentence.
                    let display =
                        text[env.start..].starts_with("$$") || text[env.start..].starts_with("\\[");
                    display
                        || content.trim_end().ends_with('.')
                        || holds(between, ". ")
                        || between.contains('\n')
                        || is_bare_name(content)
                }
            };
            if wins {
                let n = stated_before(text, num_start, false).unwrap_or(n);
                return Some((n, FoundBy::LastNumber));
            }
        }
    }
    let last = envs.last()?;
    if rule != NumberRule::Never {
        if let Some(n) = stated_before(text, last.start, false) {
            return Some((n, FoundBy::LastNumber));
        }
    }
    Some((join_spans(text, &envs, gap_joins_math), FoundBy::LastMath))
}

/// The value a sentence states (`So there are 56 ways to order a pizza with 3 toppings`) when the
/// last value found (at `last`) sits in a clause qualifying it: the number bound to the
/// sentence's verb (`there are`, `is`, `=`, `a total of`), not the one in its trailing `with`,
/// `using`, `for`, `of` … clause. With `opens`, a number that opens `text` is bound too (the text
/// after an answer phrase).
fn stated_before(text: &str, last: usize, opens: bool) -> Option<String> {
    let b = text.as_bytes();
    let start = sentence_start(&b[..last]);
    let sentence = &text[start..last];
    // Cheap necessary conditions first: a number before the last value, and a qualifying word
    // or bracket somewhere (most closing sentences have neither, and skip the regexes).
    // The digit test first: it is the cheaper one.
    if !sentence.bytes().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let qualifier = holds(sentence, " (")
        || (sentence.split(|c: char| !c.is_ascii_alphabetic()))
            .any(|w| QUALIFIERS.iter().any(|q| w.eq_ignore_ascii_case(q)));
    if !qualifier {
        return None;
    }
    // The last number stated by the words before it, outside braces (`\prod_{n=0}` states
    // nothing). Plain searches, no capture groups: this runs on most guessed answers.
    let (mut stated, mut depth, mut scanned) = (None, 0i32, 0usize);
    for m in STATED.find_iter(sentence) {
        // The last value is stated itself (`… and the column rank is 2`).
        if m.end() == sentence.len() {
            return None;
        }
        let Some(n) = NUMBER_AT.find(&sentence[m.end()..]) else {
            continue;
        };
        let at = m.end();
        for c in &sentence.as_bytes()[scanned..at] {
            depth += match c {
                b'{' => 1,
                b'}' => -1,
                _ => 0,
            };
        }
        scanned = at;
        if depth == 0 {
            stated = Some((start + at, start + at + n.end()));
        }
    }
    if opens && start == 0 {
        let lead = sentence.trim_start_matches([' ', '$']);
        if let Some(m) = NUMBER.find(lead).filter(|m| m.start() == 0) {
            let at = sentence.len() - lead.len();
            stated = stated.or(Some((at, at + m.end())));
        }
    }
    let (s, e) = stated?;
    // A number that is part of a formula (`2^99`, `6 * 5`, `3/`) is not stated alone.
    let glued = b
        .get(e)
        .is_some_and(|c| c.is_ascii_alphanumeric() || b"^_*/({\\".contains(c));
    let gap = &text[e..last];
    let words: Vec<String> = gap_words(gap);
    let qualified = holds(gap, " (") || words.iter().any(|w| QUALIFIERS.contains(&w.as_str()));
    // `… by having at least 6 people`: a bound stated last is the value after all.
    let bound = ["least", "most"].contains(&words.last().map_or("", String::as_str));
    let concluded =
        bound || gap.contains('=') || words.iter().any(|w| CONCLUDERS.contains(&w.as_str()));
    (!glued && qualified && !concluded).then(|| text[s..e].replace(' ', ""))
}

/// Where the last sentence of `b` starts: after its last `. `, `! `, `? ` or newline (0 if none).
/// One backward pass that stops there, not a search of the whole text per separator.
fn sentence_start(b: &[u8]) -> usize {
    (1..=b.len())
        .rev()
        .find(|&end| {
            b[end - 1] == b'\n'
                || (end >= 2 && b[end - 1] == b' ' && matches!(b[end - 2], b'.' | b'!' | b'?'))
        })
        .unwrap_or(0)
}

/// `$x$`, `$ABCD$`, `$a_n$`: a name, not a value.
fn is_bare_name(s: &str) -> bool {
    let t = s.trim();
    !t.is_empty()
        && t.len() <= 12
        && t.chars()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '{' | '}' | '\\' | ' '))
}

fn find_math(text: &str) -> Vec<Span> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' && i + 1 < bytes.len() {
            let next = bytes[i + 1];
            if next == b'(' || next == b'[' {
                let close = if next == b'(' { "\\)" } else { "\\]" };
                if let Some(p) = text[i + 2..].find(close) {
                    let (cs, ce) = (i + 2, i + 2 + p);
                    // Inline `\(...\)` cannot span lines.
                    if next == b'[' || !text[cs..ce].contains('\n') {
                        push_env(&mut out, text, i, ce + 2, cs, ce);
                        i = ce + 2;
                        continue;
                    }
                }
            }
            i += 2;
            continue;
        }
        if b == b'$' && is_currency(bytes, i) {
            i += 1;
            continue;
        }
        if b == b'$' {
            if bytes.get(i + 1) == Some(&b'$') {
                if let Some(p) = text[i + 2..].find("$$") {
                    let (cs, ce) = (i + 2, i + 2 + p);
                    push_env(&mut out, text, i, ce + 2, cs, ce);
                    i = ce + 2;
                    continue;
                }
                i += 2;
                continue;
            }
            if let Some(ce) = closing_dollar(text, i + 1) {
                // `$15 and then $20`: dollar amounts in prose, not a math span.
                let inner = &text[i + 1..ce];
                if inner.starts_with(|c: char| c.is_ascii_digit()) && is_prose(inner) {
                    i += 1;
                    continue;
                }
                push_env(&mut out, text, i, ce + 1, i + 1, ce);
                i = ce + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn push_env(out: &mut Vec<Span>, text: &str, start: usize, end: usize, cs: usize, ce: usize) {
    if !text[cs..ce].trim().is_empty() {
        out.push(Span {
            start,
            end,
            content_start: cs,
            content_end: ce,
        });
    }
}

/// A `$` that is a dollar sign: a number follows it, then a word (`$9 per share`) or the end of
/// a sentence (`$72.`), never a math span's delimiter.
fn is_currency(bytes: &[u8], at: usize) -> bool {
    let mut j = at + 1;
    let digits = j;
    while j < bytes.len() && (bytes[j].is_ascii_digit() || bytes[j] == b',') {
        j += 1;
    }
    if j == digits || !bytes[digits].is_ascii_digit() {
        return false;
    }
    if bytes.get(j) == Some(&b'.') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
    }
    let rest = &bytes[j..];
    match rest {
        [] => true,
        [b'.' | b'!' | b'?' | b',' | b';', tail @ ..] => {
            tail.first().is_none_or(|c| c.is_ascii_whitespace())
        }
        [b' ', tail @ ..] => {
            let word = tail.iter().take_while(|c| c.is_ascii_alphabetic()).count();
            word >= 2
        }
        _ => false,
    }
}

/// Position of the `$` closing an inline span opened before `from`; `\$` does not close it.
fn closing_dollar(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut j = from;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            // `$81 / 9 = $9 per share`: a dollar sign, so no span closes here.
            b'$' if is_currency(bytes, j) => return None,
            b'$' => return Some(j),
            b'\n' => return None,
            _ => j += 1,
        }
    }
    None
}

/// The last number not glued to a preceding letter (`AZYUK2A` has none), with its byte span.
fn last_number(text: &str) -> Option<(usize, usize, String)> {
    // Search growing tail windows so long texts are not scanned in full.
    let mut window = 4_096usize;
    loop {
        let mut start = text.len().saturating_sub(window);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let found = last_number_from(text, start);
        // A match near the window edge may be the tail of a longer number.
        let safe = found.as_ref().is_some_and(|(s, _)| *s > start + 64);
        if start == 0 || safe {
            // Spaces group thousands (`1 000`), except in a mixed number (`2 3/4`).
            return found.map(|(s, e)| {
                let n = &text[s..e];
                let n = if n.contains('/') {
                    n.to_string()
                } else {
                    n.replace(' ', "")
                };
                (s, e, n)
            });
        }
        window = window.saturating_mul(8);
    }
}

fn last_number_from(text: &str, from: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut best = None;
    for m in NUMBER.find_iter(&text[from..]) {
        let (s, e) = (from + m.start(), from + m.end());
        let prev = s.checked_sub(1).map(|p| bytes[p]);
        if prev.is_some_and(|p| p.is_ascii_alphabetic() || p == b'_' || p == b'^' || p == b'\\') {
            continue;
        }
        best = Some((s, e));
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Option<String> {
        extract(s, &GradeConfig::default())
    }

    #[test]
    fn boxed_last_with_braces() {
        assert_eq!(
            ex("a \\boxed{1} b \\boxed{\\frac{1}{2}}.").as_deref(),
            Some("\\frac{1}{2}")
        );
        assert_eq!(ex("so \\boxed 12 is it").as_deref(), Some("12"));
        assert_eq!(ex("\\fbox{7}").as_deref(), Some("7"));
    }

    #[test]
    fn adjacent_boxes_join() {
        assert_eq!(ex("\\boxed{1}\\boxed{2}").as_deref(), Some("1, 2"));
        assert_eq!(ex("\\boxed{1} and \\boxed{2}").as_deref(), Some("1, 2"));
        assert_eq!(
            ex("\\boxed{1} no no no no \\boxed{2}").as_deref(),
            Some("2")
        );
    }

    #[test]
    fn phrases() {
        assert_eq!(
            ex("The final answer is $5$. I hope it is correct.").as_deref(),
            Some("5")
        );
        assert_eq!(ex("blah\n#### 42\n").as_deref(), Some("42"));
        assert_eq!(ex("答案是 7").as_deref(), Some("7"));
        assert_eq!(ex("答案：8").as_deref(), Some("8"));
        assert_eq!(ex("Answer: x+1").as_deref(), Some("x+1"));
        assert_eq!(ex("The answer is: 42").as_deref(), Some("42"));
        assert_eq!(
            ex("The answer is $\\frac{1}{2}$ because 2 halves.").as_deref(),
            Some("\\frac{1}{2}")
        );
        assert_eq!(ex("The answer is (B).").as_deref(), Some("B"));
        // A later bare "answer:" does not override the box.
        assert_eq!(
            ex("so \\boxed{44}. Check our answer: $17 \\cdot 44 = 748$.").as_deref(),
            Some("44")
        );
        assert_eq!(
            ex("Final Answer: The volume is 120. I hope").as_deref(),
            Some("120")
        );
        // A final-answer line after an earlier box wins.
        assert_eq!(
            ex("\\boxed{255} ... The final answer is $10,455$.").as_deref(),
            Some("10,455")
        );
    }

    #[test]
    fn math_env_and_number() {
        assert_eq!(ex("Answer \\( 9 \\)").as_deref(), Some("9"));
        assert_eq!(ex("Answer $$ \n 9 \n $$").as_deref(), Some("9"));
        assert_eq!(ex("so $x$ is 2/3.").as_deref(), Some("2/3"));
        assert_eq!(
            ex("We get $d = 90/n$. So there are 12 ways.").as_deref(),
            Some("12")
        );
        assert_eq!(
            ex("The area is $6$ square units (3 by 2).").as_deref(),
            Some("6")
        );
        assert_eq!(ex("it is 1,000.99m²").as_deref(), Some("1,000.99"));
        assert_eq!(ex("AZYUK2A"), None);
        assert_eq!(ex("no answer here"), None);
        assert_eq!(ex("$1$ and $2$").as_deref(), Some("1, 2"));
    }

    #[test]
    fn user_regex_first() {
        let cfg = GradeConfig {
            extract_regex: vec![Regex::new(r"ANS=(\d+)").unwrap()],
            ..GradeConfig::default()
        };
        assert_eq!(extract("ANS=3 \\boxed{4}", &cfg).as_deref(), Some("3"));
    }

    #[test]
    fn unicode_digits() {
        assert_eq!(ex("答案是 １２").as_deref(), Some("12"));
        assert_eq!(ex("\\boxed{−3}").as_deref(), Some("-3"));
    }

    #[test]
    fn gold_whole_string() {
        assert_eq!(extract_gold("x+1"), "x+1");
        assert_eq!(
            extract_gold("For all $n$, Bob wins."),
            "For all $n$, Bob wins."
        );
        assert_eq!(extract_gold("$21,16$ or $11$"), "21,16, 11");
        assert_eq!(extract_gold("$\\frac12$"), "\\frac12");
    }
}
