//! `gpassk view` over HTTP: every page and API route of two weekly runs, hostile model output
//! shown as text, paths that would leave the folder refused, a run growing while served, and
//! the bad inputs that stop it before it serves.

use crate::common::{gpassk, stderr};
use crate::report_html::two_weeks;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Model output that would run, load or link if it were markup.
pub(crate) const HOSTILE: &str = "<script>alert('x')</script><img src=x onerror=alert(1)> \
     <a href=\"javascript:alert(2)\">click</a></pre></td></table><b>bold</b> The final answer is $\\boxed{1}$.";

/// A `gpassk view` process on a free loopback port; killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(dir: &Path) -> Served {
    let mut child = gpassk()
        .args(["view", dir.to_str().unwrap(), "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let at = line
        .find("http://")
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    let addr = line[at + 7..].split('/').next().unwrap().to_string();
    Served { child, addr }
}

/// One reply: status, headers (lowercased names) and body.
pub(crate) struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

/// GET `target` exactly as written (no normalisation of `..` or escapes).
pub(crate) fn get(s: &Served, target: &str) -> Reply {
    let mut stream = std::net::TcpStream::connect(&s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        s.addr
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        headers: head.to_lowercase(),
        body: body.to_string(),
    }
}

pub(crate) fn ok(s: &Served, target: &str) -> String {
    let r = get(s, target);
    assert_eq!(r.status, 200, "{target}: {}", r.body);
    assert!(
        r.headers.contains("content-security-policy: default-src"),
        "{target}: {}",
        r.headers
    );
    r.body
}

/// The two weekly runs with [`HOSTILE`] as every response of week 2's first model on problem
/// p0 and in its error text.
pub(crate) fn hostile_weeks(root: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = two_weeks(root);
    for (run, date) in [(&a, "2026-11-23T06:00:00Z"), (&b, "2026-11-30T06:00:00Z")] {
        let path = run.join("manifest.json");
        let mut m: serde_json::Value = serde_json::from_str(&crate::common::read(&path)).unwrap();
        m["created_at"] = date.into();
        std::fs::write(&path, m.to_string()).unwrap();
    }
    let path = b.join("checkpoints/DeepSeek-R1-Distill-Qwen-32B.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = (text.lines())
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
            if r["problem_id"] == "p0" {
                r["response"] = HOSTILE.into();
                r["finish_reason"] = "<img src=y onerror=alert(3)>".into();
            }
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&path, lines.concat()).unwrap();
    (a, b)
}

const MODELS: usize = 6;

#[test]
fn view_serves_every_page_and_api_route() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = hostile_weeks(dir.path());
    let s = serve(dir.path());
    let (a, b) = (name(&a), name(&b));
    let runs = ok(&s, "/");
    assert!(runs.contains(&format!("href=\"/run/{a}\"")), "{runs}");
    assert!(
        runs.contains(&format!("/compare?a={a}&amp;b={b}")),
        "{runs}"
    );
    assert!(
        runs.contains("system fingerprint"),
        "history's drift marker: {runs}"
    );
    let run = ok(&s, &format!("/run/{b}"));
    assert!(
        run.contains("problems?model=Llama-3.1-8B-Instruct"),
        "{run}"
    );
    let grid = ok(&s, &format!("/run/{b}/problems"));
    assert_eq!(grid.matches("<tr data-unstable=").count(), 24, "{grid}");
    assert!(grid.contains("c-always") && grid.contains("c-never") && grid.contains("c-sometimes"));
    assert!(
        grid.contains("data-changed=\"1\""),
        "week 2 changed: {grid}"
    );
    let problem = ok(&s, &format!("/run/{b}/problem?id=p3"));
    assert!(problem.contains("Before: run"), "{problem}");
    let compare = ok(&s, &format!("/compare?a={a}&b={b}"));
    assert!(
        compare.contains("Llama-3.1-8B-Instruct") && compare.contains("problem?id=p"),
        "{compare}"
    );
    let report = get(&s, &format!("/run/{b}/report"));
    assert_eq!(report.status, 200);
    assert!(
        report.headers.contains("script-src") || !report.headers.contains("'unsafe-inline' 'self'")
    );
    assert!(report.body.contains("<svg"), "the report's plots");
    for api in [
        "/api/runs".to_string(),
        format!("/api/run/{b}"),
        format!("/api/run/{b}/problems"),
        format!("/api/run/{b}/problem?id=p0"),
        format!("/api/compare?a={a}&b={b}"),
        format!("/api/stamp?run={b}"),
    ] {
        let r = get(&s, &api);
        assert_eq!(r.status, 200, "{api}: {}", r.body);
        assert!(r.headers.contains("application/json"), "{api}");
        serde_json::from_str::<serde_json::Value>(&r.body).unwrap_or_else(|e| panic!("{api}: {e}"));
    }
    let detail: serde_json::Value =
        serde_json::from_str(&get(&s, &format!("/api/run/{b}/problem?id=p0")).body).unwrap();
    assert_eq!(
        detail["models"][0]["samples"][0]["response"], HOSTILE,
        "the API keeps the text as it is"
    );
    for asset in ["/static/view.js", "/static/view.css"] {
        assert!(!ok(&s, asset).is_empty(), "{asset}");
    }
    for missing in [
        "/nope",
        "/run/nope",
        &format!("/run/{b}/problem?id=nope"),
        "/api/nope",
    ] {
        assert_eq!(get(&s, missing).status, 404, "{missing}");
    }
    assert_eq!(get(&s, &format!("/run/{b}/problem")).status, 400, "no id");
}

