//! The readers on small fixtures, the shipped sources read whole, and their disagreements.

use super::*;
use std::collections::BTreeSet;
use std::path::Path;

fn g(k: u64, tau: &str) -> MetricKind {
    MetricKind::GPassAtK {
        k,
        tau: tau.parse().unwrap(),
    }
}

#[test]
fn published_metric_names() {
    assert_eq!(parse_metric("Greedy"), Some(MetricKind::Greedy));
    assert_eq!(parse_metric("Pass@16"), Some(MetricKind::PassAtK { k: 16 }));
    assert_eq!(
        parse_metric("mG-Pass@16"),
        Some(MetricKind::MGPassAtK { k: 16 })
    );
    assert_eq!(parse_metric("G-Pass@16_0.75"), Some(g(16, "0.75")));
    assert_eq!(parse_metric("G-Pass@16-0.75"), Some(g(16, "0.75")));
    assert_eq!(metric_spelling("G-Pass@16-1.0"), "G-Pass@16_1.0");
    assert_eq!(parse_metric("G-Pass@16"), None);
}

#[test]
fn csv_bad_rows_name_line_and_field() {
    let p = Path::new("pub.csv");
    let text = "source,benchmark,model,metric,value\ns,B,M,Pass@16,12.5\ns,B,M,Pass@x,1\n";
    let e = parse_source(text, p).unwrap_err().to_string();
    assert!(e.contains("pub.csv:3:") && e.contains("`metric`"), "{e}");
    let e = parse_source("source,benchmark,model,metric,value\ns,B,M,Greedy,abc\n", p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("pub.csv:2:") && e.contains("`value`"), "{e}");
    let e = parse_source("source,model\n", p).unwrap_err().to_string();
    assert!(e.contains("missing column `benchmark`"), "{e}");
    let ok = parse_source(&text.lines().take(2).collect::<Vec<_>>().join("\n"), p).unwrap();
    assert_eq!((ok[0].value, ok[0].decimals, ok[0].line), (12.5, 1, 2));
}

const README: &str = "\
# Title
```sh
# a comment in code, not a heading
|not|a table|
```
### *AIME2025*

|LLMs|Greedy|G-Pass@16_1.0|
|--|--|--|
|Qwen2.5-Math-7B-Instruct 🏐|20.0|6.7|
|DeepSeek-R1 🏀|-|24.3|

| option | meaning |
|---|---|
| n | samples |
";

#[test]
fn markdown_tables_are_read_under_their_heading() {
    let v = parse_source(README, Path::new("x/README.md")).unwrap();
    let got: Vec<(&str, &str, &str, f64, usize)> = v
        .iter()
        .map(|p| {
            let (b, m, n) = (
                p.benchmark.as_str(),
                p.model.as_str(),
                p.metric_name.as_str(),
            );
            (b, m, n, p.value, p.line)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("AIME2025", "Qwen2.5-Math-7B-Instruct", "Greedy", 20.0, 10),
            (
                "AIME2025",
                "Qwen2.5-Math-7B-Instruct",
                "G-Pass@16_1.0",
                6.7,
                10
            ),
            ("AIME2025", "DeepSeek-R1", "G-Pass@16_1.0", 24.3, 11),
        ]
    );
    assert_eq!(v[0].source, "README.md:10");
}

#[test]
fn markdown_bad_rows_name_their_line() {
    let p = Path::new("README.md");
    let bad = README.replace("|20.0|6.7|", "|20.0|high|");
    let e = parse_source(&bad, p).unwrap_err().to_string();
    assert!(e.starts_with("README.md:10: field `G-Pass@16_1.0`"), "{e}");
    let short = README.replace("|20.0|6.7|", "|20.0|");
    let e = parse_source(&short, p).unwrap_err().to_string();
    assert!(
        e.starts_with("README.md:10: 2 cells; the header has 3"),
        "{e}"
    );
    let header = README
        .replace("|LLMs|Greedy|", "|LLMs|Greedy|Stability|")
        .replace("|--|--|--|", "|--|--|--|--|");
    let e = parse_source(&header, p).unwrap_err().to_string();
    assert!(e.starts_with("README.md:8: column \"Stability\""), "{e}");
    let headless = "|LLMs|Greedy|\n|--|--|\n|M|1.0|\n";
    let e = parse_source(headless, p).unwrap_err().to_string();
    assert!(
        e.contains("README.md:1: a results table with no heading"),
        "{e}"
    );
}

