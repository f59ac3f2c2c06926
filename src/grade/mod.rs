//! Rule-based answer grading: extraction, normalisation and mathematical equivalence.
//!
//! Pipeline: `extract` pulls the answer text out of a response; `normalize` rewrites it into one
//! LaTeX spelling; `expr` parses it into a tree; `equiv` compares trees (`eval` supplies exact
//! rationals and complex values at fixed pseudo-random points).
//!
//! Every entry point is total: any input returns a verdict quickly (input, recursion and
//! exponent sizes are bounded inside the submodules).

mod equiv;
mod eval;
mod expr;
mod extract;
mod normalize;

use serde::{Deserialize, Serialize};

pub use extract::{extract, extraction, Extraction};
pub use normalize::normalize_unicode;

/// Grader settings.
#[derive(Clone, Debug, Default)]
pub struct GradeConfig {
    /// Tried first, in order; capture group 1 (or the whole match) is the answer.
    pub extract_regex: Vec<regex::Regex>,
    /// Choices where answer checkers disagree (README, "Grading policy").
    pub policy: Policy,
}

/// The grading choices users differ on; the defaults follow Math-Verify where it decides.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Policy {
    pub tolerance: Tolerance,
    pub list_order: ListOrder,
    pub percent: Percent,
    pub styled_letters: StyledLetters,
    pub decimal_mark: DecimalMark,
}

/// How a decimal is compared with another value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Both values rounded to this many decimal places must agree (Math-Verify's default: 6).
    Decimals(u32),
    /// Relative difference at most this.
    Relative(f64),
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance::Decimals(DEFAULT_DECIMALS)
    }
}

/// Decimal places of the default tolerance (Math-Verify's `float_rounding`).
pub const DEFAULT_DECIMALS: u32 = 6;
/// More decimal places than this are refused (f64 carries about 15 significant digits).
pub const MAX_DECIMALS: u32 = 15;

/// Whether an unbracketed list `1, 2` must match in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ListOrder {
    /// `1, 2` = `2, 1` (Math-Verify: a set).
    #[default]
    Any,
    /// `1, 2` ≠ `2, 1` (hendrycks MATH, OpenCompass: string equality).
    AsWritten,
}

/// What a value written with `%` matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Percent {
    /// `28\%` matches `28` and `0.28`.
    #[default]
    Either,
    /// `28\%` matches `28` only (the sign is dropped).
    Strip,
}

/// Whether `\mathcal{B}` (and `\mathbb`, `\mathscr`, `\mathfrak`) is the letter `B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StyledLetters {
    #[default]
    Distinct,
    Same,
}

/// What a comma between the digits of a gold answer (`a,b`, nothing else) means
/// (docs/grading.md, "Commas").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DecimalMark {
    /// The gold's shape decides: one digit after the comma is a list (`0,1`: MATH's two
    /// solutions), three after a 1–3 digit number group thousands (`1,234`), anything else is a
    /// decimal comma (`0,111`, `1,22`, `1000,99`).
    #[default]
    Auto,
    /// Never a decimal comma: a list or thousands.
    Point,
    /// Always a decimal comma (datasets written that way: `0,1` is one tenth, `1,234` is 1.234).
    Comma,
}

impl DecimalMark {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(DecimalMark::Auto),
            "point" => Some(DecimalMark::Point),
            "comma" => Some(DecimalMark::Comma),
            _ => None,
        }
    }
}

impl ListOrder {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "any" => Some(ListOrder::Any),
            "as_written" => Some(ListOrder::AsWritten),
            _ => None,
        }
    }
}

impl Percent {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "either" => Some(Percent::Either),
            "strip" => Some(Percent::Strip),
            _ => None,
        }
    }
}

impl StyledLetters {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "distinct" => Some(StyledLetters::Distinct),
            "same" => Some(StyledLetters::Same),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Correct,
    Wrong,
    NoAnswer,
}

impl Outcome {
    /// Its name as the records and the results database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Correct => "correct",
            Outcome::Wrong => "wrong",
            Outcome::NoAnswer => "no_answer",
        }
    }
}

/// How a verdict's answer was found in the response: the extraction rule that picked it.
///
/// A small closed set, written in snake_case wherever a verdict is stored or printed (`found_by` in
/// `gpassk grade --json`). The rules are tried in the order listed; a rule later in the list only
/// runs when the earlier ones found nothing, so the value also says how much the answer can be
/// trusted. [`FoundBy::is_heuristic`] marks the two guesses, where grading goes wrong most often.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// One of the user's `answer_extract_regex` patterns matched.
    Regex,
    /// The last `\boxed{…}` or `\fbox{…}` (boxes side by side are one set answer).
    Boxed,
    /// An answer marker: "The answer is", "Final Answer:", `####`, `【答案】`, `答案：`, `故答案为`,
    /// `综上`, 所以/因此 and the like; the value stated after it.
    Marker,
    /// A multiple-choice letter (or set of letters) stated as the option chosen: "Option B is
    /// correct", `故选 D`, or the letters a letter gold looks for at the end of the response.
    Choice,
    /// The response's last line set apart as the answer: a bold line (`**42**`) or a line that
    /// holds nothing but a value.
    FinalLine,
    /// The whole response is the answer: a prose-free value (`\frac{10}{9}`) or one word.
    Whole,
    /// Heuristic: the last math span (`$…$`, `\(…\)`, `\[…\]`) of the response.
    LastMath,
    /// Heuristic: the last number of the response.
    LastNumber,
    /// Nothing was found; the verdict is `no_answer`.
    None,
}

impl FoundBy {
    /// Every value, in the order the rules are tried.
    pub const ALL: [FoundBy; 9] = [
        FoundBy::Regex,
        FoundBy::Boxed,
        FoundBy::Marker,
        FoundBy::Choice,
        FoundBy::FinalLine,
        FoundBy::Whole,
        FoundBy::LastMath,
        FoundBy::LastNumber,
        FoundBy::None,
    ];

