//! `gpassk view` on a large run: a run directory of 1,000,000 samples (2 models × 31,250
//! problems × n = 16) written directly and scored as `gpassk run` leaves it, then the times to
//! open it (plan and the checkpoint offset index), to answer problem pages, and to show the first
//! run, problems and runs pages: from its `scores.json`, with lines appended past what it holds
//! (those problems graded again), and without it (every sample graded).
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

/// Scores the run and writes its reports and `scores.json`, as `gpassk run` leaves it.
fn score(run: &Path) {
    let (notes, _) = gpassk::util::Notes::collect();
    let dir = gpassk::rundir::RunDir::at(run);
    let results = gpassk::scoring::load_run(&dir, &notes).unwrap();
    gpassk::report::write_all(&dir, &results).unwrap();
}

/// Appends `lines` records of sample n-1 (which [`without_slot`] took out), of problems `first`,
/// `first + 13`, …: new units, as a run still being sampled appends them.
fn append(path: &Path, first: usize, lines: usize, problems: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for i in 0..lines {
        let mut r = last.clone();
        r["problem_id"] = format!("p{}", (first + i * 13) % problems).into();
        r["sample_index"] = (N - 1).into();
        writeln!(f, "{r}").unwrap();
    }
}

/// Times `f` once, in milliseconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, ms(t.elapsed()))
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
    let ((), took) = timed(|| score(&run));
    println!("scored and written as `gpassk score` does (reports and scores.json): {took:.0} ms");

    let (viewer, open) = timed(|| {
        let viewer = Viewer::new(dir.path()).unwrap();
        assert_eq!(viewer.entries().0.len(), 1);
        let first = data::problem_view(&viewer, "big-run", "p0").unwrap();
        assert_eq!(first.models[0].samples.len(), N as usize);
        viewer
    });
    println!(
        "open (folder, plan, offset index of {samples} lines, first problem page): {open:.0} ms"
    );
    problem_pages(&viewer, problems);
    first_pages(&viewer, "from scores.json");

    let path = run.join("checkpoints/alpha.jsonl");
    std::fs::write(&path, without_slot(&path, N - 1)).unwrap();
    score(&run);
    let viewer = Viewer::new(dir.path()).unwrap();
    append(&path, 0, 1000, problems);
    first_pages(&viewer, "1,000 lines past scores.json");
    append(&path, 1, 1000, problems);
    let (_, took) = timed(|| page::run(&data::run_view(&viewer, "big-run").unwrap()));
    println!("run page after 1,000 more lines (those problems graded again): {took:.0} ms");
    let kept = pages_json(&viewer);

    std::fs::remove_file(run.join("scores.json")).unwrap();
    let viewer = Viewer::new(dir.path()).unwrap();
    first_pages(&viewer, "no scores.json: every sample graded");
    assert!(
        kept == pages_json(&viewer),
        "the scores kept current give what grading every sample gives"
    );
}

/// The run and problems pages' data as JSON.
fn pages_json(viewer: &Viewer) -> (String, String) {
    let run = data::run_view(viewer, "big-run").unwrap();
    let grid = data::problems_view(viewer, "big-run").unwrap();
    (
        serde_json::to_string(&run).unwrap(),
        serde_json::to_string(&grid).unwrap(),
    )
}

/// The checkpoint without its lines of sample `slot`, so appended lines of that slot are new.
fn without_slot(path: &Path, slot: u32) -> String {
    let key = format!("\"sample_index\":{slot},");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.contains(&key))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn problem_pages(viewer: &Viewer, problems: usize) {
    let mut times: Vec<Duration> = (0..200)
        .map(|i| {
            let id = format!("p{}", (i * 7919) % problems);
            let t = Instant::now();
            let v = data::problem_view(viewer, "big-run", &id).unwrap();
            // A model's tab: its samples (math made readable) and the previous run's, if any.
            let html = page::problem(&v, Some(&v.models[i % v.models.len()].model), false);
            assert!(html.contains("<article class=\"sample"));
            t.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "problem page (data of {} samples + HTML of a model's tab): median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        N as usize * MODELS.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        ms(times[times.len() - 1])
    );
}

/// The first run, problems and runs pages of a viewer (data + HTML), then the problems page again.
fn first_pages(viewer: &Viewer, how: &str) {
    let (_, run) = timed(|| page::run(&data::run_view(viewer, "big-run").unwrap()));
    let (rows, grid) = timed(|| {
        let v = data::problems_view(viewer, "big-run").unwrap();
        page::problems(&v, page::Focus::default());
        v.rows.len()
    });
    let (_, runs) = timed(|| page::runs(&viewer.runs_view()));
    let (_, again) = timed(|| data::problems_view(viewer, "big-run").unwrap());
    println!(
        "{how}: first run page {run:.0} ms, first problems page {grid:.0} ms ({rows} rows), \
         runs page {runs:.0} ms, problems page again {again:.0} ms"
    );
}