const BOARD: &str = r#"{
    "DeepSeek Distill Qwen-32B": {
        "link": "https://example.org",
        "o1-like": "TRUE",
        "Greedy": {"LiveMathBench-2412": 67.7, "AIME2025": null},
        "G-Pass@16-1.0": {"AIME2024-45": 33.6, "LiveMathBench-Hard-2412": 4.55}
    }
}"#;

#[test]
fn leaderboard_json_is_read_with_the_papers_names() {
    let v = parse_source(BOARD, Path::new("docs/results.json")).unwrap();
    let got: Vec<(&str, &str, f64, usize)> = v
        .iter()
        .map(|p| {
            (
                p.benchmark.as_str(),
                p.metric_name.as_str(),
                p.value,
                p.decimals,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("AIME2024-45", "G-Pass@16_1.0", 33.6, 1),
            ("LiveMathBench-Hard-202412", "G-Pass@16_1.0", 4.55, 2),
            ("LiveMathBench-202412", "Greedy", 67.7, 1),
        ]
    );
    assert!(v
        .iter()
        .all(|p| p.model == "DeepSeek Distill Qwen-32B" && p.source == "results.json"));
}

#[test]
fn leaderboard_bad_values_name_the_model_and_field() {
    let p = Path::new("results.json");
    let e = parse_source(&BOARD.replace("33.6", "\"33.6\""), p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("results.json: model \"DeepSeek Distill Qwen-32B\": G-Pass@16-1.0.AIME2024-45"),
        "{e}"
    );
    let e = parse_source(&BOARD.replace("33.6", "133.6"), p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a percentage"), "{e}");
    let e = parse_source(&BOARD.replace("\"G-Pass@16-1.0\"", "\"Stability\""), p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"Stability\" is not Greedy"), "{e}");
    let e = parse_source("[1, 2]", p).unwrap_err().to_string();
    assert!(e.starts_with("results.json:1: not a leaderboard"), "{e}");
    let e = parse_source("a,b", Path::new("t.txt"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown published format"), "{e}");
}

/// A value of `file`, written as `text`.
fn value(file: usize, model: &str, text: &str) -> Published {
    Published {
        source: format!("s{file}"),
        file,
        benchmark: "AIME2024-45".into(),
        model: model.into(),
        metric_name: "G-Pass@16_1.0".into(),
        metric: g(16, "1.0"),
        value: text.parse().unwrap(),
        decimals: text.split_once('.').map_or(0, |(_, f)| f.len()),
        line: 1,
    }
}

#[test]
fn values_within_rounding_agree_and_others_are_listed() {
    // 4.5 stands for [4.45, 4.55] and 4.55 for [4.545, 4.555]: one claim, the precise value.
    let same = [value(0, "M", "4.5"), value(2, "M", "4.55")];
    let c = claims(&same.iter().collect::<Vec<_>>());
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].text(), c[0].files()),
        ("4.55".to_string(), vec![0, 2])
    );
    assert!(disagreements(&same).is_empty());
    let values = [
        value(0, "DeepSeek-Distill-Qwen-32B", "31.3"),
        value(1, "DeepSeek-Distill-Qwen-32B", "31.3"),
        value(2, "DeepSeek Distill Qwen-32B", "33.6"),
        value(2, "Other", "31.2"),
        value(0, "Other", "31.3"),
    ];
    let d = disagreements(&values);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (d[0].model, d[0].metric),
        ("DeepSeek-Distill-Qwen-32B", "G-Pass@16_1.0")
    );
    let shown: Vec<(String, Vec<usize>)> =
        d[0].claims.iter().map(|c| (c.text(), c.files())).collect();
    assert_eq!(
        shown,
        [("31.3".into(), vec![0, 1]), ("33.6".into(), vec![2])]
    );
}

