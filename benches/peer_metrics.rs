//! The gpassk side of the metrics comparison in `scripts/bench-peers.sh`.
//!
//! `cargo bench --bench peer_metrics -- --counts FILE --out FILE.json` reads one `n c k` triple per
//! line, computes pass@k, G-Pass@k at τ = 0.25, 0.5, 0.75, 1.0 and mG-Pass@k exactly for each, and
//! writes the timings and the f64 values (one `[pass, g0.25, g0.5, g0.75, g1.0, mg]` row per problem)
//! as JSON, so `benches/peers/metrics_scipy.py` can compare SciPy's floating-point tails with them.
//! Without `--counts` (a plain `cargo bench`) it times 10,000 synthetic problems and prints the rate.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::metrics::{problem_metrics, to_f64, MetricTable, PerProblem, Tau};
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

fn row(m: &PerProblem) -> [f64; 6] {
    [
        to_f64(&m.pass_at_k),
        to_f64(&m.g_pass_at_k[0]),
        to_f64(&m.g_pass_at_k[1]),
        to_f64(&m.g_pass_at_k[2]),
        to_f64(&m.g_pass_at_k[3]),
        to_f64(&m.mg_pass_at_k),
    ]
}

/// Every problem computed on its own, as a per-problem reference implementation would.
fn uncached(triples: &[(u64, u64, u64)], taus: &[Tau]) -> (f64, Vec<[f64; 6]>) {
    let start = Instant::now();
    let values: Vec<[f64; 6]> = triples
        .iter()
        .map(|&(n, c, k)| row(&problem_metrics(n, c, k, taus).expect("valid n, c, k")))
        .collect();
    (start.elapsed().as_secs_f64(), values)
}

/// The path `gpassk` takes when it scores a run: one table per (n, k), then a lookup per problem.
fn cached(triples: &[(u64, u64, u64)], taus: &[Tau]) -> (f64, Vec<[f64; 6]>) {
    let start = Instant::now();
    let mut tables: HashMap<(u64, u64), MetricTable> = HashMap::new();
    let values: Vec<[f64; 6]> = triples
        .iter()
        .map(|&(n, c, k)| {
            let t = tables
                .entry((n, k))
                .or_insert_with(|| MetricTable::new(n, k, taus).expect("valid n, k"));
            row(&t.per_problem(c).expect("valid c"))
        })
        .collect();
    (start.elapsed().as_secs_f64(), values)
}

fn parse_counts(text: &str) -> Vec<(u64, u64, u64)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .map(|x| x.parse().expect("counts: integers n c k"))
                .collect();
            assert_eq!(v.len(), 3, "counts: each line is `n c k`");
            (v[0], v[1], v[2])
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let taus = Tau::default_grid();
    let Some(counts) = value_of("--counts") else {
        let mut s = 7u64;
        let triples: Vec<(u64, u64, u64)> = (0..10_000)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (48, (s >> 33) % 49, 16)
            })
            .collect();
        let (secs, values) = uncached(&triples, &taus);
        black_box(values);
        println!(
            "peer_metrics: {:.0} problems/s uncached (n=48, k=16); see scripts/bench-peers.sh",
            triples.len() as f64 / secs
        );
        return;
    };
    let out = value_of("--out").expect("--out FILE.json");
    let text = std::fs::read_to_string(&counts).expect("read --counts");
    let triples = parse_counts(&text);
    let (secs_uncached, values) = uncached(&triples, &taus);
    let (secs_cached, cached_values) = cached(&triples, &taus);
    assert_eq!(values, cached_values, "cached and uncached values differ");
    let json = serde_json::json!({
        "problems": triples.len(),
        "metrics": ["pass@k", "g_pass@k_t0.25", "g_pass@k_t0.5", "g_pass@k_t0.75", "g_pass@k_t1.0", "mg_pass@k"],
        "secs_uncached": secs_uncached,
        "secs_cached": secs_cached,
        "values": values,
    });
    std::fs::write(&out, serde_json::to_vec(&json).expect("json")).expect("write --out");
    println!(
        "peer_metrics: {} problems, {:.0}/s uncached, {:.0}/s cached",
        triples.len(),
        triples.len() as f64 / secs_uncached,
        triples.len() as f64 / secs_cached
    );
}
