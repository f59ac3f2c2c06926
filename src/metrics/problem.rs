//! Per-problem pass@k, G-Pass@k_τ and mG-Pass@k as exact rationals, and a cache of them per (n, k).
//! The definitions, pitfalls and reference values are in docs/metrics.md.

use super::binom::{binomial, hypergeometric_terms, Terms};
use super::{check_nck, ratio, MetricsError, Tau};
use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use std::ops::RangeInclusive;

/// The exact metrics of one problem for one k.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerProblem {
    pub pass_at_k: BigRational,
    /// Aligned with the τ list the metrics were computed for.
    pub g_pass_at_k: Vec<BigRational>,
    pub mg_pass_at_k: BigRational,
}

/// Integer thresholds of mG-Pass@k: ⌈k/2⌉+1 ..= k (empty for k = 1).
pub fn mg_thresholds(k: u64) -> RangeInclusive<u64> {
    (k.div_ceil(2) + 1)..=k
}

/// A numerator kept in u128 while it fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Num {
    Small(u128),
    Big(BigUint),
}

impl Num {
    pub(crate) fn to_big(&self) -> BigUint {
        match self {
            Num::Small(v) => BigUint::from(*v),
            Num::Big(v) => v.clone(),
        }
    }
}

/// Numerators of one (n, c, k) over the shared denominators C(n, k) (pass, G-Pass) and k·C(n, k) (mG).
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) pass: Num,
    pub(crate) g: Vec<Num>,
    pub(crate) mg: Num,
}

fn row_from_terms(terms: Terms, k: u64, thresholds: &[u64]) -> Row {
    match terms {
        Terms::Small { lo, terms } => {
            // Suffix sums never exceed C(n, k), which fits u128 on this path.
            let mut suffix = vec![0u128; terms.len() + 1];
            for i in (0..terms.len()).rev() {
                suffix[i] = suffix[i + 1] + terms[i];
            }
            let tail = |m: u64| -> u128 {
                let idx = m.saturating_sub(lo) as usize;
                suffix.get(idx).copied().unwrap_or(0)
            };
            let mut mg: Option<u128> = Some(0);
            for m in mg_thresholds(k) {
                mg = mg.and_then(|s| s.checked_add(tail(m)));
            }
            let mg = match mg.and_then(|s| s.checked_mul(2)) {
                Some(v) => Num::Small(v),
                None => Num::Big(
                    mg_thresholds(k)
                        .map(|m| BigUint::from(tail(m)))
                        .sum::<BigUint>()
                        * 2u32,
                ),
            };
            Row {
                pass: Num::Small(tail(1)),
                g: thresholds.iter().map(|&m| Num::Small(tail(m))).collect(),
                mg,
            }
        }
        Terms::Big { lo, terms } => {
            let mut suffix = vec![BigUint::zero(); terms.len() + 1];
            for i in (0..terms.len()).rev() {
                suffix[i] = &suffix[i + 1] + &terms[i];
            }
            let tail = |m: u64| -> BigUint {
                let idx = m.saturating_sub(lo) as usize;
                suffix.get(idx).cloned().unwrap_or_default()
            };
            let mg: BigUint = mg_thresholds(k).map(tail).sum::<BigUint>() * 2u32;
            Row {
                pass: Num::Big(tail(1)),
                g: thresholds.iter().map(|&m| Num::Big(tail(m))).collect(),
                mg: Num::Big(mg),
            }
        }
    }
}

fn to_rational(num: &Num, den: &BigUint) -> BigRational {
    if let (Num::Small(p), Some(q)) = (num, den.to_u128()) {
        // Reducing in u128 first avoids BigInt gcd on the hot path.
        let g = num_integer::Integer::gcd(p, &q).max(1);
        return BigRational::new_raw(BigInt::from(p / g), BigInt::from(q / g));
    }
    ratio(BigInt::from(num.to_big()), BigInt::from(den.clone()))
}

/// All metrics of one problem, computed directly (no cache).
pub fn problem_metrics(n: u64, c: u64, k: u64, taus: &[Tau]) -> Result<PerProblem, MetricsError> {
    check_nck(n, c, k)?;
    let thresholds: Vec<u64> = taus.iter().map(|t| t.threshold(k)).collect();
    let row = row_from_terms(hypergeometric_terms(n, c, k), k, &thresholds);
    let den = binomial(n, k);
    Ok(per_problem_from_row(&row, &den, k))
}

fn per_problem_from_row(row: &Row, den: &BigUint, k: u64) -> PerProblem {
    let mg_den = den * k;
    PerProblem {
        pass_at_k: to_rational(&row.pass, den),
        g_pass_at_k: row.g.iter().map(|g| to_rational(g, den)).collect(),
        mg_pass_at_k: to_rational(&row.mg, &mg_den),
    }
}

