//! The metrics harnesses store per run, read from their names once for every reader, and
//! recomputed exactly from per-sample verdicts by the paper's definitions (`crate::metrics`).

use crate::metrics::{MetricKind, Tau};
use regex::Regex;
use std::sync::LazyLock;

/// A per-problem metric that harnesses average over problems.
#[derive(Debug, Clone)]
pub enum PaperMetric {
    /// c/n.
    Accuracy,
    PassAtK(u64),
    /// G-Pass@k_τ; pass^k is G-Pass@k_1.
    GPassAtK(u64, Tau),
    MGPassAtK(u64),
    /// The share correct among a problem's first k samples (NeMo-Skills' `pass@1[avg-of-k]`).
    FirstK(u64),
    /// Whether any of a problem's samples is correct, however many it has (`pass@n`; Inspect's
    /// `max` reducer).
    Any,
}

/// `g-pass@16_0.5`, `G-Pass@16_0.5`, `math_g-pass@4_0.5`; `mG-Pass@16`, `mmath_g-pass@4`.
static GPASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(.*)g-pass@(\d+)(?:_(\d+(?:\.\d+)?))?$").expect("the g-pass pattern is valid")
});
/// `pass@4`, `pass@k:k=4&n=16`.
static PASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^pass@(?:k:k=)?(\d+)(?:&n=\d+)?$").expect("the pass@k pattern is valid")
});
/// `pass@k:k=1&n=6` and `math_pass@1:4_samples`: a mean over a document's samples.
static MEAN_OF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:pass@k:k=1&n=(\d+)|.*pass@1:(\d+)_samples)$")
        .expect("the mean pattern is valid")
});
/// `pass@1[avg-of-4]`.
static FIRST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^pass@1\[avg-of-(\d+)\]$").expect("the avg-of pattern is valid"));

impl PaperMetric {
    /// The metric a harness's name stands for: `accuracy` (with a `(16 runs average)` note),
    /// `pass@4`, `pass@k:k=4&n=16`, `pass^4`, `pass@1[avg-of-4]`, `G-Pass@16_0.5`,
    /// `math_g-pass@4_0.5`, `mG-Pass@16`, `mmath_g-pass@4`; None for any other.
    pub fn parse(name: &str) -> Option<PaperMetric> {
        let base = name.split(" (").next()?.trim();
        let k = |s: &str| s.parse::<u64>().ok().filter(|&k| k > 0);
        if base.eq_ignore_ascii_case("accuracy") || Self::samples_in_mean(base).is_some() {
            return Some(PaperMetric::Accuracy);
        }
        if let Some(c) = FIRST.captures(base) {
            return k(&c[1]).map(PaperMetric::FirstK);
        }
        if base == "pass@n" {
            return Some(PaperMetric::Any);
        }
        if let Some(rest) = base.strip_prefix("pass^") {
            let tau: Tau = "1.0".parse().ok()?;
            return k(rest).map(|k| PaperMetric::GPassAtK(k, tau));
        }
        if let Some(c) = PASS.captures(base) {
            return k(&c[1]).map(PaperMetric::PassAtK);
        }
        // Spelled as the paper does, then read by gpassk's one metric-name parser.
        let c = GPASS.captures(base)?;
        let spelled = match c.get(3) {
            Some(t) => format!("G-Pass@{}_{}", &c[2], t.as_str()),
            None if c[1].starts_with(['m', 'M']) => format!("mG-Pass@{}", &c[2]),
            None => return None,
        };
        PaperMetric::of(spelled.parse().ok()?)
    }

    /// The paper metric a gpassk metric is, if it is one of pass@k, G-Pass@k_τ, mG-Pass@k.
    pub fn of(metric: MetricKind) -> Option<PaperMetric> {
        match metric {
            MetricKind::PassAtK { k } => Some(PaperMetric::PassAtK(k)),
            MetricKind::GPassAtK { k, tau } => Some(PaperMetric::GPassAtK(k, tau)),
            MetricKind::MGPassAtK { k } => Some(PaperMetric::MGPassAtK(k)),
            _ => None,
        }
    }

    /// K of a metric that is the mean correctness of a document's K samples
    /// (`pass@k:k=1&n=6`, `math_pass@1:4_samples`): its value × K is the document's c.
    pub fn samples_in_mean(name: &str) -> Option<u64> {
        let c = MEAN_OF.captures(name)?;
        c.get(1).or(c.get(2))?.as_str().parse().ok()
    }

