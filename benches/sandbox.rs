//! Sandbox start-up per execution: wall time of a trivial Python program inside bubblewrap
//! (namespaces, mounts, rlimits, interpreter start), beside the same program run bare.
//!
//! `cargo bench --bench sandbox` (add `-- --quick` for a smoke run). Exits 1 when no sandbox can
//! be made: a skipped measurement would read as a fast one.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::search::sandbox::{Limits, Sandbox};
use std::process::Command;
use std::time::{Duration, Instant};

fn summary(label: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = times.iter().map(|d| ms(*d)).sum::<f64>() / times.len() as f64;
    println!(
        "{label:<28} runs={:>4}  mean {mean:>7.1} ms  median {:>7.1} ms  max {:>7.1} ms",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 5 } else { 50 };
    let sandbox = match Sandbox::detect() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench sandbox: {e}");
            std::process::exit(1);
        }
    };
    let limits = Limits::default();
    let sandboxed: Vec<Duration> = (0..runs)
        .map(|_| {
            let out = sandbox.run_python("print(6 * 7)\n", &limits).expect("run");
            assert!(out.success() && out.stdout == "42\n", "{out:?}");
            out.elapsed
        })
        .collect();
    let bare: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let out = Command::new("/usr/bin/python3")
                .args(["-I", "-c", "print(6 * 7)"])
                .output()
                .expect("python3");
            assert!(out.status.success());
            start.elapsed()
        })
        .collect();
    summary("sandboxed python3 (bwrap)", sandboxed);
    summary("bare python3", bare);
}