fn name(run: &Path) -> String {
    run.file_name().unwrap().to_str().unwrap().to_string()
}

#[test]
fn a_problem_page_shows_every_sample_of_every_model_and_hostile_text_stays_text() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = hostile_weeks(dir.path());
    let s = serve(dir.path());
    let page = ok(&s, &format!("/run/{}/problem?id=p0", name(&b)));
    // Week 2: the fourth model stopped after 15 problems and the sixth failed, p0 is in the
    // first 15: five models with 16 samples and a greedy answer each, the sixth with none.
    assert_eq!(
        page.matches("<article class=\"sample").count(),
        5 * 17,
        "{page}"
    );
    assert_eq!(page.matches("<section class=\"model\">").count(), MODELS);
    for live in [
        "<script>alert",
        "<img",
        "<a href=\"javascript",
        "<b>bold",
        "onerror=alert(1)>",
    ] {
        assert!(!page.contains(live), "{live} reached the page as markup");
    }
    assert!(
        page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("&lt;/pre&gt;&lt;/td&gt;&lt;/table&gt;"));
    assert_eq!(
        page.matches("<script").count(),
        1,
        "only the viewer's own script"
    );
    let r = get(&s, &format!("/run/{}/problem?id=p0", name(&b)));
    let csp = r
        .headers
        .lines()
        .find(|l| l.starts_with("content-security-policy"))
        .unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
}

#[test]
fn paths_that_leave_the_folder_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let (a, _) = two_weeks(&results);
    // A run outside the folder, linked in: not listed, not served.
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let (secret, _) = two_weeks(&outside);
    std::os::unix::fs::symlink(&secret, results.join("linked")).unwrap();
    let s = serve(&results);
    assert!(!ok(&s, "/").contains("/run/linked"));
    let a = name(&a);
    for (target, codes) in [
        ("/run/linked", &[404][..]),
        ("/api/run/linked/problems", &[404]),
        ("/run/..", &[400]),
        ("/run/%2e%2e", &[400]),
        ("/run/%2E%2E/%2E%2E/etc", &[400]),
        ("/run/..%2f..%2fetc", &[400]),
        ("/run/a%2Fb", &[400]),
        ("/run/a%5cb", &[400]),
        ("/static/../Cargo.toml", &[400]),
        ("/static/%2e%2e%2fCargo.toml", &[400, 404]),
        ("/run/.hidden", &[400]),
        ("/run/%00", &[400]),
        ("/run/%zz", &[400]),
    ] {
        let r = get(&s, target);
        assert!(
            codes.contains(&r.status),
            "{target}: {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(
        get(&s, &format!("/run/{a}/problem?id=..%2F..%2Fmanifest.json")).status,
        404
    );
    assert_eq!(
        get(&s, &format!("/run/{a}/tree?model=..%2F..&id=p0&index=0")).status,
        404
    );
}

