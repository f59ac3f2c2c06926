//! The verifier metrics end to end: a scripted policy and a scripted PRM behind the fake server,
//! `gpassk run` with `[verifier]` (and `gpassk verify` + `gpassk score`), and bon@N, wmaj@N and
//! maj@N in metrics.json equal to brute force over every N-subset computed here from the scripted
//! answers and scores, ties and short problems included; resume of an interrupted scoring pass.

use crate::common::db::TestDb;
use crate::common::{both, read, stderr, Fixture};
use crate::run_fake::{configure, interrupt, run, spawn_run, sums, ONE_MODEL};
use crate::verify::{add_verifier, verify};
use fake_openai::{ChoiceReply, FakeServer, FakeServerBuilder, Fault, Recorded, Reply};
use num_rational::Ratio;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Q = Ratio<i128>;

/// The question's two numbers.
fn numbers(text: &str) -> (u64, u64) {
    let nums: Vec<u64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    match nums.as_slice() {
        [.., a, b] => (*a, *b),
        _ => (0, 0),
    }
}

/// What sample `tag` (its seed) answers to a + b = `gold`: right, off by one or two, or nothing.
fn answer(tag: u64, gold: u64) -> Option<u64> {
    match tag % 4 {
        0 | 1 => Some(gold),
        2 => Some(gold + 1),
        _ if tag % 8 == 7 => None,
        _ => Some(gold + 2),
    }
}

/// The PRM's two step scores of sample `tag`, dyadic so sums and ties are exact in f64; None
/// (an unreadable reply) for some.
fn step_scores(tag: u64) -> Option<[f64; 2]> {
    if tag % 11 == 8 {
        return None;
    }
    let first = [0.25, 0.5, 0.75, 1.0][(tag / 4 % 4) as usize];
    let second = [0.5, 0.75, 1.0][(tag / 16 % 3) as usize];
    Some([first, second])
}

/// Two paragraphs (two steps) tagged with the sample's seed in letters, so the PRM (and this
/// test) know which sample it is; an answer without a number has no digit at all, as the grader
/// would otherwise take the last number for the answer.
fn policy(r: &Recorded) -> Reply {
    let (a, b) = numbers(r.user_text().unwrap_or_default());
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let choices = (0..r.n())
        .map(|i| {
            let tag = seed + i;
            let last = match answer(tag, a + b) {
                Some(x) => format!("So the answer is \\boxed{{{x}}}."),
                None => "I am not sure.".to_string(),
            };
            ChoiceReply::stop(format!(
                "First add the numbers [tag {}].\n\n{last}",
                letters(tag)
            ))
        })
        .collect();
    Reply::with_choices(choices)
}

/// A number in base 26, as letters.
fn letters(mut x: u64) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (x % 26) as u8);
        x /= 26;
        if x == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

fn tag_of(text: &str) -> Option<u64> {
    let rest = &text[text.find("[tag ")? + 5..];
    let word = &rest[..rest.find(']')?];
    Some(
        word.bytes()
            .fold(0, |acc, b| acc * 26 + u64::from(b - b'a')),
    )
}

/// vLLM pooling rows `[p_bad, p_good]` per step, or none at all (unreadable).
fn prm(r: &Recorded) -> Value {
    let tag = tag_of(r.pooled_text().unwrap_or_default()).unwrap_or(0);
    match step_scores(tag) {
        Some(s) => json!([[1.0 - s[0], s[0]], [1.0 - s[1], s[1]]]),
        None => json!([]),
    }
}

/// Problem p3 (5 + 10) loses the samples whose seed is a multiple of 3: every try fails.
fn short_p3(r: &Recorded) -> Option<Fault> {
    let p3 = r.user_text().is_some_and(|t| t.contains("5+10"));
    let seed = r.body["seed"].as_u64().unwrap_or(1);
    (p3 && seed.is_multiple_of(3)).then(Fault::server_error)
}

fn server() -> FakeServerBuilder {
    FakeServer::builder()
        .responder(policy)
        .pooling_responder(prm)
        .faults(short_p3)
}

const AGGREGATIONS: [&str; 4] = ["min", "mean", "last", "product"];

fn aggregate(how: &str, s: [f64; 2]) -> f64 {
    match how {
        "min" => s[0].min(s[1]),
        "mean" => (s[0] + s[1]) / 2.0,
        "last" => s[1],
        _ => s[0] * s[1],
    }
}

