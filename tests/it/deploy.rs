//! The cluster manifests in deploy/: the Kubernetes YAML is well-formed and wired together
//! (Indexed Job, Secret key, shared volume, merge Job), and its gpassk commands are the Slurm
//! scripts' commands, word for word, and parse with gpassk's own command line.

use crate::common::{read, repo};
use clap::Parser;
use gpassk::cli::{Cli, Command};
use gpassk::dataset::shard::Shard;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The values the variables of both deployments stand for in these checks: the Slurm scripts'
/// environment made to match the paths the Kubernetes manifests mount.
const SLURM_VARS: [(&str, &str); 7] = [
    ("i", "0"),
    ("n", "4"),
    ("GPASSK_SHARDS", "4"),
    ("GPASSK_CONFIG", "/etc/gpassk/config.toml"),
    ("GPASSK_RESULTS", "/shared/results"),
    ("out", "/shared/results/merged-x"),
    ("gpassk", "gpassk"),
];
const K8S_VARS: [(&str, &str); 2] = [("JOB_COMPLETION_INDEX", "0"), ("POD_NAME", "x")];

fn yaml(name: &str) -> Value {
    let path = repo().join("deploy/k8s").join(name);
    let v: Value =
        serde_norway::from_str(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for key in ["apiVersion", "kind"] {
        assert!(v[key].is_string(), "{name}: no {key}");
    }
    assert!(
        v["metadata"]["name"].is_string(),
        "{name}: no metadata.name"
    );
    v
}

/// Replaces `$(NAME)` with its value; a variable the test does not know fails it.
fn expand_k8s(word: &str) -> String {
    let mut out = word.to_string();
    while let Some(start) = out.find("$(") {
        let end = start + out[start..].find(')').expect("closed $(");
        let name = &out[start + 2..end];
        let value = (K8S_VARS.iter().find(|(n, _)| *n == name))
            .unwrap_or_else(|| panic!("unknown variable $({name}) in {word}"))
            .1;
        out.replace_range(start..=end, value);
    }
    out
}

/// Replaces `$NAME`, `${NAME}` and `${NAME:-default}` (the default when the test does not set
/// NAME) in one shell word; any other variable fails the test.
fn expand_shell(word: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, default, used) = if let Some(inner) = after.strip_prefix('{') {
            let body = &inner[..inner.find('}').expect("closed ${")];
            let (name, default) = match body.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (body, None),
            };
            (name, default, body.len() + 2)
        } else {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..len], None, len)
        };
        let known = SLURM_VARS.iter().find(|(n, _)| *n == name).map(|v| v.1);
        let value = known
            .or(default)
            .unwrap_or_else(|| panic!("unknown variable {name} in {word}"));
        out.push_str(value);
        rest = &after[used..];
    }
    out + rest
}

/// The gpassk commands of a bash script: each line (continuations joined) whose first word runs
/// the binary, as words with quotes removed and variables expanded, up to `&`, `;` or `||`.
fn script_commands(name: &str) -> Vec<Vec<String>> {
    let text = read(&repo().join("deploy/slurm").join(name)).replace("\\\n", " ");
    let runs_gpassk = |w: &str| w == "\"${GPASSK:-gpassk}\"" || w == "\"$gpassk\"";
    text.lines()
        .map(str::trim)
        .filter(|l| l.split_whitespace().next().is_some_and(runs_gpassk))
        .map(|l| {
            let mut words = Vec::new();
            for w in l.split_whitespace() {
                if ["&", ";", "||", "&&", "|"].contains(&w) {
                    break;
                }
                assert!(
                    !w.contains(' '),
                    "{name}: quoted spaces are not read here: {l}"
                );
                words.push(expand_shell(&w.replace('"', "")));
            }
            words
        })
        .collect()
}

/// A container's command, variables expanded.
fn container_command(c: &Value) -> Vec<String> {
    let words = c["command"].as_array().expect("a command list");
    (words.iter())
        .map(|w| expand_k8s(w.as_str().expect("command words are strings")))
        .collect()
}

/// Checks a container: its variables are defined (or the Job's index), its key comes from a
/// Secret and no variable holds a literal value, its mounts name the pod's volumes.
fn check_container(c: &Value, volumes: &BTreeSet<&str>, indexed: bool) {
    let name = c["name"].as_str().unwrap();
    let env: Vec<&Value> = c["env"]
        .as_array()
        .map(|e| e.iter().collect())
        .unwrap_or_default();
    let mut defined: BTreeSet<&str> = env.iter().map(|e| e["name"].as_str().unwrap()).collect();
    if indexed {
        defined.insert("JOB_COMPLETION_INDEX");
    }
    for w in c["command"].as_array().unwrap() {
        let w = w.as_str().unwrap();
        if let Some(start) = w.find("$(") {
            let var = &w[start + 2..start + w[start..].find(')').unwrap()];
            assert!(defined.contains(var), "{name}: $({var}) is not defined");
        }
    }
    for e in &env {
        assert!(e.get("value").is_none(), "{name}: a literal env value: {e}");
        assert!(e["valueFrom"].is_object(), "{name}: {e}");
    }
    for m in c["volumeMounts"].as_array().unwrap() {
        let v = m["name"].as_str().unwrap();
        assert!(
            volumes.contains(v),
            "{name}: mounts {v}, which the pod does not have"
        );
    }
}

