//! `gpassk run` with `strategy = "mcts"` against the fake server: a scripted policy (steps with
//! Python code, a failing step, answer steps), a scripted judge and `/pooling`; exact call counts,
//! identical trees, gold-leak, resume by replay, parse failures, reward modes, a 401.

use crate::common::{both, Fixture};
use crate::run_fake::{configure, run, KEY};
use fake_openai::{ChoiceReply, FakeServer, FakeServerBuilder, Fault, Recorded, Reply, STEP_TAG};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The policy's and the reward model's ids on the one gateway.
const POLICY: &str = "pol";
const PRM: &str = "prm";
/// Every scripted step starts with it: a request's prefix depth is how often it occurs.
const MARK: &str = "# step:";

const ADD: &str = "# step: add the numbers\nx = 2 + 3\nprint(x)";
const DIVIDE: &str = "# step: divide first\ny = 1 / 0\nprint(y)";
const CHECK: &str = "# step: check the sum\nz = 5\nprint(z)";
const RIGHT: &str = "# step: the answer is \\boxed{5}";
const WRONG: &str = "# step: the answer is \\boxed{6}";
/// Runs after ADD (x is defined); after CHECK its cumulative code raises NameError.
const VERIFY: &str = "# step: verify\nprint(x)";
const RIGHT_AGAIN: &str = "# step: so it is \\boxed{5}";

/// The candidate steps after `depth` steps.
fn candidates(depth: usize) -> [&'static str; 3] {
    match depth {
        0 => [ADD, DIVIDE, CHECK],
        1 => [RIGHT, WRONG, VERIFY],
        _ => [RIGHT, WRONG, RIGHT_AGAIN],
    }
}

/// The text of every message but the system one.
fn conversation(r: &Recorded) -> String {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] != "system")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The policy: candidate i of n is `candidates(depth)[(seed + i) % 3]`, so the request's content
/// (its depth) decides which steps exist and its seed decides their order. Never arrival order.
fn policy_reply(r: &Recorded) -> Reply {
    let depth = conversation(r).matches(MARK).count();
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let options = candidates(depth);
    let choices = (0..r.n())
        .map(|i| ChoiceReply::stop(options[((seed + i) % 3) as usize]))
        .collect();
    Reply::with_choices(choices)
}

/// The reward of one step: the wrong answer has none (the judge says "great step!").
fn step_score(step: &str) -> Option<f64> {
    let table = [
        ("boxed{6}", None),
        ("boxed{5}", Some(0.9)),
        ("add the numbers", Some(0.8)),
        ("check the sum", Some(0.7)),
        ("verify", Some(0.6)),
    ];
    table
        .iter()
        .find(|(needle, _)| step.contains(needle))
        .map_or(Some(0.5), |&(_, s)| s)
}

/// The judge scores the last step of its prompt.
fn judge_reply(r: &Recorded) -> Reply {
    let text = r.user_text().unwrap_or_default();
    let last = text.rfind(MARK).map_or("", |i| &text[i..]);
    // Answered as the prompt asks it, "Score of step N (0 to 1):", so the step number is the
    // first digits of the reply and never its score.
    let step = text.rsplit("Score of step ").next().unwrap_or_default();
    let step = step.split(' ').next().unwrap_or_default();
    let reply = match step_score(last) {
        Some(v) => format!("Score of step {step}: {v}"),
        None => "great step!".to_string(),
    };
    Reply::repeated(1, &reply)
}

/// A plain sample (no step stop strings): right or wrong by its seed and choice index.
fn sample_reply(r: &Recorded) -> Reply {
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let choices = (0..r.n())
        .map(|i| {
            let answer = if (seed + i).is_multiple_of(2) { 5 } else { 4 };
            ChoiceReply::stop(format!("So the answer is \\boxed{{{answer}}}."))
        })
        .collect();
    Reply::with_choices(choices)
}

fn scripted_reply(r: &Recorded) -> Reply {
    let searching = r.body["stop"].to_string().contains("<end_of_step>");
    match r.model() {
        Some(PRM) => judge_reply(r),
        _ if searching => policy_reply(r),
        _ => sample_reply(r),
    }
}

