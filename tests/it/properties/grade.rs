//! The grader's canonical forms: a value and its equivalent spellings grade equal (fractions,
//! decimals, percents as the policy says; sets in any order; `\left`/`\right` and spaces), grading
//! is deterministic, and a well-formed answer grades correct against itself.

use gpassk::grade::{equivalent, grade, GradeConfig, ListOrder, Outcome, Percent, Policy};
use proptest::prelude::*;

fn with(policy: Policy) -> GradeConfig {
    GradeConfig {
        extract_regex: Vec::new(),
        policy,
    }
}

fn eq(a: &str, b: &str) -> bool {
    equivalent(a, b, &GradeConfig::default())
}

/// A fraction p/q (q ≥ 2) in the spellings answers use.
fn fraction_spellings(p: i64, q: i64) -> Vec<String> {
    let (sign, a) = if p < 0 { ("-", -p) } else { ("", p) };
    vec![
        format!("{sign}\\frac{{{a}}}{{{q}}}"),
        format!("{sign}\\dfrac{{{a}}}{{{q}}}"),
        format!("{sign}\\tfrac{{{a}}}{{{q}}}"),
        format!("\\frac{{{p}}}{{{q}}}"),
        format!("{p}/{q}"),
        format!("{sign}{{{a}}}/{{{q}}}"),
    ]
}

/// p/q as an exact decimal, when q divides a power of ten (else None).
fn decimal(p: i64, q: i64) -> Option<String> {
    let mut scale = 1i64;
    for places in 0..=6 {
        if scale % q == 0 {
            let v = p * (scale / q);
            let (sign, v) = if v < 0 { ("-", -v) } else { ("", v) };
            let (int, frac) = (v / scale, v % scale);
            return Some(if places == 0 {
                format!("{sign}{int}")
            } else {
                format!("{sign}{int}.{frac:0places$}")
            });
        }
        scale *= 10;
    }
    None
}

/// Distinct small integers, as set members.
fn members() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::btree_set(-50i64..50, 2..5).prop_map(|s| s.into_iter().collect())
}

/// A well-formed answer: a number, a fraction, a root, a tuple, a set, an interval, an
/// expression in x.
fn answer() -> impl Strategy<Value = String> {
    let int = -1_000_000i64..1_000_000;
    prop_oneof![
        int.clone().prop_map(|n| n.to_string()),
        (int.clone(), 2i64..100).prop_map(|(p, q)| format!("\\frac{{{p}}}{{{q}}}")),
        (1i64..50, 2i64..100).prop_map(|(a, b)| format!("{a}\\sqrt{{{b}}}")),
        (int.clone(), 1u32..7).prop_map(|(n, d)| format!(
            "{}.{:0w$}",
            n / 10,
            n.rem_euclid(10),
            w = d as usize
        )),
        members().prop_map(|m| format!("({})", join(&m))),
        members().prop_map(|m| format!("\\{{{}\\}}", join(&m))),
        (int.clone(), 1i64..1000).prop_map(|(a, w)| format!("[{a}, {}]", a + w)),
        (1i64..20, 1i64..20).prop_map(|(a, b)| format!("{a}x^2 + {b}x")),
        (1i64..20).prop_map(|a| format!("{a}\\pi")),
    ]
}

fn join(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn fraction_spellings_and_exact_decimals_are_one_value(p in -5000i64..5000, q in 2i64..=80) {
        let spellings = fraction_spellings(p, q);
        for s in &spellings {
            prop_assert!(eq(&spellings[0], s), "{} vs {}", spellings[0], s);
            prop_assert!(eq(s, &spellings[0]), "{} vs {}", s, spellings[0]);
        }
        if let Some(d) = decimal(p, q) {
            prop_assert!(eq(&spellings[0], &d), "{} vs {}", spellings[0], d);
        }
        // A different value is a different answer.
        let next = format!("\\frac{{{}}}{{{q}}}", p + 1);
        prop_assert!(!eq(&spellings[0], &next), "{} matched {}", spellings[0], next);
    }

    #[test]
    fn a_percent_matches_as_the_policy_says(hundredths in 1i64..100_000) {
        let x = decimal(hundredths, 100).unwrap();
        let pct = format!("{x}\\%");
        let fraction = decimal(hundredths, 10_000).unwrap();
        let either = with(Policy { percent: Percent::Either, ..Policy::default() });
        let strip = with(Policy { percent: Percent::Strip, ..Policy::default() });
        for cfg in [&either, &strip] {
            prop_assert!(equivalent(&pct, &x, cfg), "{} vs {}", pct, x);
        }
        prop_assert!(equivalent(&pct, &fraction, &either), "{} vs {}", pct, fraction);
        prop_assert!(!equivalent(&pct, &fraction, &strip), "{} matched {} under strip", pct, fraction);
    }

    #[test]
    fn sets_match_in_any_order_tuples_only_in_theirs(m in members(), seed in any::<u64>()) {
        let mut shuffled = m.clone();
        // A rotation by a seed-chosen amount (never the identity: members are distinct).
        shuffled.rotate_left(1 + (seed as usize % (m.len() - 1)));
        let (a, b) = (join(&m), join(&shuffled));
        prop_assert!(eq(&format!("\\{{{a}\\}}"), &format!("\\{{{b}\\}}")), "{{{}}} vs {{{}}}", a, b);
        prop_assert!(!eq(&format!("({a})"), &format!("({b})")), "({}) matched ({})", a, b);
        let any = with(Policy { list_order: ListOrder::Any, ..Policy::default() });
        let written = with(Policy { list_order: ListOrder::AsWritten, ..Policy::default() });
        prop_assert!(equivalent(&a, &b, &any), "{} vs {}", a, b);
        prop_assert!(!equivalent(&a, &b, &written), "{} matched {} as written", a, b);
    }

    #[test]
    fn left_right_and_spaces_are_noise(m in members(), spaces in 1usize..4) {
        let plain = format!("({})", join(&m));
        let sized = format!("\\left( {} \\right)", join(&m));
        let pad = " ".repeat(spaces);
        let spaced = format!("{pad}({pad}{}{pad}){pad}", m.iter().map(i64::to_string).collect::<Vec<_>>().join(&format!("{pad},{pad}")));
        for other in [&sized, &spaced] {
            prop_assert!(eq(&plain, other), "{} vs {}", plain, other);
        }
        let interval = format!("\\left[ {}, {} \\right)", m[0], m[1]);
        prop_assert!(eq(&format!("[{}, {})", m[0], m[1]), &interval), "{}", interval);
    }

    #[test]
    fn an_answer_grades_correct_against_itself_every_time(x in answer()) {
        let cfg = GradeConfig::default();
        prop_assert!(eq(&x, &x), "{} is not equivalent to itself", x);
        let response = format!("Putting it together, the answer is $\\boxed{{{x}}}$.");
        let verdict = grade(&x, &response, &cfg);
        prop_assert_eq!(verdict.outcome, Outcome::Correct, "{} graded {:?}", x, verdict);
        prop_assert_eq!(&verdict, &grade(&x, &response, &cfg));
    }
}