/// The pod's volume names, each backed by the PVC of pvc.yaml or a ConfigMap.
fn volumes<'a>(pod: &'a Value, claim: &str) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for v in pod["volumes"].as_array().unwrap() {
        let pvc = v["persistentVolumeClaim"]["claimName"].as_str();
        assert!(
            pvc == Some(claim) || v["configMap"]["name"].is_string(),
            "volume {v}"
        );
        names.insert(v["name"].as_str().unwrap());
    }
    names
}

#[test]
fn k8s_manifests_are_wired_together_and_run_what_the_slurm_scripts_run() {
    let pvc = yaml("pvc.yaml");
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    let modes = pvc["spec"]["accessModes"].as_array().unwrap();
    assert!(modes.contains(&Value::from("ReadWriteMany")), "{modes:?}");
    let claim = pvc["metadata"]["name"].as_str().unwrap();

    let shards = yaml("shards-job.yaml");
    assert_eq!(
        (&shards["apiVersion"], &shards["kind"]),
        (&"batch/v1".into(), &"Job".into())
    );
    let spec = &shards["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert!(spec["parallelism"].as_u64().unwrap() <= n);
    let pod = &spec["template"]["spec"];
    // podFailurePolicy needs it; a restarted container would also hide a failure from the Job.
    assert_eq!(pod["restartPolicy"], "Never");
    let vols = volumes(pod, claim);
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    check_container(&containers[0], &vols, true);
    // Bad input (exit 2) fails the Job rather than burning its retries.
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    let fail = rules
        .iter()
        .find(|r| r["action"] == "FailJob")
        .expect("a FailJob rule");
    assert_eq!(fail["onExitCodes"]["containerName"], containers[0]["name"]);
    assert_eq!(fail["onExitCodes"]["values"], serde_json::json!([2]));
    let secret = &containers[0]["env"][0]["valueFrom"]["secretKeyRef"];
    assert!(
        secret["name"].is_string() && secret["key"].is_string(),
        "{secret}"
    );
    let k8s_run = container_command(&containers[0]);

    let merge = yaml("merge-job.yaml");
    let pod = &merge["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let vols = volumes(pod, claim);
    let (init, main) = (&pod["initContainers"][0], &pod["containers"][0]);
    check_container(init, &vols, false);
    check_container(main, &vols, false);
    let (k8s_merge, k8s_score) = (container_command(init), container_command(main));

    // The same commands as the Slurm scripts, word for word.
    let slurm_run = script_commands("gpassk-shards.sbatch");
    assert_eq!(slurm_run, std::slice::from_ref(&k8s_run));
    let slurm_merge = script_commands("gpassk-merge.sbatch");
    assert_eq!(slurm_merge, [k8s_merge.clone(), k8s_score.clone()]);

    // And gpassk's own parser takes them, with one shard count throughout.
    let parse = |words: &[String]| {
        Cli::try_parse_from(words)
            .unwrap_or_else(|e| panic!("{words:?}: {e}"))
            .command
    };
    let Command::Run(run) = parse(&k8s_run) else {
        panic!("not a run: {k8s_run:?}")
    };
    assert_eq!(
        run.shard,
        Some(Shard {
            index: 0,
            count: n as u32
        })
    );
    let set: BTreeMap<&str, &str> = run.set.iter().filter_map(|s| s.split_once('=')).collect();
    assert_eq!(set["evaluation.resume_from_checkpoint"], "true");
    let results = set["evaluation.output_dir"];
    let mount = containers[0]["volumeMounts"].as_array().unwrap().iter();
    let shared = mount
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert!(
        shared.iter().any(|m| results.starts_with(m)),
        "{results} on {shared:?}"
    );
    let Command::Merge(m) = parse(&k8s_merge) else {
        panic!("not a merge: {k8s_merge:?}")
    };
    assert_eq!(m.shards, Some(n as u32));
    assert_eq!(m.from.as_deref(), Some(std::path::Path::new(results)));
    assert_eq!(m.config, Some(run.config.clone()));
    let Command::Score(score) = parse(&k8s_score) else {
        panic!("not a score: {k8s_score:?}")
    };
    assert_eq!(score.run_dir, m.out);
}

/// The array script refuses an index outside 0..N-1 (an array from 1, or `--array=0-N`) instead
/// of running a shard that does not exist or leaving shard 0 out.
#[test]
fn slurm_shard_script_refuses_an_array_index_that_is_not_a_shard() {
    let script = repo().join("deploy/slurm/gpassk-shards.sbatch");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("GPASSK_CONFIG", "c.toml")
        .env("GPASSK_RESULTS", "results")
        .env("GPASSK_SHARDS", "4")
        .env("SLURM_ARRAY_TASK_ID", "4")
        .env("GPASSK", "/nonexistent/gpassk")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("array index 4 is not a shard of 4"), "{err}");
    assert!(err.contains("0-3"), "{err}");
}