/// A stored sample as the brute force sees it.
#[derive(Clone)]
struct Drawn {
    correct: bool,
    answer: Option<u64>,
    scores: Option<[f64; 2]>,
    /// The sample's tag (its seed), as the scripts see it.
    tag: u64,
}

/// Each problem's usable samples, from the checkpoint's responses and the scripts.
fn samples(run_dir: &Path, problems: usize) -> Vec<Vec<Drawn>> {
    let mut out: Vec<Vec<Drawn>> = (0..problems).map(|_| Vec::new()).collect();
    for line in read(&run_dir.join("checkpoints/m1.jsonl")).lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["outcome"] == "api_error" {
            continue;
        }
        let p: usize = r["problem_id"].as_str().unwrap()[1..].parse().unwrap();
        let tag = tag_of(r["response"].as_str().unwrap()).unwrap();
        let gold = (p + 2 + 3 * p + 1) as u64;
        let a = answer(tag, gold);
        out[p].push(Drawn {
            correct: a == Some(gold),
            answer: a,
            scores: step_scores(tag),
            tag,
        });
    }
    out
}

/// Every `size`-subset of 0..n.
fn subsets(n: usize, size: usize) -> Vec<Vec<usize>> {
    if size == 0 {
        return vec![Vec::new()];
    }
    if n < size {
        return Vec::new();
    }
    let mut out = subsets(n - 1, size);
    for mut s in subsets(n - 1, size - 1) {
        s.push(n - 1);
        out.push(s);
    }
    out
}

/// One subset's vote: classes weighed by `weight`; the fraction of top classes that are correct.
fn vote(pick: &[&Drawn], weight: impl Fn(&Drawn) -> f64) -> Q {
    let mut totals: BTreeMap<u64, (f64, bool)> = BTreeMap::new();
    for d in pick {
        if let Some(a) = d.answer {
            let t = totals.entry(a).or_insert((0.0, d.correct));
            t.0 += weight(d);
        }
    }
    let Some(top) = totals.values().map(|t| t.0).reduce(f64::max) else {
        return Q::from_integer(0);
    };
    let winners: Vec<bool> = totals
        .values()
        .filter(|t| t.0 == top)
        .map(|t| t.1)
        .collect();
    let right = winners.iter().filter(|&&c| c).count();
    Q::new(right as i128, winners.len() as i128)
}

/// The subset's best-scored samples: the fraction of them that is correct.
fn best(pick: &[&Drawn], score: impl Fn(&Drawn) -> f64) -> Q {
    let top = pick.iter().map(|d| score(d)).reduce(f64::max).unwrap();
    let tied: Vec<&&Drawn> = pick.iter().filter(|d| score(d) == top).collect();
    let right = tied.iter().filter(|d| d.correct).count();
    Q::new(right as i128, tied.len() as i128)
}

/// The mean over a problem's `size`-subsets of `value`.
fn expectation(drawn: &[Drawn], size: usize, value: &dyn Fn(&[&Drawn]) -> Q) -> Q {
    let all = subsets(drawn.len(), size);
    let sum = all.iter().fold(Q::from_integer(0), |acc, s| {
        let pick: Vec<&Drawn> = s.iter().map(|&i| &drawn[i]).collect();
        acc + value(&pick)
    });
    sum / Q::from_integer(all.len() as i128)
}

/// metric name → (exact fraction, problems) of the whole-dataset rows of metrics.json.
fn reported(run_dir: &Path) -> HashMap<String, (String, u64)> {
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    let mut out = HashMap::new();
    for row in json["metrics"].as_array().unwrap() {
        if row["subset"] != "all" {
            continue;
        }
        let name = match (row["metric"].as_str().unwrap(), row["aggregation"].as_str()) {
            ("bon@k", Some(a)) => format!("bon@{}_{a}", row["k"]),
            ("wmaj@k", Some(a)) => format!("wmaj@{}_{a}", row["k"]),
            ("maj@k", _) => format!("maj@{}", row["k"]),
            ("maj@n", _) => "maj@n".to_string(),
            _ => continue,
        };
        let exact = row["exact"].as_str().unwrap_or("-").to_string();
        out.insert(name, (exact, row["problems"].as_u64().unwrap()));
    }
    out
}

