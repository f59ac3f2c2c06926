//! `gpassk score`, `report`, `compare` and `merge` on the fixture run in tests/fixtures/report_run
//! (two models, eight problems in two subsets, n = 8, k ∈ {1, 4}; see its make.py).

use crate::common::{ok, repo, run as gpassk, stderr, RUN_FILES};
use gpassk::metrics::{g_pass_at_k, mg_pass_at_k, pass_at_k, to_f64, Tau};
use num_rational::BigRational;
use std::path::{Path, PathBuf};
use std::process::Output;

const FIXTURE: &str = "tests/fixtures/report_run";

fn fixture() -> PathBuf {
    repo().join(FIXTURE)
}

/// Copies the fixture's manifest and checkpoints (not its dataset, which stays where the config
/// names it) into a fresh directory.
fn copy_fixture(to: &Path) {
    std::fs::create_dir_all(to.join("checkpoints")).unwrap();
    std::fs::copy(fixture().join("manifest.json"), to.join("manifest.json")).unwrap();
    for m in ["alpha", "beta"] {
        let rel = format!("checkpoints/{m}.jsonl");
        std::fs::copy(fixture().join(&rel), to.join(&rel)).unwrap();
    }
}

fn report(format: &str) -> String {
    ok(&gpassk(&["report", FIXTURE, "--format", format]))
}

/// (n, c) per problem of model alpha, by hand from make.py: usable samples and correct ones.
const ALPHA: [(u64, u64); 8] = [
    (8, 8),
    (8, 7),
    (8, 6),
    (8, 8),
    (8, 4),
    (8, 2),
    (8, 1),
    (8, 0),
];

fn mean(values: impl Iterator<Item = BigRational>) -> f64 {
    let v: Vec<BigRational> = values.collect();
    let len = v.len() as i64;
    to_f64(&(v.into_iter().sum::<BigRational>() / BigRational::from_integer(len.into())))
}

#[test]
fn metrics_csv_reads_back_column_by_column() {
    let text = report("csv");
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header.join(","),
        "model,model_id,dataset,subset,metric,k,tau,value,ci_low,ci_high,problems,n,coverage,\
         aggregation,mc_std_error"
    );
    let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
    // 2 models × (all + 2 subsets) × (greedy + 2 k × (pass + 4 τ + mG) + maj).
    assert_eq!(rows.len(), 2 * 3 * 14);
    let find = |model: &str, subset: &str, metric: &str, k: &str, tau: &str| {
        rows.iter()
            .find(|r| (&r[0], &r[3], &r[4], &r[5], &r[6]) == (model, subset, metric, k, tau))
            .unwrap_or_else(|| panic!("no row {model} {subset} {metric} {k} {tau}"))
    };
    let tau: Tau = "0.5".parse().unwrap();
    let expect = [
        (
            "pass@k",
            "4",
            "",
            mean(ALPHA.iter().map(|&(n, c)| pass_at_k(n, c, 4).unwrap())),
        ),
        (
            "g_pass@k",
            "4",
            "0.5",
            mean(
                ALPHA
                    .iter()
                    .map(|&(n, c)| g_pass_at_k(n, c, 4, &tau).unwrap()),
            ),
        ),
        (
            "mg_pass@k",
            "4",
            "",
            mean(ALPHA.iter().map(|&(n, c)| mg_pass_at_k(n, c, 4).unwrap())),
        ),
        ("greedy_acc", "", "", 5.0 / 8.0),
        ("maj@n", "", "", 5.0 / 8.0),
    ];
    for (metric, k, tau, value) in expect {
        let row = find("alpha", "all", metric, k, tau);
        assert_eq!(&row[1], "alpha-7b");
        assert_eq!(&row[2], "tests/fixtures/report_run/problems.jsonl");
        let v: f64 = row[7].parse().unwrap();
        let (lo, hi): (f64, f64) = (row[8].parse().unwrap(), row[9].parse().unwrap());
        assert!((v - value).abs() < 1e-12, "{metric}: {v} vs {value}");
        assert!(lo <= v && v <= hi && lo < hi, "{metric}: {lo} {v} {hi}");
        assert_eq!(&row[10], "8");
        assert_eq!(&row[11], "8");
        assert_eq!(&row[12], "1.0");
    }
    // beta lost one sample to an API error (e3) and has no greedy answer for h3.
    let beta_pass = find("beta", "all", "pass@k", "4", "");
    assert_eq!(&beta_pass[12], &(63.0 / 64.0).to_string());
    let beta_greedy = find("beta", "all", "greedy_acc", "", "");
    assert_eq!(
        (&beta_greedy[7], &beta_greedy[10]),
        ("0.42857142857142855", "7")
    );
    assert_eq!(&beta_greedy[12], "0.875");
    // Subsets are means over their own problems; 4 of 4 correct is not certainty: the exact
    // binomial lower bound is 0.025^(1/4).
    let easy = find("alpha", "easy", "greedy_acc", "", "");
    assert_eq!((&easy[7], &easy[9], &easy[10]), ("1.0", "1.0", "4"));
    let low: f64 = easy[8].parse().unwrap();
    assert!((low - 0.025f64.powf(0.25)).abs() < 1e-6, "{low}");
}

