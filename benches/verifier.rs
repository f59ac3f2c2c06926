//! Time of the verifier metrics (bon@N, wmaj@N, maj@N) over a synthetic run: 500 problems with
//! n = 64 scored samples each, at N = 1, 2, 4, 8, 16, 32, 64.
//!
//! `cargo bench --bench verifier` (add `-- --quick` for 50 problems). Prints the time per metric
//! and N, and how many problems' vote metrics were exact rather than sampled.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::metrics::{
    best_of_n, majority_at, to_f64, weighted_majority_at, Sample, DEFAULT_BUDGET,
};
use std::hint::black_box;
use std::time::Instant;

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// Eight answer classes, the first correct; scores on a 1/1000 grid so some tie.
fn problems(count: usize, n: usize) -> Vec<Vec<Sample>> {
    let mut s = 17u64;
    (0..count)
        .map(|_| {
            (0..n)
                .map(|_| {
                    let class = lcg(&mut s) % 8;
                    Sample {
                        correct: class == 0,
                        class: (class != 7).then_some(class),
                        score: (lcg(&mut s) % 1000) as f64 / 1000.0,
                    }
                })
                .collect()
        })
        .collect()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let count = if quick { 50 } else { 500 };
    let data = problems(count, 64);
    let total = Instant::now();
    for size in [1u64, 2, 4, 8, 16, 32, 64] {
        let t = Instant::now();
        let mut acc = 0.0;
        for p in &data {
            acc += to_f64(&best_of_n(p, size).unwrap().unwrap());
        }
        let bon = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut exact = 0;
        for p in &data {
            let e = weighted_majority_at(p, size, &DEFAULT_BUDGET)
                .unwrap()
                .unwrap();
            exact += e.is_exact() as usize;
            acc += to_f64(e.value());
        }
        let wmaj = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for p in &data {
            acc += to_f64(
                majority_at(p, size, &DEFAULT_BUDGET)
                    .unwrap()
                    .unwrap()
                    .value(),
            );
        }
        let maj = t.elapsed().as_secs_f64();
        black_box(acc);
        println!(
            "{count} problems n=64 N={size:>2}: bon {bon:>7.3} s  wmaj {wmaj:>7.3} s  maj {maj:>7.3} s  (vote metrics exact for {exact}/{count})"
        );
    }
    println!("all N: {:.2} s", total.elapsed().as_secs_f64());
}