/// What brute force says every verifier metric of the run is, with the problems it rests on.
fn brute_force(drawn: &[Vec<Drawn>], n: usize, sizes: &[usize]) -> HashMap<String, (String, u64)> {
    let mut want = HashMap::new();
    let mean = |values: Vec<Q>| {
        let count = values.len() as u64;
        let sum = values.into_iter().fold(Q::from_integer(0), |a, b| a + b);
        (
            (sum / Q::from_integer(count.max(1) as i128)).to_string(),
            count,
        )
    };
    for &size in sizes {
        let fits = |d: &&Vec<Drawn>| d.len() >= size;
        if size < n {
            let maj: Vec<Q> = (drawn.iter().filter(fits))
                .map(|d| expectation(d, size, &|p| vote(p, |_| 1.0)))
                .collect();
            want.insert(format!("maj@{size}"), mean(maj));
        }
        // bon@N and wmaj@N rest on each problem's scored samples, when it has N of them.
        let scored: Vec<Vec<Drawn>> = (drawn.iter())
            .map(|d| d.iter().filter(|x| x.scores.is_some()).cloned().collect())
            .filter(|d: &Vec<Drawn>| d.len() >= size)
            .collect();
        for how in AGGREGATIONS {
            let score = |d: &Drawn| aggregate(how, d.scores.unwrap());
            let bon: Vec<Q> = (scored.iter())
                .map(|d| expectation(d, size, &|p| best(p, score)))
                .collect();
            want.insert(format!("bon@{size}_{how}"), mean(bon));
            let wmaj: Vec<Q> = (scored.iter())
                .map(|d| expectation(d, size, &|p| vote(p, score)))
                .collect();
            want.insert(format!("wmaj@{size}_{how}"), mean(wmaj));
        }
    }
    want
}

const PROBLEMS: usize = 4;
const VERIFIER: &str =
    "reward_mode = \"pooling\"\naggregation = [\"min\", \"mean\", \"last\", \"product\"]\n";

/// Checks the run's verifier metrics against brute force and that the data holds what the test
/// is about: ties, a short problem, an unreadable reply.
fn check_against_brute_force(run_dir: &Path) {
    let drawn = samples(run_dir, PROBLEMS);
    assert!(drawn[3].len() < 6 && !drawn[3].is_empty(), "p3 is short");
    assert!(
        drawn.iter().flatten().any(|d| d.scores.is_none()),
        "some reply is unreadable"
    );
    assert!(
        drawn.iter().flatten().any(|d| d.answer.is_none()),
        "some sample has no answer (no vote)"
    );
    assert!(
        drawn
            .iter()
            .filter(|d| d.iter().all(|x| x.scores.is_some()))
            .count()
            >= 2,
        "most problems are fully scored"
    );
    // Subsets without a problem's best sample often top out at a shared score.
    let tied = drawn.iter().any(|d| {
        let mut mins: Vec<f64> = d
            .iter()
            .filter_map(|x| Some(aggregate("min", x.scores?)))
            .collect();
        mins.sort_by(f64::total_cmp);
        mins.windows(2).any(|w| w[0] == w[1])
    });
    assert!(tied, "some problem's samples tie");
    let want = brute_force(&drawn, 6, &[1, 2, 4, 6]);
    let got = reported(run_dir);
    assert_eq!(want.len(), 3 + 4 * 2 * 4, "{want:?}");
    for (name, value) in &want {
        assert_eq!(got.get(name), Some(value), "{name}: {got:?}");
    }
}

#[test]
fn a_run_with_a_verifier_reports_bon_wmaj_and_maj_equal_to_brute_force() {
    let env = Fixture::new(&sums(PROBLEMS)).with_server(server());
    let cfg = configure(&env, "n = 6\ngreedy = false", ONE_MODEL, "");
    let text = read(&cfg).replace("[evaluation]\n", "[evaluation]\nk = [1, 2, 4]\n");
    std::fs::write(&cfg, text).unwrap();
    add_verifier(&cfg, VERIFIER);
    let out = run(&env, &["--quiet"]);
    // p3's failed samples make the run partial (exit 1); the verifier scored every usable one.
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let run_dir = env.run_dir();
    if let Ok(keep) = std::env::var("KEEP_RUN") {
        let _ = std::process::Command::new("cp")
            .args(["-r", run_dir.to_str().unwrap(), &keep])
            .status();
        std::fs::copy(env.file("data.jsonl"), format!("{keep}/data.jsonl")).unwrap();
    }
    check_against_brute_force(&run_dir);
    let usable = samples(&run_dir, PROBLEMS).iter().flatten().count() as u64;
    assert_eq!(env.server().hits("POST", "/pooling"), usable);
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    let v = &json["models"][0]["verifier"];
    assert_eq!(v["reward_model"], "prm");
    assert_eq!(v["sizes"], json!([1, 2, 4, 6]));
    assert_eq!(v["samples"], usable);
    let unreadable = v["unreadable"].as_u64().unwrap();
    assert!(
        unreadable > 0 && v["scored"].as_u64().unwrap() + unreadable == usable,
        "{v}"
    );
    // A problem with an unreadable reply counts at each N up to its scored samples.
    assert!(v["problems_partial"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["problems_excluded"], 0, "{v}");
    let at = v["problems_at"].as_array().unwrap();
    assert_eq!(at.len(), 4, "{v}");
    assert!(
        at[0].as_u64() == Some(PROBLEMS as u64),
        "every problem counts at N = 1: {v}"
    );
    // metrics.csv carries the same rows, with the aggregation column.
    let csv = read(&run_dir.join("metrics.csv"));
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",aggregation,mc_std_error"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.contains(",bon@k,6,,") && l.contains(",min,")),
        "{csv}"
    );
}