#[test]
fn per_problem_csv_has_counts_and_metrics() {
    let text = report("per-problem");
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header[..8].join(","),
        "model,problem_id,subset,n,c,greedy_correct,votes,pass@1"
    );
    assert_eq!(header[header.len() - 2..].join(","), "maj@n,guessed");
    let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 16);
    let h1 = rows
        .iter()
        .find(|r| &r[0] == "alpha" && &r[1] == "h1")
        .unwrap();
    assert_eq!(
        (&h1[2], &h1[3], &h1[4], &h1[5], &h1[6]),
        ("hard", "8", "4", "true", "7")
    );
    let e3 = rows
        .iter()
        .find(|r| &r[0] == "beta" && &r[1] == "e3")
        .unwrap();
    assert_eq!((&e3[3], &e3[4]), ("7", "3"));
    // Tie between 12 (correct, 3 votes) and 13 (3 votes): half a point.
    let maj = header.iter().position(|h| h == "maj@n").unwrap();
    assert_eq!(&e3[maj], "0.5");
    // Every answer of the fixture is boxed: none was guessed.
    assert_eq!(e3.iter().next_back().unwrap(), "0");
    let h3 = rows
        .iter()
        .find(|r| &r[0] == "beta" && &r[1] == "h3")
        .unwrap();
    assert_eq!(&h3[5], "", "no greedy answer");
    let pass4 = header.iter().position(|h| h == "pass@4").unwrap();
    assert_eq!(
        h1[pass4].parse::<f64>().unwrap(),
        to_f64(&pass_at_k(8, 4, 4).unwrap())
    );
}

#[test]
fn json_has_rows_exact_fractions_and_manifest() {
    let v: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    assert_eq!(v["run_id"], "fixture-run");
    assert_eq!(v["manifest"]["run_id"], "fixture-run");
    assert_eq!(v["manifest"]["models"]["beta"]["model_id"], "beta-7b");
    assert_eq!(v["intervals"]["over"], "problems");
    assert_eq!(v["intervals"]["method"], gpassk::stats::INTERVAL_METHOD);
    assert!(gpassk::stats::INTERVAL_METHOD.starts_with("mid-p binomial on the effective number"));
    let metrics = v["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 84);
    let greedy = metrics
        .iter()
        .find(|m| m["model"] == "alpha" && m["metric"] == "greedy_acc" && m["subset"] == "all")
        .unwrap();
    assert_eq!(greedy["exact"], "5/8");
    assert_eq!(greedy["value"], 0.625);
    assert!(greedy["ci_low"].as_f64().unwrap() <= 0.625);
    let models = v["models"].as_array().unwrap();
    assert_eq!(models[1]["served_models"]["beta-7b-served"], 70);
    assert_eq!(models[1]["missing"], 2);
}

#[test]
fn html_is_self_contained_with_one_curve_per_model_and_k() {
    let html = report("html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    // k ∈ {1, 4}: a τ-plot each, with a line per model.
    assert_eq!(html.matches("<polyline class=\"curve\"").count(), 4);
    assert!(html.contains("data-model=\"alpha\"") && html.contains("data-model=\"beta\""));
    assert_eq!(html.matches("<svg class=\"plot histogram\"").count(), 2);
    assert_eq!(html.matches("<svg class=\"plot bars\"").count(), 1);
    assert!(html.contains("Per subset, k = 4"));
    for bad in [
        "src=", "href=", "url(", "@import", "<script", "<link", "<iframe", "xlink",
    ] {
        assert!(!html.contains(bad), "external reference {bad}");
    }
    // The only URL text is the model server's base_url inside the manifest listing.
    let (before, rest) = html.split_once("<pre id=\"manifest\">").unwrap();
    let (_, after) = rest.split_once("</pre>").unwrap();
    assert!(!before.contains("http") && !after.contains("http"));
}

/// Compares with tests/fixtures/report_run/expected/<name>; UPDATE_SNAPSHOTS=1 rewrites it.
fn snapshot(name: &str, actual: &str) {
    let path = fixture().join("expected").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        actual, expected,
        "{name} changed; rerun with UPDATE_SNAPSHOTS=1 if intended"
    );
}

#[test]
fn table_and_markdown_snapshots() {
    // summary.txt and --wide: every column; the default table fits the terminal.
    snapshot("summary.txt", &ok(&gpassk(&["report", FIXTURE, "--wide"])));
    let narrow = crate::common::gpassk()
        .args(["report", FIXTURE])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    snapshot("table-80.txt", &ok(&narrow));
    let md = report("md");
    assert!(md.contains("| alpha | 62.5 [25.6, 90.7] |"));
    snapshot("report.md", &md);
}

/// Issue 25 item 7: report.md and report.html say what their numbers mean, right under the
/// headline tables.
#[test]
fn both_reports_say_what_the_numbers_mean() {
    let (md, html) = (report("md"), report("html"));
    for (text, head, end) in [
        (&md, "## What these numbers mean\n", "\n## "),
        (&html, "<h2>What these numbers mean</h2>", "</ul>"),
    ] {
        let at = text
            .find(head)
            .unwrap_or_else(|| panic!("no {head:?}:\n{text}"));
        let section = &text[at + head.len()..];
        let section = &section[..section.find(end).unwrap()];
        for said in [
            "G-Pass@k_τ",
            "at least ⌈τ·k⌉ of k samples, drawn without replacement",
            "G-Pass@k with ⌈τ·k⌉ = 1",
            "At τ = 1 all k must be correct",
            "mG-Pass@k",
            "Greedy, maj@n",
            "over problems (never over samples)",
        ] {
            assert!(section.contains(said), "{said:?} missing from:\n{section}");
        }
        assert!(
            text.find("G-Pass@4_0.25").unwrap() < at,
            "not under the headline table"
        );
    }
}

#[test]
fn score_twice_gives_byte_identical_files() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy_fixture(&run);
    let run_s = run.to_str().unwrap();
    ok(&gpassk(&["score", run_s, "--quiet"]));
    let files = RUN_FILES;
    let first: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(run.join(f)).unwrap())
        .collect();
    ok(&gpassk(&["score", run_s, "--quiet"]));
    for (f, bytes) in files.iter().zip(&first) {
        assert_eq!(&std::fs::read(run.join(f)).unwrap(), bytes, "{f} changed");
    }
    assert_eq!(
        String::from_utf8(first[0].clone()).unwrap(),
        report("csv"),
        "score writes what report prints"
    );
}

