//! Exact G-Pass@k combinatorics: binomials, per-problem metrics and their aggregation over problems.
//!
//! Everything inside is integer or rational arithmetic; `f64` appears only through [`to_f64`], which
//! callers use at the report boundary.

mod aggregate;
mod binom;
mod problem;
mod tau;

pub use aggregate::{aggregate, Aggregate, MetricIdentity, MetricKind, MetricValue, ProblemCounts};
pub use binom::binomial;
pub use problem::{
    g_pass_at_k, g_pass_at_k_threshold, mg_pass_at_k, mg_thresholds, pass_at_k, problem_metrics,
    MetricTable, PerProblem,
};
pub use tau::Tau;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;

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