/// Files, sizes and modification times under `dir`.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            out.push((e.path(), m.len(), m.modified().unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_run_growing_while_served_is_seen_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    let checkpoint = b.join("checkpoints/Mistral-Small-24B-Instruct-2501.jsonl");
    let before = snapshot(dir.path());
    let s = serve(dir.path());
    let target = format!("/api/run/{}/problem?id=p20", name(&b));
    let samples = |s: &Served| -> usize {
        let v: serde_json::Value = serde_json::from_str(&get(s, &target).body).unwrap();
        v["models"][3]["samples"].as_array().unwrap().len()
    };
    assert_eq!(samples(&s), 0, "interrupted before p20");
    // How many of the model's answers the run page says were found, and how many boxed.
    let found = |s: &Served| -> (u64, u64) {
        let v: serde_json::Value =
            serde_json::from_str(&get(s, &format!("/api/run/{}", name(&b))).body).unwrap();
        let m = &v["answers_found"]["models"][3];
        (
            m["answers"].as_u64().unwrap(),
            m["found_by"]["boxed"].as_u64().unwrap(),
        )
    };
    let (answers, boxed) = found(&s);
    let stamp = get(&s, &format!("/api/stamp?run={}", name(&b))).body;
    for page in [
        "/",
        &format!("/run/{}", name(&b)),
        &format!("/run/{}/problems", name(&b)),
    ] {
        ok(&s, page);
    }
    assert_eq!(before, snapshot(dir.path()), "serving wrote into the runs");
    // The sampler appends p20's samples, the last line still being written.
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    let line = text.lines().next().unwrap().replace("\"p0\"", "\"p20\"");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&checkpoint)
        .unwrap();
    write!(f, "{line}\n{}", &line[..line.len() / 2]).unwrap();
    drop(f);
    let deadline = Instant::now() + Duration::from_secs(60);
    while samples(&s) != 1 {
        assert!(Instant::now() < deadline, "the new sample never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_ne!(stamp, get(&s, &format!("/api/stamp?run={}", name(&b))).body);
    let grid = ok(&s, &format!("/api/run/{}/problems", name(&b)));
    let v: serde_json::Value = serde_json::from_str(&grid).unwrap();
    assert_eq!(
        v["rows"][20]["cells"][3]["n"], 1,
        "the grid rescored: {grid}"
    );
    // The problem graded again adds its boxed answer to how the model's answers were found.
    assert_eq!(found(&s), (answers + 1, boxed + 1));
}

#[test]
fn bad_folders_ports_and_flags_are_one_line_errors_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let missing = dir.path().join("missing");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let cases: [(Vec<&str>, &str); 4] = [
        (vec![missing.to_str().unwrap()], "missing"),
        (vec![file.to_str().unwrap()], "not a folder"),
        (
            vec![dir.path().to_str().unwrap(), "--port", &port],
            "cannot listen",
        ),
        (vec![dir.path().to_str().unwrap(), "--port", "x"], "--port"),
    ];
    for (args, says) in cases {
        let out = gpassk().arg("view").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Writes [`hostile_weeks`] to `$GPASSK_VIEW_DIR` for scripts/view-browser.sh: week 2 scored as a
/// run's end scores it (its pages read its `scores.json`), and a shard run of it beside (listed
/// and marked on the Runs page, not in its history).
#[test]
#[ignore = "run by scripts/view-browser.sh"]
fn write_view_fixture() {
    let root = PathBuf::from(std::env::var("GPASSK_VIEW_DIR").expect("GPASSK_VIEW_DIR"));
    std::fs::create_dir_all(&root).unwrap();
    let (_, b) = hostile_weeks(&root);
    score(&b, &[]);
    let shard = root.join("2026-11-30-shard-1-of-2");
    crate::common::copy_dir(&b, &shard);
    std::fs::remove_file(shard.join("scores.json")).unwrap();
    let path = shard.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&crate::common::read(&path)).unwrap();
    m["run_id"] = "2026-11-30-shard-1-of-2".into();
    m["shard"] = serde_json::json!({"index": 1, "count": 2});
    std::fs::write(&path, m.to_string()).unwrap();
}

/// A search run: the problem page shows each search's chosen path and links its tree; the tree
/// is shown as text; a record naming a tree outside the run is refused.
#[test]
fn a_search_shows_its_chosen_path_and_tree_and_no_tree_outside_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = crate::report_search::write_run(dir.path(), "sampler", "searcher", true);
    let tree = run.join("trees/searcher/p0/0.json");
    std::fs::create_dir_all(tree.parent().unwrap()).unwrap();
    std::fs::write(&tree, "{\"root\": \"<script>alert(4)</script>\"}").unwrap();
    std::fs::write(dir.path().join("secret.json"), "{\"secret\": 1}").unwrap();
    let checkpoint = run.join("checkpoints/searcher.jsonl");
    let text = crate::common::read(&checkpoint);
    let out = text.replacen("trees/searcher/p0/1.json", "../secret.json", 1);
    std::fs::write(&checkpoint, out).unwrap();
    let s = serve(&run);
    let page = ok(&s, "/run/run/problem?id=p0");
    assert!(
        page.contains("chosen path:") && page.contains("# add\nx = 1\n"),
        "{page}"
    );
    let href = "/run/run/tree?model=searcher&amp;id=p0&amp;index=0";
    assert!(page.contains(href), "{page}");
    let tree_page = ok(&s, &href.replace("&amp;", "&"));
    assert!(tree_page.contains("&lt;script&gt;alert(4)"), "{tree_page}");
    assert!(!tree_page.contains("<script>alert"));
    for other in ["/", "/run/run", "/run/run/problems", "/compare?a=run&b=run"] {
        ok(&s, other);
    }
    let outside = get(&s, "/run/run/tree?model=searcher&id=p0&index=1");
    assert_eq!(outside.status, 400, "{}", outside.body);
    assert!(!outside.body.contains("secret\": 1"));
}

