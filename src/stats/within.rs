//! Each problem's within-problem variance, estimated without bias from its own c of n.
//!
//! A problem's value is g(c) = E[h(A)], A the number correct among k of its n samples drawn
//! without replacement, and h the metric's kernel (1[A ≥ m] for G-Pass@k, the mean of those over
//! mG-Pass@k's thresholds). Given the problem's solve rate p, its value's sampling variance is
//! Var(g(c) | p) = E[g(c)²] − θ(p)², θ(p) = E[h(Binomial(k, p))]. g(c)² estimates the first term
//! without bias; θ(p)² is the chance that two *disjoint* k-subsets both score, which the average of
//! h(A₁)·h(A₂) over disjoint pairs estimates without bias (a U-statistic of order 2k). So
//! ŵ(c) = g(c)² − E[h(A₁)h(A₂) | c] is unbiased for the variance, exactly, when 2k ≤ n. When
//! 2k > n no unbiased estimate exists (θ² is a polynomial of degree 2k in p, and only degree ≤ n
//! is estimable from n draws), and none is given.
//!
//! Everything is computed in integers over common denominators and turned into f64 at the end.

use crate::metrics::{binomial, mg_thresholds, Tau};
use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};

/// A metric's kernel h(a) for a k-subset with a correct, as an integer numerator over `den`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub k: u64,
    /// h(a)·den for a = 0..=k.
    pub num: Vec<u64>,
    pub den: u64,
}

impl Kernel {
    /// At least `threshold` of the k correct (pass@k is threshold 1).
    pub fn at_least(k: u64, threshold: u64) -> Kernel {
        let t = threshold.max(1);
        Kernel {
            k,
            num: (0..=k).map(|a| u64::from(a >= t)).collect(),
            den: 1,
        }
    }

    /// mG-Pass@k: (2/k)·#{thresholds t of mG-Pass@k with a ≥ t}.
    pub fn mean_g(k: u64) -> Kernel {
        let range = mg_thresholds(k);
        Kernel {
            k,
            num: (0..=k)
                .map(|a| 2 * range.clone().filter(|&t| a >= t).count() as u64)
                .collect(),
            den: k,
        }
    }

    /// The kernels of one k in the column order of `stats::metric_list`: pass@k, G-Pass@k per
    /// τ, mG-Pass@k.
    pub fn columns(k: u64, taus: &[Tau]) -> Vec<Kernel> {
        let mut out = vec![Kernel::at_least(k, 1)];
        out.extend(taus.iter().map(|t| Kernel::at_least(k, t.threshold(k))));
        out.push(Kernel::mean_g(k));
        out
    }

    /// Σ_a C(c, a)·C(n − c, k − a)·num(a): the value g(c) times C(n, k)·den.
    fn value_num(&self, n: u64, c: u64) -> BigUint {
        let lo = self.k.saturating_sub(n - c);
        let hi = c.min(self.k);
        (lo..=hi)
            .filter(|&a| self.num[a as usize] != 0)
            .map(|a| binomial(c, a) * binomial(n - c, self.k - a) * self.num[a as usize])
            .sum()
    }

    /// H₂(j)·C(2k, k)·den²: with j correct among 2k samples split at random into two k-halves,
    /// Σ over the split of h(first)·h(second).
    fn pair_num(&self, j: u64) -> BigUint {
        let k = self.k;
        let lo = j.saturating_sub(k);
        let hi = j.min(k);
        (lo..=hi)
            .filter(|&a| self.num[a as usize] != 0 && self.num[(j - a) as usize] != 0)
            .map(|a| {
                binomial(j, a)
                    * binomial(2 * k - j, k - a)
                    * (self.num[a as usize] * self.num[(j - a) as usize])
            })
            .sum()
    }
}

/// Per c = 0..=n, the exact unbiased within-problem variance estimate of each kernel's value.
#[derive(Debug, Clone, PartialEq)]
pub struct WithinTable {
    pub n: u64,
    /// `rows[c][column]`.
    pub rows: Vec<Vec<f64>>,
}

impl WithinTable {
    /// None when 2k > n (no unbiased estimate exists) or k = 0.
    pub fn new(n: u64, kernels: &[Kernel]) -> Option<WithinTable> {
        let k = kernels.first()?.k;
        if k == 0 || 2 * k > n || kernels.iter().any(|h| h.k != k) {
            return None;
        }
        let exact = exact_rows(n, kernels);
        let rows = exact
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.to_f64().unwrap_or(0.0).max(0.0))
                    .collect()
            })
            .collect();
        Some(WithinTable { n, rows })
    }
}