#[test]
fn verify_then_score_reports_what_a_run_with_the_verifier_does() {
    let env = Fixture::new(&sums(PROBLEMS)).with_server(server());
    let cfg = configure(&env, "n = 6\ngreedy = false", ONE_MODEL, "");
    let text = read(&cfg).replace("[evaluation]\n", "[evaluation]\nk = [1, 2, 4]\n");
    std::fs::write(&cfg, text).unwrap();
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let run_dir = env.run_dir();
    assert!(
        !reported(&run_dir).contains_key("bon@1_min"),
        "no verifier yet"
    );
    add_verifier(&cfg, VERIFIER);
    // `verify` writes the reports as it ends: no `gpassk score` needed.
    let out = verify(&env, &run_dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    check_against_brute_force(&run_dir);
    let md = read(&run_dir.join("report.md"));
    assert!(md.contains("bon@N"), "{md}");
}

/// Shared between a PRM and its test: the tags of the samples it gave no score.
type Tags = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<u64>>>;

/// A sample's two step scores from a PRM that always reads: the scripted ones, or a fixed pair.
fn readable(tag: u64) -> [f64; 2] {
    step_scores(tag).unwrap_or([0.5, 0.75])
}

/// A PRM whose first reply about each problem is unreadable (no rows), its tag kept in
/// `unread`; every other reply scores [`readable`].
fn first_unreadable(unread: Tags) -> impl Fn(&Recorded) -> Value + Send + Sync + 'static {
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    move |r: &Recorded| {
        let tag = tag_of(r.pooled_text().unwrap_or_default()).unwrap_or(0);
        let question = r.user_text().unwrap_or_default().to_string();
        if seen.lock().unwrap().insert(question) {
            unread.lock().unwrap().insert(tag);
            return json!([]);
        }
        let s = readable(tag);
        json!([[1.0 - s[0], s[0]], [1.0 - s[1], s[1]]])
    }
}

#[test]
fn problems_with_an_unreadable_reply_keep_their_verifier_values_over_the_rest() {
    let unread = Tags::default();
    let server = FakeServer::builder()
        .responder(policy)
        .pooling_responder(first_unreadable(unread.clone()));
    let env = Fixture::new(&sums(PROBLEMS)).with_server(server);
    let cfg = configure(&env, "n = 6\ngreedy = false", ONE_MODEL, "");
    let text = read(&cfg).replace("[evaluation]\n", "[evaluation]\nk = [1, 2, 4]\n");
    std::fs::write(&cfg, text).unwrap();
    add_verifier(&cfg, VERIFIER);
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let run_dir = env.run_dir();
    let mut drawn = samples(&run_dir, PROBLEMS);
    let unread = unread.lock().unwrap().clone();
    for d in &mut drawn {
        for x in d.iter_mut() {
            x.scores = (!unread.contains(&x.tag)).then(|| readable(x.tag));
        }
        // Each problem has exactly one sample without a score.
        let unscored = d.iter().filter(|x| x.scores.is_none()).count();
        assert_eq!((d.len(), unscored), (6, 1));
    }
    // Every problem counts at N up to its 5 scored samples; none at N = n = 6.
    let got = reported(&run_dir);
    for size in [1, 2, 4] {
        let bon = &got[&format!("bon@{size}_min")];
        assert_eq!(bon.1, PROBLEMS as u64, "bon@{size}: {got:?}");
    }
    assert!(got.get("bon@6_min").is_none_or(|v| v.1 == 0), "{got:?}");
    let want = brute_force(&drawn, 6, &[1, 2, 4]);
    for (name, value) in &want {
        assert_eq!(got.get(name), Some(value), "{name}: {got:?}");
    }
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    let v = &json["models"][0]["verifier"];
    assert_eq!(v["unreadable"], PROBLEMS, "{v}");
    assert_eq!(v["problems_partial"], PROBLEMS, "{v}");
    assert_eq!(v["problems_at"], json!([4, 4, 4, 0]), "{v}");
    // The report says what was left out and what each N rests on.
    let md = read(&run_dir.join("report.md")).replace('\n', " ");
    assert!(
        md.contains("4 samples on 4 of 4 problems have none (unreadable replies: 4)")
            && md.contains("all 4 up to N = 4, 0 at N = 6"),
        "{md}"
    );
}

