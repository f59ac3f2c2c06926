//! How each graded answer was found (issue 38): `found_by` in the graded samples (the store's
//! rows, the viewer's sample view, `import --disagreements`, a run that kept no responses), the
//! share found by a guess with its warning in every report, and `grader =
//! "rule_then_judge_uncertain"`, which sends the judge only the answers the rules guessed or did
//! not find, counted on the fake server.

use crate::common::{both, read, stdout, Fixture};
use crate::run_fake::{configure, run, ONE_MODEL};
use fake_openai::{ChoiceReply, FakeServer, Fault, Recorded, Reply};
use gpassk::grade::{FoundBy, GradeConfig, Outcome};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Problems "What is a+b?" with answer a+b (a = i + 2, b = 3i + 1).
fn sums(problems: usize) -> String {
    crate::run_fake::sums(problems)
}

/// Answers "What is a+b?" right or wrong as a pure function of the request, in one of four
/// styles: a box, the last math span, the last number, or no answer at all.
fn styled_reply(r: &Recorded) -> Reply {
    let q = r.user_text().unwrap_or_default();
    let nums: Vec<u64> = (q.split(|c: char| !c.is_ascii_digit()))
        .filter_map(|s| s.parse().ok())
        .collect();
    let (a, b) = match nums.as_slice() {
        [.., a, b] => (*a, *b),
        _ => (0, 0),
    };
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let choices = (0..r.n())
        .map(|i| {
            let k = seed.wrapping_add(i).wrapping_add(a);
            let ans = if k % 3 == 0 { a + b + 1 } else { a + b };
            ChoiceReply::stop(match k % 4 {
                0 => format!("Adding them, the sum is \\boxed{{{ans}}}."),
                1 => format!("We add ${a}+{b}$ and get ${ans}$"),
                2 => format!("Adding {a} and {b} gives {ans} apples"),
                _ => "I do not know how to add these.".to_string(),
            })
        })
        .collect();
    Reply {
        choices,
        served_model: None,
        system_fingerprint: None,
        usage: None,
    }
}

/// The judge `judge-1` says yes to every answer (when `up`, else the server fails it); the policy
/// answers as [`styled_reply`].
fn server(up: Arc<AtomicBool>) -> fake_openai::FakeServerBuilder {
    FakeServer::builder()
        .responder(|r: &Recorded| match r.model() {
            Some("judge-1") => Reply::with_choices(vec![ChoiceReply::stop("Yes.")]),
            _ => styled_reply(r),
        })
        .faults(move |r: &Recorded| {
            let down = r.model() == Some("judge-1") && !up.load(Ordering::SeqCst);
            down.then(|| Fault::Status {
                code: 503,
                body: "judge down".into(),
                retry_after: None,
            })
        })
}

/// `n = 4` samples and a greedy answer of one model, graded by `grader` with the judge `judge-1`
/// (`judge` adds keys to `[judge]`, `evaluation` to `[evaluation]`).
fn configure_graded(env: &Fixture, grader: &str, judge: &str, evaluation: &str) {
    let cfg = configure(env, "n = 4", ONE_MODEL, "");
    let text = read(&cfg).replace(
        "[evaluation]\n",
        &format!("[evaluation]\ngrader = \"{grader}\"\n{evaluation}"),
    );
    std::fs::write(&cfg, text + "[judge]\nmodel_id = \"judge-1\"\n" + judge).unwrap();
}

fn judge_requests(env: &Fixture) -> usize {
    (env.server().requests().iter())
        .filter(|r| r.model() == Some("judge-1"))
        .count()
}

/// One unit as the public grader sees it: its problem's gold and response, graded alone.
#[derive(Debug, Clone)]
struct Unit {
    problem: String,
    slot: String,
    rule: Outcome,
    found_by: FoundBy,
}

/// Every usable unit of `model`'s checkpoint (the first record of each), graded by
/// `gpassk::grade::grade` against the dataset's gold.
fn units(run_dir: &Path, model: &str, dataset: &str) -> Vec<Unit> {
    let gold: BTreeMap<String, String> = (dataset.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            (
                v["id"].as_str().unwrap().into(),
                v["answer"].as_str().unwrap().into(),
            )
        })
        .collect();
    let text = read(&run_dir.join("checkpoints").join(format!("{model}.jsonl")));
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (problem, slot) = (
            v["problem_id"].as_str().unwrap(),
            v["sample_index"].to_string(),
        );
        if v["outcome"] == "api_error" || !seen.insert((problem.to_string(), slot.clone())) {
            continue;
        }
        let verdict = gpassk::grade::grade(
            &gold[problem],
            v["response"].as_str().unwrap(),
            &GradeConfig::default(),
        );
        out.push(Unit {
            problem: problem.into(),
            slot,
            rule: verdict.outcome,
            found_by: verdict.found_by,
        });
    }
    out
}