/// Ctrl-C (SIGINT) stops the server cleanly: exit 0 within a bound, the port released.
#[test]
fn ctrl_c_stops_the_server_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    two_weeks(dir.path());
    let mut s = serve(dir.path());
    ok(&s, "/api/runs");
    let pid = s.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = s.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still serving after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    assert!(
        std::net::TcpListener::bind(&s.addr).is_ok(),
        "the port is free again"
    );
}

/// An imported run is served like a native one: its problems from the run's own dataset file,
/// its samples on the problem page, a hostile imported response shown as text.
#[test]
fn an_imported_run_is_served_like_a_native_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bare.jsonl");
    std::fs::write(
        &input,
        "{\"problem_id\": \"a\", \"question\": \"2+2?\", \"gold\": \"4\", \"response\": \"<img src=x onerror=alert(1)> so \\\\boxed{4}\"}\n\
         {\"problem_id\": \"a\", \"question\": \"2+2?\", \"gold\": \"4\", \"response\": \"so \\\\boxed{5}\"}\n\
         {\"problem_id\": \"b\", \"question\": \"1/2?\", \"gold\": \"1/2\", \"response\": \"\\\\boxed{0.5}\"}\n",
    )
    .unwrap();
    let run = dir.path().join("imported");
    let args = [
        "import",
        "jsonl",
        input.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
    ];
    crate::common::ok(&crate::common::run(&args));
    let s = serve(&run);
    let grid = ok(&s, "/run/imported/problems");
    assert!(grid.contains("1/2</td>") && grid.contains("2+2?"), "{grid}");
    let page = ok(&s, "/run/imported/problem?id=a");
    assert_eq!(page.matches("<article class=\"sample").count(), 2, "{page}");
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;") && !page.contains("<img"));
    for other in ["/", "/run/imported", "/compare?a=imported&b=imported"] {
        ok(&s, other);
    }
}

/// The run and problems pages' data of run `name`.
pub(crate) fn pages(s: &Served, name: &str) -> (serde_json::Value, serde_json::Value) {
    let json = |target: String| -> serde_json::Value {
        serde_json::from_str(&ok(s, &target)).unwrap_or_else(|e| panic!("{target}: {e}"))
    };
    (
        json(format!("/api/run/{name}")),
        json(format!("/api/run/{name}/problems")),
    )
}

/// The pages of `run` as grading every sample gives them: the folder `root` copied without the
/// run's stored parts, and served.
pub(crate) fn graded_whole(root: &Path, run: &Path) -> (serde_json::Value, serde_json::Value) {
    let copy = tempfile::tempdir().unwrap();
    crate::common::copy_dir(root, copy.path());
    let _ = std::fs::remove_file(copy.path().join(name(run)).join("scores.json"));
    pages(&serve(copy.path()), &name(run))
}