/// ŵ(c) = g(c)² − Θ̂₂(c) for every c and kernel, as exact fractions.
pub fn exact_rows(n: u64, kernels: &[Kernel]) -> Vec<Vec<BigRational>> {
    let Some(k) = kernels.first().map(|h| h.k) else {
        return vec![Vec::new(); n as usize + 1];
    };
    let value_den = binomial(n, k);
    let pair_den = binomial(n, 2 * k) * binomial(2 * k, k);
    let pairs: Vec<Vec<BigUint>> = kernels
        .iter()
        .map(|h| (0..=2 * k).map(|j| h.pair_num(j)).collect())
        .collect();
    let big = |x: BigUint| BigInt::from(x);
    (0..=n)
        .map(|c| {
            let lo = (2 * k).saturating_sub(n - c);
            let hi = c.min(2 * k);
            kernels
                .iter()
                .zip(&pairs)
                .map(|(h, pair)| {
                    let den2 = BigUint::from(h.den) * h.den;
                    let g = BigRational::new(big(h.value_num(n, c)), big(&value_den * h.den));
                    let theta2: BigUint = (lo..=hi)
                        .filter(|&j| !pair[j as usize].is_zero())
                        .map(|j| binomial(c, j) * binomial(n - c, 2 * k - j) * &pair[j as usize])
                        .sum();
                    let theta2 = BigRational::new(big(theta2), big(&pair_den * den2));
                    &g * &g - theta2
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MetricTable;
    use num_traits::One;

    fn r(a: i64, b: i64) -> BigRational {
        BigRational::new(a.into(), b.into())
    }

    /// P(c | n, p) exactly for a rational p.
    fn binom_pmf(n: u64, c: u64, p: &BigRational) -> BigRational {
        let q = BigRational::one() - p;
        let coef = BigRational::from_integer(BigInt::from(binomial(n, c)));
        coef * num_traits::pow(p.clone(), c as usize) * num_traits::pow(q, (n - c) as usize)
    }

    /// The kernels' values from the metric engine itself (pass, G per τ, mG).
    fn values(n: u64, k: u64, taus: &[Tau], c: u64) -> Vec<BigRational> {
        let v = MetricTable::new(n, k, taus)
            .unwrap()
            .per_problem(c)
            .unwrap();
        let mut out = vec![v.pass_at_k];
        out.extend(v.g_pass_at_k);
        out.push(v.mg_pass_at_k);
        out
    }

    /// E[ŵ(c) | p] equals Var(g(c) | p) exactly, for several n, k, τ and rational p: the
    /// estimate is unbiased, checked against the brute-force variance of the engine's values.
    #[test]
    fn the_estimate_is_unbiased_for_the_variance() {
        let taus = vec![
            Tau::from_fraction(1, 2).unwrap(),
            Tau::from_fraction(1, 1).unwrap(),
        ];
        for (n, k) in [(2u64, 1u64), (6, 2), (8, 4), (9, 3), (16, 8)] {
            let kernels = Kernel::columns(k, &taus);
            let rows = exact_rows(n, &kernels);
            let vals: Vec<Vec<BigRational>> = (0..=n).map(|c| values(n, k, &taus, c)).collect();
            for p in [r(1, 3), r(2, 7), r(9, 10), r(1, 2)] {
                for col in 0..kernels.len() {
                    let mut mean = BigRational::zero();
                    let mut square = BigRational::zero();
                    let mut est = BigRational::zero();
                    for c in 0..=n {
                        let w = binom_pmf(n, c, &p);
                        mean += &w * &vals[c as usize][col];
                        square += &w * &vals[c as usize][col] * &vals[c as usize][col];
                        est += &w * &rows[c as usize][col];
                    }
                    let var = square - &mean * &mean;
                    assert_eq!(est, var, "n={n} k={k} col={col} p={p}");
                }
            }
        }
    }

    /// On small cases, Θ̂₂(c) is the average over every ordered pair of disjoint k-subsets of an
    /// actual sample set (c correct of n) of h(first)·h(second), enumerated.
    #[test]
    fn the_pair_term_matches_enumerated_disjoint_subsets() {
        let taus = vec![Tau::from_fraction(1, 2).unwrap()];
        for (n, k) in [(4u64, 2u64), (6, 2), (6, 3), (7, 3)] {
            let kernels = Kernel::columns(k, &taus);
            let rows = exact_rows(n, &kernels);
            for c in 0..=n {
                let vals = values(n, k, &taus, c);
                let correct = |s: u32| (s & ((1u32 << c) - 1)).count_ones() as u64;
                let subsets: Vec<u32> = (0u32..1 << n)
                    .filter(|s| s.count_ones() as u64 == k)
                    .collect();
                for (col, h) in kernels.iter().enumerate() {
                    let (mut sum, mut count) = (BigRational::zero(), 0i64);
                    for &a in &subsets {
                        for &b in subsets.iter().filter(|&&b| a & b == 0) {
                            let ha = r(h.num[correct(a) as usize] as i64, h.den as i64);
                            let hb = r(h.num[correct(b) as usize] as i64, h.den as i64);
                            sum += ha * hb;
                            count += 1;
                        }
                    }
                    let theta2 = sum / r(count, 1);
                    let want = &vals[col] * &vals[col] - theta2;
                    assert_eq!(rows[c as usize][col], want, "n={n} k={k} c={c} col={col}");
                }
            }
        }
    }

    #[test]
    fn none_where_no_unbiased_estimate_exists() {
        let taus = Tau::default_grid();
        assert!(WithinTable::new(16, &Kernel::columns(16, &taus)).is_none());
        assert!(WithinTable::new(15, &Kernel::columns(8, &taus)).is_none());
        let t = WithinTable::new(16, &Kernel::columns(8, &taus)).unwrap();
        // c = 0 and c = n leave nothing to vary: the estimate is 0.
        assert!(t.rows[0].iter().chain(&t.rows[16]).all(|&v| v == 0.0));
        // pass@1 from c of n: the textbook p̂(1 − p̂)/(n − 1).
        let one = WithinTable::new(10, &Kernel::columns(1, &[])).unwrap();
        assert!((one.rows[3][0] - 0.3 * 0.7 / 9.0).abs() < 1e-15);
    }
}
