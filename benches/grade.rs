//! Single-threaded grading throughput over the Math-Verify cases file (cases per second).

use gpassk::grade::{canonical_key, equivalent, grade, GradeConfig};
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
    limits(&cfg);
}

/// Worst-case latency of pathological inputs (the grader must answer each within a few ms).
fn limits(cfg: &GradeConfig) {
    let inputs: Vec<(&str, String)> = vec![
        (
            "nested braces",
            format!("\\boxed{{{}1{}}}", "{".repeat(50_000), "}".repeat(50_000)),
        ),
        (
            "nested parens",
            format!("${}x{}$", "(".repeat(20_000), ")".repeat(20_000)),
        ),
        ("unclosed boxes", "\\boxed{".repeat(20_000)),
        ("power tower", "\\boxed{10^{10^{10}}}".to_string()),
        ("200k-char sum", "1+".repeat(100_000) + "1"),
        (
            "200k-char prose",
            "the cat sat on the mat 12 ".repeat(7_700),
        ),
        (
            "200k-char box",
            format!("\\boxed{{{}}}", "x".repeat(200_000)),
        ),
        ("200k dollars", "$1$ ".repeat(50_000)),
        (
            "weird unicode",
            "\u{FFFD}é́́́𝟙𝟚\u{200B}$\u{10FFFF}$ ".repeat(5_000),
        ),
    ];
    for (name, input) in &inputs {
        let t0 = Instant::now();
        std::hint::black_box(grade("10^{10^{10}}", input, cfg));
        let t1 = Instant::now();
        std::hint::black_box(equivalent(input, "1", cfg));
        let t2 = Instant::now();
        std::hint::black_box(canonical_key(input));
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        println!(
            "limits: {name:<16} {:>7} bytes  grade {:5.2} ms  equivalent {:5.2} ms  canonical_key {:5.2} ms",
            input.len(),
            ms(t0, t1),
            ms(t1, t2),
            ms(t2, t3)
        );
    }
}