#[test]
fn score_of_a_missing_run_is_bad_input() {
    let out = gpassk(&["score", "tests/fixtures/no-such-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("no-such-run/manifest.json"), "{err}");
}

#[test]
fn score_names_a_corrupt_checkpoint_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy_fixture(&run);
    let path = run.join("checkpoints/beta.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"run_id\": 1}";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = gpassk(&["score", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("beta.jsonl:3: corrupt checkpoint line"),
        "{err}"
    );
}

#[test]
fn score_refuses_a_changed_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy_fixture(&run);
    let path = run.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["dataset"]["sha256"] = "00".repeat(32).into();
    std::fs::write(&path, m.to_string()).unwrap();
    let out = gpassk(&["score", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("dataset.sha256"), "{err}");
}

/// A copy of the fixture where alpha answers every sample and greedy question with 0.
fn worse_copy(to: &Path) {
    copy_fixture(to);
    let path = to.join("checkpoints/alpha.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let worse: String = text
        .lines()
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
            if r["response"].is_string() {
                r["response"] = "The final answer is $\\boxed{0}$.".into();
            }
            format!("{r}\n")
        })
        .collect();
    std::fs::write(&path, worse).unwrap();
}

/// Settings of a synthetic one-model run (model `alpha`, answer "1" for every problem).
struct Synthetic {
    problems: usize,
    n: u32,
    temperature: f64,
    /// Different datasets get different question texts.
    dataset: &'static str,
}

impl Synthetic {
    fn new(problems: usize) -> Synthetic {
        Synthetic {
            problems,
            n: 8,
            temperature: 1.0,
            dataset: "same",
        }
    }

    /// Writes the run into `root/<name>` (its dataset into `root/<dataset>.jsonl`); sample s of
    /// problem i (s = n is the greedy answer) is correct when `correct(i, s)`.
    fn write(&self, root: &Path, name: &str, correct: impl Fn(usize, u32) -> bool) -> PathBuf {
        use sha2::{Digest, Sha256};
        let data = root.join(format!("{}.jsonl", self.dataset));
        let lines: String = (0..self.problems)
            .map(|i| {
                let q = format!("{} question {i}", self.dataset);
                format!("{{\"id\": \"p{i}\", \"subset\": \"all\", \"question\": \"{q}\", \"answer\": \"1\"}}\n")
            })
            .collect();
        std::fs::write(&data, &lines).unwrap();
        let sha: String = Sha256::digest(lines.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let run = root.join(name);
        std::fs::create_dir_all(run.join("checkpoints")).unwrap();
        let text = std::fs::read_to_string(fixture().join("manifest.json")).unwrap();
        let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
        let path = data.to_str().unwrap();
        m["config"]["evaluation"]["dataset"] = path.into();
        m["config"]["models"] = serde_json::json!([{"name": "alpha", "model_id": "alpha-7b"}]);
        m["config"]["sampling"]["n"] = self.n.into();
        m["config"]["sampling"]["temperature"] = self.temperature.into();
        m["dataset"] = serde_json::json!({"name": path, "files": [path], "sha256": sha,
            "problems": self.problems, "limit": null});
        m["models"].as_object_mut().unwrap().remove("beta");
        m["models"]["alpha"]["sampling"]["n"] = self.n.into();
        m["models"]["alpha"]["sampling"]["temperature"] = self.temperature.into();
        std::fs::write(run.join("manifest.json"), m.to_string()).unwrap();
        let template = std::fs::read_to_string(fixture().join("checkpoints/alpha.jsonl")).unwrap();
        let mut r: serde_json::Value =
            serde_json::from_str(template.lines().next().unwrap()).unwrap();
        let mut out = String::new();
        for i in 0..self.problems {
            for s in 0..=self.n {
                r["problem_id"] = format!("p{i}").into();
                r["sample_index"] = if s == self.n {
                    "greedy".into()
                } else {
                    s.into()
                };
                let answer = if correct(i, s) { 1 } else { 2 };
                r["response"] = format!("The final answer is $\\boxed{{{answer}}}$.").into();
                r["temperature"] = self.temperature.into();
                out.push_str(&format!("{r}\n"));
            }
        }
        std::fs::write(run.join("checkpoints/alpha.jsonl"), out).unwrap();
        run
    }
}

fn compare(a: &Path, b: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["compare", a.to_str().unwrap(), b.to_str().unwrap()];
    args.extend_from_slice(extra);
    gpassk(&args)
}

#[test]
fn compare_of_a_run_with_itself_flags_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = Synthetic::new(12).write(dir.path(), "a", |i, s| !(i + s as usize).is_multiple_of(3));
    let out = ok(&compare(&run, &run, &["--fail-on-regression", "0"]));
    // The family is the headline metrics, each quantity once: Greedy, Pass@4 (= G-Pass@4_0.25),
    // G-Pass@4_0.5, mG-Pass@4 (the fixture's config asks for k = 4, τ = 0.25 and 0.5).
    assert!(out.contains("Holm at 5% over 4 tests"), "{out}");
    assert!(
        out.trim_end().ends_with("significant: none of the 4 tests"),
        "{out}"
    );
    assert!(!out.contains("REGRESSED") && !out.contains("IMPROVED") && !out.contains("WARNING"));
    // The verdict comes first and says how much would have to move to be flagged: 2·2⁻ᵐ below
    // 5%/4 needs m = 8 problems.
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let verdict = (words.find(
        "no detectable change: every headline value is the same on all 12 problems (a flag \
         needs at least 8 of them to move one way)",
    ))
    .unwrap_or_else(|| panic!("{out}"));
    assert!(verdict < words.find("A → B").unwrap(), "{out}");
    assert!(out.contains("Pass@4 = G-Pass@4_0.25"), "{out}");
}

#[test]
fn compare_flags_a_drop_on_enough_problems_only() {
    let dir = tempfile::tempdir().unwrap();
    let good = |i: usize, s: u32| !(i + s as usize).is_multiple_of(4);
    let a = Synthetic::new(20).write(dir.path(), "a", good);
    let b = Synthetic::new(20).write(dir.path(), "b", |_, _| false);
    let out = ok(&compare(&a, &b, &[]));
    let pass4 = out.lines().find(|l| l.contains("Pass@4 ")).unwrap();
    assert!(
        pass4.contains("REGRESSED") && pass4.contains("-100.0"),
        "{pass4}"
    );
    let fail = compare(&a, &b, &["--fail-on-regression", "10"]);
    assert_eq!(fail.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&fail.stderr).contains("  alpha Pass@4: -100.0 points"));
    ok(&compare(&a, &b, &["--fail-on-regression", "100"]));
    // The fixture's 8 problems are too few to flag even a total collapse.
    let worse = dir.path().join("worse");
    worse_copy(&worse);
    let out = ok(&compare(
        &fixture(),
        &worse,
        &["--fail-on-regression", "10"],
    ));
    assert!(out.contains("untested") && !out.contains("REGRESSED"));
    assert!(
        out.contains("8 differences not tested: fewer than 10 shared problems"),
        "{out}"
    );
    assert!(
        out.contains("not comparable: 8 shared problems; a test needs at least 10"),
        "{out}"
    );
}

#[test]
fn compare_formats_and_filters_use_the_report_names() {
    let dir = tempfile::tempdir().unwrap();
    let a = Synthetic::new(20).write(dir.path(), "a", |i, s| !(i + s as usize).is_multiple_of(4));
    let b = Synthetic::new(20).write(dir.path(), "b", |_, _| false);
    let csv = ok(&compare(
        &a,
        &b,
        &["--format", "csv", "--metric", "Pass@4,g_pass@4_t1.0"],
    ));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("model,metric,same_as,a,b,delta,p,p_holm,detectable,problems,family,flag")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(
        rows[0].starts_with("alpha,Pass@4,G-Pass@4_0.25,")
            && rows[0].contains(",-1.0,")
            && rows[0].ends_with(",20,true,REGRESSED"),
        "{csv}"
    );
    assert!(rows[1].starts_with("alpha,G-Pass@4_1.0,"), "{csv}");
    let json = ok(&compare(&a, &b, &["--format", "json", "--k", "4"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let metrics: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    assert!(
        !metrics.is_empty() && metrics.iter().all(|m| m.contains("@4")),
        "{metrics:?}"
    );
    assert!(v[0]["p_holm"].as_f64().is_some() && v[0]["delta"].as_f64().is_some());
    let md = ok(&compare(&a, &b, &["--format", "md", "--metric", "Pass@4"]));
    assert!(
        md.contains("| model | metric | A → B | B − A | p (Holm) | flag |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| alpha | Pass@4 = G-Pass@4_0.25 | 100.0 → 0.0 | -100.0 | <0.0001 | ▼ REGRESSED |"
        ),
        "{md}"
    );
    // The verdict rests on the whole family, whatever the filter shows, and names every
    // flagged metric.
    let verdict = md.lines().find(|l| l.starts_with("- **alpha**: ")).unwrap();
    assert_eq!(
        verdict,
        "- **alpha**: ▼ REGRESSED: Greedy -75.0, Pass@4 -100.0, G-Pass@4\\_0.5 -100.0, mG-Pass@4 -50.0",
        "{md}"
    );
    assert!(
        md.contains("significant (4 of 4): alpha Greedy ▼, Pass@4 ▼"),
        "{md}"
    );
    let narrow = crate::common::gpassk()
        .args([
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--fail-on-regression",
            "10",
        ])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(narrow.status.code(), Some(1));
    for line in String::from_utf8_lossy(&narrow.stdout).lines() {
        if !line.starts_with("A: ") && !line.starts_with("B: ") {
            assert!(line.chars().count() <= 80, "{line}");
        }
    }
    let err = String::from_utf8_lossy(&narrow.stderr);
    assert!(
        err.contains(
            " of the rows:\n  alpha Greedy: -75.0 points\n  alpha Pass@4: -100.0 points\n"
        ),
        "{err}"
    );
    let none = compare(&a, &b, &["--metric", "Pass@99"]);
    assert_eq!(none.status.code(), Some(2));
}

#[test]
fn compare_never_fails_on_one_shared_problem() {
    let dir = tempfile::tempdir().unwrap();
    let a = Synthetic::new(1).write(dir.path(), "a", |_, _| true);
    let b = Synthetic::new(1).write(dir.path(), "b", |_, _| false);
    let out = ok(&compare(&a, &b, &["--fail-on-regression", "5"]));
    assert!(out.contains("Holm at 5% over 0 tests"), "{out}");
    assert!(!out.contains("REGRESSED"));
    assert!(out.contains("not comparable: 1 shared problems"), "{out}");
}

#[test]
fn compare_refuses_different_datasets_and_names_setting_differences() {
    let dir = tempfile::tempdir().unwrap();
    let a = Synthetic::new(12).write(dir.path(), "a", |_, _| true);
    let other = Synthetic {
        dataset: "other",
        ..Synthetic::new(12)
    };
    let b = other.write(dir.path(), "b", |_, _| true);
    let out = compare(&a, &b, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("different datasets: A ran on") && err.contains("other.jsonl"),
        "{err}"
    );
    let changed = Synthetic {
        n: 4,
        temperature: 0.7,
        ..Synthetic::new(12)
    };
    let c = changed.write(dir.path(), "c", |_, _| true);
    let out = compare(&a, &c, &[]);
    let (stdout, stderr) = (ok(&out), String::from_utf8_lossy(&out.stderr));
    for text in [&stdout, &stderr.to_string()] {
        assert!(
            text.contains("WARNING: the runs differ: alpha n: 8 in A, 4 in B"),
            "{text}"
        );
        assert!(
            text.contains("alpha temperature: 1 in A, 0.7 in B"),
            "{text}"
        );
    }
    assert!(stdout.contains("alpha maj@n: not compared, n = 8 in A and 4 in B"));
    assert!(
        !stdout.lines().any(|l| l.trim_start().starts_with("maj@n ")),
        "{stdout}"
    );
}

/// Splits the fixture into two shard runs by problem id hash.
fn shards(root: &Path) -> [PathBuf; 2] {
    let text = std::fs::read_to_string(fixture().join("manifest.json")).unwrap();
    [0u32, 1].map(|i| {
        let dir = root.join(format!("shard{i}"));
        std::fs::create_dir_all(dir.join("checkpoints")).unwrap();
        let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
        m["shard"] = serde_json::json!({"index": i, "count": 2});
        m["run_id"] = format!("shard{i}").into();
        let problems = ["e1", "e2", "e3", "e4", "h1", "h2", "h3", "h4"]
            .iter()
            .filter(|p| gpassk::dataset::shard::shard_of(p, 2) == i)
            .count();
        m["dataset"]["problems"] = problems.into();
        for model in ["alpha", "beta"] {
            let rel = format!("checkpoints/{model}.jsonl");
            let lines: String = std::fs::read_to_string(fixture().join(&rel))
                .unwrap()
                .lines()
                .filter(|l| {
                    let r: serde_json::Value = serde_json::from_str(l).unwrap();
                    gpassk::dataset::shard::shard_of(r["problem_id"].as_str().unwrap(), 2) == i
                })
                .map(|l| format!("{l}\n"))
                .collect();
            let usable = lines.lines().filter(|l| !l.contains("api_error")).count();
            let entry = &mut m["models"][model];
            entry["ok"] = usable.into();
            entry["api_error"] = (lines.lines().count() - usable).into();
            entry["units_planned"] = (9 * problems).into();
            entry["served_models"] = serde_json::json!({ format!("{model}-7b-served"): usable });
            std::fs::write(dir.join(&rel), lines).unwrap();
        }
        std::fs::write(dir.join("manifest.json"), m.to_string()).unwrap();
        dir
    })
}

#[test]
fn merge_of_two_shards_equals_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let [s0, s1] = shards(dir.path());
    // Each shard scores on its own problems only.
    let one: serde_json::Value = serde_json::from_str(&ok(&gpassk(&[
        "report",
        s0.to_str().unwrap(),
        "--format",
        "json",
    ])))
    .unwrap();
    let shard_problems = one["models"][0]["problems"].as_u64().unwrap();
    assert!(0 < shard_problems && shard_problems < 8);
    let merged = dir.path().join("merged");
    let out = ok(&gpassk(&[
        "merge",
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]));
    assert!(out.contains("merged 2 runs"), "{out}");
    let whole = dir.path().join("whole");
    copy_fixture(&whole);
    for run in [&merged, &whole] {
        ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    }
    for f in ["metrics.csv", "per_problem.csv", "summary.txt"] {
        assert_eq!(
            std::fs::read_to_string(merged.join(f)).unwrap(),
            std::fs::read_to_string(whole.join(f)).unwrap(),
            "{f}"
        );
    }
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("manifest.json")).unwrap())
            .unwrap();
    assert!(m.get("shard").is_none());
    assert_eq!(m["dataset"]["problems"], 8);
    assert_eq!(m["models"]["alpha"]["ok"], 72);
    assert_eq!(m["models"]["beta"]["api_error"], 1);
    assert_eq!(m["models"]["beta"]["units_planned"], 72);
    assert_eq!(m["merged_from"].as_array().unwrap().len(), 2);
}

/// Regression: merge copied lines through a record type without `extracted` and
/// `response_sha256`, so merged runs made with `save_raw_responses = false` lost their answers.
#[test]
fn merge_keeps_the_extracted_answers_of_runs_without_raw_responses() {
    let dir = tempfile::tempdir().unwrap();
    let runs = shards(dir.path());
    let mut expected = vec![];
    for run in &runs {
        let path = run.join("checkpoints/alpha.jsonl");
        let text: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| {
                let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
                r["extracted"] = r["response"].take();
                r["response_sha256"] = "00ff".into();
                expected.push(r.clone());
                format!("{r}\n")
            })
            .collect();
        std::fs::write(&path, text).unwrap();
    }
    let merged = dir.path().join("merged");
    let [s0, s1] = runs.map(|r| r.to_str().unwrap().to_string());
    ok(&gpassk(&[
        "merge",
        &s0,
        &s1,
        "--out",
        merged.to_str().unwrap(),
    ]));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(merged.join("checkpoints/alpha.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(lines, expected);
}

#[test]
fn merge_refuses_duplicate_units_and_mismatched_configs() {
    let dir = tempfile::tempdir().unwrap();
    let [s0, s1] = shards(dir.path());
    let out = gpassk(&[
        "merge",
        s0.to_str().unwrap(),
        s0.to_str().unwrap(),
        "--out",
        dir.path().join("dup").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("refusing to merge overlapping runs") && err.contains("is in both"),
        "{err}"
    );
    assert!(!dir.path().join("dup/manifest.json").exists());

    let path = s1.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["config_hash"] = "other".into();
    std::fs::write(&path, m.to_string()).unwrap();
    let out = gpassk(&[
        "merge",
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
        "--out",
        dir.path().join("bad").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("config_hash"), "{err}");
}

#[test]
fn shards_of_a_dry_run_partition_the_problems() {
    let count = |shard: &str| -> usize {
        let out = ok(&gpassk(&[
            "run",
            "--config",
            "configs/local.toml",
            "--dry-run",
            "--shard",
            shard,
        ]));
        let line = out.lines().find(|l| l.starts_with("dataset ")).unwrap();
        let n = line.split(" — ").nth(1).unwrap().split(' ').next().unwrap();
        n.parse().unwrap()
    };
    let (a, b) = (count("0/2"), count("1/2"));
    assert_eq!(a + b, 10);
    assert!(a > 0 && b > 0);
    let bad = gpassk(&[
        "run",
        "--config",
        "configs/local.toml",
        "--dry-run",
        "--shard",
        "2/2",
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn report_writes_to_out_file() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("r.md");
    let out = ok(&gpassk(&[
        "report",
        FIXTURE,
        "--format",
        "md",
        "--out",
        out_path.to_str().unwrap(),
    ]));
    assert!(out.is_empty());
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), report("md"));
}

#[test]
fn score_never_panics_on_odd_manifest_values() {
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join("manifest.json")).unwrap())
            .unwrap();
    let edits: [(&str, serde_json::Value); 6] = [
        ("/dataset/sha256", "ééééééééééééééééé".into()),
        ("/dataset/sha256", "".into()),
        ("/config_hash", "ü".into()),
        ("/prompt_hash", serde_json::Value::Null),
        ("/dataset/limit", 0.into()),
        ("/models", serde_json::json!({"ghost": {}})),
    ];
    for (pointer, value) in edits {
        let dir = tempfile::tempdir().unwrap();
        copy_fixture(dir.path());
        let mut m = base.clone();
        *m.pointer_mut(pointer).unwrap() = value.clone();
        std::fs::write(dir.path().join("manifest.json"), m.to_string()).unwrap();
        let out = gpassk(&["score", dir.path().to_str().unwrap(), "--quiet"]);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(2)),
            "{pointer} = {value}: exit {code:?}: {}",
            stderr(&out)
        );
        if code == Some(2) {
            assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
        }
    }
}