/// The PRM answers slowly, so a run can be stopped while it scores.
fn slow_server() -> FakeServerBuilder {
    FakeServer::builder()
        .responder(policy)
        .pooling_responder(|r: &Recorded| {
            std::thread::sleep(Duration::from_millis(150));
            prm(r)
        })
}

#[test]
fn a_run_stopped_while_the_verifier_scores_resumes_without_asking_twice() {
    let env = Fixture::new(&sums(PROBLEMS)).with_server(slow_server());
    let cfg = configure(&env, "n = 6\ngreedy = false", ONE_MODEL, "concurrency = 2");
    add_verifier(&cfg, VERIFIER);
    let child = spawn_run(&cfg);
    let deadline = Instant::now() + Duration::from_secs(60);
    let stored = |env: &Fixture| {
        let run = std::fs::read_dir(env.results())
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok());
        run.and_then(|d| std::fs::read_to_string(d.path().join("verifier/m1.jsonl")).ok())
            .map_or(0, |t| t.lines().count())
    };
    while stored(&env) < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = interrupt(child);
    let e = stderr(&out);
    assert!(e.contains("interrupted while the verifier scored"), "{e}");
    let run_dir = env.run_dir();
    let before = stored(&env);
    assert!(
        (4..PROBLEMS * 6).contains(&before),
        "stopped midway: {before}"
    );
    let manifest: Value = serde_json::from_str(&read(&run_dir.join("manifest.json"))).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(stored(&env), PROBLEMS * 6);
    let pooled: Vec<Recorded> = env
        .server()
        .requests()
        .into_iter()
        .filter(|r| r.is_pooling())
        .collect();
    assert_eq!(pooled.len(), PROBLEMS * 6, "each sample asked once");
    assert!(pooled.iter().all(|r| r.attempt == 0), "nothing asked twice");
    let got = reported(&run_dir);
    let drawn = samples(&run_dir, PROBLEMS);
    let want = brute_force(&drawn, 6, &[6]);
    assert_eq!(got.get("bon@6_min"), want.get("bon@6_min"));
}

/// `compare --format json` rows of one model and metric: (family, flag).
fn compared(a: &Path, b: &Path, metric: &str) -> Option<(Value, Value)> {
    let out = crate::common::gpassk()
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_str(&crate::common::ok(&out)).unwrap();
    let row = rows.as_array()?.iter().find(|r| r["metric"] == metric)?;
    Some((row["family"].clone(), row["flag"].clone()))
}

