//! The grader on untrusted text: `grade(gold, response)` and answer equivalence never panic, give
//! the same verdict twice, agree with the prepared-gold path, and `equivalent` is symmetric.
//!
//! Input: one policy byte (tolerance, list order, percent, styled letters, decimal mark), then the gold and the response separated by the first NUL byte.
#![no_main]

use gpassk::grade::{
    canonical_key, equivalent, grade, grade_against, DecimalMark, Gold, GradeConfig, ListOrder,
    Percent, Policy, StyledLetters, Tolerance,
};
use libfuzzer_sys::fuzz_target;

fn config(byte: u8) -> GradeConfig {
    let policy = Policy {
        tolerance: if byte & 1 == 0 {
            Tolerance::Decimals(gpassk::grade::DEFAULT_DECIMALS)
        } else {
            Tolerance::Relative(1e-4)
        },
        list_order: if byte & 2 == 0 {
            ListOrder::Any
        } else {
            ListOrder::AsWritten
        },
        percent: if byte & 4 == 0 {
            Percent::Either
        } else {
            Percent::Strip
        },
        styled_letters: if byte & 8 == 0 {
            StyledLetters::default()
        } else {
            StyledLetters::Same
        },
        decimal_mark: match (byte >> 4) % 3 {
            0 => DecimalMark::Auto,
            1 => DecimalMark::Point,
            _ => DecimalMark::Comma,
        },
    };
    GradeConfig {
        extract_regex: Vec::new(),
        policy,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&policy, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (gold, response) = text.split_once('\0').unwrap_or((&text, ""));
    let cfg = config(policy);

    let verdict = grade(gold, response, &cfg);
    assert_eq!(
        verdict,
        grade(gold, response, &cfg),
        "grade is not deterministic"
    );
    assert_eq!(
        verdict,
        grade_against(&Gold::new(gold), response, &cfg),
        "the prepared gold grades differently"
    );

    // Equivalence of two extracted answers is symmetric, except by design in one direction: a
    // gold decimal of 3 or more significant digits accepts an exact answer that rounds to it
    // (docs/grading.md: gold 0.3333 takes 1/3, gold 1/3 does not take 0.3333). Where either side
    // writes a decimal, only that rule may break symmetry; elsewhere it must hold.
    let (a, b) = (gold, response);
    let ab = equivalent(a, b, &cfg);
    let decimal = |t: &str| {
        t.as_bytes()
            .windows(2)
            .any(|w| w[0] == b'.' && w[1].is_ascii_digit())
    };
    if !decimal(a) && !decimal(b) {
        assert_eq!(
            ab,
            equivalent(b, a, &cfg),
            "equivalent({a:?}, {b:?}) is not symmetric"
        );
    }
    // Majority voting groups answers by key: equal keys must be equivalent answers. An answer
    // that normalises to nothing (`\text{}`, `\text{`) has the empty answer's key and equals
    // nothing, not even itself: those vote together, and are never correct. An equation votes
    // by its stated value (`x = 3` with `3`, so also with `y = 3`) though `x = 3` and `y = 3` are
    // not equivalent; a class's correctness counts its members' own grades, so no verdict moves.
    let key = canonical_key(a);
    if key != canonical_key("") && key == canonical_key(b) {
        let def = GradeConfig::default();
        assert!(
            equivalent(a, b, &def) || (a.contains('=') && b.contains('=')),
            "{a:?} and {b:?} share a voting key but are not equivalent"
        );
    }
});