/// Run text that would be markup or a terminal command if printed raw: a tag with a handler and
/// an OSC sequence that retitles the terminal.
const HOSTILE_NAME: &str =
    "<img src=x onerror=alert(1)>\u{1b}]0;pwned\u{7}[x](javascript:alert(2))";

#[test]
fn run_text_in_markdown_and_the_terminal_is_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_fixture(&run);
    let path = run.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&crate::common::read(&path)).unwrap();
    m["task_name"] = HOSTILE_NAME.into();
    m["config_path"] = format!("a`b{HOSTILE_NAME}").into();
    m["harness"] = HOSTILE_NAME.into();
    for model in ["alpha", "beta"] {
        m["models"][model]["model_id"] = HOSTILE_NAME.into();
        m["models"][model]["served_models"] = serde_json::json!({ HOSTILE_NAME: 72 });
    }
    std::fs::write(&path, m.to_string()).unwrap();
    // The name the server said it served, as every record of alpha has it.
    let checkpoint = run.join("checkpoints/alpha.jsonl");
    let served = crate::common::read(&checkpoint).replace(
        "\"alpha-7b-served\"",
        &serde_json::Value::from(HOSTILE_NAME).to_string(),
    );
    std::fs::write(&checkpoint, served).unwrap();
    let dir = run.to_str().unwrap();
    let md = ok(&gpassk(&["report", dir, "--format", "md"]));
    let table = ok(&gpassk(&["report", dir, "--wide"]));
    for (what, text) in [("md", &md), ("table", &table)] {
        assert!(!text.contains(['\u{1b}', '\u{7}']), "{what}: {text}");
    }
    assert!(md.contains("&lt;img src=x onerror=alert(1)&gt;"), "{md}");
    // Raw only inside code spans, where Markdown shows it as text.
    for line in md.lines().filter(|l| l.contains("<img")) {
        let at = line.find("<img").unwrap();
        assert!(line[..at].contains('`'), "outside a code span: {line}");
    }
    assert!(
        md.contains("| alpha | alpha-7b | &lt;img src=x"),
        "served as: {md}"
    );
    assert!(!md.contains(" [x](javascript"), "{md}");
    assert!(
        md.contains("\\[x\\](javascript"),
        "the link shown as text: {md}"
    );
    assert!(
        md.contains("u{1b}") && md.contains("pwned"),
        "shown, not obeyed: {md}"
    );
    assert!(
        md.contains("- config: `` a`b"),
        "a backtick cannot close the span: {md}"
    );
    // Computed cells stay as they are.
    assert!(md.contains("| alpha | 62.5 [25.6, 90.7] |"), "{md}");
}