    /// Its name as records and `--json` output spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            FoundBy::Regex => "regex",
            FoundBy::Boxed => "boxed",
            FoundBy::Marker => "marker",
            FoundBy::Choice => "choice",
            FoundBy::FinalLine => "final_line",
            FoundBy::Whole => "whole",
            FoundBy::LastMath => "last_math",
            FoundBy::LastNumber => "last_number",
            FoundBy::None => "none",
        }
    }

    /// The value named `s` (as [`FoundBy::as_str`] spells it).
    pub fn parse(s: &str) -> Option<FoundBy> {
        FoundBy::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// A guess rather than an answer the response marks as one (`last_math`, `last_number`):
    /// the verdicts worth a second look or a judge.
    pub fn is_heuristic(self) -> bool {
        matches!(self, FoundBy::LastMath | FoundBy::LastNumber)
    }
}

impl std::fmt::Display for FoundBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub outcome: Outcome,
    /// Raw text extracted from the response, if any.
    pub extracted: Option<String>,
    /// How `extracted` was found ([`FoundBy::None`] exactly when nothing was).
    pub found_by: FoundBy,
}

/// Grades a response against a gold answer (which may itself be wrapped in `$…$` or `\boxed{}`).
pub fn grade(gold: &str, response: &str, cfg: &GradeConfig) -> Verdict {
    grade_against(&Gold::new(gold), response, cfg)
}

/// A gold answer unwrapped and parsed once, for grading many responses to the same problem.
pub struct Gold {
    prepared: equiv::ParsedAnswer,
    /// The gold read with a decimal comma (`0,1` → 0.1) when it is two numbers joined by a
    /// comma, and whether its shape says that is what it is ([`DecimalMark::Auto`]).
    decimal: Option<(equiv::ParsedAnswer, bool)>,
    /// A multiple-choice problem's options in order (A, B, …), parsed; empty otherwise.
    options: Vec<equiv::ParsedAnswer>,
    /// The options that are a few words (`surplus`, `superior lobes`), lower-cased, for an
    /// answer given in words; empty strings for the others.
    option_words: Vec<String>,
    /// Other accepted forms of the answer: GAOKAO-Bench writes them after `\#\#`
    /// (`\frac{3}{10} \# \# 0.3`).
    alternatives: Vec<Gold>,
}

/// `\# \#` between accepted forms of a gold answer.
static ALTERNATIVES: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"\s*\\#\s*\\#\s*").expect("static regex"));

/// `2 (满足 $1<e \leq \sqrt{5}$ 皆可)`, `4 (any multiple of 4 works)`: a gold value, then a
/// remark in brackets after a space (or in full-width brackets) that has words in it; the value
/// is the gold. A tuple or interval (`(1, 2)`, `x \in (1, 2)`) has no words and stays whole.
fn without_commentary(gold: &str) -> &str {
    let g = gold.trim_end();
    let (open, close) = if g.ends_with('\u{FF09}') {
        ('\u{FF08}', '\u{FF09}')
    } else if g.ends_with(')') {
        ('(', ')')
    } else {
        return gold;
    };
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in g.char_indices().rev() {
        if c == close {
            depth += 1;
        } else if c == open {
            depth -= 1;
            if depth == 0 {
                start = Some(i);
                break;
            }
        }
    }
    let Some(start) = start else { return gold };
    let value = g[..start].trim_end();
    let spaced = open != '(' || g[..start].ends_with(char::is_whitespace);
    let remark = &g[start..];
    let cjk = remark
        .chars()
        .any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c));
    let english = remark
        .split(|c: char| !c.is_ascii_alphabetic() && c != '\\')
        .filter(|w| !w.starts_with('\\') && w.len() >= 3)
        .count()
        >= 2;
    let wordy = cjk || english;
    if value.is_empty() || !spaced || !wordy || value.ends_with(['=', ',', '+', '-']) {
        return gold;
    }
    value
}

impl Gold {
    pub fn new(gold: &str) -> Gold {
        Gold::with_options::<&str>(gold, &[])
    }

    /// A gold answer of a multiple-choice problem: a letter then also matches its option's
    /// text, and an option's text its letter. Options may carry their labels (`A. 12`, `(B) 15`).
    pub fn with_options<S: AsRef<str>>(gold: &str, options: &[S]) -> Gold {
        // A byte search for `#`, then the backslash before it: cheaper than a substring search.
        let escaped_hash = memchr::memchr_iter(b'#', gold.as_bytes())
            .any(|at| at > 0 && gold.as_bytes()[at - 1] == b'\\');
        if escaped_hash {
            let mut forms = ALTERNATIVES.split(gold).filter(|f| !f.trim().is_empty());
            if let (Some(first), rest) = (forms.next(), forms) {
                let alternatives: Vec<Gold> =
                    rest.map(|f| Gold::with_options(f, options)).collect();
                if !alternatives.is_empty() {
                    let mut g = Gold::with_options(first, options);
                    g.alternatives = alternatives;
                    return g;
                }
            }
        }
        let gold = without_commentary(gold);
        let prepared = equiv::prepare(&extract::extract_gold(gold));
        let labelled: Vec<&str> = (options.iter())
            .map(|o| equiv::strip_option_label(o.as_ref()))
            .collect();
        let words = |o: &str| {
            let few = o.split_whitespace().count() <= 8;
            let plain = o.chars().all(|c| c.is_alphabetic() || c == ' ');
            if few && plain && o.chars().any(char::is_alphabetic) {
                o.to_lowercase()
            } else {
                String::new()
            }
        };
        Gold {
            decimal: equiv::decimal_comma_reading(&prepared),
            prepared,
            options: labelled.iter().map(|o| equiv::prepare(o)).collect(),
            option_words: labelled.iter().map(|o| words(o)).collect(),
            alternatives: Vec::new(),
        }
    }