/// One `[p_bad, p_good]` per tagged step; the wrong answer gets a low score here.
fn pooling_rows(r: &Recorded) -> Value {
    let text = r.pooled_text().unwrap_or_default();
    let parts: Vec<&str> = text.split(STEP_TAG).collect();
    let steps = &parts[..parts.len().saturating_sub(1)];
    steps
        .iter()
        .map(|s| {
            let good = step_score(s).unwrap_or(0.1);
            json!([1.0 - good, good])
        })
        .collect()
}

fn scripted_server() -> FakeServerBuilder {
    FakeServer::builder()
        .responder(scripted_reply)
        .pooling_responder(pooling_rows)
}

/// Two problems whose questions the policy ignores; their gold answers are `gold`.
fn dataset(gold: [&str; 2]) -> String {
    format!(
        "{{\"id\":\"p0\",\"question\":\"What is 2+3?\",\"answer\":\"{}\"}}\n\
         {{\"id\":\"p1\",\"question\":\"What is 1+4?\",\"answer\":\"{}\"}}\n",
        gold[0], gold[1]
    )
}

const SEARCHES: u64 = 2 * 2;

/// An mcts model `tree` (policy `pol`, reward `prm`) with `search` lines added to `[search]`.
fn setup(env: &Fixture, search: &str, extra_api: &str) -> PathBuf {
    let models = format!(
        "[search]\nreward_model_id = \"{PRM}\"\nnum_simulations = 8\nnum_candidates = 3\n\
         max_depth = 4\nexec_timeout = 3\n{search}\n\
         [[models]]\nname = \"tree\"\nmodel_id = \"{POLICY}\"\nstrategy = \"mcts\"\n"
    );
    configure(env, "n = 2\ngreedy = false", &models, extra_api)
}

/// Tests that run model code need the sandbox: its absence fails them loudly (CI installs bwrap).
fn require_sandbox() {
    if let Err(e) = gpassk::search::sandbox::Sandbox::detect() {
        panic!("these tests need the code sandbox (Debian package bubblewrap): {e}");
    }
}

/// A fixture with the scripted server, configured, and run once to exit 0.
fn finished_run(gold: [&str; 2], search: &str) -> Fixture {
    require_sandbox();
    let env = Fixture::new(&dataset(gold)).with_server(scripted_server());
    setup(&env, search, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    env
}

/// The model's checkpoint lines, sorted by (problem, sample index).
fn checkpoint(run_dir: &Path) -> Vec<Value> {
    let text = crate::common::read(&run_dir.join("checkpoints/tree.jsonl"));
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by_key(|v| (v["problem_id"].to_string(), v["sample_index"].to_string()));
    lines
}

/// Each line's `search` record without `replayed_calls` (which says how it was paid for).
fn search_fields(run_dir: &Path) -> Vec<Value> {
    checkpoint(run_dir)
        .into_iter()
        .map(|mut v| {
            let search = v["search"].as_object_mut().expect("a search record");
            search["stats"]
                .as_object_mut()
                .expect("search stats")
                .remove("replayed_calls");
            Value::Object(search.clone())
        })
        .collect()
}

/// Every file under `trees/`, by path relative to the run directory.
fn trees(run_dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&run_dir.join("trees"), run_dir, &mut out);
    out
}

/// The sum of one stats field over the checkpoint's searches.
fn total(run_dir: &Path, field: &str) -> u64 {
    checkpoint(run_dir)
        .iter()
        .map(|v| v["search"]["stats"][field].as_u64().unwrap_or(0))
        .sum()
}

fn requests_of(server: &FakeServer, model: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.model() == Some(model))
        .count()
}

/// The request bodies as canonical text, sorted: a multiset that ignores arrival order.
fn bodies(server: &FakeServer) -> Vec<String> {
    let mut b: Vec<String> = server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.path, r.body))
        .collect();
    b.sort();
    b
}

/// What one search makes of the script, whatever its seed (every candidate set is complete, so
/// the tree is searched to the end): root → ADD, DIVIDE (dead: ZeroDivisionError), CHECK;
/// ADD → RIGHT, WRONG, VERIFY; VERIFY → RIGHT, WRONG, RIGHT_AGAIN; CHECK → RIGHT, WRONG, VERIFY
/// (dead: NameError). 4 policy calls; 10 reward calls (every live step); 5 code runs (the
/// answers run none); 3 unparseable judge replies (WRONG), which propagate nothing.
const PER_SEARCH: [(&str, u64); 9] = [
    ("simulations", 2),
    ("policy_calls", 4),
    ("reward_calls", 10),
    ("code_executions", 5),
    ("dead_steps", 2),
    ("steps", 12),
    ("reward_parse_failures", 3),
    ("unvalued_terminals", 3),
    ("replayed_calls", 0),
];

