//! Coverage and width of the reported 95% intervals, `compare`'s false flags and power, and
//! whether `plan`'s designs reach the power they state, on synthetic benchmarks with known truths
//! (see `gpassk::stats::coverage`).
//!
//! `cargo bench --bench coverage` runs the full grid: 5, 10, 30, 100 and 300 problems; easy,
//! mixed and hard populations; n = 16 and 48; greedy, pass@1, and pass@k, G-Pass@k at τ = 0.5 and
//! 1, mG-Pass@k for k = 4, 8, 16, and maj@n; 4,000 benchmarks a cell. It prints a row per cell
//! (coverage, mean width over the oracle's 2 × 1.96 × SD / √m, and the same for the previous
//! Clopper–Pearson method), a summary per size against the bars, compare's same-model flags and
//! power, clustered copies, and the planner's promised against achieved power; it exits 1 when a
//! bar is missed. `-- --quick` (CI) runs 300 benchmarks a cell on n = 16 only and checks nothing
//! but points. `-- --reps R` sets the benchmarks a cell.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::metrics::{MetricKind, Tau};
use gpassk::stats::coverage::{
    check_plan, simulate, Difficulty, MetricOutcome, Setup, Simulated, DIFFICULTIES, PAIRS,
};
use std::sync::Mutex;
use std::time::Instant;

const SIZES: [usize; 5] = [5, 10, 30, 100, 300];

struct Cell {
    problems: usize,
    n: u64,
    difficulty: Difficulty,
    out: Simulated,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(if quick { 300 } else { 4000 });
    let ns: &[u64] = if quick { &[16] } else { &[16, 48] };
    let start = Instant::now();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .map(|i| args.get(i + 1).map_or("", String::as_str));
    match only {
        None => {}
        Some("plans") => {
            let mut failures = Vec::new();
            let reps = if args.iter().any(|a| a == "--reps") {
                reps
            } else {
                400
            };
            plans(reps, &mut failures);
            println!("\n({:.1} s)", start.elapsed().as_secs_f64());
            report(&failures);
            return;
        }
        Some(other) => {
            eprintln!("--only {other}: the one part that runs alone is `plans`");
            std::process::exit(2);
        }
    }
    let cells = run_cells(ns, reps);
    println!("{reps} synthetic benchmarks per cell; coverage % and mean width / oracle width");
    println!(
        "(oracle: 2 × 1.96 × SD/√m with the true SD of one problem's value; `before`: the previous"
    );
    println!("Clopper–Pearson bounds on the sum; S: sparse, m·min(μ, 1 − μ) < 5)\n");
    let mut failures = Vec::new();
    for c in &cells {
        for m in &c.out.metrics {
            let row = cell_row(c, m, &mut failures);
            println!("{row}");
        }
    }
    summary(&cells);
    if !quick {
        same_model(reps.min(2000), &mut failures);
        power(reps.min(2000));
        copies(reps.min(2000));
        plans(if reps >= 1000 { 400 } else { 100 }, &mut failures);
    }
    println!("\n({:.1} s)", start.elapsed().as_secs_f64());
    if quick {
        let points: usize = cells
            .iter()
            .flat_map(|c| &c.out.metrics)
            .map(|m| m.points)
            .sum();
        if points > 0 {
            eprintln!("{points} intervals of zero width");
            std::process::exit(1);
        }
        return;
    }
    report(&failures);
}

/// "every bar met", or the bars missed and exit status 1.
fn report(failures: &[String]) {
    if failures.is_empty() {
        println!("every bar met");
    } else {
        println!("bars missed:");
        for f in failures {
            println!("  {f}");
        }
        std::process::exit(1);
    }
}

/// Every (size, n, population) cell, simulated on all cores.
fn run_cells(ns: &[u64], reps: usize) -> Vec<Cell> {
    let mut jobs = Vec::new();
    for &problems in &SIZES {
        for &n in ns {
            for (i, d) in DIFFICULTIES.iter().enumerate() {
                jobs.push((problems, n, i, *d));
            }
        }
    }
    let queue = Mutex::new(jobs.clone());
    let done = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let Some((problems, n, i, d)) = queue.lock().expect("queue").pop() else {
                    return;
                };
                let seed = 0xC0DE ^ ((problems as u64) << 16 | n << 4 | i as u64);
                let out = simulate(&Setup::grid(problems, d, n), reps, seed);
                done.lock().expect("results").push(Cell {
                    problems,
                    n,
                    difficulty: d,
                    out,
                });
            });
        }
    });
    let mut cells = done.into_inner().expect("results");
    cells.sort_by_key(|c| {
        let i = DIFFICULTIES
            .iter()
            .position(|d| d.name == c.difficulty.name);
        (c.problems, c.n, i)
    });
    cells
}

