//! Confidence intervals for the mean of per-problem values in [0, 1]: Clopper–Pearson bounds on
//! their sum, exact for 0/1 values and conservative for fractional ones.
//!
//! For m problems whose values sum to s, the bounds are the α/2 quantile of Beta(s, m − s + 1) and
//! the 1 − α/2 quantile of Beta(s + 1, m − s) (Clopper and Pearson 1934), with s real. A value in
//! [0, 1] with mean μ has variance at most μ(1 − μ) (Bhatia and Davis 2000), the Bernoulli case, so
//! the design effect of fractional values is at most 1 and the Korn–Graubard interval with its
//! effective sample size capped at m (Korn and Graubard 1998) is this one. The bounds never meet:
//! all-zero or all-one values still give the exact binomial width.

use statrs::function::beta::inv_beta_reg;

/// The interval of a mean of `count` values in [0, 1] summing to `sum`, at confidence `level`.
/// `None` when nothing was scored.
pub fn mean_interval(sum: f64, count: usize, level: f64) -> Option<(f64, f64)> {
    if count == 0 || !sum.is_finite() {
        return None;
    }
    let m = count as f64;
    // Exact sums reach f64 with rounding error: keep them inside [0, m].
    let s = sum.clamp(0.0, m);
    let tail = (1.0 - level) / 2.0;
    let lo = if s <= 0.0 {
        0.0
    } else {
        beta_quantile(s, m - s + 1.0, tail, 0.0)
    };
    let hi = if s >= m {
        1.0
    } else {
        beta_quantile(s + 1.0, m - s, 1.0 - tail, 1.0)
    };
    Some((lo.min(s / m), hi.max(s / m)))
}

/// A Beta quantile, or `fallback` if the numerical inversion fails.
fn beta_quantile(a: f64, b: f64, q: f64, fallback: f64) -> f64 {
    let x = inv_beta_reg(a, b, q);
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        fallback
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64)) -> bool {
        (a.0 - b.0).abs() < 5e-5 && (a.1 - b.1).abs() < 5e-5
    }

    #[test]
    fn matches_published_clopper_pearson_bounds() {
        // Exact binomial bounds as tabulated by R's binom.test.
        let cases = [
            ((12.0, 12), (0.735_36, 1.0)),
            ((0.0, 10), (0.0, 0.308_50)),
            ((5.0, 10), (0.187_09, 0.812_91)),
            ((1.0, 1), (0.025, 1.0)),
            ((3.0, 20), (0.032_07, 0.378_94)),
        ];
        for ((s, m), want) in cases {
            let got = mean_interval(s, m, 0.95).unwrap();
            assert!(close(got, want), "{s}/{m}: {got:?} vs {want:?}");
        }
    }

    #[test]
    fn never_collapses_and_contains_the_mean() {
        for m in [1usize, 2, 5, 12, 300] {
            for s in [0.0, 1e-9, 0.3, m as f64 / 3.0, m as f64 - 0.5, m as f64] {
                let s = f64::min(s, m as f64);
                let (lo, hi) = mean_interval(s, m, 0.95).unwrap();
                let mean = s / m as f64;
                assert!(hi - lo > 0.005, "{s}/{m}: [{lo}, {hi}]");
                assert!((0.0..=mean).contains(&lo) && (mean..=1.0).contains(&hi));
            }
        }
        assert_eq!(mean_interval(0.0, 0, 0.95), None);
    }

    #[test]
    fn fractional_sums_lie_between_their_integer_neighbours() {
        let a = mean_interval(4.0, 10, 0.95).unwrap();
        let b = mean_interval(4.5, 10, 0.95).unwrap();
        let c = mean_interval(5.0, 10, 0.95).unwrap();
        assert!(a.0 < b.0 && b.0 < c.0 && a.1 < b.1 && b.1 < c.1);
    }
}