#[test]
fn a_fixed_seed_makes_exactly_the_counted_calls() {
    let env = finished_run(["5", "5"], "");
    let (server, run_dir) = (env.server(), env.run_dir());
    let lines = checkpoint(&run_dir);
    assert_eq!(lines.len() as u64, SEARCHES);
    let mut seeds = HashSet::new();
    for v in &lines {
        assert_eq!(v["outcome"], "ok", "{v}");
        let stats = &v["search"]["stats"];
        for (field, want) in PER_SEARCH {
            assert_eq!(stats[field].as_u64(), Some(want), "{field} in {v}");
        }
        assert_eq!(
            (stats["cap_hit"].clone(), stats["failed"].clone()),
            (json!(false), Value::Null)
        );
        assert_eq!(v["search"]["answer"], "5", "{v}");
        assert!(
            seeds.insert(v["seed"].as_u64().unwrap()),
            "seeds repeat: {v}"
        );
        let tree = run_dir.join(v["search"]["tree"].as_str().unwrap());
        assert!(tree.is_file(), "{}", tree.display());
    }
    // The checkpoint's statistics are the server's counts.
    assert_eq!(requests_of(server, POLICY) as u64, SEARCHES * 4);
    assert_eq!(total(&run_dir, "policy_calls"), SEARCHES * 4);
    assert_eq!(requests_of(server, PRM) as u64, SEARCHES * 10);
    assert_eq!(total(&run_dir, "reward_calls"), SEARCHES * 10);
    assert_eq!(server.hits("POST", "/v1/chat/completions"), SEARCHES * 14);
    assert_eq!(server.hits("POST", "/pooling"), 0);
    assert!(server
        .requests()
        .iter()
        .all(|r| r.attempt == 0 || r.model() == Some(PRM)));
    // Every policy request is unique (its seed is the search's and the call's).
    let policy: HashSet<String> = server
        .requests()
        .iter()
        .filter(|r| r.model() == Some(POLICY))
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(policy.len() as u64, SEARCHES * 4);
}

#[test]
fn unparseable_judge_replies_are_counted_and_never_read_as_zero() {
    let env = finished_run(["5", "5"], "");
    let run_dir = env.run_dir();
    for v in checkpoint(&run_dir) {
        let tree: Value = serde_json::from_str(&crate::common::read(
            &run_dir.join(v["search"]["tree"].as_str().unwrap()),
        ))
        .unwrap();
        let nodes = tree["nodes"].as_array().unwrap();
        let wrong: Vec<&Value> = nodes.iter().filter(|n| n["step"] == WRONG).collect();
        assert_eq!(wrong.len(), 3);
        for n in wrong {
            assert_eq!(n["reward"], Value::Null, "{n}");
            assert_eq!(n["reward_unparseable"], "great step!", "{n}");
            assert_eq!(
                (n["visits"].as_u64(), n["value_sum"].as_f64()),
                (Some(0), Some(0.0))
            );
        }
        // Only the four valued answers (0.9 each) reach the root; a 0 would add visits.
        let root = &nodes[0];
        assert_eq!(root["visits"].as_u64(), Some(4), "{root}");
        assert!(
            (root["value_sum"].as_f64().unwrap() - 3.6).abs() < 1e-9,
            "{root}"
        );
        assert_eq!(
            v["search"]["stats"]["reward_parse_failures"].as_u64(),
            Some(3)
        );
    }
}

#[test]
fn two_runs_write_identical_trees_and_search_records() {
    let a = finished_run(["5", "5"], "");
    let b = finished_run(["5", "5"], "");
    let (ta, tb) = (trees(&a.run_dir()), trees(&b.run_dir()));
    assert_eq!(ta.len() as u64, SEARCHES, "{:?}", ta.keys());
    assert!(
        ta.contains_key(Path::new("trees/tree/p1/1.json")),
        "{:?}",
        ta.keys()
    );
    assert!(ta == tb, "tree files differ between two runs");
    assert_eq!(search_fields(&a.run_dir()), search_fields(&b.run_dir()));
    // The seed is in play: a search's candidates come in its own order.
    let orders: HashSet<Vec<String>> = ta
        .values()
        .map(|bytes| {
            let t: Value = serde_json::from_slice(bytes).unwrap();
            let nodes = t["nodes"].as_array().unwrap();
            nodes[1..4].iter().map(|n| n["step"].to_string()).collect()
        })
        .collect();
    assert!(
        orders.len() > 1,
        "every search saw the same order: {orders:?}"
    );
}