/// One cell's row, and its missed bars: at 30 and 100 problems coverage in [93.5, 97.5] and
/// width ≤ 1.15× the oracle's (sparse cells: coverage ≥ 93.5 only); at 5 and 10 coverage ≥ 93.5;
/// never a point.
fn cell_row(c: &Cell, m: &MetricOutcome, failures: &mut Vec<String>) -> String {
    let reps = c.out.reps as f64;
    let cover = 100.0 * m.covered as f64 / reps;
    let width = c.out.width_ratio(m, c.problems);
    let before = 100.0 * m.covered_before as f64 / reps;
    let oracle = m.oracle(c.problems);
    let width_before = m.width_before / reps / oracle;
    let sparse = m.sparse(c.problems);
    let name = format!(
        "m={} n={} {} {}",
        c.problems, c.n, c.difficulty.name, m.metric
    );
    let mut missed = Vec::new();
    if m.points > 0 {
        missed.push(format!("{} point intervals", m.points));
    }
    let central = matches!(c.problems, 30 | 100) && !sparse;
    if cover < 93.5 || (central && cover > 97.5) {
        missed.push(format!("coverage {cover:.1}%"));
    }
    if central && width > 1.15 {
        missed.push(format!("width {width:.2}× oracle"));
    }
    if !matches!(c.problems, 5 | 10 | 30 | 100) {
        missed.clear();
    }
    failures.extend(missed.iter().map(|x| format!("{name}: {x}")));
    format!(
        "{name:<36} μ={:.3}{} coverage {cover:5.1} width {} | before {before:5.1} {}{}",
        m.truth,
        if sparse { " S" } else { "  " },
        ratio(width),
        ratio(width_before),
        if missed.is_empty() {
            String::new()
        } else {
            format!("  MISSED: {}", missed.join(", "))
        },
    )
}

fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:5.2}×")
    } else {
        "    -".into()
    }
}

/// Per size: the lowest and highest coverage of the non-sparse cells, the widest of them, the
/// lowest coverage of a sparse cell, and the median width now and before.
fn summary(cells: &[Cell]) {
    println!("\nproblems | coverage, non-sparse cells (lowest–highest) | widest / oracle | sparse cells, lowest coverage | median width / oracle, now (before) | points");
    println!("---:|---:|---:|---:|---:|---:");
    for &problems in &SIZES {
        let (mut lo, mut hi, mut wide, mut sparse_lo) = (f64::MAX, 0f64, 0f64, f64::MAX);
        let (mut widths, mut before, mut points) = (Vec::new(), Vec::new(), 0);
        for c in cells.iter().filter(|c| c.problems == problems) {
            let reps = c.out.reps as f64;
            for m in &c.out.metrics {
                let cover = 100.0 * m.covered as f64 / reps;
                points += m.points;
                if m.sparse(problems) {
                    sparse_lo = sparse_lo.min(cover);
                    continue;
                }
                lo = lo.min(cover);
                hi = hi.max(cover);
                let w = c.out.width_ratio(m, problems);
                wide = wide.max(w);
                widths.push(w);
                before.push(m.width_before / reps / m.oracle(problems));
            }
        }
        let cover = if widths.is_empty() {
            "(every cell sparse)".to_string()
        } else {
            format!("{lo:.1}–{hi:.1}%")
        };
        let sparse = if sparse_lo == f64::MAX {
            "-".into()
        } else {
            format!("{sparse_lo:.1}%")
        };
        println!(
            "{problems} | {cover} | {} | {sparse} | {} ({}) | {points}",
            if widths.is_empty() {
                "-".into()
            } else {
                format!("{wide:.2}×")
            },
            median(&mut widths),
            median(&mut before),
        );
    }
}

fn median(xs: &mut [f64]) -> String {
    if xs.is_empty() {
        return "-".into();
    }
    xs.sort_by(f64::total_cmp);
    format!("{:.2}×", xs[xs.len() / 2])
}

/// compare's same-model false flags: its headline family (Holm), on every population and n.
fn same_model(reps: usize, failures: &mut Vec<String>) {
    println!("\nsame model twice: % of comparisons compare's headline family flags (Holm at 5%)");
    println!("problems | easy n=16 | mixed n=16 | hard n=16 | easy n=48 | mixed n=48 | hard n=48");
    println!("---:|---:|---:|---:|---:|---:|---:");
    for &problems in &[10usize, 30, 100, 300] {
        let mut row = format!("{problems}");
        for n in [16u64, 48] {
            for (i, d) in DIFFICULTIES.iter().enumerate() {
                let setup = Setup {
                    paired: true,
                    ..Setup::grid(problems, *d, n)
                };
                let seed = 0xF1A6 ^ ((problems as u64) << 8 | n << 2 | i as u64);
                let out = simulate(&setup, reps, seed);
                let rate = 100.0 * out.headline_flags as f64 / reps as f64;
                if rate >= 5.0 {
                    failures.push(format!(
                        "same-model flags {rate:.1}% at m={problems} n={n} {}",
                        d.name
                    ));
                }
                row.push_str(&format!(" | {rate:.1}"));
            }
        }
        println!("{row}");
    }
}