/// `gpassk score RUN --quiet` and any `--set`.
fn score(run: &Path, set: &[&str]) {
    let mut args = vec!["score", run.to_str().unwrap(), "--quiet"];
    args.extend(set.iter().flat_map(|s| ["--set", *s]));
    crate::common::ok(&crate::common::run(&args));
    assert!(run.join("scores.json").is_file());
}

/// Appends checkpoint lines: week 2's first line with each `(model, problem, sample, answer,
/// outcome)` put in.
fn append_units(run: &Path, model: &str, units: &[(&str, serde_json::Value, u32, &str)]) {
    let path = run.join(format!("checkpoints/{model}.jsonl"));
    let text = crate::common::read(&path);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for (problem, sample, answer, outcome) in units {
        let mut r = first.clone();
        r["problem_id"] = (*problem).into();
        r["sample_index"] = sample.clone();
        r["response"] = format!("The final answer is $\\boxed{{{answer}}}$.").into();
        r["outcome"] = (*outcome).into();
        writeln!(f, "{r}").unwrap();
    }
}

const MISTRAL: &str = "Mistral-Small-24B-Instruct-2501";

/// A run scored by `gpassk score` is shown from the parts it stored (a count only they hold is
/// what the page shows), and a line appended later grades its problem alone again.
#[test]
fn a_scored_run_is_shown_from_its_stored_parts_and_new_lines_grade_their_problem_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    score(&b, &[]);
    let stored = b.join("scores.json");
    let mut parts: serde_json::Value = serde_json::from_str(&crate::common::read(&stored)).unwrap();
    let row = &mut parts["models"][0]["problems"][0];
    let marked = u64::from(row[3] == 0);
    row[3] = marked.into();
    std::fs::write(&stored, parts.to_string()).unwrap();
    let before = snapshot(dir.path());
    let s = serve(dir.path());
    let (_, grid) = pages(&s, &name(&b));
    assert_eq!(grid["rows"][0]["cells"][0]["c"], marked, "{grid}");
    assert_eq!(
        grid["rows"][20]["cells"][3]["n"], 0,
        "interrupted before p20"
    );
    append_units(&b, MISTRAL, &[("p20", 0.into(), 1, "ok")]);
    let (_, grid) = pages(&s, &name(&b));
    assert_eq!(grid["rows"][20]["cells"][3]["n"], 1, "p20 graded: {grid}");
    assert_eq!(grid["rows"][20]["cells"][3]["c"], 1);
    assert_eq!(
        grid["rows"][0]["cells"][0]["c"], marked,
        "p0 has no new line: not graded again"
    );
    let appended = b.join(format!("checkpoints/{MISTRAL}.jsonl"));
    let unchanged = |files: Vec<(PathBuf, u64, std::time::SystemTime)>| -> Vec<_> {
        files.into_iter().filter(|f| f.0 != appended).collect()
    };
    assert_eq!(
        unchanged(before),
        unchanged(snapshot(dir.path())),
        "serving wrote into the runs"
    );
}

/// Stored parts brought up to date with every kind of appended line (a new unit, a later record
/// of a unit already scored, an API error, a truncated answer, a problem the plan lacks, the
/// greedy answer) give exactly the pages grading every sample gives.
#[test]
fn stored_parts_brought_up_to_date_equal_grading_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    score(&b, &[]);
    let s = serve(dir.path());
    assert_eq!(pages(&s, &name(&b)), graded_whole(dir.path(), &b));
    append_units(
        &b,
        MISTRAL,
        &[
            ("p20", 0.into(), 1, "ok"),
            ("p20", 0.into(), 2, "ok"),
            ("p20", 1.into(), 2, "api_error"),
            ("p20", 1.into(), 1, "truncated"),
            ("p20", "greedy".into(), 1, "ok"),
            ("p21", 5.into(), 2, "ok"),
            ("p3", 0.into(), 2, "ok"),
            ("nope", 0.into(), 1, "ok"),
        ],
    );
    append_units(&b, "Llama-3.1-8B-Instruct", &[("p0", 0.into(), 2, "ok")]);
    let (run, grid) = pages(&s, &name(&b));
    assert_eq!(grid["rows"][20]["cells"][3]["n"], 2, "{grid}");
    assert_eq!((run, grid), graded_whole(dir.path(), &b));
}

