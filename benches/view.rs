//! `gpassk view` on a large run: a run directory of 1,000,000 samples (2 models × 31,250
//! problems × n = 16) written directly and scored as a run's end scores it, then the times to
//! open it (plan and the checkpoint offset index), to answer problem pages, to show the run and
//! problems pages from the kept scores, and to grade everything again once the run grew.
//!
//! `cargo bench --bench view` (1,000,000 samples) or `-- --quick` (100,000).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::view::{data, page, Viewer};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

const N: u32 = 16;
const MODELS: [&str; 2] = ["alpha", "beta"];

/// Writes the run: its dataset, manifest (from the report fixture's) and two checkpoints.
fn write_run(root: &Path, problems: usize) -> std::path::PathBuf {
    use sha2::{Digest, Sha256};
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = repo.join("tests/fixtures/report_run");
    let data = root.join("big.jsonl");
    let lines: String = (0..problems)
        .map(|i| {
            format!(
                "{{\"id\":\"p{i}\",\"question\":\"What is {i}+1?\",\"answer\":\"{}\"}}\n",
                i + 1
            )
        })
        .collect();
    std::fs::write(&data, &lines).unwrap();
    let sha: String = Sha256::digest(lines.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let run = root.join("big-run");
    std::fs::create_dir_all(run.join("checkpoints")).unwrap();
    let text = std::fs::read_to_string(fixture.join("manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let path = data.to_str().unwrap();
    m["dataset"] = serde_json::json!({"name": path, "files": [path], "sha256": sha,
        "problems": problems, "limit": null});
    let ev = &mut m["config"]["evaluation"];
    ev["dataset"] = path.into();
    ev["fields"] = serde_json::json!({"id": "id"});
    // The fixture's metrics name greedy accuracy; this run has no greedy answers.
    ev.as_object_mut().unwrap().remove("metrics");
    m["config"]["sampling"]["n"] = N.into();
    m["config"]["sampling"]["greedy"] = false.into();
    m["config"]["models"] = MODELS
        .iter()
        .map(|n| serde_json::json!({"name": n, "model_id": n}))
        .collect();
    let template = m["models"]["alpha"].clone();
    let entries = m["models"].as_object_mut().unwrap();
    entries.clear();
    for name in MODELS {
        let mut e = template.clone();
        e["model_id"] = name.into();
        e["sampling"]["n"] = N.into();
        entries.insert(name.to_string(), e);
        write_checkpoint(&run, &fixture, name, problems);
    }
    std::fs::write(run.join("manifest.json"), m.to_string()).unwrap();
    run
}

fn write_checkpoint(run: &Path, fixture: &Path, name: &str, problems: usize) {
    let template = std::fs::read_to_string(fixture.join("checkpoints/alpha.jsonl")).unwrap();
    let mut r: serde_json::Value = serde_json::from_str(template.lines().next().unwrap()).unwrap();
    r["model"] = name.into();
    let file = std::fs::File::create(run.join(format!("checkpoints/{name}.jsonl"))).unwrap();
    let mut out = std::io::BufWriter::new(file);
    for i in 0..problems {
        for s in 0..N {
            r["problem_id"] = format!("p{i}").into();
            r["sample_index"] = s.into();
            let answer = if (i + s as usize).is_multiple_of(3) {
                i + 1
            } else {
                i
            };
            r["response"] =
                format!("Adding one gives {answer}. The final answer is $\\boxed{{{answer}}}$.")
                    .into();
            writeln!(out, "{r}").unwrap();
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let samples = if quick { 100_000 } else { 1_000_000 };
    let problems = samples / (N as usize * MODELS.len());
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let run = write_run(dir.path(), problems);
    let bytes: u64 = MODELS
        .iter()
        .map(|m| {
            std::fs::metadata(run.join(format!("checkpoints/{m}.jsonl")))
                .unwrap()
                .len()
        })
        .sum();
    println!(
        "wrote {samples} samples ({:.0} MB) in {:.1} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let (notes, _) = gpassk::util::Notes::collect();
    let results = gpassk::scoring::load_run(&gpassk::rundir::RunDir::at(&run), &notes).unwrap();
    gpassk::report::write_all(&gpassk::rundir::RunDir::at(&run), &results).unwrap();
    println!(
        "scored and reported once, as a run's end does (every sample graded): {:.0} ms",
        ms(t.elapsed())
    );

    let t = Instant::now();
    let viewer = Viewer::new(dir.path()).unwrap();
    let runs = viewer.entries().0.len();
    let first = data::problem_view(&viewer, "big-run", "p0").unwrap();
    let open = t.elapsed();
    assert_eq!(runs, 1);
    assert_eq!(first.models[0].samples.len(), N as usize);
    println!(
        "open (folder, plan, offset index of {samples} lines, first problem page): {:.0} ms",
        ms(open)
    );

    let mut times: Vec<Duration> = (0..200)
        .map(|i| {
            let id = format!("p{}", (i * 7919) % problems);
            let t = Instant::now();
            let v = data::problem_view(&viewer, "big-run", &id).unwrap();
            let html = page::problem(&v);
            assert!(html.contains("<article class=\"sample"));
            t.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "problem page (data + HTML, {} samples): median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        N as usize * MODELS.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        ms(times[times.len() - 1])
    );

    let t = Instant::now();
    let runs = viewer.runs_view();
    println!(
        "first runs page (history over the folder, from the kept scores): {:.0} ms ({} runs)",
        ms(t.elapsed()),
        runs.runs.len()
    );
    let t = Instant::now();
    let page = data::run_view(&viewer, "big-run").unwrap();
    println!(
        "first run page (from the kept scores): {:.0} ms ({} models)",
        ms(t.elapsed()),
        page.models.len()
    );
    let t = Instant::now();
    let grid = data::problems_view(&viewer, "big-run").unwrap();
    println!(
        "first problems page (from the kept scores): {:.0} ms ({} rows)",
        ms(t.elapsed()),
        grid.rows.len()
    );

    let path = run.join("checkpoints/alpha.jsonl");
    let last = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for _ in 0..1000 {
        writeln!(f, "{last}").unwrap();
    }
    drop(f);
    let t = Instant::now();
    data::problem_view(&viewer, "big-run", "p1").unwrap();
    println!(
        "problem page after 1,000 lines appended (index extended): {:.2} ms",
        ms(t.elapsed())
    );

    let t = Instant::now();
    let grid = data::problems_view(&viewer, "big-run").unwrap();
    println!("problems page after the run grew (kept scores stale: all {samples} samples graded again): {:.0} ms ({} rows)", ms(t.elapsed()), grid.rows.len());
    let t = Instant::now();
    data::problems_view(&viewer, "big-run").unwrap();
    println!(
        "problems page again (cached scores): {:.0} ms",
        ms(t.elapsed())
    );
}