/// How often compare flags a real drop: B's solve rate lower by 5 or 10 points on every problem of
/// a mixed benchmark, n = 16.
fn power(reps: usize) {
    println!("\npower: % of comparisons where compare flags B (solve rate lower on every problem), mixed, n = 16");
    for drop in [0.05, 0.10] {
        for problems in [30usize, 100, 300] {
            let setup = Setup {
                paired: true,
                drop,
                ..Setup::grid(problems, DIFFICULTIES[1], 16)
            };
            let out = simulate(&setup, reps, 0xD0 ^ problems as u64);
            let pct = |m: &MetricOutcome| 100.0 * m.flagged_adjusted as f64 / reps as f64;
            let cells: Vec<String> = (out.metrics.iter())
                .map(|m| format!("{} {:.0}", m.metric, pct(m)))
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

/// LiveMathBench-like copies: every question twice, clustered or not.
fn copies(reps: usize) {
    println!("\nevery question twice (English and Chinese copies), 30 questions, n = 16: coverage %, clustered (copies as independent problems)");
    for d in DIFFICULTIES {
        let setup = Setup {
            copies: true,
            ..Setup::grid(30, d, 16)
        };
        let out = simulate(&setup, reps, 0xC0 ^ d.a.to_bits());
        let pct = |x: usize| 100.0 * x as f64 / reps as f64;
        let cells: Vec<String> = (out.metrics.iter())
            .filter(|m| !m.sparse(30))
            .map(|m| {
                format!(
                    "{} {:.1} ({:.1})",
                    m.metric,
                    pct(m.covered),
                    pct(m.covered_unclustered)
                )
            })
            .collect();
        println!("{}: {}", d.name, cells.join(", "));
    }
}

/// The planner: from a first run, plans to detect a change of 5 or 10 points (a drop) at 80%
/// power; its designs are run and tested. Promised (mean stated power) against achieved. Rows
/// run on every core.
fn plans(reps: usize, failures: &mut Vec<String>) {
    println!("\nplan: from a first run of m problems at n samples, the problems needed at n′ samples to detect a drop of D points (80% power, 5%); each design run in {PAIRS} pairs on fresh problems and tested by compare's test");
    println!(
        "population | metric | from m, n | n′ | D | median problems | promised % | achieved % | first runs refused | plans simulated"
    );
    println!("---|---|---|---:|---:|---:|---:|---:|---:|---:");
    let half = Tau::from_fraction(1, 2).expect("1/2");
    let one = Tau::from_fraction(1, 1).expect("1");
    let metrics = [
        MetricKind::PassAtK { k: 1 },
        MetricKind::PassAtK { k: 16 },
        MetricKind::GPassAtK { k: 16, tau: half },
        MetricKind::GPassAtK { k: 16, tau: one },
        MetricKind::MGPassAtK { k: 16 },
    ];
    let mut jobs = Vec::new();
    let mut seed = 0x91A4;
    for d in DIFFICULTIES {
        for metric in &metrics {
            for (from, n, samples) in [(30usize, 16u64, 16u64), (100, 16, 48), (30, 48, 48)] {
                for change in [0.05, 0.10] {
                    seed += 1;
                    jobs.push((
                        jobs.len(),
                        d,
                        metric.clone(),
                        from,
                        n,
                        samples,
                        change,
                        seed,
                    ));
                }
            }
        }
    }
    let queue = Mutex::new(jobs);
    let done = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let Some(job) = queue.lock().expect("queue").pop() else {
                    return;
                };
                let (_, d, ref metric, from, n, samples, change, seed) = job;
                let setup = Setup::grid(from, d, n);
                let check = check_plan(&setup, metric, (-change, samples, 0.05), reps, seed);
                eprintln!(
                    "done: {} {metric} {from},{n} n′={samples} D={change}: {check:?}",
                    d.name
                );
                done.lock().expect("results").push((job, check));
            });
        }
    });
    let mut rows = done.into_inner().expect("results");
    rows.sort_by_key(|r| r.0 .0);
    for ((_, d, metric, from, n, samples, change, _), check) in rows {
        let head = format!(
            "{} | {metric} | {from}, {n} | {samples} | {:.0}",
            d.name,
            100.0 * change
        );
        let Some(c) = check else {
            println!("{head} | - | - | - | - (the metric cannot drop that far)");
            continue;
        };
        let refused = format!("{} of {}", c.refused, c.reps + c.refused);
        if c.reps == 0 {
            println!("{head} | - | - | - | {refused}");
            continue;
        }
        let (p, a) = (100.0 * c.promised, 100.0 * c.achieved);
        let missed = if (a - p).abs() > 8.0 { "  MISSED" } else { "" };
        if !missed.is_empty() {
            failures.push(format!("plan {} {metric} from {from},{n} to n′={samples} D={change}: promised {p:.1}, achieved {a:.1}", d.name));
        }
        println!(
            "{head} | {} | {p:.1} | {a:.1}{missed} | {refused} | {} simulated",
            c.problems, c.simulated
        );
    }
}