#[test]
fn requests_are_the_same_whatever_the_gold_answers() {
    let right = finished_run(["5", "5"], "");
    let wrong = finished_run(["leak-canary", "3"], "");
    let (a, b) = (bodies(right.server()), bodies(wrong.server()));
    assert_eq!(a.len() as u64, SEARCHES * 14);
    assert!(a == b, "request bodies depend on the gold answers");
    assert!(
        !a.iter().any(|body| body.contains("leak-canary")),
        "a gold answer leaked"
    );
    assert_eq!(
        search_fields(&right.run_dir()),
        search_fields(&wrong.run_dir())
    );
    // The gold answers do matter after the search: the grades differ.
    let grades = |env: &Fixture| crate::run_fake::metrics(&env.run_dir());
    assert_ne!(grades(&right), grades(&wrong));
}

#[test]
fn pooling_mode_scores_through_the_pooling_endpoint() {
    let env = finished_run(["5", "5"], "reward_mode = \"pooling\"");
    let (server, run_dir) = (env.server(), env.run_dir());
    assert_eq!(server.hits("POST", "/pooling"), SEARCHES * 10);
    assert_eq!(requests_of(server, PRM) as u64, SEARCHES * 10);
    assert_eq!(server.hits("POST", "/v1/chat/completions"), SEARCHES * 4);
    assert_eq!(total(&run_dir, "reward_calls"), SEARCHES * 10);
    assert_eq!(total(&run_dir, "reward_parse_failures"), 0);
    assert_eq!(total(&run_dir, "unvalued_terminals"), 0);
    for r in server.requests().iter().filter(|r| r.is_pooling()) {
        let tagged = r.pooled_text().unwrap();
        assert!(tagged.ends_with(STEP_TAG), "{tagged}");
        assert_eq!(
            tagged.matches(STEP_TAG).count(),
            tagged.matches(MARK).count()
        );
    }
    // The wrong answer is scored 0.1 here, so it is valued and propagated.
    for v in checkpoint(&run_dir) {
        assert_eq!(v["search"]["answer"], "5");
    }
}

#[test]
fn no_reward_model_means_no_reward_calls() {
    let env = finished_run(
        ["5", "5"],
        "reward_mode = \"none\"\nterminal_reward = \"agreement\"",
    );
    let (server, run_dir) = (env.server(), env.run_dir());
    assert_eq!(requests_of(server, PRM), 0);
    assert_eq!(server.hits("POST", "/pooling"), 0);
    assert_eq!(requests_of(server, POLICY) as u64, SEARCHES * 4);
    assert_eq!(total(&run_dir, "reward_calls"), 0);
    assert_eq!(total(&run_dir, "policy_calls"), SEARCHES * 4);
}

#[test]
fn a_401_from_the_policy_or_the_reward_model_stops_the_model_with_exit_1() {
    require_sandbox();
    for (locked, named) in [
        (POLICY, "model tree: auth (HTTP 401)"),
        (PRM, "reward model prm"),
    ] {
        let server = scripted_server()
            .faults(move |r: &Recorded| (r.model() == Some(locked)).then(Fault::unauthorized));
        let env = Fixture::new(&dataset(["5", "5"])).with_server(server);
        setup(&env, "", "");
        let out = run(&env, &["--quiet"]);
        let text = both(&out);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains(named) && text.contains("401"), "{text}");
        assert!(!text.contains(KEY), "{text}");
        let asked = requests_of(env.server(), locked);
        // No retry of a 401, and the first call goes alone: one request, not one per search.
        assert_eq!(asked, 1, "{asked} requests to {locked}");
        let ok = checkpoint(&env.run_dir())
            .iter()
            .filter(|v| v["outcome"] == "ok")
            .count();
        assert_eq!(ok, 0);
        let manifest: Value =
            serde_json::from_str(&crate::common::read(&env.run_dir().join("manifest.json")))
                .unwrap();
        assert_eq!(manifest["models"]["tree"]["status"], "failed");
    }
}

/// Requests answered before the server starts hanging every request (a stuck gateway).
const ANSWERED: usize = 20;

