//! Binomial coefficients and hypergeometric term tables, in u128 where they fit and BigUint beyond.

use num_bigint::BigUint;
use num_traits::{One, Zero};

/// C(n, k) exactly; 0 when k > n.
pub fn binomial(n: u64, k: u64) -> BigUint {
    if k > n {
        return BigUint::zero();
    }
    match binomial_u128(n, k) {
        Some(v) => BigUint::from(v),
        None => binomial_big(n, k),
    }
}

/// C(n, k) in u128, or None when an intermediate value would overflow.
pub(crate) fn binomial_u128(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        let num = (n - i) as u128;
        let den = (i + 1) as u128;
        let g = gcd(acc, den);
        let (a, d) = (acc / g, den / g);
        // acc/g and d are coprime and acc·num is a multiple of den, so d divides num.
        acc = a.checked_mul(num / d)?;
    }
    Some(acc)
}

fn binomial_big(n: u64, k: u64) -> BigUint {
    let k = k.min(n - k);
    let mut acc = BigUint::one();
    for i in 0..k {
        acc *= n - i;
        acc /= i + 1;
    }
    acc
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// The non-zero hypergeometric numerators C(c, j)·C(n−c, k−j) for j = lo..=hi.
pub(crate) enum Terms {
    Small { lo: u64, terms: Vec<u128> },
    Big { lo: u64, terms: Vec<BigUint> },
}

/// Computes the term table for (n, c, k); the caller has validated k ≤ n and c ≤ n.
pub(crate) fn hypergeometric_terms(n: u64, c: u64, k: u64) -> Terms {
    let lo = k.saturating_sub(n - c);
    let hi = c.min(k);
    if let Some(terms) = terms_u128(n, c, k, lo, hi) {
        return Terms::Small { lo, terms };
    }
    let mut terms = Vec::with_capacity((hi - lo + 1) as usize);
    let mut a = binomial_big(c, lo);
    let mut b = binomial_big(n - c, k - lo);
    for j in lo..=hi {
        terms.push(&a * &b);
        if j < hi {
            // Same exact recurrences as the u128 path; each division is exact.
            a *= c - j;
            a /= j + 1;
            let r = k - j;
            b *= r;
            b /= n - c - r + 1;
        }
    }
    Terms::Big { lo, terms }
}

fn terms_u128(n: u64, c: u64, k: u64, lo: u64, hi: u64) -> Option<Vec<u128>> {
    // Every non-zero term is at most C(n, k), so checking that it fits covers the products.
    binomial_u128(n, k)?;
    let mut out = Vec::with_capacity((hi - lo + 1) as usize);
    let mut a = binomial_u128(c, lo)?; // C(c, j)
    let mut b = binomial_u128(n - c, k - lo)?; // C(n-c, k-j)
    for j in lo..=hi {
        out.push(a.checked_mul(b)?);
        if j < hi {
            // C(c, j+1) = C(c, j)·(c−j)/(j+1); C(m, r−1) = C(m, r)·r/(m−r+1), m = n−c, r = k−j.
            a = mul_div_exact(a, (c - j) as u128, (j + 1) as u128)?;
            let r = k - j;
            b = mul_div_exact(b, r as u128, (n - c - r + 1) as u128)?;
        }
    }
    Some(out)
}

fn mul_div_exact(x: u128, m: u128, d: u128) -> Option<u128> {
    let g = gcd(x, d);
    let (x, d) = (x / g, d / g);
    let g2 = gcd(m, d);
    let (m, d) = (m / g2, d / g2);
    if d != 1 {
        return None;
    }
    x.checked_mul(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values() {
        assert_eq!(binomial(5, 2), BigUint::from(10u32));
        assert_eq!(binomial(48, 16), BigUint::from(2_254_848_913_647u64));
        assert_eq!(binomial(3, 5), BigUint::zero());
        assert_eq!(binomial(0, 0), BigUint::one());
    }

    #[test]
    fn fast_path_matches_big_path_across_boundary() {
        for n in [60u64, 100, 130, 131, 140, 200] {
            for k in 0..=n {
                let big = binomial_big(n, k);
                if let Some(v) = binomial_u128(n, k) {
                    assert_eq!(BigUint::from(v), big, "C({n},{k})");
                }
                assert_eq!(binomial(n, k), big);
            }
        }
    }

    #[test]
    fn pascal_rule_holds_for_big_values() {
        for k in [1u64, 100, 500, 999] {
            assert_eq!(binomial(1000, k), binomial(999, k - 1) + binomial(999, k));
        }
    }

    #[test]
    fn terms_sum_to_total_both_paths() {
        for (n, c, k) in [(48u64, 24u64, 16u64), (200, 70, 100), (300, 150, 150)] {
            let total = binomial(n, k);
            let sum: BigUint = match hypergeometric_terms(n, c, k) {
                Terms::Small { terms, .. } => terms.iter().map(|&t| BigUint::from(t)).sum(),
                Terms::Big { terms, .. } => terms.into_iter().sum(),
            };
            assert_eq!(sum, total, "n={n} c={c} k={k}");
        }
    }
}