/// Parts stored by a scoring with other settings (`score --set` another extraction), or of a
/// checkpoint since rewritten, are not shown: the run is graded as its own config says.
#[test]
fn parts_of_other_settings_or_a_rewritten_checkpoint_are_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    score(
        &b,
        &["evaluation.answer_extract_regex=[\"final (answer)\"]"],
    );
    let stored = crate::common::read(&b.join("scores.json"));
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        stored["models"][0]["problems"][0][3], 0,
        "all wrong: {stored}"
    );
    let s = serve(dir.path());
    let (run, grid) = pages(&s, &name(&b));
    assert!(
        grid["rows"][0]["cells"][0]["c"].as_u64() > Some(0),
        "the run's own extraction: {grid}"
    );
    assert_eq!((run, grid), graded_whole(dir.path(), &b));
    score(&b, &[]);
    assert_eq!(pages(&s, &name(&b)), graded_whole(dir.path(), &b));
    // The first line rewritten in place, its length kept: another answer.
    let path = b.join(format!("checkpoints/{MISTRAL}.jsonl"));
    let text = crate::common::read(&path);
    let (first, rest) = text.split_once('\n').unwrap();
    let flipped = if first.contains("boxed{1}") {
        first.replace("boxed{1}", "boxed{2}")
    } else {
        first.replace("boxed{2}", "boxed{1}")
    };
    std::fs::write(&path, format!("{flipped}\n{rest}")).unwrap();
    let (run, grid) = pages(&s, &name(&b));
    assert_eq!((run, grid), graded_whole(dir.path(), &b));
}

/// Per problem of a one-model run: each grid row against its problem page (the grid's counts and
/// "grader and judge disagree" from the stored scores; the page's from grading each sample).
fn grid_matches_problem_pages(s: &Served, run: &str, grid: &serde_json::Value) -> usize {
    let mut overruled = 0;
    for row in grid["rows"].as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let target = format!("/api/run/{run}/problem?id={id}");
        let page: serde_json::Value = serde_json::from_str(&ok(s, &target)).unwrap();
        let samples = page["models"][0]["samples"].as_array().unwrap();
        let differs = samples.iter().any(|x| x["verdict"] != x["rule"]);
        assert_eq!(row["judge_disagrees"], differs, "{id}: {row} {page}");
        assert_eq!(row["cells"][0]["c"], page["models"][0]["c"], "{id}");
        overruled += usize::from(differs);
    }
    overruled
}

/// A run graded by rule then judge: the grid marks the problems where the judge overruled the
/// rule grader from what scoring stored, as the problem pages show them; a verdict added to the
/// judge's file later is followed (the run graded again).
#[test]
fn a_judged_run_marks_what_the_judge_overruled_and_follows_new_verdicts() {
    use crate::run_fake::{configure_judged, judge_says_yes, run, sums};
    let server = fake_openai::FakeServer::builder().responder(judge_says_yes);
    let env = crate::common::Fixture::new(&sums(6)).with_server(server);
    configure_judged(&env, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::common::both(&out));
    let dir = env.run_dir();
    assert!(dir.join("scores.json").is_file(), "run stores its parts");
    let s = serve(&dir);
    let run_name = name(&dir);
    let (_, grid) = pages(&s, &run_name);
    assert_eq!(grid["judged"], true);
    let overruled = grid_matches_problem_pages(&s, &run_name, &grid);
    assert!(overruled > 0, "the judge rescued rule rejections: {grid}");
    // The judge asked again about one rescued sample (not a greedy answer, which c leaves out),
    // and saying no this time.
    let grades = dir.join("grades/m1.jsonl");
    let text = crate::common::read(&grades);
    let mut verdict: serde_json::Value = (text.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["sample_index"].is_u64())
        .expect("a sample the judge rescued");
    verdict["correct"] = false.into();
    std::fs::write(&grades, format!("{text}{verdict}\n")).unwrap();
    let (_, again) = pages(&s, &run_name);
    assert_ne!(again, grid, "the new verdict counts");
    grid_matches_problem_pages(&s, &run_name, &again);
}
