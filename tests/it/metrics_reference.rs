//! The metrics engine against the reference table of docs/metrics.md (and that table against the
//! engine), the known pitfalls, invariants and statrs.

use gpassk::metrics::{
    binomial, g_pass_at_k, g_pass_at_k_threshold, mg_pass_at_k, pass_at_k, problem_metrics, to_f64,
    MetricTable, MetricsError, Tau,
};
use num_bigint::BigInt;
use num_rational::BigRational;
use statrs::distribution::{DiscreteCDF, Hypergeometric};

fn q(s: &str) -> BigRational {
    match s.split_once('/') {
        Some((a, b)) => {
            BigRational::new(a.parse::<BigInt>().unwrap(), b.parse::<BigInt>().unwrap())
        }
        None => BigRational::from_integer(s.parse::<BigInt>().unwrap()),
    }
}

fn tau(s: &str) -> Tau {
    s.parse().unwrap()
}

/// (n, c, k, pass@k, [τ=0.25, 0.5, 0.75, 1.0], mG-Pass@k): exact fractions whose 6-place roundings
/// are the rows of docs/metrics.md's "Reference values".
type Row = (u64, u64, u64, &'static str, [&'static str; 4], &'static str);

const REFERENCE: &[Row] = &[
    (
        16,
        8,
        4,
        "25/26",
        ["25/26", "93/130", "37/130", "1/26"],
        "21/130",
    ),
    (16, 12, 8, "1", ["1", "1", "93/130", "1/26"], "1/2"),
    (16, 15, 16, "1", ["1", "1", "1", "0"], "7/8"),
    (
        48,
        24,
        16,
        "3065856/3065857",
        [
            "3058208/3065857",
            "1900664/3065857",
            "140155/9197571",
            "1/3065857",
        ],
        "245157/3065857",
    ),
    (
        48,
        40,
        16,
        "1",
        ["1", "1", "58555466/62891499", "584350/20963833"],
        "2/3",
    ),
    (16, 3, 1, "3/16", ["3/16", "3/16", "3/16", "3/16"], "0"),
];

/// The rows of docs/metrics.md's "Reference values" table as printed: (n, c, k) and the six values
/// rounded to 6 places (pass@k, G-Pass@k at τ = 0.25, 0.5, 0.75, 1.0, mG-Pass@k).
fn documented_rows() -> Vec<((u64, u64, u64), [f64; 6])> {
    let text = crate::common::read(&crate::common::repo().join("docs/metrics.md"));
    let section = text
        .split("\n## Reference values\n")
        .nth(1)
        .expect("docs/metrics.md has a \"## Reference values\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let rows = section.lines().filter(|l| l.starts_with("| ")).skip(1);
    rows.map(|line| {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 9, "docs/metrics.md reference row: {line}");
        let int = |i: usize| {
            cells[i]
                .parse::<u64>()
                .unwrap_or_else(|e| panic!("{line}: {e}"))
        };
        let num = |i: usize| {
            cells[i]
                .parse::<f64>()
                .unwrap_or_else(|e| panic!("{line}: {e}"))
        };
        let values = [num(3), num(4), num(5), num(6), num(7), num(8)];
        ((int(0), int(1), int(2)), values)
    })
    .collect()
}

#[test]
fn reference_table_exact() {
    let grid = Tau::default_grid();
    let documented = documented_rows();
    assert_eq!(
        documented.len(),
        REFERENCE.len(),
        "rows of docs/metrics.md's table"
    );
    for (i, &(n, c, k, pass, g, mg)) in REFERENCE.iter().enumerate() {
        let m = problem_metrics(n, c, k, &grid).unwrap();
        assert_eq!(m.pass_at_k, q(pass), "pass@k row {i}");
        for (j, want) in g.iter().enumerate() {
            assert_eq!(m.g_pass_at_k[j], q(want), "G-Pass row {i} tau {}", grid[j]);
            assert_eq!(g_pass_at_k(n, c, k, &grid[j]).unwrap(), q(want));
        }
        assert_eq!(m.mg_pass_at_k, q(mg), "mG row {i}");
        assert_eq!(mg_pass_at_k(n, c, k).unwrap(), q(mg));
        let (nck, printed) = documented[i];
        assert_eq!(nck, (n, c, k), "row {i} of docs/metrics.md");
        let ours = [
            to_f64(&m.pass_at_k),
            to_f64(&m.g_pass_at_k[0]),
            to_f64(&m.g_pass_at_k[1]),
            to_f64(&m.g_pass_at_k[2]),
            to_f64(&m.g_pass_at_k[3]),
            to_f64(&m.mg_pass_at_k),
        ];
        for (a, b) in ours.iter().zip(printed) {
            assert!(
                (a - b).abs() <= 5e-7,
                "row {i}: {a} vs {b} in docs/metrics.md"
            );
        }
    }
}

#[test]
fn blog_formula_pitfalls_are_not_reproduced() {
    // "pass@k set to 0 when c/n < τ" gives 1.0 here; G-Pass@16_0.5 is 0.620.
    let v = to_f64(&g_pass_at_k(48, 24, 16, &tau("0.5")).unwrap());
    assert!((v - 0.619945).abs() < 1e-6, "{v}");
    // ... and gives 0 here; G-Pass@16_1.0 at c=47 is 2/3.
    assert_eq!(g_pass_at_k(48, 47, 16, &tau("1.0")).unwrap(), q("2/3"));
}

