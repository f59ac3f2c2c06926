//! The fixed-seed copy of `cargo bench --bench coverage`: the bars on a smaller grid.

use super::*;

fn grid(problems: usize, difficulty: Difficulty, paired: bool) -> Setup {
    Setup {
        paired,
        ..Setup::grid(problems, difficulty, 16)
    }
}

#[test]
fn truths_match_closed_forms() {
    let model = Model::new(&grid(10, DIFFICULTIES[1], false));
    let mean_p: f64 = model.rates.iter().sum::<f64>() / LEVELS as f64;
    let over =
        |f: &dyn Fn(f64) -> f64| model.rates.iter().map(|&p| f(p)).sum::<f64>() / LEVELS as f64;
    let pass4 = over(&|p| 1.0 - (1.0 - p).powi(4));
    let all16 = over(&|p| p.powi(16));
    let col = |m: MetricKind| model.columns.iter().find(|c| c.metric == m).unwrap();
    let tau1 = Tau::from_fraction(1, 1).unwrap();
    assert!((col(MetricKind::Greedy).truth - mean_p).abs() < 1e-12);
    assert!((col(MetricKind::PassAtK { k: 1 }).truth - mean_p).abs() < 1e-9);
    assert!((col(MetricKind::PassAtK { k: 4 }).truth - pass4).abs() < 1e-9);
    let g = col(MetricKind::GPassAtK { k: 16, tau: tau1 });
    assert!((g.truth - all16).abs() < 1e-9, "{} vs {all16}", g.truth);
    // With n = k = 16, G-Pass@16 at τ = 1 is a coin with that mean: its SD is √(μ(1 − μ)).
    assert!((g.sd - (all16 * (1.0 - all16)).sqrt()).abs() < 1e-9);
    // pass@1's SD: between-problem Var(p) plus within E[p(1 − p)]/16.
    let var = over(&|p| p * p) - mean_p * mean_p + over(&|p| p * (1.0 - p)) / 16.0;
    assert!((col(MetricKind::PassAtK { k: 1 }).sd - var.sqrt()).abs() < 1e-9);
    let maj = col(MetricKind::Majority).truth;
    assert!(maj > mean_p - 0.2 && maj < 1.0, "{maj}");
    // One column per quantity: G-Pass@1 is pass@1, and mG-Pass@1 (always 0) is left out.
    assert_eq!(model.columns.len(), 2 + 1 + 3 * 4);
}

/// The bars, on n = 16 and 600 benchmarks per difficulty (Monte Carlo noise about ±0.9
/// points, so the coverage band is widened by a point each side): at 30 problems every
/// non-sparse cell covers within [92.5%, 98.5%] with a mean width at most 1.15× the oracle's;
/// sparse cells and 10 problems cover at least 92.5%; no interval is a point.
#[test]
fn intervals_cover_at_the_oracle_width() {
    const REPS: usize = 600;
    for problems in [10, 30] {
        for (i, d) in DIFFICULTIES.iter().enumerate() {
            let s = grid(problems, *d, false);
            let out = simulate(&s, REPS, 0x5eed ^ (problems * 10 + i) as u64);
            for m in &out.metrics {
                let cover = m.covered as f64 / REPS as f64;
                let width = out.width_ratio(m, problems);
                let cell = format!("{problems} {} {}: {cover} × {width}", d.name, m.metric);
                assert_eq!(m.points, 0, "{cell}");
                assert!(cover >= 0.925, "{cell}");
                if problems == 30 && !m.sparse(problems) {
                    assert!(cover <= 0.985 && width <= 1.15, "{cell}");
                }
            }
        }
    }
}

/// Copies of one question (LiveMathBench's English and Chinese) taken as independent problems
/// undercover; clustered, they cover.
#[test]
fn clustering_copies_keeps_coverage() {
    const REPS: usize = 400;
    let s = Setup {
        copies: true,
        ..grid(30, DIFFICULTIES[1], false)
    };
    let out = simulate(&s, REPS, 0xC0);
    let pass1 = out
        .metrics
        .iter()
        .find(|m| m.metric == MetricKind::PassAtK { k: 1 })
        .unwrap();
    assert!(pass1.covered as f64 / REPS as f64 >= 0.925, "{pass1:?}");
    assert!(
        (pass1.covered_unclustered as f64) < 0.9 * REPS as f64,
        "{pass1:?}"
    );
}

/// compare's family (the headline metrics, Holm) flags two runs of one model in under 5% of
/// comparisons (plus the ±1 point of Monte Carlo noise at this size), and flags a 15-point drop
/// in every solve rate on 30 mixed problems.
#[test]
fn compare_keeps_its_level_and_has_power() {
    const REPS: usize = 300;
    let mut flags = 0;
    for (i, d) in DIFFICULTIES.iter().enumerate() {
        let out = simulate(&grid(30, *d, true), REPS, 0xF1A6 ^ i as u64);
        flags += out.headline_flags;
    }
    let rate = flags as f64 / (3 * REPS) as f64;
    assert!(rate <= 0.06, "{rate}");
    let drop = Setup {
        drop: 0.15,
        ..grid(30, DIFFICULTIES[1], true)
    };
    let out = simulate(&drop, 100, 0xD0);
    let pass1 = out
        .metrics
        .iter()
        .find(|m| m.metric == MetricKind::PassAtK { k: 1 })
        .unwrap();
    assert!(pass1.flagged_adjusted >= 80, "{pass1:?}");
}

/// `plan`'s designs reach the power they state (within the ±8 points of the issue, plus Monte
/// Carlo noise of about ±4 points at 80 plans of 8 pairs of runs each): from 30 problems at n = 16, pass@1 on the
/// mixed population and pass@16 on the easy one, whose drop lands on the few problems whose
/// solve rate falls near zero (the normal approximation promised 80% there and reached about
/// 50%); from 30 at n = 48, pass@16 on the easy population at 48 samples, fractional values
/// with few problems carrying the drop, where the normal approximation promised 80% and the
/// test reached 100% (its power is now compare's test simulated on the model).
#[test]
fn plans_reach_their_stated_power() {
    for (d, metric, n, change) in [
        (DIFFICULTIES[1], MetricKind::PassAtK { k: 1 }, 16, -0.08),
        (DIFFICULTIES[0], MetricKind::PassAtK { k: 16 }, 16, -0.08),
        (DIFFICULTIES[0], MetricKind::PassAtK { k: 16 }, 48, -0.05),
    ] {
        let s = Setup {
            n,
            ..grid(30, d, false)
        };
        let check = check_plan(&s, &metric, (change, n, 0.05), 80, 0x91A4).unwrap();
        assert!(
            (check.achieved - check.promised).abs() <= 0.12,
            "{} {metric} at n = {n}: {check:?}",
            d.name
        );
    }
}
