//! Throughput of the exact metrics: problems per second for pass@k, four τ and mG-Pass@k.
//!
//! `cargo bench --bench metrics` (add `-- --quick` for a smoke run). Reports the direct per-problem
//! path (no cache) and the aggregation path over a synthetic archive (cached per (n, k)).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::metrics::{aggregate, problem_metrics, to_f64, MetricTable, ProblemCounts, Tau};
use std::hint::black_box;
use std::time::Instant;

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

fn direct(n: u64, k: u64, problems: u64) {
    let taus = Tau::default_grid();
    let mut s = 7u64;
    let start = Instant::now();
    let mut acc = 0.0;
    for _ in 0..problems {
        let c = lcg(&mut s) % (n + 1);
        let m = problem_metrics(n, c, k, &taus).unwrap();
        acc += to_f64(&m.mg_pass_at_k);
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(acc);
    println!(
        "direct (uncached)   n={n:>5} k={k:>4}: {:>12.0} problems/s ({problems} problems in {secs:.3} s)",
        problems as f64 / secs
    );
}

fn cached(n: u64, k: u64, problems: u64) {
    let taus = Tau::default_grid();
    let mut s = 5u64;
    let start = Instant::now();
    let table = MetricTable::new(n, k, &taus).unwrap();
    let mut acc = 0.0;
    for _ in 0..problems {
        let c = lcg(&mut s) % (n + 1);
        let m = table.per_problem(c).unwrap();
        acc += to_f64(&m.g_pass_at_k[1]);
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(acc);
    println!(
        "per-problem (table) n={n:>5} k={k:>4}: {:>12.0} problems/s ({problems} problems in {secs:.3} s)",
        problems as f64 / secs
    );
}

fn aggregated(n: u64, k: u64, problems: u64) {
    let taus = Tau::default_grid();
    let mut s = 11u64;
    let counts: Vec<ProblemCounts> = (0..problems)
        .map(|i| ProblemCounts {
            id: i.to_string(),
            subset: None,
            group: None,
            n,
            c: lcg(&mut s) % (n + 1),
            greedy: Some(i % 3 == 0),
        })
        .collect();
    let start = Instant::now();
    let agg = aggregate(&counts, n, &[k], &taus).unwrap();
    let secs = start.elapsed().as_secs_f64();
    black_box(&agg);
    println!(
        "aggregate (exact)   n={n:>5} k={k:>4}: {:>12.0} problems/s ({problems} problems in {secs:.3} s)",
        problems as f64 / secs
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 100 } else { 1 };
    direct(48, 16, 200_000 / scale);
    direct(1024, 256, 200 / scale.min(100));
    cached(48, 16, 1_000_000 / scale);
    cached(1024, 256, 10_000 / scale);
    aggregated(48, 16, 1_000_000 / scale);
    aggregated(1024, 256, 100_000 / scale);
}
