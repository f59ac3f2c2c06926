//! The weekly job of issue 40, run for real against the fake server: six models with 49–52
//! character names, 30 problems, n = 16, five headline metrics; in week 2 the first model is much
//! weaker, the fourth a little, and every model is served with a new system fingerprint.

use super::{both, gpassk};
use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply};
use std::path::{Path, PathBuf};

/// The six models of issue 40's weekly job, (name in the config, model id): names of 49–52
/// characters sharing one suffix, as a weekly job names its deployments. The one list of long
/// names the tests use (this job, the viewer's and the history page's weeks).
pub(crate) const NAMES: [(&str, &str); 6] = [
    (
        "meta-llama-Llama-3.1-405B-Instruct-Turbo-eval-weekly",
        "meta-llama/Llama-3.1-405B-Instruct-Turbo",
    ),
    (
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-bf16-weekly",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    ),
    (
        "deepseek-ai-DeepSeek-R1-Distill-Llama-70B-fp8-weekly",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    ),
    (
        "Qwen-Qwen2.5-Math-72B-Instruct-vllm-tp4-fp16-weekly",
        "Qwen/Qwen2.5-Math-72B-Instruct",
    ),
    (
        "mistralai-Mistral-Large-Instruct-2411-int4-weekly",
        "mistralai/Mistral-Large-Instruct-2411",
    ),
    (
        "google-gemma-2-27b-it-sglang-tp2-bf16-canary-weekly",
        "google/gemma-2-27b-it",
    ),
];

/// [`NAMES`] with a skill each: (name in the config, model id, skill).
pub(crate) const fn with_skills(skills: [f64; 6]) -> [(&'static str, &'static str, f64); 6] {
    let mut out = [("", "", 0.0); 6];
    let mut i = 0;
    while i < out.len() {
        out[i] = (NAMES[i].0, NAMES[i].1, skills[i]);
        i += 1;
    }
    out
}

/// (name in the config, model id, skill) of the six models.
pub(crate) const MODELS: [(&str, &str, f64); 6] = with_skills([0.6, 0.85, 0.8, 0.7, 0.55, 0.45]);

pub(crate) const PROBLEMS: usize = 30;
pub(crate) const N: u32 = 16;

/// How much each model's skill falls in week 2: the first much, the fourth a little.
fn fall(week: usize, model: usize) -> f64 {
    match (week, model) {
        (2, 0) => 0.5,
        (2, 3) => 0.12,
        _ => 0.0,
    }
}

/// The dataset: "Problem i: …", answer i + 1; later problems are harder.
pub(crate) fn dataset() -> String {
    (0..PROBLEMS)
        .map(|i| {
            format!(
                "{{\"id\":\"q{i:02}\",\"question\":\"Problem {i}: what is {i}+1?\",\"answer\":\"{}\"}}\n",
                i + 1
            )
        })
        .collect()
}

/// A server whose answers depend only on the request (model, problem, seed) and the week.
pub(crate) fn server(week: usize) -> fake_openai::FakeServerBuilder {
    FakeServer::builder().responder(move |r: &Recorded| reply(week, r))
}

fn reply(week: usize, r: &Recorded) -> Reply {
    let text = r.user_text().unwrap_or_default();
    let problem: usize = text
        .split("Problem ")
        .nth(1)
        .and_then(|t| t.split(':').next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    let model = MODELS
        .iter()
        .position(|(_, id, _)| Some(*id) == r.model())
        .unwrap_or(0);
    let difficulty = problem as f64 / (PROBLEMS - 1) as f64;
    let skill = MODELS[model].2 - fall(week, model);
    let p = (skill + 0.6 - 1.3 * difficulty).clamp(0.0, 1.0);
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let greedy = r.body["temperature"].as_f64() == Some(0.0);
    let choices = (0..r.n())
        .map(|c| {
            // Each week draws its own samples: unchanged models move a little by chance.
            let mut x = seed ^ (model as u64) << 40 ^ (week as u64) << 48 ^ c;
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^= x >> 31;
            let right = if greedy {
                p >= 0.5
            } else {
                (x % 10_000) as f64 / 10_000.0 < p
            };
            let answer = if right { problem + 1 } else { 0 };
            ChoiceReply::stop(format!(
                "So it is {answer}. The answer is \\boxed{{{answer}}}."
            ))
        })
        .collect();
    Reply {
        choices,
        served_model: None,
        system_fingerprint: Some(format!("fp_week{week}")),
        usage: None,
    }
}

/// The config of the weekly job in `root` for `base_url`, on `root/data.jsonl`, writing runs
/// under `root/results`.
pub(crate) fn config(root: &Path, base_url: &str) -> PathBuf {
    let models: String = MODELS
        .iter()
        .map(|(name, id, _)| format!("[[models]]\nname = \"{name}\"\nmodel_id = \"{id}\"\n"))
        .collect();
    let d = root.display();
    let text = format!(
        "[api]\nbase_url = \"{base_url}\"\nmax_retries = 2\nbackoff_base = 0.01\nbackoff_max = 0.02\n\
         timeout = 10\nconcurrency = 8\n\n[sampling]\nn = {N}\ntemperature = 0.7\nseed = 7\n\
         greedy = true\n\n{models}\n[evaluation]\ndataset = \"{d}/data.jsonl\"\n\
         output_dir = \"{d}/results\"\nk = [1, 4, 16]\nmetrics = [\"greedy_acc\", \"pass@16\", \
         \"g_pass@16_t0.5\", \"g_pass@16_t1.0\", \"mg_pass@16\"]\n"
    );
    let path = root.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the two weeks in `root` (its dataset, config and `results/`, a server per week) and
/// returns the two run directories, oldest first.
pub(crate) fn two_weeks(root: &Path) -> [PathBuf; 2] {
    std::fs::write(root.join("data.jsonl"), dataset()).unwrap();
    for week in [1, 2] {
        let server = FakeServer::start_blocking(server(week));
        let config = config(root, &server.base_url());
        let out = gpassk()
            .args(["run", "--quiet", "--config", arg(&config)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    }
    let dirs = super::run_dirs(&root.join("results"));
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    [dirs[0].clone(), dirs[1].clone()]
}

/// A temporary folder holding the weekly job's dataset, config and two runs.
pub(crate) fn fixture() -> (tempfile::TempDir, [PathBuf; 2]) {
    let dir = tempfile::tempdir().unwrap();
    let runs = two_weeks(dir.path());
    (dir, runs)
}
/// `gpassk ARGS` at `columns` columns, its output.
pub(crate) fn at(columns: usize, args: &[&str]) -> std::process::Output {
    gpassk()
        .args(args)
        .env("COLUMNS", columns.to_string())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .unwrap()
}

/// The path as an argument.
pub(crate) fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}
