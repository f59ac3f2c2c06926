//! Harness overhead of tree search per expansion, without model or code time: the engine (UCT,
//! tree bookkeeping, back-propagation) plus what the runner does around every call (request body,
//! cache key, reply decoding, cache append) and the tree file, with instant in-process replies
//! and an instant executor. Sandbox start-up per execution is `cargo bench --bench sandbox`.
//!
//! `cargo bench --bench search` (add `-- --quick` for a smoke run).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use gpassk::client::decode_reply;
use gpassk::config::SearchSettings;
use gpassk::rundir::record::SearchStats;
use gpassk::sampling::{request_key, Cached, RequestCache};
use gpassk::search::requests::{judge_body, parse_score, policy_body};
use gpassk::search::{
    search, CallFailed, Exec, Executor, Expand, Policy, Proposal, Reward, Score, SearchInput,
};
use std::collections::HashSet;
use std::time::{Duration, Instant};

const URL: &str = "http://127.0.0.1:1/v1/chat/completions";

/// A chat reply as a server sends it, with `texts` as its choices.
fn reply_bytes(texts: &[String]) -> Vec<u8> {
    let choices: Vec<serde_json::Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}))
        .collect();
    serde_json::to_vec(
        &serde_json::json!({"id": "x", "object": "chat.completion", "model": "pol",
        "choices": choices, "usage": {"prompt_tokens": 300, "completion_tokens": 120}}),
    )
    .expect("json")
}

/// The runner's work around one call: cache key, reply decoding, cache append.
fn round_trip(cache: &RequestCache, body: &[u8], texts: &[String]) -> Vec<String> {
    let key = request_key(URL, body);
    let resp = decode_reply(200, &reply_bytes(texts), None, |s| s).expect("reply");
    let cached = Cached {
        texts: resp.choices.into_iter().map(|c| c.content).collect(),
        usage: resp.usage,
        ..Cached::default()
    };
    cache.put("0#0", &key, &cached).expect("cache");
    cached.texts
}

struct FakePolicy<'a>(&'a RequestCache, &'a SearchSettings);

impl Policy for FakePolicy<'_> {
    fn expand(&mut self, req: &Expand) -> Result<Proposal, CallFailed> {
        let body = policy_body("pol", self.1, 0.95, req.input, req.prefix, req.n, req.seed);
        let d = req.prefix.len();
        let texts: Vec<String> = (0..req.n as usize)
            .map(|i| match (d + i + req.seed as usize) % 5 {
                0 if d >= 2 => format!("# done\n\\boxed{{{}}}", (d + i) % 3),
                _ => format!("# step {d}.{i}\nx{d} = {i} * {d} + 1\nprint(x{d})"),
            })
            .collect();
        let steps = round_trip(self.0, &body, &texts);
        Ok(Proposal {
            steps,
            tokens: Some(420),
        })
    }
}

struct FakeReward<'a>(&'a RequestCache);

impl Reward for FakeReward<'_> {
    fn score(&mut self, input: &SearchInput, steps: &[String]) -> Result<Score, CallFailed> {
        let body = judge_body("prm", input, steps);
        let v = format!("0.{}", 3 + steps.len() % 6);
        let text = round_trip(self.0, &body, &[v]);
        Ok(parse_score(&text[0]))
    }
}

struct Instant0;

impl Executor for Instant0 {
    fn run(&mut self, _code: &str) -> Exec {
        Exec::Ok {
            stdout: "1\n".into(),
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let searches = if quick { 4 } else { 64 };
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = SearchSettings {
        reward_model_id: Some("prm".into()),
        ..SearchSettings::default()
    };
    let input = SearchInput {
        problem_id: "p".into(),
        question: "Let $f(x) = 3x^2 - 5$. What is the value of $f(f(1))$?".into(),
    };
    let mut total = SearchStats::default();
    let mut elapsed = Duration::ZERO;
    for seed in 0..searches {
        let cache = RequestCache::open(
            &dir.path().join(format!("{seed}.jsonl")),
            &HashSet::new(),
            &Default::default(),
        )
        .expect("cache");
        let start = Instant::now();
        let (mut p, mut r) = (FakePolicy(&cache, &settings), FakeReward(&cache));
        let out = search(&input, &settings, seed, &mut p, Some(&mut r), &mut Instant0);
        let tree = serde_json::to_vec_pretty(&out.tree).expect("tree");
        std::fs::write(dir.path().join(format!("{seed}.json")), tree).expect("write");
        elapsed += start.elapsed();
        total.policy_calls += out.stats.policy_calls;
        total.reward_calls += out.stats.reward_calls;
        total.steps += out.stats.steps;
    }
    let per = elapsed.as_secs_f64() * 1e6 / total.policy_calls as f64;
    println!(
        "search harness: {searches} searches (32 simulations, depth 8, 4 candidates), {} expansions, {} reward calls, {} nodes",
        total.policy_calls, total.reward_calls, total.steps
    );
    println!(
        "  {per:.1} µs per expansion (1 policy + up to 4 reward calls' harness work), {:.2} ms per search",
        elapsed.as_secs_f64() * 1e3 / searches as f64
    );
}