    /// `G-Pass@16_0.5`, `mG-Pass@16`, `pass@4`, `c/n`: gpassk's name of the metric.
    pub fn label(&self) -> String {
        match self {
            PaperMetric::Accuracy => "c/n".into(),
            PaperMetric::PassAtK(k) => format!("pass@{k}"),
            PaperMetric::GPassAtK(k, t) => format!("G-Pass@{k}_{t}"),
            PaperMetric::MGPassAtK(k) => format!("mG-Pass@{k}"),
            PaperMetric::FirstK(k) => format!("c/{k} of the first {k} samples"),
            PaperMetric::Any => "pass@n".into(),
        }
    }
}

/// The mean over problems of `metric`, each problem given by its verdicts in sample order,
/// computed exactly and turned into f64 once; Err says why it cannot be (no problems, k above
/// some problem's n).
pub(crate) fn mean_over_problems(
    problems: &[Vec<bool>],
    metric: &PaperMetric,
) -> Result<f64, String> {
    use crate::metrics::{g_pass_at_k, mg_pass_at_k, pass_at_k, to_f64};
    use num_rational::BigRational;
    if problems.is_empty() {
        return Err("no problems to average".into());
    }
    let ratio = |c: u64, n: u64| BigRational::new((c as i64).into(), (n as i64).into());
    let mut sum = BigRational::from_integer(0.into());
    for verdicts in problems {
        let n = verdicts.len() as u64;
        let c = verdicts.iter().filter(|&&v| v).count() as u64;
        let v = match metric {
            PaperMetric::Accuracy if n > 0 => Ok(ratio(c, n)),
            PaperMetric::Accuracy => return Err("a problem has no sample".into()),
            PaperMetric::FirstK(k) if *k <= n => {
                let first = verdicts.iter().take(*k as usize).filter(|&&v| v).count();
                Ok(ratio(first as u64, *k))
            }
            PaperMetric::FirstK(k) => {
                return Err(format!("a problem has {n} samples, fewer than k = {k}"))
            }
            PaperMetric::Any => Ok(ratio(u64::from(c > 0), 1)),
            PaperMetric::PassAtK(k) => pass_at_k(n, c, *k),
            PaperMetric::GPassAtK(k, t) => g_pass_at_k(n, c, *k, t),
            PaperMetric::MGPassAtK(k) => mg_pass_at_k(n, c, *k),
        }
        .map_err(|e| format!("{}: {e}", metric.label()))?;
        sum += v;
    }
    Ok(to_f64(
        &(sum / BigRational::from_integer((problems.len() as i64).into())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_reads_as_its_metric() {
        let is = |name: &str, label: &str| {
            let m = PaperMetric::parse(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(m.label(), label, "{name}");
        };
        is("accuracy", "c/n");
        is("accuracy (16 runs average)", "c/n");
        is("math_pass@1:4_samples", "c/n");
        is("pass@k:k=1&n=6", "c/n");
        is("pass@4", "pass@4");
        is("pass@k:k=4&n=16", "pass@4");
        is("pass^3", "G-Pass@3_1.0");
        is("pass@1[avg-of-4]", "c/4 of the first 4 samples");
        is("pass@n", "pass@n");
        is("G-Pass@16_0.5", "G-Pass@16_0.5");
        is("math_g-pass@4_0.75", "G-Pass@4_0.75");
        is("mG-Pass@16", "mG-Pass@16");
        is("mmath_g-pass@4", "mG-Pass@4");
        for other in [
            "score",
            "g-pass@4",
            "pass@0",
            "majority@4",
            "pass^x",
            "exact_match",
        ] {
            assert!(PaperMetric::parse(other).is_none(), "{other}");
        }
        assert_eq!(
            PaperMetric::samples_in_mean("math_pass@1:4_samples"),
            Some(4)
        );
    }

    #[test]
    fn means_are_exact_and_refuse_what_cannot_be_computed() {
        let p = |v: &[u8]| v.iter().map(|&b| b == 1).collect::<Vec<bool>>();
        let problems = [p(&[1, 0, 1, 1]), p(&[0, 0, 0, 1])];
        assert_eq!(
            mean_over_problems(&problems, &PaperMetric::Accuracy),
            Ok(0.5)
        );
        // First two samples: 1/2 and 0/2.
        assert_eq!(
            mean_over_problems(&problems, &PaperMetric::FirstK(2)),
            Ok(0.25)
        );
        let pass4 = PaperMetric::parse("pass^4").unwrap();
        assert_eq!(mean_over_problems(&problems, &pass4), Ok(0.0));
        assert!(mean_over_problems(&problems, &PaperMetric::FirstK(5)).is_err());
        assert!(mean_over_problems(&[], &PaperMetric::Accuracy).is_err());
    }
}
