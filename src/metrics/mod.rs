//! Exact G-Pass@k combinatorics: binomials, per-problem metrics and their aggregation over problems;
//! the verifier metrics (best-of-N, weighted and plain majority vote at N) of one problem, and how
//! a verifier's step scores agree with step labels.
//!
//! Everything inside is integer or rational arithmetic; `f64` appears only through [`to_f64`], which
//! callers use at the report boundary.
//!
//! What each metric means, with the values the engine is tested against: docs/metrics.md.

mod aggregate;
pub mod agreement;
mod binom;
mod name;
mod problem;
mod tau;
mod verifier;

pub use aggregate::{aggregate, Aggregate, MetricIdentity, MetricKind, MetricValue, ProblemCounts};
pub use binom::binomial;
pub use name::MetricNameError;
pub use problem::{
    g_pass_at_k, g_pass_at_k_threshold, mg_pass_at_k, mg_thresholds, pass_at_k, problem_metrics,
    MetricTable, PerProblem,
};
pub use tau::Tau;
pub use verifier::{
    best_of_n, majority_at, verifier_values, weighted_majority_at, Aggregation,
    Estimate as VoteEstimate, Sample, VerifierError, VerifierValues, VoteBudget, DEFAULT_BUDGET,
};

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;

/// What the metrics mean, for people (`gpassk calc --help` and the man page lay it out): an
/// opening sentence, then (term, meaning) pairs; `m` is the threshold column of `calc`'s table.
pub const GLOSSARY_INTRO: &str =
    "For one problem, n samples were drawn and c of them are correct; \
    the metrics ask about k of the n drawn again without replacement.";

/// See [`GLOSSARY_INTRO`]; the last pair says what a benchmark score is.
pub const GLOSSARY: [(&str, &str); 5] = [
    (
        "pass@k",
        "the probability that at least one of the k is correct: 1−C(n−c,k)/C(n,k).",
    ),
    (
        "G-Pass@k_τ",
        "the probability that at least m = ⌈τ·k⌉ of the k are correct, given c of n (a \
         hypergeometric tail; 0 when m > c). τ = 0 counts as m = 1, which is pass@k; τ = 1 asks \
         for all k correct.",
    ),
    (
        "mG-Pass@k",
        "(2/k)·Σ G-Pass@k over m = ⌈k/2⌉+1 … k: for even k the mean over τ in (0.5, 1] \
         (k = 16: m = 9..16); for odd k, (k−1)/k times that mean.",
    ),
    (
        "m",
        "the threshold: how many of the k must be correct (1 for pass@k; for mG-Pass@k the \
         range summed).",
    ),
    (
        "score",
        "a benchmark's score is 100 × the mean of a metric over its problems.",
    ),
];

/// Errors from invalid metric arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("k must be at least 1")]
    ZeroK,
    #[error("n = {n} is above {MAX_N}, the largest n the exact engine computes in reasonable time and memory")]
    NTooLarge { n: u64 },
    #[error("k = {k} exceeds the number of samples n = {n}")]
    KExceedsN { k: u64, n: u64 },
    #[error("c = {c} correct samples exceeds the number of samples n = {n}")]
    CExceedsN { c: u64, n: u64 },
    #[error("tau {0:?} is outside [0, 1]")]
    TauOutOfRange(String),
    #[error(
        "cannot parse tau {text:?}: {reason} (use a decimal like 0.25 or a fraction like 1/3)"
    )]
    TauParse { text: String, reason: &'static str },
}

/// The largest n (and so k) the exact engine accepts: at n = 10,000 one problem takes about a
/// second in a debug build; beyond it time and memory grow quadratically.
pub const MAX_N: u64 = 10_000;

/// Checks the (n, c, k) triple shared by every per-problem metric.
pub fn check_nck(n: u64, c: u64, k: u64) -> Result<(), MetricsError> {
    if k == 0 {
        return Err(MetricsError::ZeroK);
    }
    if k > n {
        return Err(MetricsError::KExceedsN { k, n });
    }
    if n > MAX_N {
        return Err(MetricsError::NTooLarge { n });
    }
    if c > n {
        return Err(MetricsError::CExceedsN { c, n });
    }
    Ok(())
}

/// The one place exact values become floating point (correctly rounded by num-rational).
pub fn to_f64(x: &BigRational) -> f64 {
    x.to_f64().unwrap_or(f64::NAN)
}

/// Formats an exact value as a reduced fraction: `"0"`, `"1"`, or `"p/q"`.
pub fn exact_text(x: &BigRational) -> String {
    x.to_string()
}

pub(crate) fn ratio(num: BigInt, den: BigInt) -> BigRational {
    BigRational::new(num, den)
}