#[test]
fn float_ceiling_pitfall_is_avoided() {
    // In f64, 0.28 * 25 = 7.000000000000001 and the ceiling would be 8.
    assert_eq!(tau("0.28").threshold(25), 7);
    assert_eq!(
        g_pass_at_k(40, 20, 25, &tau("0.28")).unwrap(),
        g_pass_at_k_threshold(40, 20, 25, 7).unwrap()
    );
    assert_ne!(
        g_pass_at_k(40, 20, 25, &tau("0.28")).unwrap(),
        g_pass_at_k_threshold(40, 20, 25, 8).unwrap()
    );
}

#[test]
fn odd_k_uses_integer_thresholds_not_the_integral() {
    // k=5: thresholds 4 and 5, so (2/5)(G4 + G5) = 56/705 ≈ 0.079 (the integral would give 0.179).
    assert_eq!(mg_pass_at_k(48, 24, 5).unwrap(), q("56/705"));
}

#[test]
fn g_pass_is_non_increasing_in_tau_and_starts_at_pass_at_k() {
    let taus: Vec<Tau> = (1..=20)
        .map(|i| Tau::from_fraction(i, 20).unwrap())
        .collect();
    for n in [8u64, 16, 33, 48] {
        for k in [1u64, 2, 4, 7, 8].into_iter().filter(|&k| k <= n) {
            for c in 0..=n {
                let m = problem_metrics(n, c, k, &taus).unwrap();
                assert_eq!(m.g_pass_at_k[0], pass_at_k(n, c, k).unwrap());
                assert_eq!(g_pass_at_k(n, c, k, &tau("0")).unwrap(), m.pass_at_k);
                for w in m.g_pass_at_k.windows(2) {
                    assert!(w[0] >= w[1], "n={n} c={c} k={k}");
                }
                let all = BigRational::new(binomial(c, k).into(), binomial(n, k).into());
                assert_eq!(
                    *m.g_pass_at_k.last().unwrap(),
                    all,
                    "G-Pass@k_1.0 = C(c,k)/C(n,k)"
                );
            }
        }
    }
}

#[test]
fn hypergeometric_terms_sum_to_one_for_all_small_n() {
    for n in 1..=40u64 {
        for k in 1..=n {
            for c in 0..=n {
                // P(X >= 0) = P(X >= 1) + P(X = 0), and P(X = 0) = C(n-c,k)/C(n,k).
                let p0 = BigRational::new(binomial(n - c, k).into(), binomial(n, k).into());
                let sum = pass_at_k(n, c, k).unwrap() + p0;
                assert_eq!(
                    sum,
                    BigRational::from_integer(1.into()),
                    "n={n} c={c} k={k}"
                );
            }
        }
    }
}

#[test]
fn agrees_with_statrs_survival_function() {
    let mut worst = 0.0f64;
    for n in (1..=200u64).step_by(7) {
        let table_ks = [1u64, n / 4, n / 2, n].into_iter().filter(|&k| k >= 1);
        for k in table_ks {
            let thresholds: Vec<Tau> = (1..=k).map(|m| Tau::from_fraction(m, k).unwrap()).collect();
            let table = MetricTable::new(n, k, &thresholds).unwrap();
            for c in (0..=n).step_by(3) {
                let dist = Hypergeometric::new(n, c, k).unwrap();
                let ours = table.per_problem(c).unwrap();
                for (i, g) in ours.g_pass_at_k.iter().enumerate() {
                    // sf(x) = P(X > x), so P(X >= m) = sf(m - 1).
                    let theirs = dist.sf(i as u64);
                    worst = worst.max((to_f64(g) - theirs).abs());
                }
            }
        }
    }
    assert!(worst <= 1e-12, "largest difference from statrs: {worst}");
}

#[test]
fn large_n_is_exact() {
    let (n, c, k) = (10_000u64, 3_000u64, 1_000u64);
    let m = problem_metrics(n, c, k, &[tau("0.25"), tau("0.5")]).unwrap();
    // 1 − pass@k is exactly C(n−c, k)/C(n, k).
    let miss = BigRational::new(binomial(n - c, k).into(), binomial(n, k).into());
    assert_eq!(
        m.pass_at_k.clone() + miss,
        BigRational::from_integer(1.into())
    );
    // The mean of the hypergeometric is k·c/n = 300; a threshold at 250 is nearly certain, 500 nearly impossible.
    let g25 = to_f64(&m.g_pass_at_k[0]);
    let g50 = to_f64(&m.g_pass_at_k[1]);
    assert!(g25 > 0.9999 && g25 < 1.0, "{g25}");
    assert!(g50 > 0.0 && g50 < 1e-30, "{g50}");
    // The exact tail complements: P(X >= 250) + P(X <= 249) = 1.
    let below = BigRational::from_integer(1.into()) - g_pass_at_k_threshold(n, c, k, 250).unwrap();
    assert_eq!(
        below + m.g_pass_at_k[0].clone(),
        BigRational::from_integer(1.into())
    );
}

#[test]
fn argument_errors_are_values() {
    assert_eq!(pass_at_k(10, 3, 0), Err(MetricsError::ZeroK));
    assert_eq!(
        pass_at_k(10, 3, 11),
        Err(MetricsError::KExceedsN { k: 11, n: 10 })
    );
    assert_eq!(
        pass_at_k(10, 11, 3),
        Err(MetricsError::CExceedsN { c: 11, n: 10 })
    );
    assert!(matches!(
        "1.2".parse::<Tau>(),
        Err(MetricsError::TauOutOfRange(_))
    ));
    assert!(matches!(
        "half".parse::<Tau>(),
        Err(MetricsError::TauParse { .. })
    ));
}