#[test]
fn an_interrupted_run_resumes_by_replay_without_paying_twice() {
    require_sandbox();
    let open = Arc::new(AtomicBool::new(false));
    let answered: Arc<Mutex<Vec<String>>> = Arc::default();
    let (gate, paid) = (open.clone(), answered.clone());
    let server = scripted_server().faults(move |r: &Recorded| {
        if gate.load(Ordering::SeqCst) {
            return None;
        }
        let mut paid = paid.lock().unwrap();
        if paid.len() < ANSWERED {
            paid.push(format!("{} {}", r.path, r.body));
            return None;
        }
        Some(Fault::Hang(Duration::from_secs(60)))
    });
    let env = Fixture::new(&dataset(["5", "5"])).with_server(server);
    let server = env.server();
    let cfg = setup(&env, "", "shutdown_grace = 1");
    let child = crate::run_fake::spawn_run(&cfg);
    // Interrupt once the run is stuck on a hanging request and every answer is cached (so the
    // interruption cannot race a reply on its way).
    let cached = || {
        let dirs = crate::common::run_dirs(&env.results());
        let cache = dirs.first().map(|d| d.join("cache/tree.jsonl"));
        cache
            .and_then(|c| std::fs::read_to_string(c).ok())
            .map_or(0, |t| t.lines().count())
    };
    let stuck = || server.request_count() > ANSWERED && cached() == ANSWERED;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stuck() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        stuck(),
        "the run never got stuck with {ANSWERED} replies cached"
    );
    crate::run_fake::interrupt(child);
    let run_dir = env.run_dir();
    let finished_before = checkpoint(&run_dir).len() as u64;
    assert!(finished_before < SEARCHES, "nothing was left to resume");
    // Every reply paid for is in the request cache, once.
    assert_eq!(cached(), ANSWERED);

    open.store(true, Ordering::SeqCst);
    let before = server.request_count();
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let live: Vec<String> = server.requests()[before..]
        .iter()
        .map(|r| format!("{} {}", r.path, r.body))
        .collect();
    // Paid replies are replayed, not asked for again: the live requests of both sessions are
    // exactly an uninterrupted run's.
    let whole = finished_run(["5", "5"], "");
    let mut both_sessions = answered.lock().unwrap().clone();
    both_sessions.extend(live.iter().cloned());
    both_sessions.sort();
    assert_eq!(live.len() as u64, SEARCHES * 14 - ANSWERED as u64);
    assert!(
        both_sessions == bodies(whole.server()),
        "requests differ from an unbroken run"
    );
    // Searches finished before the interruption made 14 calls each; the rest of the paid ones
    // were replayed.
    let replayed = total(&run_dir, "replayed_calls");
    assert_eq!(replayed, ANSWERED as u64 - 14 * finished_before);
    assert!(replayed > 0);
    assert!(
        trees(&run_dir) == trees(&whole.run_dir()),
        "trees differ from an unbroken run"
    );
    assert_eq!(search_fields(&run_dir), search_fields(&whole.run_dir()));
    assert_eq!(
        crate::run_fake::metrics(&run_dir),
        crate::run_fake::metrics(&whole.run_dir())
    );
}

