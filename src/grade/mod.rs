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
    /// A multiple-choice problem's options in order (A, B, …), parsed; empty otherwise.
    options: Vec<equiv::ParsedAnswer>,
}

impl Gold {
    pub fn new(gold: &str) -> Gold {
        Gold::with_options::<&str>(gold, &[])
    }

    /// A gold answer of a multiple-choice problem: a letter then also matches its option's
    /// text, and an option's text its letter. Options may carry their labels (`A. 12`, `(B) 15`).
    pub fn with_options<S: AsRef<str>>(gold: &str, options: &[S]) -> Gold {
        Gold {
            prepared: equiv::prepare(&extract::extract_gold(gold)),
            options: options
                .iter()
                .map(|o| equiv::prepare(equiv::strip_option_label(o.as_ref())))
                .collect(),
        }
    }

    /// An option letter (`B`, `(B)`) with no options to match its value: only a letter answers it.
    fn wants_letters(&self) -> bool {
        let t = self.prepared.norm.trim();
        let t = t.strip_prefix('(').unwrap_or(t);
        let t = t.strip_suffix(['.', ')']).unwrap_or(t);
        self.options.is_empty() && t.len() == 1 && t.as_bytes()[0].is_ascii_uppercase()
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
    let same = match equiv::same_option(&gold.prepared, pred, &gold.options, cfg) {
        Some(same) => same,
        None => equiv::equivalent_prepared(&gold.prepared, pred, cfg),
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
    fn keys() {
        assert_eq!(canonical_key("\\frac{1}{2}"), canonical_key("0.5"));
        assert_eq!(canonical_key("x = 3"), canonical_key("3"));
        assert_eq!(canonical_key("\\{1,2\\}"), canonical_key("2, 1"));
        assert_ne!(canonical_key("1"), canonical_key("2"));
    }

    /// The fuzz target's voting-key check (fuzz/regressions/grade/): an equation votes by its
    /// stated value, so `P z = 2` and `z = 2` share a key, though naming different unknowns they
    /// are not equivalent; each is equivalent to the value itself. An answer that normalises to
    /// nothing has the empty answer's key and equals nothing.
    #[test]
    fn keys_of_equations_and_empty_answers() {
        let cfg = GradeConfig::default();
        let (a, b) = ("P$z = 1 + 1 = 2$", "$z = 3+3 = 2$");
        assert_eq!(canonical_key(a), canonical_key(b));
        assert_eq!(canonical_key(a), canonical_key("2"));
        assert!(!equivalent(a, b, &cfg));
        assert!(equivalent(a, "2", &cfg) && equivalent(b, "2", &cfg));
        for empty in ["\\text{", "\\text{}", ""] {
            assert_eq!(canonical_key(empty), canonical_key(""));
            assert!(!equivalent(empty, empty, &cfg), "{empty:?}");
        }
    }
}