/// Two runs (two weeks) of `problems` problems under `sampling`, with `evaluation` lines under
/// `[evaluation]` and a pooling PRM configured by `verifier`: the fixture and the run directories.
fn two_verified_runs(
    problems: usize,
    sampling: &str,
    evaluation: &str,
    verifier: &str,
) -> (Fixture, Vec<PathBuf>) {
    let server = FakeServer::builder()
        .responder(policy)
        .pooling_responder(prm);
    let env = Fixture::new(&sums(problems)).with_server(server);
    let cfg = configure(&env, sampling, ONE_MODEL, "");
    let declared = format!("[evaluation]\n{evaluation}");
    std::fs::write(&cfg, read(&cfg).replace("[evaluation]\n", &declared)).unwrap();
    add_verifier(&cfg, &format!("reward_mode = \"pooling\"\n{verifier}"));
    for _ in 0..2 {
        let out = run(&env, &["--quiet"]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    }
    let runs = crate::common::run_dirs(&env.results());
    (env, runs)
}

#[test]
fn compare_and_history_treat_the_verifier_metrics_like_the_others() {
    let declared = "metrics = [\"pass@4\", \"bon@4_min\"]\n";
    let (env, runs) = two_verified_runs(12, "n = 6\ngreedy = false", declared, "");
    let (a, b) = (&runs[0], &runs[1]);
    // Declared: in the tested family (Holm runs over it); the others are exploratory.
    let (family, _) = compared(a, b, "bon@4_min").expect("bon@4_min compared");
    assert_eq!(family, true);
    for other in ["wmaj@4_min", "bon@6_min", "maj@4"] {
        let (family, flag) = compared(a, b, other).unwrap_or_else(|| panic!("{other}"));
        assert_eq!(
            (family, flag),
            (json!(false), json!("exploratory")),
            "{other}"
        );
    }
    // history follows the declared metrics, the verifier's among them.
    let out = crate::common::gpassk()
        .args([
            "history",
            env.results().to_str().unwrap(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let text = crate::common::ok(&out);
    assert!(text.contains("\"bon@4_min\""), "{text}");
}

/// The AUC of scores against labels weighed good by `q` (and bad by 1 − q), pair by pair: the
/// definition, over every ordered pair of distinct steps.
fn auc_by_pairs(steps: &[(f64, Q)]) -> Option<Q> {
    let (mut num, mut den) = (Q::from_integer(0), Q::from_integer(0));
    let one = Q::from_integer(1);
    for (i, (si, qi)) in steps.iter().enumerate() {
        for (j, (sj, qj)) in steps.iter().enumerate() {
            if i == j {
                continue;
            }
            let w = qi * (one - qj);
            den += w;
            if si > sj {
                num += w;
            } else if si == sj {
                num += w / Q::from_integer(2);
            }
        }
    }
    (den != Q::from_integer(0)).then(|| num / den)
}

#[test]
fn scoring_sets_step_scores_against_the_runs_labels() {
    let server = FakeServer::builder()
        .responder(policy)
        .pooling_responder(prm);
    let env = Fixture::new(&sums(3)).with_server(server);
    let cfg = configure(&env, "n = 4\ngreedy = true", ONE_MODEL, "");
    add_verifier(&cfg, "reward_mode = \"pooling\"\n");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let run_dir = env.run_dir();
    let stored: Vec<Value> = read(&run_dir.join("verifier/m1.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        stored.iter().all(|s| s["sample_index"] != "greedy"),
        "greedy answers are not ranked"
    );
    let scored: Vec<&Value> = stored.iter().filter(|s| s["scores"].is_array()).collect();
    // Labels: (correct of 4 rollouts) per step of four scored samples; the fourth is labelled with
    // three steps (another split: unpaired), the first's second step has no rollouts, and a
    // greedy answer's labels are not the verifier's business.
    let plan: [&[(u32, u32)]; 4] = [
        &[(4, 4), (0, 0)],
        &[(3, 4), (1, 4)],
        &[(0, 4), (2, 4)],
        &[(4, 4), (4, 4), (4, 4)],
    ];
    let mut lines = String::new();
    let mut want: Vec<(f64, u32, u32)> = Vec::new();
    for (s, steps) in scored.iter().zip(plan) {
        let scores = s["scores"].as_array().unwrap();
        for (i, &(correct, rollouts)) in steps.iter().enumerate() {
            let id = format!(
                "m1:{}:{}",
                s["problem_id"].as_str().unwrap(),
                s["sample_index"]
            );
            lines.push_str(&format!(
                "{}\n",
                json!({"problem_id": s["problem_id"], "solution_id": id, "step_index": i + 1,
                    "step_text": "x", "rollouts": rollouts, "correct": correct,
                    "he": u8::from(correct > 0), "se": 0.0})
            ));
            if steps.len() == scores.len() && rollouts > 0 {
                want.push((scores[i].as_f64().unwrap(), correct, rollouts));
            }
        }
    }
    lines.push_str(&format!(
        "{}\n",
        json!({"problem_id": "p0", "solution_id": "m1:p0:greedy", "step_index": 1,
            "step_text": "x", "rollouts": 4, "correct": 0, "he": 0, "se": 0.0})
    ));
    std::fs::create_dir_all(run_dir.join("labels")).unwrap();
    std::fs::write(run_dir.join("labels/labels.jsonl"), lines).unwrap();
    let out = crate::common::gpassk()
        .args(["score", run_dir.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    let l = &json["models"][0]["verifier"]["label_agreement"];
    assert_eq!(
        (l["solutions"].as_u64(), l["unpaired"].as_u64()),
        (Some(3), Some(1)),
        "{l}"
    );
    assert_eq!(l["steps"].as_u64(), Some(want.len() as u64), "{l}");
    let hard: Vec<(f64, Q)> = want
        .iter()
        .map(|&(s, c, _)| (s, Q::from_integer(i128::from(c > 0))))
        .collect();
    let soft: Vec<(f64, Q)> = want
        .iter()
        .map(|&(s, c, r)| (s, Q::new(i128::from(c), i128::from(r))))
        .collect();
    for (kind, labels) in [("hard", &hard), ("soft", &soft)] {
        let right = labels.iter().fold(Q::from_integer(0), |acc, (s, q)| {
            acc + if *s >= 0.5 {
                *q
            } else {
                Q::from_integer(1) - q
            }
        });
        let accuracy = right / Q::from_integer(labels.len() as i128);
        assert_eq!(
            l[kind]["accuracy_exact"],
            accuracy.to_string(),
            "{kind}: {l}"
        );
        let auc = auc_by_pairs(labels).map(|a| a.to_string());
        assert_eq!(l[kind]["auc_exact"].as_str(), auc.as_deref(), "{kind}: {l}");
    }
    let md = read(&run_dir.join("report.md"));
    assert!(md.contains("## Verifier against step labels"), "{md}");
}

#[test]
fn estimated_vote_metrics_carry_their_monte_carlo_error_and_repeat_exactly() {
    // A PRM that reads every sample, so wmaj@N covers both problems.
    let server = FakeServer::builder()
        .responder(policy)
        .pooling_responder(|r: &Recorded| {
            let tag = tag_of(r.pooled_text().unwrap_or_default()).unwrap_or(0);
            let s = step_scores(tag).unwrap_or([0.5, 0.25]);
            json!([[1.0 - s[0], s[0]], [1.0 - s[1], s[1]]])
        });
    let env = Fixture::new(&sums(2)).with_server(server);
    // C(24, 12) = 2,704,156 subsets: past the exact budget, so sampled.
    let cfg = configure(&env, "n = 24\ngreedy = false", ONE_MODEL, "concurrency = 8");
    std::fs::write(
        &cfg,
        read(&cfg).replace("[evaluation]\n", "[evaluation]\nk = [12]\n"),
    )
    .unwrap();
    add_verifier(&cfg, "reward_mode = \"pooling\"\n");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let run_dir = env.run_dir();
    let first = read(&run_dir.join("metrics.csv"));
    let mut r = csv::Reader::from_reader(first.as_bytes());
    let mut seen = 0;
    for row in r.records().map(Result::unwrap).filter(|r| &r[3] == "all") {
        let (metric, k, se) = (&row[4], &row[5], &row[14]);
        match (metric, k) {
            ("maj@k" | "wmaj@k", "12") => {
                let se: f64 = se.parse().unwrap_or_else(|_| panic!("{metric}: {first}"));
                assert!(se > 0.0 && se < 0.02, "{metric} {se}");
                seen += 1;
            }
            _ => assert_eq!(se, "", "{metric}@{k} is exact"),
        }
    }
    assert_eq!(seen, 2, "{first}");
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    assert_eq!(json["models"][0]["verifier"]["draws"], 4096);
    // Seeded: scoring again gives the same bytes.
    let out = crate::common::gpassk()
        .args(["score", run_dir.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(read(&run_dir.join("metrics.csv")), first);
}

/// Two weeks of a run with a verifier, pushed to a results database (SQLite and PostgreSQL):
/// `compare --db` and `history --db` print exactly what they print over the folders, the
/// verifier's metrics (rebuilt from their stored per-problem values, Monte Carlo errors included)
/// among them.
#[test]
fn a_stored_run_with_a_verifier_compares_and_reads_back_as_its_folder() {
    // n = 18: maj@9 and wmaj@9 sample subsets past the exact budget (C(18, 9) of them), so they
    // carry a Monte Carlo error.
    let declared = "k = [1, 4, 9]\nmetrics = [\"pass@4\", \"bon@4_min\"]\n";
    let aggregations = "aggregation = [\"min\", \"mean\"]\n";
    let (env, runs) = two_verified_runs(24, "n = 18\ngreedy = false", declared, aggregations);
    let id = |d: &Path| d.file_name().unwrap().to_string_lossy().into_owned();
    let metrics: Value = serde_json::from_str(&read(&runs[1].join("metrics.json"))).unwrap();
    let text = metrics.to_string();
    let rows = metrics["metrics"].as_array().unwrap();
    let row = |family: &str, k: u64, aggregation: Value| {
        let found = rows
            .iter()
            .find(|m| m["metric"] == family && m["k"] == k && m["aggregation"] == aggregation);
        found
            .unwrap_or_else(|| panic!("{family} {k} in {text}"))
            .clone()
    };
    assert!(
        row("maj@k", 9, Value::Null)["mc_std_error"].is_f64(),
        "{text}"
    );
    assert!(
        row("wmaj@k", 9, json!("mean"))["mc_std_error"].is_f64(),
        "{text}"
    );
    assert!(row("bon@k", 18, json!("mean"))["value"].is_f64(), "{text}");
    // The kept parts read back every verifier column, Monte Carlo errors included.
    let dir = gpassk::rundir::RunDir::at(&runs[1]);
    let (plan, manifest) = gpassk::scoring::load_plan(&dir, &[]).unwrap();
    let kept = gpassk::scoring::stored::read_back(&dir, &plan, &manifest).expect("fresh scores");
    let (notes, _) = gpassk::util::Notes::collect();
    crate::common::assert_same_scores(&kept, &gpassk::scoring::load_run(&dir, &notes).unwrap());
    for db in TestDb::both(&env.path().join("v.db")) {
        let paths: Vec<String> = runs.iter().map(|r| r.display().to_string()).collect();
        let mut push = vec!["store", "push"];
        push.extend(paths.iter().map(String::as_str));
        crate::common::ok(&db.run(&push));
        for format in ["json", "csv"] {
            let folder = crate::common::gpassk()
                .args(["compare", &paths[0], &paths[1], "--format", format])
                .output()
                .unwrap();
            let stored = db
                .command(&["compare", &id(&runs[0]), &id(&runs[1]), "--format", format])
                .output()
                .unwrap();
            let folder = crate::common::ok(&folder);
            assert!(
                folder.contains("wmaj@9_mean") && folder.contains("maj@9"),
                "{folder}"
            );
            assert_eq!(
                crate::common::ok(&stored),
                folder,
                "{db:?} compare --format {format}"
            );
            let folder = crate::common::gpassk()
                .args([
                    "history",
                    env.results().to_str().unwrap(),
                    "--format",
                    format,
                ])
                .output()
                .unwrap();
            let stored = db
                .command(&["history", "--format", format])
                .output()
                .unwrap();
            let folder = crate::common::ok(&folder);
            assert!(folder.contains("bon@4_min"), "{folder}");
            assert_eq!(
                crate::common::ok(&stored),
                folder,
                "{db:?} history --format {format}"
            );
        }
    }
}

/// `gpassk view` over runs with a verifier: every page served, the verifier's declared column on
/// the run page; a run whose checkpoint grew after it was scored is graded whole (parts cannot
/// rebuild the verifier's metrics), exactly as grading every sample gives it.
#[test]
fn the_viewer_serves_verifier_runs_and_grades_one_that_grew_whole() {
    use crate::view::{graded_whole, ok, pages, serve};
    let declared = "metrics = [\"pass@4\", \"bon@4_min\"]\n";
    let (env, runs) = two_verified_runs(6, "n = 4\ngreedy = false", declared, "");
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let (a, b) = (name(&runs[0]), name(&runs[1]));
    // Week b scored before its last problem's samples arrived.
    let checkpoint = runs[1].join("checkpoints/m1.jsonl");
    let text = read(&checkpoint);
    let (kept, late): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| !l.contains("\"p5\""));
    std::fs::write(&checkpoint, kept.join("\n") + "\n").unwrap();
    crate::common::ok(&crate::common::run(&[
        "score",
        runs[1].to_str().unwrap(),
        "--quiet",
    ]));
    let s = serve(&env.results());
    for page in [
        "/".to_string(),
        format!("/run/{b}"),
        format!("/run/{b}/problems"),
        format!("/run/{b}/problem?id=p0"),
        format!("/compare?a={a}&b={b}"),
    ] {
        ok(&s, &page);
    }
    let (run_page, grid) = pages(&s, &b);
    assert!(
        run_page["metrics"].to_string().contains("bon@4_min"),
        "{run_page}"
    );
    assert_eq!(grid["rows"][5]["cells"][0]["n"], 0, "{grid}");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&checkpoint)
        .unwrap();
    std::io::Write::write_all(&mut f, (late.join("\n") + "\n").as_bytes()).unwrap();
    let (run_page, grid) = pages(&s, &b);
    assert_eq!(grid["rows"][5]["cells"][0]["n"], 4, "{grid}");
    assert_eq!((run_page, grid), graded_whole(&env.results(), &runs[1]));
}
