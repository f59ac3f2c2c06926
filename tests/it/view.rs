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
    dated(&a, &b);
    hostile(&b, "DeepSeek-R1-Distill-Qwen-32B");
    (a, b)
}

/// Week 1 and week 2 start on their Mondays at 06:00 UTC.
fn dated(a: &Path, b: &Path) {
    for (run, date) in [(a, "2026-11-23T06:00:00Z"), (b, "2026-11-30T06:00:00Z")] {
        edit_manifest(run, |m| m["created_at"] = date.into());
    }
}

fn edit_manifest(run: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = run.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&crate::common::read(&path)).unwrap();
    edit(&mut m);
    std::fs::write(&path, m.to_string()).unwrap();
}

/// Every checkpoint line of `model` in `run` passed through `edit`.
fn edit_lines(run: &Path, model: &str, edit: impl Fn(&mut serde_json::Value)) {
    let path = run.join(format!("checkpoints/{model}.jsonl"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let lines: Vec<String> = (text.lines())
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
            edit(&mut r);
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&path, lines.concat()).unwrap();
}

/// [`HOSTILE`] as every response of `model` on p0, and markup as its finish reason.
fn hostile(run: &Path, model: &str) {
    edit_lines(run, model, |r| {
        if r["problem_id"] == "p0" {
            r["response"] = HOSTILE.into();
            r["finish_reason"] = "<img src=y onerror=alert(3)>".into();
        }
    });
}

/// Issue 40's six models ([`crate::common::weekly::NAMES`]), skills as in [`two_weeks`]'s week,
/// the second model the strongest before its fall.
pub(crate) const LONG: [(&str, &str, f64); 6] =
    crate::common::weekly::with_skills([0.9, 0.8, 0.8, 0.55, 0.7, 0.5]);

/// Problem i's question, in LaTeX as math datasets write it.
pub(crate) fn latex_question(i: usize) -> String {
    match i % 3 {
        0 => format!(
            "Let $f(x) = \\frac{{x^2+{i}}}{{x-1}}$ for $x \\ne 1$. Find $f(2)$ and\n give it as an integer."
        ),
        1 => format!("What is $\\sqrt{{{}}} + 2^{{3}}$? Give an integer.", i * i),
        _ => format!("In $\\triangle ABC$, $\\angle A = {i}^\\circ$ and $AB = AC$. Find $\\angle B$."),
    }
}

/// Issue 40's weekly job as two runs: six models with long names; in week 2 the second model is
/// much weaker and the fifth a little, the fourth was interrupted and the sixth failed, and every
/// model is served with a new system fingerprint; questions in LaTeX; [`HOSTILE`] as the first
/// model's responses on p0 in week 2.
pub(crate) fn long_weeks(root: &Path) -> (PathBuf, PathBuf) {
    use crate::report_html::{six_model_week, Week};
    let a = six_model_week(
        root,
        &Week {
            name: "2026-11-23",
            ..Week::default()
        },
        &LONG,
    );
    let week2 = Week {
        name: "2026-11-30",
        partial: true,
        weaker: &[(1, 0.6), (4, 0.1)],
        fingerprint: None,
    };
    let b = six_model_week(root, &week2, &LONG);
    dated(&a, &b);
    for (run, fingerprint) in [(&a, "fp_a"), (&b, "fp_b")] {
        for (model, _, _) in LONG {
            if run.join(format!("checkpoints/{model}.jsonl")).is_file() {
                edit_lines(run, model, |r| r["system_fingerprint"] = fingerprint.into());
                edit_manifest(run, |m| {
                    m["models"][model]["system_fingerprints"] = serde_json::json!([fingerprint])
                });
            }
        }
    }
    let data = root.join("levels.jsonl");
    let lines: String = (crate::common::read(&data).lines().enumerate())
        .map(|(i, l)| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["question"] = latex_question(i).into();
            v.to_string() + "\n"
        })
        .collect();
    std::fs::write(&data, &lines).unwrap();
    let sha: String = {
        use sha2::{Digest, Sha256};
        (Sha256::digest(lines.as_bytes()).iter())
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    for run in [&a, &b] {
        edit_manifest(run, |m| m["dataset"]["sha256"] = sha.clone().into());
    }
    hostile(&b, LONG[0].0);
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
    assert!(
        problem.contains(&format!("previous run <a href=\"/run/{a}/problem?id=p3\">")),
        "{problem}"
    );
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

/// The problem page's tab of each model holds every stored sample of that model (in this run,
/// and the previous run's beside them); hostile model output is shown as text on every page.
#[test]
fn a_problem_page_shows_every_sample_of_every_model_and_hostile_text_stays_text() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = hostile_weeks(dir.path());
    let s = serve(dir.path());
    let b = name(&b);
    let api = json(&s, &format!("/api/run/{b}/problem?id=p0"));
    let models = api["models"].as_array().unwrap();
    assert_eq!(models.len(), MODELS);
    // Week 2: the fourth model stopped after 15 problems and the sixth failed, p0 is in the
    // first 15: five models with 16 samples and a greedy answer each, the sixth with none.
    let mut shown = 0;
    for m in models {
        let model = m["model"].as_str().unwrap();
        let page = ok(&s, &format!("/run/{b}/problem?id=p0&model={}", enc(model)));
        let here = between(&page, "<section class=\"model\">", "</section>");
        let cards = here.matches("<article class=\"sample").count();
        assert_eq!(cards, m["samples"].as_array().unwrap().len(), "{model}");
        shown += cards;
        assert_inert(&page);
        assert_eq!(
            page.matches("<script").count(),
            1,
            "only the viewer's own script"
        );
    }
    assert_eq!(shown, 5 * 17);
    let hostile = ok(
        &s,
        &format!("/run/{b}/problem?id=p0&model=DeepSeek-R1-Distill-Qwen-32B"),
    );
    assert!(
        hostile.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
        "{hostile}"
    );
    assert!(hostile.contains("&lt;/pre&gt;&lt;/td&gt;&lt;/table&gt;"));
    let r = get(&s, &format!("/run/{b}/problem?id=p0"));
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

/// No part of [`HOSTILE`] reached `page` as markup.
fn assert_inert(page: &str) {
    for live in [
        "<script>alert",
        "<img",
        "<a href=\"javascript",
        "<b>bold",
        "onerror=alert(1)>",
    ] {
        assert!(!page.contains(live), "{live} reached the page as markup");
    }
}

/// `target`'s JSON.
fn json(s: &Served, target: &str) -> serde_json::Value {
    serde_json::from_str(&ok(s, target)).unwrap_or_else(|e| panic!("{target}: {e}"))
}

/// The text from the first `start` to the next `end` after it (the end left out).
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in {text}"));
    let rest = &text[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// A string as a URL query value, as the viewer writes its links.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `html` without its tags.
fn text_of(html: &str) -> String {
    regex::Regex::new("<[^>]*>")
        .unwrap()
        .replace_all(html, "")
        .into_owned()
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
    // Problems the comparison of the two weeks rests on, for this model (kept between requests).
    let compared = |s: &Served| -> u64 {
        let v = json(s, "/api/compare?a=2026-11-23&b=2026-11-30");
        (v["rows"].as_array().unwrap().iter())
            .filter(|r| r["model"] == "Mistral-Small-24B-Instruct-2501")
            .map(|r| r["shared"].as_u64().unwrap())
            .sum()
    };
    let shared = compared(&s);
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
    assert!(
        compared(&s) > shared,
        "the comparison follows the grown run"
    );
    // The problem graded again adds its boxed answer to how the model's answers were found.
    assert_eq!(found(&s), (answers + 1, boxed + 1));
}

/// Two runs on different datasets are not compared (their problem ids match by accident), as
/// `gpassk compare` refuses them.
#[test]
fn runs_of_different_datasets_are_not_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    crate::report_search::write_run(dir.path(), "sampler", "searcher", true);
    let s = serve(dir.path());
    let r = get(&s, &format!("/compare?a=run&b={}", name(&b)));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("different datasets"), "{}", r.body);
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

/// Writes [`long_weeks`] to `$GPASSK_VIEW_DIR` for scripts/view-browser.sh: week 2 scored as a
/// run's end scores it (its pages read its `scores.json`), and a shard run of it beside (listed
/// and marked on the Runs page, not in its history).
#[test]
#[ignore = "run by scripts/view-browser.sh"]
fn write_view_fixture() {
    let root = PathBuf::from(std::env::var("GPASSK_VIEW_DIR").expect("GPASSK_VIEW_DIR"));
    std::fs::create_dir_all(&root).unwrap();
    let (_, b) = long_weeks(&root);
    score(&b, &[]);
    let shard = root.join("2026-11-30-shard-1-of-2");
    crate::common::copy_dir(&b, &shard);
    std::fs::remove_file(shard.join("scores.json")).unwrap();
    edit_manifest(&shard, |m| {
        m["run_id"] = "2026-11-30-shard-1-of-2".into();
        m["shard"] = serde_json::json!({"index": 1, "count": 2});
    });
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
    let page = ok(&s, "/run/run/problem?id=p0&model=searcher");
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
    assert!(
        grid.contains(">1/2</a></td>") && grid.contains("2+2?"),
        "{grid}"
    );
    let model = json(&s, "/api/run/imported/problem?id=a")["models"][0]["model"].clone();
    let page = ok(
        &s,
        &format!(
            "/run/imported/problem?id=a&model={}",
            enc(model.as_str().unwrap())
        ),
    );
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

const A: &str = "2026-11-23";
const B: &str = "2026-11-30";

/// The compare page of issue 40's weekly job opens with every model's verdict in compare's words
/// and the fingerprint change every model shares said once; flagged rows come first; rows are
/// grouped per model under short names, each mapped to its full name.
#[test]
fn the_compare_page_opens_with_every_verdict_and_flagged_rows_first() {
    let dir = tempfile::tempdir().unwrap();
    long_weeks(dir.path());
    let s = serve(dir.path());
    let target = format!("compare?a={A}&b={B}");
    let page = ok(&s, &format!("/{target}"));
    let api = json(&s, &format!("/api/{target}"));
    let first = between(&page, "<section", "</section>");
    assert!(first.starts_with("<section class=\"verdicts\">"), "{first}");
    let verdict = |i: usize| api["verdicts"][i]["verdict"].as_str().unwrap().to_string();
    for (i, (model, _, _)) in LONG.iter().enumerate() {
        let item = between(first, &format!("title=\"{model}\""), "</li>");
        assert!(
            item.contains(&format!("<b class=\"word\">{}</b>", verdict(i))),
            "{model}: {item}"
        );
    }
    // The much weaker second model is REGRESSED, as compare says, never "flagged"; the failed
    // sixth is not comparable; the rest show no detectable change.
    assert_eq!(verdict(1), "REGRESSED");
    assert_eq!(verdict(5), "not comparable");
    for i in [0, 2, 3, 4] {
        assert_eq!(verdict(i), "no detectable change", "{}", LONG[i].0);
    }
    assert!(!text_of(&page).contains("flagged ·"), "{page}");
    // Every model's new fingerprint: one line, not one per model.
    assert_eq!(page.matches("fp_a → fp_b").count(), 1, "{page}");
    assert!(
        first.contains("drift: all 5 models: system fingerprint: fp_a → fp_b (100.0% of samples)")
    );
    // Flagged rows first, in the data and on the page (before any model's rows).
    let flagged: Vec<bool> = (api["rows"].as_array().unwrap().iter())
        .map(|r| r["flagged"] == true)
        .collect();
    let count = flagged.iter().filter(|f| **f).count();
    assert!(
        count > 0 && flagged[..count].iter().all(|f| *f),
        "{flagged:?}"
    );
    assert!(page.find("Flagged changes").unwrap() < page.find("Every row, by model").unwrap());
    let section = between(&page, "<section class=\"flagged\">", "</section>");
    assert_eq!(section.matches("<details class=\"cmp").count(), count);
    assert_eq!(
        section.matches(">REGRESSED</b>").count(),
        count,
        "{section}"
    );
    // One group per model, named short: no 52-character name in a summary line.
    assert_eq!(page.matches("<details class=\"model").count(), LONG.len());
    for summary in page.split("<summary>").skip(1) {
        let shown = text_of(&summary[..summary.find("</summary>").unwrap()]);
        assert!(LONG.iter().all(|m| !shown.contains(m.0)), "{shown}");
    }
    let legend = between(&page, "<ul class=\"names\"", "</ul>");
    for (model, _, _) in LONG {
        assert!(legend.contains(&format!("= {model}</li>")), "{legend}");
    }
}

/// Each value on the run page links to the problems grid focused on that model and that metric
/// (the metric clicked is kept), and a value and its interval never break inside.
#[test]
fn run_values_link_to_their_metric_and_keep_each_interval_whole() {
    let dir = tempfile::tempdir().unwrap();
    long_weeks(dir.path());
    let s = serve(dir.path());
    let run = ok(&s, &format!("/run/{B}"));
    let api = json(&s, &format!("/api/run/{B}"));
    let metrics: Vec<&str> = (api["metrics"].as_array().unwrap().iter())
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(metrics.len() > 1);
    for (model, _, _) in LONG {
        for metric in &metrics {
            let href = format!(
                "href=\"/run/{B}/problems?model={}&amp;metric={}\"",
                enc(model),
                enc(metric)
            );
            assert_eq!(run.matches(&href).count(), 1, "{href}");
        }
    }
    let ci = regex::Regex::new(
        r#"<span class="v">[0-9.]+</span> <span class="ci">\[[0-9.]+, [0-9.]+\]</span>"#,
    )
    .unwrap();
    assert!(ci.find_iter(&run).count() >= 5 * metrics.len(), "{run}");
    assert!(ok(&s, "/static/view.css").contains(".v,.ci{white-space:nowrap}"));
    // Following one: the grid shows that metric's value of that model per problem, least first,
    // and keeps only the problems below full marks on it.
    let (model, metric) = (LONG[1].0, "G-Pass@16_0.5");
    let k = metrics.iter().position(|m| *m == metric).unwrap();
    let grid = ok(
        &s,
        &format!(
            "/run/{B}/problems?model={}&metric={}",
            enc(model),
            enc(metric)
        ),
    );
    let note = between(&grid, "<p class=\"focus-note\">", "</p>");
    assert!(note.contains(metric) && note.contains(model), "{note}");
    assert!(grid.contains("data-filter=\"below\" checked"), "{grid}");
    let data = json(&s, &format!("/api/run/{B}/problems"));
    let below = (data["rows"].as_array().unwrap().iter())
        .filter(|r| r["cells"][1]["values"][k].as_f64().is_some_and(|v| v < 1.0))
        .count();
    assert!(below > 0);
    assert_eq!(grid.matches("data-below=\"1\"").count(), below, "{grid}");
}

/// Every c/n cell of the grid links to that model's samples of that problem; the colour scale
/// tells 1/16 from 15/16 (and never from always); the question is its first sentence, readable.
#[test]
fn grid_cells_link_to_their_samples_and_the_scale_tells_1_of_16_from_15_of_16() {
    let dir = tempfile::tempdir().unwrap();
    long_weeks(dir.path());
    let s = serve(dir.path());
    let grid = ok(&s, &format!("/run/{B}/problems"));
    let cell = regex::Regex::new(
        r#"<td class="c-\w+ (s\d)" data-sort="[^"]*" title="[^"]*"><a href="/run/([^/]+)/problem\?id=(\w+)&amp;model=([^"]+)">(\d+/\d+)</a></td>"#,
    )
    .unwrap();
    let mut class_of: std::collections::HashMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for row in grid.split("<tr data-").skip(1) {
        let cells: Vec<regex::Captures> = cell.captures_iter(row).collect();
        assert_eq!(cells.len(), LONG.len(), "{row}");
        for (c, (model, _, _)) in cells.iter().zip(LONG) {
            assert_eq!(
                (&c[2], &c[4]),
                (B, model),
                "a cell links to its own model's samples"
            );
            class_of
                .entry(c[5].to_string())
                .or_default()
                .insert(c[1].to_string());
        }
    }
    let classes = |text: &str| {
        class_of
            .get(text)
            .cloned()
            .unwrap_or_else(|| panic!("no {text} cell"))
    };
    assert_ne!(classes("1/16"), classes("15/16"));
    assert_ne!(classes("0/16"), classes("16/16"));
    assert_eq!(classes("1/16").len(), 1, "one colour per count");
    // A cell's link opens that model's tab, holding its samples of that problem.
    let tab = ok(&s, &format!("/run/{B}/problem?id=p3&model={}", LONG[1].0));
    let current = between(&tab, "aria-current=\"page\"", "</a>");
    assert!(
        current.contains(&format!("title=\"{}\"", LONG[1].0)),
        "{current}"
    );
    let here = between(&tab, "<section class=\"model\">", "</section>");
    assert_eq!(here.matches("<article class=\"sample").count(), 17);
    // The question: its first sentence, math readable, never the LaTeX source.
    for (id, first) in [
        ("p0", "Let f(x) = (x²+0)/(x-1) for x ≠ 1."),
        ("p1", "What is √1 + 2³?"),
        ("p2", "In △ABC, ∠A = 2° and AB = AC."),
    ] {
        let row = between(
            &grid,
            &format!("<a href=\"/run/{B}/problem?id={id}\">"),
            "</tr>",
        );
        assert!(
            row.contains(&format!("<td class=\"q\">{first}</td>")),
            "{row}"
        );
    }
    assert!(
        !between(&grid, "<tbody>", "</tbody>").contains('\\'),
        "LaTeX left in the grid"
    );
}

/// The problem page: a tab per model, the overview holding no sample (every model's answers by
/// votes in this run and the previous, a line each), and on a model's tab its samples beside the
/// previous run's; math readable, its source one click away.
#[test]
fn the_problem_page_has_a_tab_per_model_and_the_previous_runs_samples_beside() {
    let dir = tempfile::tempdir().unwrap();
    long_weeks(dir.path());
    let s = serve(dir.path());
    let overview = ok(&s, &format!("/run/{B}/problem?id=p0"));
    let tabs = between(&overview, "<nav class=\"tabs\"", "</nav>");
    assert_eq!(tabs.matches("<a href=").count(), LONG.len() + 1, "{tabs}");
    assert!(between(tabs, "aria-current", "</a>").contains("all models"));
    assert_eq!(
        overview.matches("<article").count(),
        0,
        "no sample on the overview"
    );
    let table = between(&overview, "<table class=\"overview\">", "</table>");
    assert_eq!(table.matches("<tr><td>").count(), LONG.len());
    assert!(table.contains(&format!("previous run <a href=\"/run/{A}/problem?id=p0\">")));
    assert!(
        overview.contains("x ≠ 1") && !overview.contains("\\ne"),
        "readable math"
    );
    let source = ok(&s, &format!("/run/{B}/problem?id=p0&math=source"));
    assert!(source.contains("$x \\ne 1$"), "the LaTeX as written");
    let api = json(&s, &format!("/api/run/{B}/problem?id=p0"));
    for (i, (model, _, _)) in LONG.iter().enumerate().take(5) {
        let tab = ok(&s, &format!("/run/{B}/problem?id=p0&model={model}"));
        let pair = between(&tab, "<div class=\"pair\">", "</div></div>");
        let now = between(pair, "<section class=\"model\">", "</section>");
        let before = between(pair, "<section class=\"model before\">", "</section>");
        let cards = |html: &str| html.matches("<article class=\"sample").count();
        assert_eq!(
            cards(now),
            api["models"][i]["samples"].as_array().unwrap().len()
        );
        assert_eq!(
            cards(before),
            api["before"]["models"][i]["samples"]
                .as_array()
                .unwrap()
                .len()
        );
        assert_eq!(
            cards(&tab),
            cards(now) + cards(before),
            "no other model's samples"
        );
    }
}

/// The Runs page: when each run started in words, every headline metric of each model (▼ where
/// history flags a drop), and a change every model shares said once.
#[test]
fn the_runs_page_says_when_shows_every_headline_metric_and_a_shared_change_once() {
    let dir = tempfile::tempdir().unwrap();
    long_weeks(dir.path());
    let s = serve(dir.path());
    let page = ok(&s, "/");
    for (raw, said) in [
        ("2026-11-23T06:00:00Z", "Mon 23 Nov 2026, 06:00 UTC"),
        ("2026-11-30T06:00:00Z", "Mon 30 Nov 2026, 06:00 UTC"),
    ] {
        assert!(
            page.contains(&format!("<time datetime=\"{raw}\">{said}</time>")),
            "{page}"
        );
        assert!(!text_of(&page).contains(raw), "a raw timestamp shown");
    }
    let api = json(&s, "/api/runs");
    let week2 = (api["runs"].as_array().unwrap().iter())
        .find(|r| r["name"] == B)
        .unwrap();
    let history: Vec<&str> = (api["history"].as_array().unwrap().iter())
        .filter(|h| h["run"] == B && h["model"] == LONG[0].0)
        .map(|h| h["metric"].as_str().unwrap())
        .collect();
    assert!(history.len() > 1);
    assert_eq!(week2["metrics"], serde_json::json!(history));
    let row = between(
        &page,
        &format!("<a href=\"/run/{B}\">"),
        "</tr></tbody></table></div>",
    );
    for (model, _, _) in LONG {
        let line = between(row, &format!("title=\"{model}\""), "</tr>");
        assert_eq!(line.matches("<td").count(), history.len(), "{line}");
    }
    let weaker = between(row, &format!("title=\"{}\"", LONG[1].0), "</tr>");
    assert!(
        weaker.contains("class=\"down\"") && weaker.contains(" ▼"),
        "{weaker}"
    );
    let marks = between(&page, &format!("<a href=\"/run/{B}\">"), "</p>");
    assert_eq!(marks.matches("system fingerprint").count(), 1, "{marks}");
    assert!(
        marks.contains("all 6 models: system fingerprint"),
        "{marks}"
    );
    assert_eq!(
        page.matches("fp_a → fp_b").count(),
        1,
        "said once under Changes"
    );
}
