//! Coverage of the reported 95% intervals and false-positive rate of `compare`, on synthetic
//! benchmarks with known truths (see `gpassk::stats::coverage`).
//!
//! `cargo bench --bench coverage` runs the full grid: 5, 10, 30, 100 and 300 problems; easy, mixed
//! and hard difficulty; n = 16 and 48; k = 1, 4, 16; τ = 0.5 and 1.0; 2,000 repetitions each (about
//! 5 CPU-minutes), then compare's power against 5- and 10-point drops. `-- --quick` (for CI, about
//! 10 CPU-seconds) runs 1,000 repetitions of n = 16 only and skips the power rows. `-- --reps R`
//! sets the repetitions.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::metrics::Tau;
use gpassk::stats::coverage::{simulate, Setup, DIFFICULTIES};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(if quick { 1000 } else { 2000 });
    let ns: &[u64] = if quick { &[16] } else { &[16, 48] };
    let taus = vec![
        Tau::from_fraction(1, 2).unwrap(),
        Tau::from_fraction(1, 1).unwrap(),
    ];
    let start = Instant::now();
    println!("{reps} synthetic benchmarks per row; coverage of the 95% interval in %, per metric");
    let mut worst: Vec<(usize, f64, f64, f64, f64)> = Vec::new();
    for &problems in &[5usize, 10, 30, 100, 300] {
        let (mut min_cover, mut max_fpr, mut max_level) = (f64::INFINITY, 0f64, 0f64);
        let mut max_headline = 0f64;
        for &n in ns {
            for (i, d) in DIFFICULTIES.iter().enumerate() {
                let setup = Setup {
                    problems,
                    difficulty: *d,
                    n,
                    ks: vec![1, 4, 16],
                    taus: taus.clone(),
                    paired: true,
                    drop: 0.0,
                };
                let seed = 0xC0DE ^ ((problems as u64) << 16 | n << 4 | i as u64);
                let out = simulate(&setup, reps, seed);
                let pct = |x: usize| 100.0 * x as f64 / out.reps as f64;
                let cells: Vec<String> = out
                    .metrics
                    .iter()
                    .map(|m| {
                        min_cover = min_cover.min(pct(m.covered));
                        format!("{} {:.1}", m.metric, pct(m.covered))
                    })
                    .collect();
                println!(
                    "m={problems:<3} n={n:<2} {:<5} coverage: {}",
                    d.name,
                    cells.join(", ")
                );
                let rates = |f: &dyn Fn(&gpassk::stats::coverage::MetricOutcome) -> usize| {
                    let v: Vec<String> = out
                        .metrics
                        .iter()
                        .map(|m| format!("{:.1}", pct(f(m))))
                        .collect();
                    v.join(" ")
                };
                println!(
                    "{:>20} same model twice, % flagged per metric: test alone {}; Holm over all {}; any flag {:.1}; compare's headline family {:.1}",
                    "",
                    rates(&|m| m.flagged),
                    rates(&|m| m.flagged_adjusted),
                    pct(out.familywise),
                    pct(out.headline_flags)
                );
                if problems >= 10 {
                    max_level = max_level.max(
                        out.metrics
                            .iter()
                            .map(|m| pct(m.flagged))
                            .fold(0.0, f64::max),
                    );
                }
                max_fpr = max_fpr.max(pct(out.familywise));
                max_headline = max_headline.max(pct(out.headline_flags));
            }
        }
        worst.push((problems, min_cover, max_level, max_fpr, max_headline));
    }
    println!(
        "\nproblems  lowest coverage %  highest test level % (one metric)  highest false-positive % (any flag, all rows)  highest compare false-positive % (headline family)"
    );
    for (problems, cover, level, fpr, headline) in worst {
        let (level, fpr, headline) = if problems >= 10 {
            (
                format!("{level:.1}"),
                format!("{fpr:.1}"),
                format!("{headline:.1}"),
            )
        } else {
            (
                "not tested".into(),
                "not tested".into(),
                "not tested".into(),
            )
        };
        println!("{problems:>8}  {cover:>17.1}  {level:>32}  {fpr:>44}  {headline:>48}");
    }
    if !quick {
        power(reps, &taus);
    }
    println!("({:.1} s)", start.elapsed().as_secs_f64());
}

/// How often compare flags a real drop: B's solve rate lower by 5 or 10 points on every problem of
/// a mixed benchmark, n = 16.
fn power(reps: usize, taus: &[Tau]) {
    println!("\npower: % of comparisons where compare flags B (solve rate lower on every problem), mixed, n = 16");
    for drop in [0.05, 0.10] {
        for problems in [30usize, 100, 300] {
            let setup = Setup {
                problems,
                difficulty: DIFFICULTIES[1],
                n: 16,
                ks: vec![1, 4, 16],
                taus: taus.to_vec(),
                paired: true,
                drop,
            };
            let out = simulate(&setup, reps, 0xD0 ^ problems as u64);
            let cells: Vec<String> = out
                .metrics
                .iter()
                .map(|m| {
                    format!(
                        "{} {:.0}",
                        m.metric,
                        100.0 * m.flagged_adjusted as f64 / reps as f64
                    )
                })
                .collect();
            println!(
                "drop {:>2} points, m={problems:<3}: {}; compare's headline family flags {:.0}",
                (100.0 * drop) as u32,
                cells.join(", "),
                100.0 * out.headline_flags as f64 / reps as f64
            );
        }
    }
}