#[test]
fn nearest_names_ignore_case_and_punctuation() {
    let names = [
        "Qwen2.5-Math-72B-Instruct",
        "Qwen2.5-Math-7B-Instruct",
        "DeepSeek-R1",
    ];
    assert_eq!(
        nearest("qwen2.5-math-72b-instrct", names),
        ["Qwen2.5-Math-72B-Instruct"]
    );
    assert_eq!(
        nearest("qwen-math-72b", names),
        ["Qwen2.5-Math-72B-Instruct"]
    );
    assert_eq!(nearest("deepseek r1", names), ["DeepSeek-R1"]);
    assert!(nearest("llama", names).is_empty());
    // Issue 40: a run's name that holds a published one (with what the run adds) finds it,
    // the most specific one when several fit.
    let published = [
        "DeepSeek-R1",
        "DeepSeek-Distill-Qwen-32B",
        "DeepSeek-Distill-Qwen-7B",
        "Mistral-Large-Instruct-2411",
        "Qwen2.5-Math-72B-Instruct",
        "Qwen2.5-Math-7B-Instruct",
        "Qwen2.5-72B-Instruct",
    ];
    for (run, want) in [
        (
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-bf16-weekly",
            "DeepSeek-Distill-Qwen-32B",
        ),
        (
            "mistralai-Mistral-Large-Instruct-2411-int4-weekly",
            "Mistral-Large-Instruct-2411",
        ),
        (
            "Qwen-Qwen2.5-Math-72B-Instruct-vllm-tp4-fp16-weekly",
            "Qwen2.5-Math-72B-Instruct",
        ),
        (
            "my-Qwen2.5-Math-7B-Instruct-nightly-eval-job-on-the-cluster",
            "Qwen2.5-Math-7B-Instruct",
        ),
    ] {
        assert_eq!(nearest(run, published), [want], "{run}");
    }
    let benchmarks = ["AIME2024-45", "AIME2025", "MATH500-L5"];
    assert_eq!(nearest("AIME2024", benchmarks)[0], "AIME2024-45");
    assert_eq!(
        did_you_mean(&["A", "B", "C"]).unwrap(),
        "did you mean A, B or C?"
    );
    assert_eq!(did_you_mean(&[]), None);
}

fn shipped() -> PublishedSet {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/published");
    read_sources(&SHIPPED.map(|f| dir.join(f))).unwrap()
}

#[test]
fn the_shipped_sources_parse_whole() {
    let set = shipped();
    let per_file: Vec<usize> = (0..3)
        .map(|f| set.values.iter().filter(|v| v.file == f).count())
        .collect();
    // Every data line of each file is a value (read_sources fails on any bad row).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/published");
    for (f, n) in SHIPPED.iter().zip(&per_file) {
        let lines = std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .count();
        assert_eq!(lines - 1, *n, "{f}");
    }
    let benchmarks: BTreeSet<&str> = set.values.iter().map(|v| v.benchmark.as_str()).collect();
    assert_eq!(benchmarks.len(), 5, "{benchmarks:?}");
}

#[test]
fn the_shipped_sources_disagree_on_deepseek_distill_qwen_32b_aime2024() {
    let set = shipped();
    let d = disagreements(&set.values);
    let case = d
        .iter()
        .find(|d| {
            d.benchmark == "AIME2024-45"
                && model_key(d.model) == "deepseekdistillqwen32b"
                && d.metric == "G-Pass@16_1.0"
        })
        .expect("the AIME2024 G-Pass@16_1.0 disagreement");
    let shown: Vec<(String, Vec<usize>)> =
        case.claims.iter().map(|c| (c.text(), c.files())).collect();
    assert_eq!(
        shown,
        [("31.3".into(), vec![0, 1]), ("33.6".into(), vec![2])]
    );
    // The README's LiveMathBench row for Qwen2.5-32B-Instruct carries the 72B model's values.
    assert!(d.iter().any(|d| d.benchmark == "LiveMathBench-202412"
        && d.model == "Qwen2.5-32B-Instruct"
        && d.metric == "G-Pass@16_0.5"));
}
