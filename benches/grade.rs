//! Single-threaded grading throughput over the Math-Verify cases file (cases per second).

use gpassk::grade::{grade, GradeConfig};
use std::time::{Duration, Instant};

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grading/mathverify_0.9.0_cases.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("cases file");
    let cases: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("case line");
            (
                v["gold"].as_str().unwrap_or("").to_string(),
                v["pred"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let cfg = GradeConfig::default();
    // Warm-up also builds the lazily compiled regexes.
    for (g, p) in &cases {
        std::hint::black_box(grade(g, p, &cfg));
    }
    let budget = Duration::from_secs(3);
    let start = Instant::now();
    let mut graded = 0u64;
    while start.elapsed() < budget {
        for (g, p) in &cases {
            std::hint::black_box(grade(
                std::hint::black_box(g),
                std::hint::black_box(p),
                &cfg,
            ));
        }
        graded += cases.len() as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "grade: {graded} cases in {secs:.2}s = {:.0} cases/s single-threaded ({:.1} µs/case, {} distinct cases)",
        graded as f64 / secs,
        1e6 * secs / graded as f64,
        cases.len()
    );
}
