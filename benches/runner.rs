//! Runner throughput: the library path of `gpassk run` (plan, sampling with checkpoints, grading,
//! metrics, reports) against an in-process fake server that answers instantly. Reports units/s
//! and peak RSS.
//!
//! `cargo bench --bench runner` (200,000 units), `-- --units 1000000`, or `-- --quick`.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use fake_openai::FakeServer;
use gpassk::plan;
use gpassk::report::write_all;
use gpassk::rundir::RunDir;
use gpassk::sampling::{self, ModelEnd, SamplingJob};
use gpassk::scoring::score_run;
use gpassk::util::Shutdown;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;
use std::time::Instant;

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let units: usize = args
        .iter()
        .position(|a| a == "--units")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 5_000 } else { 200_000 });
    let concurrency: usize = args
        .iter()
        .position(|a| a == "--concurrency")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let n = 16;
    let problems = units.div_ceil(n);

    let server = FakeServer::builder().keep_requests(false).start_blocking();
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("bench.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&data).expect("dataset"));
    for i in 0..problems {
        writeln!(
            f,
            "{{\"id\":\"q{i}\",\"question\":\"What is {i}+1?\",\"answer\":\"42\"}}"
        )
        .expect("write");
    }
    drop(f);
    let cfg = dir.path().join("bench.toml");
    std::fs::write(
        &cfg,
        format!(
            "[api]\nbase_url = \"{}\"\nconcurrency = {concurrency}\ntimeout = 30\n[sampling]\nn = {n}\ngreedy = false\nmax_tokens = 16\n\
             [[models]]\nname = \"fake\"\n[evaluation]\ndataset = \"{}\"\nk = [16]\noutput_dir = \"{}\"\n",
            server.base_url(),
            data.display(),
            dir.path().join("results").display()
        ),
    )
    .expect("config");
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(run_dir.join("checkpoints")).expect("run dir");
    let start = Instant::now();
    sample(&cfg, &run_dir);
    let sampling = start.elapsed().as_secs_f64();
    let again = Instant::now();
    grade_and_report(&cfg, &run_dir);
    let scoring = again.elapsed().as_secs_f64();
    let secs = sampling + scoring;
    let total = (problems * n) as f64;
    println!(
        "gpassk run: {} units ({problems} problems × n={n}), concurrency {concurrency}: sampling {:.0} requests/s \
         ({sampling:.2} s, checkpointing on), grading+metrics {:.0} samples/s ({scoring:.2} s), \
         end to end {:.0} units/s ({secs:.2} s); peak RSS {:.0} MB (server included)",
        problems * n,
        total / sampling,
        total / scoring,
        total / secs,
        peak_rss_mb()
    );
}

fn sample(cfg: &Path, run_dir: &Path) {
    let run_dir = &RunDir::at(run_dir);
    let plan = plan::load(cfg, &[], None, None).expect("plan");
    let job = SamplingJob {
        search: None,
        budgets: sampling::BudgetBook::open(&plan.settings, &plan.prepared, run_dir)
            .expect("budgets"),
        settings: plan.settings.clone(),
        run_dir: run_dir.clone(),
        run_id: "bench".into(),
        prepared: plan.prepared.clone(),
        keys: HashMap::new(),
        quiet: true,
        notes: gpassk::util::Notes::default(),
        progress_interval: Duration::from_secs(5),
    };
    let ends = sampling::sample_all(&job, &Shutdown::new()).expect("sample");
    assert!(
        ends.iter().all(|(_, e)| *e == ModelEnd::Complete),
        "{ends:?}"
    );
}

fn grade_and_report(cfg: &Path, run_dir: &Path) {
    let run_dir = &RunDir::at(run_dir);
    let plan = plan::load(cfg, &[], None, None).expect("plan");
    let results = score_run(&plan, run_dir, None, None, &Default::default()).expect("score");
    write_all(run_dir, &results).expect("reports");
}