/// A synthetic run of 40 problems at n = 8 whose model was priced at 0.002 USD a sample.
fn priced_run(root: &Path) -> PathBuf {
    let run = Synthetic::new(40).write(root, "a", |i, s| (i * 7 + s as usize * 3) % 10 < i % 10);
    let path = run.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["models"]["alpha"]["cost"] = serde_json::json!({"currency": "USD", "total": 0.72,
        "per_sample": 0.002, "per_problem": 0.018, "samples_without_usage": 0,
        "price_source": "config"});
    std::fs::write(&path, m.to_string()).unwrap();
    run
}

/// `gpassk plan` from a run: what its size detects now, the problems and samples a change of D
/// needs under compare's test (Holm over the tested family), and their cost at the run's price.
#[test]
fn plan_sizes_the_next_runs_and_prices_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = priced_run(dir.path());
    let from = run.to_str().unwrap();
    let out = gpassk(&[
        "plan",
        "--from",
        from,
        "--detect",
        "10",
        "--max-problems",
        "100000",
    ]);
    let text = ok(&out);
    assert!(
        text.contains("To detect a change of 10.0 points with 80% power"),
        "{text}"
    );
    assert!(text.contains("now: 40 problems × 8 samples;"), "{text}");
    assert!(text.contains("tested family: 4 tests"), "{text}");
    let json = ok(&gpassk(&[
        "plan",
        "--from",
        from,
        "--detect",
        "10",
        "--max-problems",
        "100000",
        "--format",
        "json",
    ]));
    let plans: serde_json::Value = serde_json::from_str(&json).unwrap();
    let p = &plans[0];
    let best = &p["recommended"];
    let (problems, samples) = (
        best["problems"].as_u64().unwrap(),
        best["samples"].as_u64().unwrap(),
    );
    // Greedy answers are drawn too, and priced like samples.
    assert_eq!(best["units"].as_u64().unwrap(), problems * (samples + 1));
    let cost = best["cost"].as_f64().unwrap();
    assert!(
        (cost - 0.002 * (problems * (samples + 1)) as f64).abs() < 1e-9,
        "{best}"
    );
    // At least the target, up to a simulated power's own noise (±2 points at 80%).
    assert!(best["power"].as_f64().unwrap() >= 0.76, "{best}");
    // A smaller change needs more problems; what the run detects now is above 0.
    let small = ok(&gpassk(&[
        "plan",
        "--from",
        from,
        "--detect",
        "5",
        "--max-problems",
        "100000",
        "--format",
        "json",
    ]));
    let small: serde_json::Value = serde_json::from_str(&small).unwrap();
    let need = |v: &serde_json::Value, s: u64| {
        (v[0]["designs"].as_array().unwrap().iter())
            .find(|d| d["samples"] == s)
            .map(|d| d["problems"].as_u64().unwrap())
            .unwrap()
    };
    assert!(need(&small, 8) > need(&plans, 8));
    for m in p["metrics"].as_array().unwrap() {
        assert!(m["detectable_now"].as_f64().unwrap() > 0.0, "{m}");
        // The share of problems the change moves: the test sees only those.
        let moving = m["moving"].as_f64().unwrap();
        assert!(moving > 0.0 && moving <= 1.0, "{m}");
    }
    // The dataset's 40 problems cannot hold a 5-point design: exit 1, the options still print.
    let tight = gpassk(&["plan", "--from", from, "--detect", "5"]);
    assert_eq!(tight.status.code(), Some(1));
    let tight = String::from_utf8_lossy(&tight.stdout);
    assert!(
        tight.contains("no design within the dataset's 40 problems"),
        "{tight}"
    );
}

#[test]
fn plan_refuses_bad_flags_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let run = priced_run(dir.path());
    let from = run.to_str().unwrap();
    for (extra, says) in [
        (vec!["--detect", "0"], "--detect 0"),
        (vec!["--detect", "120"], "--detect 120"),
        (vec!["--detect", "5", "--power", "1.5"], "--power 1.5"),
        (
            vec!["--detect", "5", "--metric", "G-Pass@16_1.0"],
            "not in the tested family",
        ),
    ] {
        let mut args = vec!["plan", "--from", from];
        args.extend(extra.iter().copied());
        let out = gpassk(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let missing = gpassk(&["plan", "--from", "/nonexistent/run", "--detect", "5"]);
    assert_eq!(missing.status.code(), Some(2));
}