/// pass@k = 1 − C(n−c, k)/C(n, k).
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Result<BigRational, MetricsError> {
    g_pass_at_k_threshold(n, c, k, 1)
}

/// G-Pass@k_τ with m = max(⌈τ·k⌉, 1).
pub fn g_pass_at_k(n: u64, c: u64, k: u64, tau: &Tau) -> Result<BigRational, MetricsError> {
    g_pass_at_k_threshold(n, c, k, tau.threshold(k))
}

/// P(at least m of k samples drawn without replacement are correct); m = 0 is treated as 1.
pub fn g_pass_at_k_threshold(n: u64, c: u64, k: u64, m: u64) -> Result<BigRational, MetricsError> {
    check_nck(n, c, k)?;
    let row = row_from_terms(hypergeometric_terms(n, c, k), k, &[m.max(1)]);
    Ok(to_rational(&row.g[0], &binomial(n, k)))
}

/// mG-Pass@k = (2/k)·Σ_{m=⌈k/2⌉+1}^{k} G-Pass@k with integer threshold m.
pub fn mg_pass_at_k(n: u64, c: u64, k: u64) -> Result<BigRational, MetricsError> {
    Ok(problem_metrics(n, c, k, &[])?.mg_pass_at_k)
}

/// Every c's metrics for one (n, k, τ grid), so problems that share n and k cost a lookup.
#[derive(Debug, Clone)]
pub struct MetricTable {
    n: u64,
    k: u64,
    thresholds: Vec<u64>,
    denom: BigUint,
    rows: Vec<Row>,
}

impl MetricTable {
    pub fn new(n: u64, k: u64, taus: &[Tau]) -> Result<MetricTable, MetricsError> {
        check_nck(n, 0, k)?;
        let thresholds: Vec<u64> = taus.iter().map(|t| t.threshold(k)).collect();
        let rows = (0..=n)
            .map(|c| row_from_terms(hypergeometric_terms(n, c, k), k, &thresholds))
            .collect();
        Ok(MetricTable {
            n,
            k,
            thresholds,
            denom: binomial(n, k),
            rows,
        })
    }

    pub fn n(&self) -> u64 {
        self.n
    }

    pub fn k(&self) -> u64 {
        self.k
    }

    /// The thresholds m used for each τ, in the order given.
    pub fn thresholds(&self) -> &[u64] {
        &self.thresholds
    }

    /// C(n, k): the denominator of pass@k and G-Pass@k (mG-Pass@k uses k·C(n, k)).
    pub fn denominator(&self) -> &BigUint {
        &self.denom
    }

    pub(crate) fn row(&self, c: u64) -> Result<&Row, MetricsError> {
        self.rows
            .get(c as usize)
            .ok_or(MetricsError::CExceedsN { c, n: self.n })
    }

    /// The exact metrics of a problem with c correct out of this table's n.
    pub fn per_problem(&self, c: u64) -> Result<PerProblem, MetricsError> {
        Ok(per_problem_from_row(self.row(c)?, &self.denom, self.k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taus() -> Vec<Tau> {
        Tau::default_grid()
    }

    fn one() -> BigRational {
        BigRational::from_integer(1.into())
    }

    fn r(num: i64, den: i64) -> BigRational {
        BigRational::new(num.into(), den.into())
    }

    #[test]
    fn table_matches_direct_computation() {
        for (n, k) in [(16u64, 4u64), (48, 16), (20, 20), (7, 1)] {
            let table = MetricTable::new(n, k, &taus()).unwrap();
            for c in 0..=n {
                assert_eq!(
                    table.per_problem(c).unwrap(),
                    problem_metrics(n, c, k, &taus()).unwrap()
                );
            }
            assert!(table.per_problem(n + 1).is_err());
        }
    }

    #[test]
    fn tiny_cases_by_hand() {
        // n=4, c=2, k=2: P(X>=1) = 1 - C(2,2)/C(4,2) = 5/6; P(X=2) = 1/6.
        assert_eq!(pass_at_k(4, 2, 2).unwrap(), r(5, 6));
        assert_eq!(g_pass_at_k_threshold(4, 2, 2, 2).unwrap(), r(1, 6));
        // mG for k=2 uses m in 2..=2: (2/2)·(1/6).
        assert_eq!(mg_pass_at_k(4, 2, 2).unwrap(), r(1, 6));
        assert_eq!(mg_pass_at_k(16, 3, 1).unwrap(), BigRational::zero());
        assert_eq!(pass_at_k(5, 5, 3).unwrap(), one());
        assert_eq!(pass_at_k(5, 0, 3).unwrap(), BigRational::zero());
    }

    #[test]
    fn table_rejects_k_above_n() {
        // The per-function argument errors are covered in tests/metrics_reference.rs.
        assert_eq!(
            MetricTable::new(3, 4, &[]).unwrap_err(),
            MetricsError::KExceedsN { k: 4, n: 3 }
        );
    }
}