    /// A single number (`50`, `\frac{1}{2}`, `2\sqrt{3}`): a value is looked for, not a formula.
    fn wants_number(&self) -> bool {
        self.options.is_empty() && equiv::is_number(&self.prepared)
    }

    /// A truth value (`True`, `False`): a verdict is looked for.
    fn wants_verdict(&self) -> bool {
        self.options.is_empty() && matches!(self.prepared.text.as_str(), "true" | "false")
    }

    /// The options' texts that are a few words, lower-cased ("" for the others).
    fn option_words(&self) -> &[String] {
        &self.option_words
    }

    /// Option letters (`B`, `(B)`, `A, C`) with no options to match their values: only letters
    /// answer them.
    fn wants_letters(&self) -> bool {
        let t = self.prepared.norm.trim();
        let lower = t.len() == 3 && t.starts_with('(') && t.ends_with(')');
        let t = t.strip_prefix('(').unwrap_or(t);
        let t = t.strip_suffix(['.', ')']).unwrap_or(t);
        let one = t.len() == 1
            && (t.as_bytes()[0].is_ascii_uppercase()
                || (lower && (b'a'..=b'e').contains(&t.as_bytes()[0])));
        self.options.is_empty() && (one || self.prepared.letters.is_some())
    }
}

/// [`grade`] against a prepared gold answer: the same verdict, without re-parsing the gold.
/// The answer is found by [`extraction`] with this gold.
pub fn grade_against(gold: &Gold, response: &str, cfg: &GradeConfig) -> Verdict {
    let Extraction { answer, found_by } = extraction(response, Some(gold), cfg);
    let outcome = match &answer {
        None => Outcome::NoAnswer,
        Some(pred) => outcome_of(gold, &equiv::prepare(pred), cfg),
    };
    Verdict {
        outcome,
        extracted: answer,
        found_by,
    }
}

/// An extracted answer's outcome against `gold` and its voting key ([`canonical_key`]), from
/// one parse of the answer.
pub fn grade_extracted(gold: &Gold, answer: &str, cfg: &GradeConfig) -> (Outcome, String) {
    let pred = Answer::new(answer);
    (pred.outcome(gold, cfg), pred.key)
}

/// An extracted answer parsed once, to be graded against any number of golds: the same answers
/// (`2`, `\frac{1}{2}`) come back across the problems of a run.
pub struct Answer {
    parsed: equiv::ParsedAnswer,
    key: String,
}

impl Answer {
    pub fn new(answer: &str) -> Answer {
        let parsed = equiv::prepare(answer);
        let key = equiv::key(&parsed);
        Answer { parsed, key }
    }

    /// The voting key ([`canonical_key`]).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The outcome against `gold`, as [`grade_extracted`] gives it.
    pub fn outcome(&self, gold: &Gold, cfg: &GradeConfig) -> Outcome {
        outcome_of(gold, &self.parsed, cfg)
    }
}

fn outcome_of(gold: &Gold, pred: &equiv::ParsedAnswer, cfg: &GradeConfig) -> Outcome {
    let any_form = |g: &Gold| outcome_of(g, pred, cfg) == Outcome::Correct;
    if gold.alternatives.iter().any(any_form) {
        return Outcome::Correct;
    }
    let g = match (&gold.decimal, cfg.policy.decimal_mark) {
        (Some((d, _)), DecimalMark::Comma) | (Some((d, true)), DecimalMark::Auto) => d,
        _ => &gold.prepared,
    };
    let same = match equiv::same_option(g, pred, &gold.options, cfg) {
        Some(same) => same,
        None => equiv::equivalent_to_gold(g, pred, cfg),
    };
    if same {
        Outcome::Correct
    } else {
        Outcome::Wrong
    }
}

/// [`grade`] for a multiple-choice problem whose options are known.
pub fn grade_with_options<S: AsRef<str>>(
    gold: &str,
    response: &str,
    options: &[S],
    cfg: &GradeConfig,
) -> Verdict {
    grade_against(&Gold::with_options(gold, options), response, cfg)
}

/// Equivalence of two already-extracted answers.
pub fn equivalent(gold: &str, pred: &str, cfg: &GradeConfig) -> bool {
    let g = equiv::prepare(gold);
    let p = equiv::prepare(pred);
    equiv::equivalent_prepared(&g, &p, cfg)
}

/// Canonical key for majority voting: equal keys ⇔ same equivalence class as far as cheaply decidable.
pub fn canonical_key(answer: &str) -> String {
    equiv::key(&equiv::prepare(answer))
}

/// Normal form of an answer as shown by `gpassk grade` (normalised LaTeX and voting key).
pub fn normal_form(answer: &str) -> (String, String) {
    let p = equiv::prepare(answer);
    let key = equiv::key(&p);
    (p.norm, key)
}