#[test]
fn reports_show_sampling_and_search_side_by_side() {
    require_sandbox();
    let env = Fixture::new(&dataset(["5", "5"])).with_server(scripted_server());
    let models = format!(
        "[search]\nreward_model_id = \"{PRM}\"\nnum_simulations = 8\nnum_candidates = 3\n\
         max_depth = 4\nexec_timeout = 3\n\
         [[models]]\nname = \"m\"\nmodel_id = \"{POLICY}\"\n\
         [[models]]\nname = \"m+mcts\"\nmodel_id = \"{POLICY}\"\nstrategy = \"mcts\"\n"
    );
    configure(&env, "n = 2\ngreedy = false", &models, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let run_dir = env.run_dir();
    // 2 searches per problem, each 14 calls, 5 code runs, 2 dead steps of 12, 3 parse failures.
    let md = crate::common::read(&run_dir.join("report.md"));
    assert!(md.contains("## Search and sampling cost"), "{md}");
    // The cost table splits in two (at most 8 columns a table): code runs end the first.
    let first = md
        .lines()
        .find(|l| l.starts_with("| m+mcts | mcts | 28.0 |"));
    assert!(first.is_some_and(|l| l.ends_with(" | 10.0 |")), "{md}");
    assert!(md.contains("| m+mcts | 16.7% | 12 | 0 |"), "{md}");
    assert!(md.contains("| m | sample |"), "{md}");
    let html = crate::common::read(&run_dir.join("report.html"));
    assert!(html.contains("data-model=\"m+mcts\"") && html.contains("data-model=\"m\""));
    let metrics = crate::run_fake::metrics(&run_dir);
    let pass = |model: &str| {
        let key = metrics
            .keys()
            .find(|k| k.0 == model && k.2 == "pass@k" && k.3 == "1")
            .unwrap_or_else(|| panic!("no pass@1 row for {model}: {:?}", metrics.keys()));
        metrics[key].clone()
    };
    // Every search answers 5; the samples are right half the time.
    assert_eq!(pass("m+mcts").parse::<f64>().unwrap(), 1.0);
    assert!(pass("m").parse::<f64>().unwrap() < 1.0);
}

#[test]
fn retried_policy_and_pooling_faults_change_nothing_but_the_attempts() {
    require_sandbox();
    let server = scripted_server().faults(|r: &Recorded| match (r.attempt, r.is_pooling()) {
        (0, true) => Some(Fault::server_error()),
        (0, false) => Some(Fault::rate_limited(0)),
        _ => None,
    });
    let env = Fixture::new(&dataset(["5", "5"])).with_server(server);
    setup(&env, "reward_mode = \"pooling\"", "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let (server, run_dir) = (env.server(), env.run_dir());
    // Policy bodies are unique (seeded), so each is refused once. The two searches of a problem
    // score the same 10 paths, so 20 distinct pooling bodies are refused once each.
    assert_eq!(requests_of(server, POLICY) as u64, 2 * SEARCHES * 4);
    assert_eq!(server.hits("POST", "/pooling"), SEARCHES * 10 + 20);
    let attempts: u64 = checkpoint(&run_dir)
        .iter()
        .map(|v| v["attempts"].as_u64().unwrap())
        .sum();
    assert_eq!(attempts, 2 * SEARCHES * 4 + SEARCHES * 10 + 20);
    let clean = finished_run(["5", "5"], "reward_mode = \"pooling\"");
    assert!(
        trees(&run_dir) == trees(&clean.run_dir()),
        "retries changed a tree"
    );
    assert_eq!(search_fields(&run_dir), search_fields(&clean.run_dir()));
}

#[test]
fn a_restated_prefix_searches_the_same_trees() {
    let restated = finished_run(["5", "5"], "prefix = \"restate\"");
    let continued = finished_run(["5", "5"], "");
    let deep = |env: &Fixture, key: &str| {
        let policy = env.server().requests();
        let deep: Vec<Recorded> = policy
            .into_iter()
            .filter(|r| r.model() == Some(POLICY) && conversation(r).contains(MARK))
            .collect();
        assert_eq!(deep.len() as u64, SEARCHES * 3);
        deep.iter().all(|r| r.body.get(key).is_some())
    };
    assert!(!deep(&restated, "continue_final_message"));
    assert!(deep(&continued, "continue_final_message"));
    // The same nodes and answers; only the token counts (longer prompts) differ.
    let nodes = |env: &Fixture| -> Vec<(Value, Value)> {
        let files = trees(&env.run_dir());
        let parse = |b: &Vec<u8>| serde_json::from_slice::<Value>(b).unwrap();
        let all = files.values().map(parse);
        all.map(|t| (t["nodes"].clone(), t["answer"].clone()))
            .collect()
    };
    assert_eq!(nodes(&restated).len() as u64, SEARCHES);
    assert!(nodes(&restated) == nodes(&continued), "the trees differ");
}

/// `max_cost` holds for searches too: each live call reserves its worst case (a reward call at
/// the reward model's own price), a refused one stops the model before the budget can be passed,
/// and a raised budget resumes by replay.
#[test]
fn a_budget_stops_searches_before_it_is_passed_and_a_raised_one_resumes() {
    require_sandbox();
    let env = Fixture::new(&dataset(["5", "5"])).with_server(scripted_server());
    let config = |max_cost: &str| {
        let models = format!(
            "[search]\nreward_model_id = \"{PRM}\"\nnum_simulations = 8\nnum_candidates = 3\n\
             max_depth = 4\nexec_timeout = 3\npolicy_max_tokens = 100\n\
             [search.reward_pricing]\ninput = 3000\noutput = 3000\n\
             [[models]]\nname = \"tree\"\nmodel_id = \"{POLICY}\"\nstrategy = \"mcts\"\n\
             [models.pricing]\ninput = 1000\noutput = 1000\nmax_cost = {max_cost}\n"
        );
        configure(&env, "n = 2\ngreedy = false", &models, "concurrency = 1")
    };
    config("2");
    let out = run(&env, &["--quiet"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("budget reached: max_cost 2.000000 USD"),
        "{text}"
    );
    let paid = env.server().request_count();
    assert!(paid > 0, "{text}");
    // What the server was paid for stays under the limit: 1000 USD per million tokens of the
    // policy (its replies hold steps), 3000 of the reward model.
    let cache = crate::common::read(&env.run_dir().join("cache/tree.jsonl"));
    let micro: u64 = cache
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            let u = &v["reply"]["usage"];
            let tokens = u["prompt_tokens"].as_u64().unwrap_or(0)
                + u["completion_tokens"].as_u64().unwrap_or(0);
            let policy = v["reply"]["texts"].to_string().contains(MARK);
            tokens * if policy { 1000 } else { 3000 }
        })
        .sum();
    assert!(micro > 0 && micro <= 2_000_000, "{micro} micro-USD paid");
    assert_eq!(cache.lines().count(), paid);
    config("1000000");
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(checkpoint(&env.run_dir()).len() as u64, SEARCHES);
    // Nothing paid for twice: both sessions together sent what one unbroken run sends.
    assert_eq!(env.server().request_count() as u64, SEARCHES * 14);
}

/// Searches split with `--shard` and joined with `merge` keep their trees: every merged record's
/// `search.tree` names a file of the merged run, equal to the one its shard wrote.
#[test]
fn merged_shards_keep_every_search_tree() {
    require_sandbox();
    let env = Fixture::new(&dataset(["5", "5"])).with_server(scripted_server());
    setup(&env, "", "");
    for shard in ["0/2", "1/2"] {
        let out = run(&env, &["--quiet", "--shard", shard]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    }
    let shards = crate::common::run_dirs(&env.results());
    assert_eq!(shards.len(), 2);
    let merged = env.file("merged");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    crate::common::ok(&crate::common::run(&args));
    let lines = checkpoint(&merged);
    assert_eq!(lines.len() as u64, SEARCHES);
    for l in &lines {
        let tree = l["search"]["tree"].as_str().unwrap();
        let from = shards.iter().find(|d| d.join(tree).is_file()).expect(tree);
        assert_eq!(
            crate::common::read(&merged.join(tree)),
            crate::common::read(&from.join(tree))
        );
    }
}

/// `save_raw_responses = false` holds for searches: the line keeps the extracted answer and a hash,
/// not the steps, and the grades are the same.
#[test]
fn searches_without_raw_responses_keep_the_answer_and_a_hash() {
    require_sandbox();
    let plain = finished_run(["5", "5"], "");
    let env = Fixture::new(&dataset(["5", "5"])).with_server(scripted_server());
    setup(&env, "", "");
    let out = run(
        &env,
        &["--quiet", "--set", "evaluation.save_raw_responses=false"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let lines = checkpoint(&env.run_dir());
    assert_eq!(lines.len() as u64, SEARCHES);
    for l in &lines {
        assert!(l.get("response").is_none_or(Value::is_null), "{l}");
        assert_eq!(l["search"]["path"], serde_json::json!([]));
        assert!(
            l["response_sha256"].as_str().is_some_and(|h| h.len() == 64),
            "{l}"
        );
        assert!(l["extracted"].is_string(), "{l}");
    }
    let grades = |dir: &Path| crate::common::read(&dir.join("per_problem.csv"));
    assert_eq!(grades(&env.run_dir()), grades(&plain.run_dir()));
}

/// A server that refuses to continue an assistant message (HTTP 400) gets the steps restated in
/// the user turn from then on: the run completes, with the trees of `prefix = "restate"`, a note
/// says so, and at most one refused request per concurrent search is spent.
#[test]
fn a_server_that_cannot_continue_a_message_gets_the_prefix_restated() {
    require_sandbox();
    let refuse = |r: &Recorded| {
        r.body.get("continue_final_message").map(|_| Fault::Status {
            code: 400,
            body: r#"{"error":{"message":"Unrecognized request argument supplied: continue_final_message"}}"#.into(),
            retry_after: None,
        })
    };
    let restated = finished_run(["5", "5"], "prefix = \"restate\"");
    let env = Fixture::new(&dataset(["5", "5"])).with_server(scripted_server().faults(refuse));
    setup(&env, "", "");
    let out = run(&env, &[]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("refused to continue an assistant message"),
        "{text}"
    );
    let refused = env
        .server()
        .requests()
        .iter()
        .filter(|r| r.body.get("continue_final_message").is_some())
        .count();
    assert!((1..=4).contains(&refused), "{refused} refused requests");
    for (a, b) in checkpoint(&restated.run_dir())
        .iter()
        .zip(checkpoint(&env.run_dir()))
    {
        assert_eq!(a["search"], b["search"]);
    }
    let tree = |d: &Path| crate::common::read(&d.join("trees/tree/p0/0.json"));
    assert_eq!(tree(&restated.run_dir()), tree(&env.run_dir()));
}

/// A policy, judge and pooling server that echo the key in their replies never get it into a
/// file of the run (checkpoint, cache, trees, reports) or onto the terminal.
#[test]
fn echoed_keys_never_reach_a_file() {
    require_sandbox();
    fn echo(r: &Recorded) -> String {
        r.authorization.clone().unwrap_or_default()
    }
    let server = || {
        FakeServer::builder()
            .responder(|r: &Recorded| {
                let mut reply = scripted_reply(r);
                for c in &mut reply.choices {
                    c.content = format!("{}\n# {}", c.content, echo(r));
                }
                reply
            })
            .pooling_responder(|r: &Recorded| {
                let mut rows = pooling_rows(r);
                rows.as_array_mut().unwrap().push(json!(echo(r)));
                rows
            })
    };
    for mode in ["chat_judge", "pooling"] {
        let env = Fixture::new(&dataset(["5", "5"])).with_server(server());
        setup(&env, &format!("reward_mode = \"{mode}\""), "");
        let out = run(&env, &["--quiet"]);
        assert!(!both(&out).contains(KEY), "{mode}");
        let mut files = vec![env.run_dir()];
        let mut seen = 0;
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(KEY),
                    "{mode}: {}",
                    p.display()
                );
                seen += 1;
            }
        }
        assert!(seen > 4, "{mode}: {seen} files");
        assert!(env
            .server()
            .requests()
            .iter()
            .any(|r| r.is_pooling() == (mode == "pooling")));
    }
}

/// `[api] stream = true`: policy calls ask for server-sent events and the searches come out the
/// same as from plain replies.
#[test]
fn streamed_policy_replies_search_the_same_trees() {
    let plain = finished_run(["5", "5"], "");
    let env = Fixture::new(&dataset(["5", "5"])).with_server(scripted_server());
    setup(&env, "", "stream = true");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let policy: Vec<Recorded> = env
        .server()
        .requests()
        .into_iter()
        .filter(|r| r.model() == Some(POLICY))
        .collect();
    assert!(!policy.is_empty() && policy.iter().all(Recorded::streamed));
    for (a, b) in checkpoint(&plain.run_dir())
        .iter()
        .zip(checkpoint(&env.run_dir()))
    {
        assert_eq!(a["search"], b["search"]);
    }
}

/// A reward server that is not there stops the search model after a bounded number of attempts
/// in a row, naming the reward URL, instead of failing every search one by one.
#[test]
fn an_unreachable_reward_server_stops_the_searches_early_naming_its_url() {
    require_sandbox();
    let questions: String = (0..10)
        .map(|i| format!("{{\"id\":\"p{i}\",\"question\":\"What is 2+3?\",\"answer\":\"5\"}}\n"))
        .collect();
    let env = Fixture::new(&questions).with_server(scripted_server());
    let no_server = crate::common::NO_SERVER;
    setup(
        &env,
        &format!("reward_base_url = \"{no_server}\""),
        "concurrency = 2",
    );
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let flat = both(&out).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("cannot reach {no_server}/v1/")),
        "{flat}"
    );
    assert!(
        flat.contains("attempts in a row failed to connect"),
        "{flat}"
    );
    // 20 searches planned; only those in flight when the bound was hit left a line.
    let path = env.run_dir().join("checkpoints/tree.jsonl");
    let lines = std::fs::read_to_string(path).map_or(0, |t| t.lines().count());
    assert!(lines <= 4, "{lines} searches tried");
}