/// Per problem of per_problem.csv: (c, greedy_correct).
fn per_problem(run_dir: &Path) -> BTreeMap<String, (u64, String)> {
    let mut r = csv::Reader::from_path(run_dir.join("per_problem.csv")).unwrap();
    (r.records().map(|r| r.unwrap()))
        .map(|r| (r[1].to_string(), (r[4].parse().unwrap(), r[5].to_string())))
        .collect()
}

/// What per_problem.csv must say when the units `judged` are accepted by the judge and the rest
/// keep their rule verdict.
fn expected(units: &[Unit], judged: impl Fn(&Unit) -> bool) -> BTreeMap<String, (u64, String)> {
    let mut out: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for u in units {
        let correct = u.rule == Outcome::Correct || judged(u);
        let e = out.entry(u.problem.clone()).or_default();
        if u.slot == "\"greedy\"" {
            e.1 = correct.to_string();
        } else {
            e.0 += correct as u64;
        }
    }
    out
}

#[test]
fn the_uncertain_policy_sends_only_guessed_answers_and_a_resume_sends_nothing_twice() {
    let up = Arc::new(AtomicBool::new(false));
    let dataset = sums(6);
    let env = Fixture::new(&dataset).with_server(server(up.clone()));
    configure_graded(&env, "rule_then_judge_uncertain", "", "");
    // The judge is down: its samples keep their rule verdicts, and none is stored as judged.
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("judge model judge-1 failed every request"));
    let dir = env.run_dir();
    let units = units(&dir, "m1", &dataset);
    let guessed = units.iter().filter(|u| u.found_by.is_heuristic()).count();
    let guessed_wrong = (units.iter())
        .filter(|u| u.found_by.is_heuristic() && u.rule != Outcome::Correct)
        .count();
    let boxed_wrong = (units.iter())
        .filter(|u| u.found_by == FoundBy::Boxed && u.rule != Outcome::Correct)
        .count();
    let not_found = units.iter().filter(|u| u.found_by == FoundBy::None).count();
    assert!(
        guessed_wrong > 0 && boxed_wrong > 0 && not_found > 0 && guessed < units.len(),
        "the replies mix every style: {units:?}"
    );
    // What the judge was asked while down (each guessed answer, retried) is not counted below.
    let down = judge_requests(&env);
    assert!(down >= guessed, "{down}");
    assert!(!dir.join("grades/m1.jsonl").exists() || read(&dir.join("grades/m1.jsonl")).is_empty());

    // The dry run counts what the judge would be sent now: the guessed answers alone (the
    // judge sees extracted answers, and an answer not found has none to show).
    let dry = run(&env, &["--dry-run", "--resume", dir.to_str().unwrap()]);
    let text = stdout(&dry);
    assert!(
        text.contains(&format!("m1: {guessed} samples would be sent now")),
        "{text}"
    );
    assert!(
        text.contains("only the samples whose answer the rules guessed"),
        "{text}"
    );

    up.store(true, Ordering::SeqCst);
    let out = run(&env, &["--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(
        judge_requests(&env) - down,
        guessed,
        "only guessed answers go to the judge"
    );
    let grades = read(&dir.join("grades/m1.jsonl"));
    assert_eq!(grades.lines().count(), guessed);
    // The judge said yes to each: exactly the guessed answers became correct; a wrong boxed
    // answer stayed wrong.
    let judged = |u: &Unit| u.found_by.is_heuristic();
    assert_eq!(per_problem(&dir), expected(&units, judged));
    assert_ne!(per_problem(&dir), expected(&units, |_| false));

    // Resuming again asks nothing new, and the scores stay.
    let before = per_problem(&dir);
    let out = run(&env, &["--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(judge_requests(&env) - down, guessed);
    assert_eq!(per_problem(&dir), before);
    let dry = run(&env, &["--dry-run", "--resume", dir.to_str().unwrap()]);
    assert!(
        stdout(&dry).contains("m1: 0 samples would be sent now"),
        "{}",
        both(&dry)
    );
}

#[test]
fn shown_the_whole_response_the_judge_also_gets_the_answers_the_rules_did_not_find() {
    let dataset = sums(5);
    let env = Fixture::new(&dataset).with_server(server(Arc::new(AtomicBool::new(true))));
    configure_graded(
        &env,
        "rule_then_judge_uncertain",
        "input = \"response\"\n",
        "",
    );
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let dir = env.run_dir();
    let units = units(&dir, "m1", &dataset);
    let uncertain = |u: &Unit| u.found_by.is_heuristic() || u.found_by == FoundBy::None;
    let sent = units.iter().filter(|u| uncertain(u)).count();
    assert!(sent > 0 && sent < units.len(), "{units:?}");
    assert_eq!(judge_requests(&env), sent);
    assert_eq!(per_problem(&dir), expected(&units, uncertain));
}

#[test]
fn rule_then_judge_still_sends_every_rejection_and_the_uncertain_policy_fewer() {
    let dataset = sums(6);
    let up = || server(Arc::new(AtomicBool::new(true)));
    let plain = Fixture::new(&dataset).with_server(up());
    configure_graded(&plain, "rule_then_judge", "", "");
    assert_eq!(run(&plain, &["--quiet"]).status.code(), Some(0));
    let units = units(&plain.run_dir(), "m1", &dataset);
    // Extracted answers only: a rejection with no answer found is not sent.
    let rejected = (units.iter()).filter(|u| u.rule == Outcome::Wrong).count();
    assert_eq!(judge_requests(&plain), rejected);
    let uncertain = Fixture::new(&dataset).with_server(up());
    configure_graded(&uncertain, "rule_then_judge_uncertain", "", "");
    assert_eq!(run(&uncertain, &["--quiet"]).status.code(), Some(0));
    let guessed = units.iter().filter(|u| u.found_by.is_heuristic()).count();
    assert_eq!(judge_requests(&uncertain), guessed);
    assert!(guessed != rejected, "the policies differ on this run");
}

/// [`server`]'s judge (up), reporting a quarter of its request's bytes as prompt tokens and one
/// completion token.
fn priced_server() -> fake_openai::FakeServerBuilder {
    FakeServer::builder().responder(|r: &Recorded| match r.model() {
        Some("judge-1") => Reply {
            usage: Some((serde_json::to_vec(&r.body).unwrap().len() as u64 / 4, 1)),
            ..Reply::with_choices(vec![ChoiceReply::stop("Yes.")])
        },
        _ => styled_reply(r),
    })
}

#[test]
fn the_uncertain_policy_is_priced_and_capped_like_every_judge_and_a_resume_judges_the_rest_once() {
    let dataset = sums(6);
    let env = Fixture::new(&dataset).with_server(priced_server());
    let price = "concurrency = 1\n[judge.pricing]\ninput = 1000\noutput = 1000\nmax_cost = 1.5\n";
    configure_graded(&env, "rule_then_judge_uncertain", price, "");
    let out = run(&env, &["--quiet"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("judge model judge-1 stopped: budget reached: judge.pricing.max_cost"),
        "{text}"
    );
    let dir = env.run_dir();
    let guessed = (units(&dir, "m1", &dataset).iter())
        .filter(|u| u.found_by.is_heuristic())
        .count();
    let first = judge_requests(&env);
    assert!(first > 0 && first < guessed, "{first} of {guessed}: {text}");
    // Each verdict keeps what its call spent, and what was billed stays within the cap.
    let grades = read(&dir.join("grades/m1.jsonl"));
    let spent: u64 = (grades.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            let u = &v["spend"]["usage"];
            u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(grades.lines().count(), first);
    assert!(
        spent * 1000 <= 1_500_000,
        "{spent} tokens at 1000 USD per million"
    );
    // A raised cap judges the rest, none twice; the reports show the judge's cost.
    let out = run(
        &env,
        &[
            "--quiet",
            "--resume",
            dir.to_str().unwrap(),
            "--set",
            "judge.pricing.max_cost=1000",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(judge_requests(&env), guessed);
    let md = read(&dir.join("report.md"));
    let cost = md.lines().find(|l| l.starts_with("cost: ")).expect(&md);
    assert!(cost.contains("judge judge-1 "), "{cost}");
}

const TWO_STYLES: &str = "[[models]]\nname = \"boxed\"\nmodel_id = \"fake-box\"\n\
     [[models]]\nname = \"guessy\"\nmodel_id = \"fake-guess\"\n";

/// Model `boxed` boxes every answer (as `smart_reply`); model `guessy` answers in
/// [`styled_reply`]'s four styles. Graded by the rules alone.
fn two_styles(problems: usize) -> (Fixture, String) {
    let dataset = sums(problems);
    let server = FakeServer::builder().responder(|r: &Recorded| match r.model() {
        Some("fake-guess") => styled_reply(r),
        _ => crate::run_fake::smart_reply(r),
    });
    let env = Fixture::new(&dataset).with_server(server);
    configure(&env, "n = 4", TWO_STYLES, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    (env, dataset)
}

#[test]
fn every_report_shows_the_guessed_share_and_warns_about_the_model_past_the_threshold() {
    let (env, dataset) = two_styles(6);
    let dir = env.run_dir();
    let units = units(&dir, "guessy", &dataset);
    let guessed = units.iter().filter(|u| u.found_by.is_heuristic()).count();
    let share = 100.0 * guessed as f64 / units.len() as f64;
    assert!(share > 20.0 && share < 100.0, "{share}");
    let pct = format!("{share:.1}%");

    // The terminal: the share of each model under the table, then the warning for guessy alone.
    let out = (crate::common::gpassk().args(["report", dir.to_str().unwrap()]))
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("guessed answers (found by the last number or math span):"),
        "{}",
        both(&out)
    );
    assert!(
        text.contains("boxed 0.0% of 30") && text.contains(&format!("guessy {pct} of 30")),
        "{text}"
    );
    let warning = text.find("warning: model guessy (").expect(&text);
    let rest = &text[warning..];
    for fix in [
        "rule_then_judge_uncertain",
        "answer_extract_regex",
        "\\boxed{}",
    ] {
        assert!(rest.contains(fix), "{rest}");
    }
    assert!(!text.contains("model boxed ("), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    // metrics.json keeps the raw counts per way.
    let json: serde_json::Value = serde_json::from_str(&read(&dir.join("metrics.json"))).unwrap();
    let found = &json["answers_found"];
    assert_eq!(found["heuristic_warn"], 0.2);
    let models = found["models"].as_array().unwrap();
    let (b, g) = (&models[0], &models[1]);
    assert_eq!(
        (&b["model"], &b["heuristic"], &b["over"]),
        (&"boxed".into(), &0.into(), &false.into())
    );
    assert_eq!(
        (&g["heuristic"], &g["answers"], &g["over"]),
        (&guessed.into(), &30.into(), &true.into())
    );
    let ways: u64 = g["found_by"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(ways, 30);
    let math = units
        .iter()
        .filter(|u| u.found_by == FoundBy::LastMath)
        .count();
    assert_eq!(g["found_by"]["last_math"], math);
    assert!(found["warning"]
        .as_str()
        .unwrap()
        .starts_with("model guessy ("));

    // report.md and report.html: the section, and the warning.
    let md = read(&dir.join("report.md"));
    assert!(md.contains("## How answers were found"), "{md}");
    assert!(md.contains("> **Warning:** model guessy ("), "{md}");
    let html = read(&dir.join("report.html"));
    assert!(html.contains("<h2>How answers were found</h2>"), "{html}");
    assert!(html.contains("<b>Warning:</b> model guessy ("), "{html}");
    assert!(html.contains(&format!("{pct} (over 20%)")), "{html}");

    // per_problem.csv: the guessed answers of each problem.
    let mut r = csv::Reader::from_path(dir.join("per_problem.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
    let column: u64 = (rows.iter())
        .filter(|r| &r[0] == "guessy")
        .map(|r| r.iter().next_back().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(column, guessed as u64);

    // A threshold the share does not pass: the share is shown, no warning.
    let out = (crate::common::gpassk())
        .args([
            "score",
            dir.to_str().unwrap(),
            "--set",
            "evaluation.heuristic_warn=0.9",
        ])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains(&format!("guessy {pct} of 30")),
        "{}",
        both(&out)
    );
    assert!(!text.contains("warning: model"), "{text}");
}

#[test]
fn the_viewer_shows_the_share_on_the_run_page_and_how_each_sample_was_found() {
    let (env, dataset) = two_styles(3);
    let dir = env.run_dir();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let units = units(&dir, "guessy", &dataset);
    let served = crate::view::serve(&env.results());
    let page = crate::view::get(&served, &format!("/run/{name}"));
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("<h2>How answers were found</h2>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<b>Warning:</b> model guessy ("),
        "{}",
        page.body
    );
    let api = crate::view::get(&served, &format!("/api/run/{name}"));
    let v: serde_json::Value = serde_json::from_str(&api.body).unwrap();
    let guessed = units.iter().filter(|u| u.found_by.is_heuristic()).count();
    assert_eq!(v["answers_found"]["models"][1]["heuristic"], guessed);

    // Each sample of a problem with a guessed answer says how its answer was found, as the
    // grader does.
    let id = &units
        .iter()
        .find(|u| u.found_by.is_heuristic())
        .unwrap()
        .problem;
    let api = crate::view::get(&served, &format!("/api/run/{name}/problem?id={id}"));
    let v: serde_json::Value = serde_json::from_str(&api.body).unwrap();
    let samples = v["models"][1]["samples"].as_array().unwrap();
    let mut shown: Vec<(String, String)> = (samples.iter())
        .map(|s| {
            (
                s["index"].as_str().unwrap().to_string(),
                s["found_by"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = (units.iter())
        .filter(|u| &u.problem == id)
        .map(|u| {
            (
                u.slot.trim_matches('"').to_string(),
                u.found_by.as_str().to_string(),
            )
        })
        .collect();
    shown.sort();
    want.sort();
    assert_eq!(shown, want);
    // The overview lists models; a model's tab shows its samples and how each answer was found.
    let page = crate::view::get(
        &served,
        &format!("/run/{name}/problem?id={id}&model=guessy"),
    );
    assert!(
        page.body.contains("<p class=\"meta\">found by "),
        "{}",
        page.body
    );
    assert!(page.body.contains("(a guess)"), "{}", page.body);
}

#[test]
fn a_run_that_keeps_no_responses_records_how_its_answers_were_found() {
    let dataset = sums(6);
    let answers_found = |keep: bool| {
        let env = Fixture::new(&dataset).with_server(FakeServer::builder().responder(styled_reply));
        let cfg = configure(&env, "n = 4", ONE_MODEL, "");
        let text = read(&cfg).replace(
            "[evaluation]\n",
            &format!("[evaluation]\nsave_raw_responses = {keep}\n"),
        );
        std::fs::write(&cfg, text).unwrap();
        let out = run(&env, &["--quiet"]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        let json: serde_json::Value =
            serde_json::from_str(&read(&env.run_dir().join("metrics.json"))).unwrap();
        (env, json["answers_found"]["models"][0].clone())
    };
    let (_raw, kept) = answers_found(true);
    let (env, stripped) = answers_found(false);
    assert!(kept["heuristic"].as_u64().unwrap() > 0, "{kept}");
    assert_eq!(
        stripped, kept,
        "the way recorded at run time, not re-read from the answer"
    );
    let dir = env.run_dir();
    let checkpoint = dir.join("checkpoints/m1.jsonl");
    let text = read(&checkpoint);
    assert!(
        text.lines().all(|l| !l.contains("\"response\":\"")),
        "no response kept"
    );
    assert!(text.contains("\"found_by\":\"last_number\""), "{text}");

    // Lines an older gpassk wrote say nothing of how: those with an answer are unrecorded.
    let mut with_answer = 0;
    let old: String = (text.lines())
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            with_answer += v["extracted"].is_string() as u64;
            v.as_object_mut().unwrap().remove("found_by");
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&checkpoint, old).unwrap();
    let out = crate::common::gpassk()
        .args(["score", dir.to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(
        stdout(&out).contains(&format!("({with_answer} more not recorded)")),
        "{}",
        both(&out)
    );
    let json: serde_json::Value = serde_json::from_str(&read(&dir.join("metrics.json"))).unwrap();
    let m = &json["answers_found"]["models"][0];
    assert_eq!(
        (m["unrecorded"].as_u64(), m["heuristic"].as_u64()),
        (Some(with_answer), Some(0))
    );
}