/// The gold answer as the grader sees it after unwrapping.
pub fn gold_answer(gold: &str) -> String {
    extract::extract_gold(gold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_gold_grades_exactly_like_grade() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/grading/mathverify_0.9.0_cases.jsonl"
        );
        let cfg = GradeConfig::default();
        let mut n = 0;
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let (gold, pred) = (v["gold"].as_str().unwrap(), v["pred"].as_str().unwrap());
            assert_eq!(
                grade_against(&Gold::new(gold), pred, &cfg),
                grade(gold, pred, &cfg),
                "{gold} vs {pred}"
            );
            n += 1;
        }
        assert_eq!(n, 276);
    }

    fn eq(a: &str, b: &str) -> bool {
        equivalent(a, b, &GradeConfig::default())
    }

    #[test]
    fn numbers_exact() {
        assert!(eq("1000", "1000.0"));
        assert!(eq("0.4", ".4"));
        assert!(eq("10/9", "\\frac{10}{9}"));
        assert!(eq("1.5e3", "1500"));
        assert!(eq("3\\frac12", "3.5"));
        assert!(!eq("28", "0.28"));
        assert!(eq("7425000", "7\\,425\\,000"));
    }

    #[test]
    fn decimal_tolerance_is_configurable() {
        assert!(eq("\\frac{1}{3}", "0.3333333"));
        assert!(!eq("\\frac{1}{3}", "0.3333"));
        let loose = |tolerance| GradeConfig {
            policy: Policy {
                tolerance,
                ..Policy::default()
            },
            ..GradeConfig::default()
        };
        assert!(equivalent(
            "\\frac{1}{3}",
            "0.3333",
            &loose(Tolerance::Relative(1e-3))
        ));
        assert!(equivalent(
            "\\frac{1}{3}",
            "0.3333",
            &loose(Tolerance::Decimals(4))
        ));
        assert!(!equivalent(
            "\\frac{1}{3}",
            "0.3333",
            &loose(Tolerance::Decimals(5))
        ));
        assert!(eq("4.123105625617661", "\\sqrt{17}"));
    }

    #[test]
    fn expressions() {
        assert!(eq("\\frac{x+2}{7}", "\\frac{x}{7}+\\frac{2}{7}"));
        assert!(eq("\\tan^2(y)+1", "\\sec^2(y)"));
        assert!(eq("2\\sqrt{2}", "\\sqrt{8}"));
        assert!(eq("e^{i\\pi}", "-1"));
        assert!(!eq("x+1", "x+2n+1"));
        assert!(!eq("f(x)", "f(y)"));
        assert!(eq("\\frac{9}{4}\\pi", "\\frac94\\pi"));
        // A fractional power and a root of a base that may be negative: the same real value.
        assert!(eq(
            "-\\frac{2(x^2+6)}{9(x^2-2)\\sqrt[3]{x^2-2}^2}",
            "-\\frac{8x^2}{9(x^2-2)^{5/3}}+\\frac{2}{3(x^2-2)^{2/3}}"
        ));
        assert!(!eq("(x^2-2)^{2/3}", "(x^2-2)^{1/3}"));
    }

    #[test]
    fn structures() {
        assert!(eq("(1,2)", "(1, 2)"));
        assert!(!eq("(1,2)", "(2,1)"));
        assert!(eq("\\{1,2\\}", "\\{2,1\\}"));
        assert!(eq("[0,1)", "[0, 1)"));
        assert!(!eq("[0,1)", "(0,1)"));
        assert!(eq("(1,2) \\cup (3,4)", "(3,4)\\cup(1,2)"));
        assert!(eq(
            "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
            "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}"
        ));
        assert!(!eq(
            "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
            "\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}"
        ));
        assert!(eq("1,2", "2,1"));
        assert!(eq("\\pm 2", "\\{-2, 2\\}"));
        assert!(!eq("\\pm 2", "2"));
    }

    #[test]
    fn relations() {
        assert!(eq("x \\le 5", "5 \\ge x"));
        assert!(eq("x < 1", "-x > -1"));
        assert!(!eq("x > 5", "x < 5"));
        assert!(eq("x = 4", "4"));
        assert!(!eq("a + 3z = 0", "0"));
        assert!(eq("2x+4y-3=0", "y=-\\frac{1}{2}x+\\frac{3}{4}"));
        assert!(eq("-1 < x < 2", "(-1, 2)"));
    }

    #[test]
    fn text_and_choices() {
        assert!(eq("\\text{Evelyn}", "evelyn"));
        assert!(eq("C", "(C)"));
        assert!(!eq("d", "\\text{E}"));
    }

    #[test]
    fn outcomes() {
        let cfg = GradeConfig::default();
        assert_eq!(
            grade("$5$", "so \\boxed{5}", &cfg).outcome,
            Outcome::Correct
        );
        assert_eq!(grade("5", "so \\boxed{6}", &cfg).outcome, Outcome::Wrong);
        assert_eq!(grade("5", "I don't know", &cfg).outcome, Outcome::NoAnswer);
        assert_eq!(
            serde_json::to_string(&Outcome::NoAnswer).unwrap(),
            "\"no_answer\""
        );
    }

    #[test]
    fn found_by_names_round_trip_and_two_are_heuristics() {
        for f in FoundBy::ALL {
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.as_str()));
            assert_eq!(serde_json::from_str::<FoundBy>(&json).unwrap(), f);
            assert_eq!(FoundBy::parse(f.as_str()), Some(f));
        }
        assert_eq!(FoundBy::FinalLine.as_str(), "final_line");
        let heuristic: Vec<FoundBy> = FoundBy::ALL
            .into_iter()
            .filter(|f| f.is_heuristic())
            .collect();
        assert_eq!(heuristic, [FoundBy::LastMath, FoundBy::LastNumber]);
        assert_eq!(FoundBy::parse("boxes"), None);
    }

    #[test]
    fn every_verdict_says_how_its_answer_was_found() {
        let cfg = GradeConfig::default();
        let by = |gold: &str, response: &str| grade(gold, response, &cfg).found_by;
        assert_eq!(by("5", "so \\boxed{5}."), FoundBy::Boxed);
        assert_eq!(by("5", "The answer is 5."), FoundBy::Marker);
        assert_eq!(by("5", "Some work.\n#### 5"), FoundBy::Marker);
        assert_eq!(
            by("B", "After checking, option B is correct."),
            FoundBy::Choice
        );
        assert_eq!(by("D", "选项 A 错误，故选 D。"), FoundBy::Choice);
        assert_eq!(by("5", "\\frac{10}{2}"), FoundBy::Whole);
        assert_eq!(by("5", "We add $2+3$ and get $5$"), FoundBy::LastMath);
        assert_eq!(
            by("5", "Adding two and three gives 5 apples"),
            FoundBy::LastNumber
        );
        let none = grade("5", "I do not know.", &cfg);
        assert_eq!(
            (none.found_by, none.outcome),
            (FoundBy::None, Outcome::NoAnswer)
        );
        let cfg = GradeConfig {
            extract_regex: vec![regex::Regex::new(r"ANS=(\d+)").unwrap()],
            ..GradeConfig::default()
        };
        assert_eq!(
            grade("3", "ANS=3 \\boxed{4}", &cfg).found_by,
            FoundBy::Regex
        );
    }

    #[test]
    fn extraction_with_a_gold_agrees_with_the_verdict() {
        let cfg = GradeConfig::default();
        let gold = Gold::new("5");
        let found = extraction("The answer is $5$.", Some(&gold), &cfg);
        let verdict = grade_against(&gold, "The answer is $5$.", &cfg);
        assert_eq!(found.answer, verdict.extracted);
        assert_eq!(found.found_by, verdict.found_by);
        assert_eq!(extraction("", None, &cfg).found_by, FoundBy::None);
    }

    #[test]
    fn a_letter_gold_takes_the_letter_over_a_guess() {
        let cfg = GradeConfig::default();
        let r = "Each option gives $x = 3$, and only (C) has 3 sides.\n\nSo (C) it is, with 3";
        // Without the gold the last number is a guess; a letter gold looks for the letter.
        assert_eq!(extraction(r, None, &cfg).found_by, FoundBy::LastNumber);
        let v = grade("C", r, &cfg);
        assert_eq!(
            (v.extracted.as_deref(), v.found_by),
            (Some("C"), FoundBy::Choice)
        );
        assert_eq!(v.outcome, Outcome::Correct);
        // A box is not a guess: it stands.
        assert_eq!(grade("C", "\\boxed{3} (C)", &cfg).found_by, FoundBy::Boxed);
    }

    #[test]
    fn a_comma_in_the_gold_is_read_from_its_shape_and_the_setting() {
        let with = |decimal_mark| GradeConfig {
            policy: Policy {
                decimal_mark,
                ..Policy::default()
            },
            ..GradeConfig::default()
        };
        let ok =
            |gold: &str, r: &str, mark| grade(gold, r, &with(mark)).outcome == Outcome::Correct;
        // MATH's `0,1` is two solutions.
        assert!(ok("0,1", "\\boxed{0, 1}", DecimalMark::Auto));
        assert!(!ok("0,1", "\\boxed{0.1}", DecimalMark::Auto));
        assert!(ok("0,1", "\\boxed{0.1}", DecimalMark::Comma));
        assert!(!ok("0,1", "\\boxed{0, 1}", DecimalMark::Comma));
        // Shapes that cannot be thousands nor one-digit lists are decimal commas.
        assert!(ok("0,111", "0.111", DecimalMark::Auto));
        assert!(ok("1,22", "1.22", DecimalMark::Auto));
        assert!(!ok("1,22", "1.22", DecimalMark::Point));
        assert!(ok("1,234", "\\boxed{1234}", DecimalMark::Auto));
        assert!(ok("1,234", "\\boxed{1.234}", DecimalMark::Comma));
        // A response's own decimal comma against a one-number gold.
        assert!(ok("3.5", "so it is 3,5", DecimalMark::Point));
        assert_eq!(DecimalMark::parse("comma"), Some(DecimalMark::Comma));
        assert_eq!(DecimalMark::parse("european"), None);
    }

    #[test]
    fn decimals_keep_three_significant_digits_however_small() {
        let cfg = GradeConfig::default();
        let ok = |gold: &str, r: &str| grade(gold, r, &cfg).outcome == Outcome::Correct;
        assert!(!ok("0.000067", "\\boxed{.0000672}"));
        assert!(ok("0.0000672", "\\boxed{6.72 \\times 10^{-5}}"));
        assert!(!ok("1e-24", "the answer is 2.0 x 10^-25 kg m/s"));
        assert!(ok("1e-24", "the answer is 1.0 x 10^-24 kg m/s"));
        // Six decimal places, as before, for values of ordinary size.
        assert!(ok("\\frac{1}{30}", "0.033333"));
        assert!(ok("\\frac{1}{3}", "0.333333"));
        assert!(!ok("\\frac{1}{3}", "0.3333"));
    }

    fn ok(gold: &str, response: &str) -> bool {
        grade(gold, response, &GradeConfig::default()).outcome == Outcome::Correct
    }

    #[test]
    fn a_closing_marker_beats_weaker_earlier_cues() {
        // GAOKAO-Bench's exam format: the 【答案】 line closes the response.
        let r = "【解析】…所以，切线方程为 $y=2x+1$。 <eoe>\n【答案】: A <eoa>";
        let v = grade("A", r, &GradeConfig::default());
        assert_eq!(
            (v.extracted.as_deref(), v.found_by),
            (Some("A"), FoundBy::Marker)
        );
        assert!(ok("y=2x", "所以 $y=3x$ 不对。<eoe>\n【答案】$y = 2x$<eoa>"));
        assert!(ok("8", "…\n【答案】解方程得到n=8."));
        assert!(ok("\\frac{1}{2}", "…所以 λ=1。\n【答案】$\\lambda = 1/2$"));
        assert!(ok("7", "故答案为：7"));
        assert!(ok("7", "综上所述，最小值为 7。"));
        assert!(ok("18", "Some work.\n#### 18"));
        assert!(ok(
            "18",
            "I think 12.\nFinal Answer: The final answer is 18. I hope it is correct."
        ));
        assert!(ok(
            "5",
            "**Reasoning:** 2 + 3 = 5 and 10 / 2.\n\n**Answer:**\n\nTyler works 5 hours."
        ));
        assert!(ok(
            "9",
            "```json\n{\"reasoning\": \"27 found, 36 hidden\", \"answer\": \"9\"}\n```"
        ));
        assert!(ok("9", "<think>maybe 8</think>\n<answer>9</answer>"));
        assert!(ok("True", "Is it a group?\n\n### Response:\nTrue.</s><s>"));
        // A phrase left without its answer gives way to the one before it.
        assert!(ok(
            "C",
            "The answer is (C).\n\nNow, considering all the answers above, the final answer is"
        ));
    }

    #[test]
    fn a_verdict_word_then_a_comma_and_prose_is_the_verdict() {
        let r = "The poles of H(s) are at s = 1 and s = -2; one lies in the right half-plane. \
                 Therefore, the answer is False, the system is not a stable system.";
        assert!(ok("False", r));
        assert!(!ok("True", r));
        assert!(ok(
            "False",
            "Hence the statement is false.\n\nTherefore, the answer is false, and this is a counterexample."
        ));
        assert!(ok(
            "Yes",
            "The answer is yes, the series converges absolutely."
        ));
        // A value after the comma is still the answer ("no, there are 3 …").
        assert!(ok("3", "So the answer is no, there are 3 such primes."));
        // A rule restated, not a verdict.
        assert!(!ok(
            "True",
            "Step 6: If x(n+N) = x(n), then the answer is True, else False."
        ));
    }

    #[test]
    fn a_list_of_truth_values_is_a_list_of_ones_and_zeros() {
        // TheoremQA: golds `[1, 0, 1]` for questions answered with a list of truth values.
        let r = "(a) The set is closed under addition, so it is a subspace: True.\n\
                 (b) The zero vector is missing: False.\n(c) It is the span of two vectors: True.\n\
                 Therefore, the answer is [True, False, True].";
        assert!(ok("[1, 0, 1]", r));
        assert!(!ok("[1, 1, 0]", r));
        assert!(ok("[1, 0]", "Therefore, the answer is [True, False]."));
        assert!(ok("[True, False]", "Therefore, the answer is [1, 0]."));
        assert!(!ok("[1, 0]", "Therefore, the answer is [False, True]."));
        // An ellipsis between the phrase and the value.
        assert!(ok(
            "[1, 0, 1]",
            "Checking each statement in turn, the answer is ... [True, False, True]"
        ));
        assert!(ok("[1, 0, 1]", "So the answer is ... [1, 0, 1]"));
        assert!(ok(
            "12",
            "Adding the two counts, the answer is \u{2026} 12."
        ));
    }

    #[test]
    fn a_dollar_sign_before_a_number_and_a_word_is_currency_not_math() {
        let r = "Bob bought 8 shares for $72 in total, so each share cost $72 / 8 = $9 per share. \
                 The final value of the shares is 8 shares * $9 = $72.";
        assert!(ok("72", r));
        assert!(!ok("9", r));
        assert!(ok(
            "45",
            "She earns $15 per hour and works 3 hours, so she earns 3 * $15 = $45."
        ));
        // Math spans stay math.
        assert!(ok("5", "Since $x + 2 = 7$, we have $x = 5$."));
        assert!(ok("\\frac{1}{2}", "The probability is $\\frac{1}{2}$."));
    }

    #[test]
    fn an_answer_tag_of_several_math_pieces_is_one_answer() {
        let r = "<think>The period of $\\sin(\\frac{4}{3}x)$ is $\\frac{2\\pi}{4/3}$ and the \
                 amplitude is 1.</think>\n<answer>\\(\\frac{3\\pi}{2}\\), 1</answer>";
        assert!(ok("3\\pi/2, 1", r));
        assert!(!ok("3\\pi/2", r));
        assert!(ok("-2, 3", "<answer>$x = -2$, $x = 3$</answer>"));
        assert!(ok("(1, 2)", "<answer>\\((1, 2)\\)</answer>"));
        // One piece, or words between pieces: read as before.
        assert!(ok("5", "<answer>$x = 5$</answer>"));
        assert!(ok("5", "<answer>The value is $5$.</answer>"));
    }

    #[test]
    fn a_closing_chinese_conclusion_states_the_answer() {
        // GAOKAO-Bench style without 【答案】: the closing 得到 … sentence, not an earlier 所以.
        let r = "【解析】由题意，等差数列的首项 $a_1=1$，公差 $d=2$，所以 $a_{10}=a_1+9d=19$，\
                 得到$S_{10}=\\frac{10}{2}(1+19)=100$。<eoa>";
        assert!(ok("100", r));
        assert!(!ok("19", r));
        assert!(ok(
            "-3",
            "因为 $f(1)=0$，所以 $a=2$，代入可得 $f(-1)=-3$。<eoa>"
        ));
        assert!(ok("8", "由勾股定理 $c^2=a^2+b^2$，求得 $c=8$。"));
    }

    #[test]
    fn a_remark_in_brackets_after_a_gold_value_is_not_part_of_it() {
        let gold = "2 (满足 $1<e \\leq \\sqrt{5}$ 皆可)";
        assert!(ok(
            gold,
            "由 $e=\\frac{c}{a}$ 且 $1<e\\leq\\sqrt{5}$，取 $e=2$。\n【答案】2 <eoa>"
        ));
        assert!(!ok(gold, "【答案】3 <eoa>"));
        assert!(ok("4（答案不唯一）", "【答案】$4$"));
        assert!(ok("12 (any multiple of 12 works)", "The answer is 12."));
        // Tuples, intervals and function values are values.
        assert!(ok("(1, 2)", "The answer is $(1, 2)$."));
        assert!(!ok("(1, 2)", "The answer is $1$."));
        assert!(!ok("x \\in (1, 2)", "The answer is $x = 1$."));
        assert!(!ok("f(3)", "The answer is $f$."));
    }

    #[test]
    fn a_closing_sentence_naming_the_option_wins_over_an_earlier_value() {
        // MMLU-Pro: the computed value, then the option it is closest to.
        let r = "v = \\sqrt{2gh} = \\sqrt{2 \\cdot 9.8 \\cdot 1.0} \\approx 4.43 m/s.\n\n\
                 So the answer is approximately 4.43 m/s.\n\nThe closest option is (E).";
        assert!(ok("E", r));
        assert!(!ok("D", r));
        assert!(ok("B", "The answer is 9.2 N.\nThe best option is (B)."));
        assert!(ok(
            "A",
            "The final answer is 4.63 x 10^8.\nThus, the correct option is (A) 463000000.0, \
             which is the computed value."
        ));
    }

    #[test]
    fn styled_letters_and_lists_of_them_are_a_set_never_one_letter() {
        let cfg = GradeConfig::default();
        let two = "综上，选项 $\\textbf{(A)}$ 和 $\\textbf{(B)}$ 都正确。";
        let opts = ["1", "2", "3", "4"];
        for (gold, right) in [("A", false), ("B", false), ("AB", true), ("A,B", true)] {
            assert_eq!(ok(gold, two), right, "{gold}");
            let v = grade_with_options(gold, two, &opts, &cfg);
            assert_eq!(v.outcome == Outcome::Correct, right, "{gold} with options");
        }
        for r in [
            "综上，选项 **(A)** 和 **(B)** 都正确。",
            "综上，选项 $\\text{A}$ 与 $\\mathrm{B}$ 均正确。",
            "So both (A) and (B) are correct.",
            "Options A and B are both correct.",
            "因此选项A以及B都正确",
            "故选AB",
            "【答案】 A和B <eoa>",
        ] {
            assert!(!ok("A", r) && !ok("B", r), "{r}");
            assert!(ok("AB", r) && ok("B, A", r), "{r}");
        }
        assert!(!ok("A", "答案：(A)(C)") && ok("AC", "答案：(A)(C)"));
        // One styled letter is that letter (GAOKAO-Bench, GPT-4).
        assert!(ok(
            "D",
            "因此选项 $\\textbf{(D)}$ 正确。\n\n【答案】$\\textbf{(D)}$"
        ));
        // "none of the choices (A, B, C, D) are correct" names none of them.
        let v = grade(
            "12",
            "So none of the given choices (A, B, C, D) are correct.",
            &cfg,
        );
        assert_ne!(v.extracted.as_deref(), Some("A, B, C, D"));
        // "both incorrect" names no option (TheoremQA, ChatGPT).
        let r = "The correct option is (c) None of the above.\n\nTherefore, option (a) and (b) are both incorrect.";
        assert_eq!(grade("(a)", r, &cfg).extracted.as_deref(), Some("C"));
    }

    #[test]
    fn a_truth_gold_takes_the_verdict_the_closing_sentence_gives() {
        let cfg = GradeConfig::default();
        let found = |gold: &str, r: &str| {
            let v = grade(gold, r, &cfg);
            (v.extracted.unwrap_or_default(), v.found_by)
        };
        let quoted = "Therefore, the statement \"$f(x)=x^2$ is not injective, so it is false that $f$ is 1-1\" is true.";
        assert_eq!(found("True", quoted), ("True".into(), FoundBy::Marker));
        assert!(ok("True", quoted) && !ok("False", quoted));
        let cases = [
            ("Hence, the statement \"every bounded sequence converges\" is false.", "False"),
            ("Since a > b, the claim holds.", "True"),
            ("So the inequality does not hold.", "False"),
            ("The statement is not always true.", "False"),
            ("We check both cases. Hence the claim is correct.", "True"),
            ("It follows that the answer is: True", "True"),
            ("Both sides agree. So, yes.", "True"),
            ("经过验证，该命题正确。", "True"),
            ("经过验证，所以这个说法是错误的。", "False"),
            ("This argument is True.", "True"),
            // TheoremQA, Claude: the verdict after a formula, not the formula.
            ("…and thus $D(P||Q)=\\chi^2$, up to a constant factor of 2. Therefore, the statement is true.", "True"),
        ];
        for (r, verdict) in cases {
            assert_eq!(found("True", r).0, verdict, "{r}");
        }
        // Only a truth gold looks for a verdict; a stated verdict word stays.
        assert_eq!(found("5", "Thus $x = 5$ and the claim is true.").0, "x = 5");
        assert_eq!(
            found("False", "The answer is False. The rest is true.").0,
            "False"
        );
    }

    #[test]
    fn the_number_a_sentence_states_beats_one_in_a_clause_about_it() {
        let found = |r: &str| {
            grade("1", r, &GradeConfig::default())
                .extracted
                .unwrap_or_default()
        };
        // TheoremQA (Claude, ChatGPT): the count, then a clause with other numbers.
        assert_eq!(
            found("C(8,3) = 56\n\nTherefore, there are 56 ways to order a pizza with 3 toppings."),
            "56"
        );
        assert_eq!(found("So there are $10$ different committees that can be formed with $3$ men and $2$ women."), "10");
        assert_eq!(
            found("Thus the total number of ways is 20, using 4 red and 5 blue balls."),
            "20"
        );
        assert_eq!(
            found("The minimum sampling rate is 8 kHz (2 times the bandwidth of 4 kHz)."),
            "8"
        );
        let phrase = "The answer is 56 ways to order a pizza with 3 toppings.";
        assert!(ok("56", phrase) && !ok("3", phrase));
        // A value stated last, a bound stated last, a computation: the last value stays.
        assert_eq!(
            found("The row rank of $A$ is 1, and the column rank of $A$ is 2."),
            "2"
        );
        assert_eq!(
            found("there are 3 friends or 3 strangers in the room by having at least 6 people."),
            "6"
        );
        assert_eq!(
            found("The number of ways with 4 balls is 6 * 5 = 30."),
            "30"
        );
        assert_eq!(found("The value is 5, which is 2 more than 3."), "3");
    }

    #[test]
    fn several_letters_are_a_set_and_a_letter_gold_wants_a_letter() {
        assert!(!ok("C", "…\n【答案】: A, C <eoa>"));
        assert!(ok("AC", "…\n【答案】 AC <eoa>"));
        assert!(ok("AC", "so the answer is A和C"));
        assert!(ok("A, C", "…\n【答案】 C, A <eoa>"));
        assert!(!ok("ABC", "…\n【答案】 ACD <eoa>"));
        assert!(ok("BD", "The answer is (B)(D)."));
        // After a weaker cue, letters run together are a name (segment BE), not a set.
        assert!(ok("A", "因此，BE的长为1，选项A是正确答案。"));
        // A hedge between two options names both.
        assert!(!ok("F", "The answer is (F) with $5.4$ or (D) with $8$."));
        assert!(ok(
            "(a)",
            "Therefore, the answer is (a) f is increasing on [0,1]."
        ));
        assert!(ok("C", "The correct answer is therefore choice (C)."));
        assert!(ok(
            "18",
            "It is known that R(4,4) = 18. Therefore, the answer is (c) 18."
        ));
        // With dataset options, a letter still matches its option's value, and words name it.
        let opts = ["shortage", "surplus"];
        let cfg = GradeConfig::default();
        let v = grade_with_options(
            "B",
            "At a price of $330, there is a surplus of 1200 units.",
            &opts,
            &cfg,
        );
        assert_eq!((v.outcome, v.found_by), (Outcome::Correct, FoundBy::Choice));
    }

    #[test]
    fn units_on_either_side_are_dropped() {
        assert!(ok(
            "15000",
            "\\boxed{15000 \\text{ kcal m}^{-2} \\text{ yr}^{-1}}"
        ));
        assert!(ok("144 \\mbox{ m}^3", "so \\boxed{144}"));
        assert!(ok("12 \\text{ gm}", "\\boxed{12}"));
        assert!(ok("9.8", "\\boxed{9.8 \\mathrm{~m/s^2}}"));
        assert!(ok("[12, 8, 5]", "Therefore, the answer is [12, 8, 5] mW."));
        assert!(!ok("15000", "\\boxed{16000 \\text{ kcal m}^{-2}}"));
        // A letter against a number is a product, not a unit.
        assert!(!ok("2", "\\boxed{2 x}"));
    }

    #[test]
    fn calculator_traces_and_dollar_amounts() {
        let r = "She makes 9 * 2 = $<<9*2=18>>18 per day and 18 * 7 = $<<18*7=126>>126 per week.";
        assert!(ok("126", r));
        assert!(ok("70000", "The total cost is $70,000."));
        assert!(ok(
            "70000",
            "Steps first.\n**The total cost of the house is $70,000.**"
        ));
    }

    #[test]
    fn symbols_labels_and_prose_inside_an_answer() {
        assert!(ok(
            "2\\sqrt{\\pi G\\rho_0}",
            "\\boxed{\\sqrt{4\\piG\\rho_0}}"
        ));
        assert!(ok(
            "\\sqrt{\\frac{4 \\pi G \\rho_0}{3}} r",
            "\\boxed{v(r) = \\sqrt{\\frac{4\\piG\\rho_0}{3}}r}"
        ));
        let r = "\\boxed{E_1 \\text{ with probability } \\frac13, \\text{ and } E_2 \\text{ with probability } \\frac23}";
        assert!(ok("E_1, E_2", r));
        assert!(!ok("E_1", r));
        assert!(ok("0", "Therefore, the sum $a + d + e = -2 + 5 - 3 = 0$."));
        assert!(ok("14", "Therefore, the answer is $p'(2) = 14$."));
    }

    #[test]
    fn a_program_output_restated_by_the_closing_sentence_is_the_answer() {
        let r = "```python\nprint(20 * 0.6 / 0.2)\n```\n```output\n60.0\n```\n60% of the students enrolled in hip-hop dance.";
        assert_eq!(
            grade("60", r, &GradeConfig::default()).found_by,
            FoundBy::Marker
        );
        assert!(ok("60", r));
        assert!(ok(
            "5",
            "```output\n5\n```\n5 cars drove through the traffic jam in the first 15 minutes."
        ));
        assert!(ok(
            "3",
            "```output\n3.0\n```\nThree trucks will be needed to transport 80 flagstones."
        ));
        // Not restated: the output is not taken for granted.
        assert!(!ok(
            "0",
            "```output\n0.0\n```\nThe mixtures of 1/2 and 1/3 pound cost 7 dollars more."
        ));
    }

    #[test]
    fn keys() {
        assert_eq!(canonical_key("\\frac{1}{2}"), canonical_key("0.5"));
        assert_eq!(canonical_key("x = 3"), canonical_key("3"));
        assert_eq!(canonical_key("\\{1,2\\}"), canonical_key("2, 1"));
        assert_ne!(canonical_key("1"), canonical_key("2"));
    }

    /// The fuzz target's voting-key check (fuzz/regressions/grade/): an equation votes by its
    /// stated value, so `P z = 2` and `z = 2` share a key, and each is equivalent to the value
    /// itself (a chain of steps states its last value). An answer that normalises to nothing has
    /// the empty answer's key and equals nothing.
    #[test]
    fn keys_of_equations_and_empty_answers() {
        let cfg = GradeConfig::default();
        let (a, b) = ("P$z = 1 + 1 = 2$", "$z = 3+3 = 2$");
        assert_eq!(canonical_key(a), canonical_key(b));
        assert_eq!(canonical_key(a), canonical_key("2"));
        assert!(equivalent(a, "2", &cfg) && equivalent(b, "2", &cfg));
        for empty in ["\\text{", "\\text{}", ""] {
            assert_eq!(canonical_key(empty), canonical_key(""));
            assert!(!equivalent(empty, empty, &cfg), "{empty:?}");
        }
    }
}
