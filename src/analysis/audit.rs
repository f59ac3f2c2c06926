//! Auditing a run against published numbers (a CSV shaped `source,benchmark,model,metric,value`,
//! values in percent): each published value beside the run's measurement and its interval, and
//! warnings where the run's protocol differs from the paper's (REFERENCE.md: n = 48 for k = 16,
//! temperature 1.0, top-p 0.8, 8,192 max tokens, both languages of LiveMathBench, an LLM judge).

use crate::config::SamplingSettings;
use crate::error::BadInput;
use crate::metrics::{MetricKind, Tau};
use crate::report::{Cell, Interval, TableFormat, Tabular};
use crate::scoring::{ModelScore, RunResults};
use crate::util::closest;
use std::collections::BTreeSet;
use std::path::Path;

/// One published value.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub source: String,
    pub benchmark: String,
    pub model: String,
    /// As written in the table: `Greedy`, `Pass@16`, `G-Pass@16_0.5`, `mG-Pass@16`.
    pub metric_name: String,
    pub metric: MetricKind,
    /// Percent.
    pub value: f64,
    pub line: usize,
}

/// Parses a published metric name into a metric.
pub fn parse_published_metric(name: &str) -> Option<MetricKind> {
    if name.eq_ignore_ascii_case("greedy") {
        return Some(MetricKind::Greedy);
    }
    if let Some(k) = name.strip_prefix("mG-Pass@") {
        return Some(MetricKind::MGPassAtK { k: k.parse().ok()? });
    }
    if let Some(rest) = name.strip_prefix("G-Pass@") {
        let (k, tau) = rest.split_once('_')?;
        let tau: Tau = tau.parse().ok()?;
        return Some(MetricKind::GPassAtK {
            k: k.parse().ok()?,
            tau,
        });
    }
    if let Some(k) = name.strip_prefix("Pass@") {
        return Some(MetricKind::PassAtK { k: k.parse().ok()? });
    }
    None
}

/// Reads a published table; every problem names the file, line and field.
pub fn read_published(path: &Path) -> Result<Vec<Published>, BadInput> {
    let text = crate::util::read_bounded_string(path, crate::util::MAX_DATA_FILE)
        .map_err(|e| BadInput(format!("{}: cannot read: {e}", path.display())))?;
    parse_published(&text, path)
}

pub fn parse_published(text: &str, path: &Path) -> Result<Vec<Published>, BadInput> {
    let at = |line: usize, msg: String| BadInput(format!("{}:{line}: {msg}", path.display()));
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text.as_bytes());
    let headers = r
        .headers()
        .map_err(|e| at(1, format!("cannot read the header: {e}")))?
        .clone();
    let want = ["source", "benchmark", "model", "metric", "value"];
    let cols: Vec<usize> = want
        .iter()
        .map(|w| {
            headers.iter().position(|h| h.trim() == *w).ok_or_else(|| {
                at(
                    1,
                    format!(
                        "missing column `{w}` (the header must have {})",
                        want.join(",")
                    ),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            at(line, format!("malformed CSV: {e}"))
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let get = |i: usize| rec.get(cols[i]).unwrap_or("").trim().to_string();
        let metric_name = get(3);
        let metric = parse_published_metric(&metric_name).ok_or_else(|| {
            at(
                line,
                format!(
                    "field `metric`: {metric_name:?} is not Greedy, Pass@K, G-Pass@K_TAU or mG-Pass@K"
                ),
            )
        })?;
        let raw = get(4);
        let value: f64 = raw
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && (0.0..=100.0).contains(v))
            .ok_or_else(|| {
                at(
                    line,
                    format!("field `value`: {raw:?} is not a percentage in [0, 100]"),
                )
            })?;
        out.push(Published {
            source: get(0),
            benchmark: get(1),
            model: get(2),
            metric_name,
            metric,
            value,
            line,
        });
    }
    Ok(out)
}

/// The published benchmark name for a shipped dataset, when it is the same benchmark (MATH500-L5
/// and AIME2024-45 are subsets or supersets of the shipped files, so they must be named).
pub fn guess_benchmark(dataset: &str) -> Option<&'static str> {
    match dataset {
        "livemathbench_202412" => Some("LiveMathBench-202412"),
        "livemathbench_202412_hard" => Some("LiveMathBench-Hard-202412"),
        "math500_l5" => Some("MATH500-L5"),
        _ => None,
    }
}

/// Problems in a published benchmark as shipped here (LiveMathBench: its English half).
pub fn expected_problems(benchmark: &str) -> Option<usize> {
    match benchmark {
        "LiveMathBench-202412" => Some(119),
        "LiveMathBench-Hard-202412" => Some(21),
        "MATH500-L5" => Some(134),
        "AIME2024-45" => Some(45),
        "AIME2025" => Some(30),
        _ => None,
    }
}

/// Ways a model's run differs from the paper's protocol; `grader` is (mode, judge model id).
/// For an imported run, `source` holds the settings as the source recorded them (the run's own
/// sampling settings are then not real).
pub fn protocol_warnings(
    s: &SamplingSettings,
    ks: &[u64],
    dataset: &str,
    benchmark: &str,
    (grader, source): (
        (&str, Option<&str>),
        Option<&crate::rundir::provenance::SourceSettings>,
    ),
) -> Vec<String> {
    let mut w = Vec::new();
    if ks.contains(&16) && s.n < 48 {
        w.push(format!(
            "n = {} samples per problem; the paper uses n = 48 for k = 16",
            s.n
        ));
    }
    let unrecorded = |what: &str, paper: &str| {
        format!("{what} not recorded by the imported files; the paper uses {paper}")
    };
    let (temperature, top_p) = match source {
        Some(src) => (src.temperature, src.top_p),
        None => (Some(s.temperature), Some(s.top_p)),
    };
    match temperature {
        Some(t) if t != 1.0 => w.push(format!("temperature {t}; the paper samples at 1.0")),
        Some(_) => {}
        None => w.push(unrecorded("temperature", "1.0")),
    }
    match top_p {
        Some(p) if p != 0.8 => w.push(format!("top-p {p}; the paper uses 0.8")),
        Some(_) => {}
        None => w.push(unrecorded("top-p", "0.8")),
    }
    // Outer None: the imported files did not record it; inner None: the run left it unset.
    let max_tokens = source.map_or(Some(s.max_tokens), |src| src.max_tokens.map(Some));
    match max_tokens {
        Some(Some(t)) if t >= 8192 => {}
        Some(Some(t)) => w.push(format!(
            "max tokens {t}; the paper allows 8,192 new tokens (32,768 for o1-like models, 4,096–8,192 for APIs)"
        )),
        Some(None) => w.push(
            "max tokens unset (server default); the paper allows 8,192 new tokens (32,768 for o1-like models)"
                .to_string(),
        ),
        None => w.push(unrecorded("max tokens", "8,192 new tokens")),
    }
    finish_warnings(w, dataset, benchmark, grader)
}

/// The dataset and grader warnings, after the sampling ones.
fn finish_warnings(
    mut w: Vec<String>,
    dataset: &str,
    benchmark: &str,
    grader: (&str, Option<&str>),
) -> Vec<String> {
    if benchmark.to_ascii_lowercase().contains("livemathbench")
        && dataset.to_ascii_lowercase().contains("livemathbench")
    {
        w.push(
            "LiveMathBench here is the English half only (119 of 238 questions); the paper averages English and Chinese"
                .to_string(),
        );
    }
    if benchmark == "MATH500-L5" && dataset != "math500_l5" {
        w.push(
            "MATH500-L5 is the 134 level-5 problems of MATH500; run the shipped dataset `math500_l5` to audit it".into(),
        );
    }
    if benchmark == "AIME2024-45" {
        w.push("AIME2024-45 has 45 problems; the shipped aime24 has the 30 of AIME 2024".into());
    }
    const PAPER_JUDGE: &str = "Qwen2.5-72B-Instruct";
    match grader {
        ("rule", _) => w.push(format!(
            "graded by gpassk's rule-based grader; the paper used an LLM judge ({PAPER_JUDGE})"
        )),
        (mode, judge) => {
            let judge = judge.unwrap_or("an unnamed model");
            if !judge.to_ascii_lowercase().contains("qwen2.5-72b") {
                w.push(format!(
                    "judged by {judge}; the paper's judge was {PAPER_JUDGE} at temperature 0"
                ));
            }
            if mode != "judge" {
                w.push(format!(
                    "grader `{mode}`: the judge saw only answers the rules rejected; the paper's judge saw every answer"
                ));
            }
        }
    }
    w
}

/// One audited value.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    pub model: String,
    pub published_model: String,
    pub metric: String,
    pub published: f64,
    /// Percent, with its interval.
    pub measured: Option<(f64, f64, f64)>,
    /// "within", "outside" or "not measured".
    pub verdict: &'static str,
}

/// Published values are rounded to 0.1 points: allow that much on either side of the interval.
const ROUNDING: f64 = 0.05;

fn audit_model(m: &ModelScore, published_model: &str, table: &[&Published]) -> Vec<AuditRow> {
    table
        .iter()
        .filter(|p| p.model == published_model)
        .map(|p| {
            let measured = m
                .estimate(&p.metric, None)
                .and_then(|e| Some((e.value?, e.ci?)))
                .map(|(v, (lo, hi))| (100.0 * v, 100.0 * lo, 100.0 * hi));
            let verdict = match measured {
                None => "not measured",
                Some((_, lo, hi)) if p.value >= lo - ROUNDING && p.value <= hi + ROUNDING => {
                    "within"
                }
                Some(_) => "outside",
            };
            AuditRow {
                model: m.name.clone(),
                published_model: published_model.to_string(),
                metric: p.metric_name.clone(),
                published: p.value,
                measured,
                verdict,
            }
        })
        .collect()
}

/// Audits every model of a run that has published values.
pub fn audit(
    results: &RunResults,
    published: &[Published],
    benchmark: &str,
    map: &[(String, String)],
) -> Vec<AuditRow> {
    let table: Vec<&Published> = published
        .iter()
        .filter(|p| p.benchmark == benchmark)
        .collect();
    let mut out = Vec::new();
    for m in &results.models {
        let target = map
            .iter()
            .find(|(r, _)| r == &m.name)
            .map(|(_, p)| p.clone())
            .or_else(|| {
                [&m.name, &m.model_id].into_iter().find_map(|name| {
                    table
                        .iter()
                        .find(|p| p.model.eq_ignore_ascii_case(name))
                        .map(|p| p.model.clone())
                })
            });
        if let Some(t) = target {
            out.extend(audit_model(m, &t, &table));
        }
    }
    out
}

/// Run models with no published row for the benchmark, each with the closest published name.
fn unmatched_models(
    results: &RunResults,
    published: &[Published],
    benchmark: &str,
    map: &[(String, String)],
) -> Vec<(String, Option<String>)> {
    let names: BTreeSet<&str> = published
        .iter()
        .filter(|p| p.benchmark == benchmark)
        .map(|p| p.model.as_str())
        .collect();
    results
        .models
        .iter()
        .filter(|m| {
            !map.iter().any(|(r, _)| r == &m.name)
                && ![&m.name, &m.model_id]
                    .iter()
                    .any(|n| names.iter().any(|p| p.eq_ignore_ascii_case(n)))
        })
        .map(|m| {
            let guess = closest(&m.name, names.iter().copied())
                .or_else(|| closest(&m.model_id, names.iter().copied()));
            (m.name.clone(), guess.map(str::to_string))
        })
        .collect()
}

fn unmatched_text(unmatched: &[(String, Option<String>)]) -> String {
    unmatched
        .iter()
        .map(|(n, g)| match g {
            Some(g) => format!("{n}: did you mean {g}?"),
            None => n.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The benchmark audited: `given`, else the one the dataset's name is; it must be in the table.
fn pick_benchmark(
    given: Option<&str>,
    published_path: &Path,
    published: &[Published],
    results: &RunResults,
) -> Result<String, BadInput> {
    let benchmarks: BTreeSet<&str> = published.iter().map(|p| p.benchmark.as_str()).collect();
    let benchmark = match given {
        Some(b) => b.to_string(),
        None => guess_benchmark(&results.dataset)
            .map(str::to_string)
            .ok_or_else(|| {
                BadInput(format!(
                    "cannot tell which benchmark of {} dataset {} is; pass --benchmark (one of: {})",
                    published_path.display(),
                    results.dataset,
                    benchmarks.iter().copied().collect::<Vec<_>>().join(", ")
                ))
            })?,
    };
    if !benchmarks.contains(benchmark.as_str()) {
        return Err(BadInput(format!(
            "--benchmark {benchmark:?}: not in {} (it has: {})",
            published_path.display(),
            benchmarks.iter().copied().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(benchmark)
}

/// Refuses a `--model-map` entry naming a model the run or the table's benchmark lacks.
fn check_model_map(
    published_path: &Path,
    published: &[Published],
    results: &RunResults,
    benchmark: &str,
    map: &[(String, String)],
) -> Result<(), BadInput> {
    let published_models: BTreeSet<&str> = published
        .iter()
        .filter(|p| p.benchmark == benchmark)
        .map(|p| p.model.as_str())
        .collect();
    for (r, p) in map {
        if !results.models.iter().any(|m| &m.name == r) {
            let guess = closest(r, results.models.iter().map(|m| m.name.as_str()))
                .map(|g| format!("did you mean {g:?}? "))
                .unwrap_or_default();
            return Err(BadInput(format!(
                "--model-map {r}={p}: the run has no model {r:?}; {guess}(it has: {})",
                results
                    .models
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if !published_models.contains(p.as_str()) {
            let guess = closest(p, published_models.iter().copied())
                .map(|g| format!("; did you mean {g:?}?"))
                .unwrap_or_default();
            return Err(BadInput(format!(
                "--model-map {r}={p}: {benchmark} in {} has no model {p:?}{guess}",
                published_path.display()
            )));
        }
    }
    Ok(())
}

/// What to audit: a scored run against a published table.
pub struct AuditInput<'a> {
    pub run_dir: &'a Path,
    pub results: &'a RunResults,
    /// The published table's path, for messages.
    pub published_path: &'a Path,
    pub published: &'a [Published],
    /// The benchmark in that table; guessed from the dataset's name when `None`.
    pub benchmark: Option<&'a str>,
    /// Run model names mapped to published ones.
    pub map: &'a [(String, String)],
}

/// What `gpassk audit` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditReport {
    /// The heading above the table, for people.
    pub title: String,
    /// The table in the format asked for.
    pub body: String,
    /// The protocol warnings, the verdict counts and the models not audited.
    pub notes: Vec<String>,
    /// Values shown.
    pub shown: usize,
    /// Values shown outside their intervals.
    pub outside: usize,
}

impl AuditInput<'_> {
    /// The audit of the published values whose metric `keep` accepts, its table in `format`.
    pub fn report(
        &self,
        keep: impl Fn(&MetricKind) -> bool,
        format: TableFormat,
    ) -> anyhow::Result<AuditReport> {
        let (results, published, map) = (self.results, self.published, self.map);
        let benchmark = pick_benchmark(self.benchmark, self.published_path, published, results)?;
        check_model_map(self.published_path, published, results, &benchmark, map)?;
        let unmatched = unmatched_models(results, published, &benchmark, map);
        let rows: Vec<AuditRow> = audit(results, published, &benchmark, map)
            .into_iter()
            .filter(|r| parse_published_metric(&r.metric).is_some_and(|m| keep(&m)))
            .collect();
        if rows.is_empty() {
            let mut msg = format!("no published {benchmark} value to audit: ");
            msg.push_str(&if unmatched.is_empty() {
                "no published metric matches --metric/--k".to_string()
            } else {
                format!("no run model matches a published model by name ({}); map them with --model-map run=published", unmatched_text(&unmatched))
            });
            return Err(BadInput(msg).into());
        }
        let body = render(&rows, format)?;
        let mut notes: Vec<String> = warnings(results, &benchmark, &rows);
        let count = |v: &str| rows.iter().filter(|r| r.verdict == v).count();
        let outside = count("outside");
        notes.push(format!(
            "{} within, {outside} outside, {} not measured (of {} published values shown)",
            count("within"),
            count("not measured"),
            rows.len()
        ));
        for (name, guess) in &unmatched {
            notes.push(match guess {
                Some(g) => format!("not audited: {name} has no published {benchmark} row; did you mean {g}? (--model-map {name}={g})"),
                None => format!("not audited: {name} has no published {benchmark} row (map it with --model-map {name}=PUBLISHED)"),
            });
        }
        let title = format!(
            "audit of {} against {} ({benchmark}); measured with 95% CI (Clopper–Pearson), in %",
            self.run_dir.display(),
            self.published_path.display()
        );
        Ok(AuditReport {
            title,
            body,
            notes,
            shown: rows.len(),
            outside,
        })
    }
}

/// The rows in `format`; the terminal table has one section per model, so it fits 80 columns.
fn render(rows: &[AuditRow], format: TableFormat) -> anyhow::Result<String> {
    if format != TableFormat::Table {
        return tabular(rows, true).render(format);
    }
    let mut out = String::new();
    let mut models: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.model.as_str(), r.published_model.as_str()))
        .collect();
    models.dedup();
    for (model, published) in models {
        let part: Vec<AuditRow> = rows
            .iter()
            .filter(|r| r.model == model && r.published_model == published)
            .cloned()
            .collect();
        out.push_str(&format!("{model} (published as {published}):\n"));
        out.push_str(&tabular(&part, false).render(format)?);
    }
    Ok(out)
}

fn tabular(rows: &[AuditRow], with_model: bool) -> Tabular {
    let rows = rows
        .iter()
        .map(|r| {
            let m = r.measured;
            // Already in points: held to the percentage scale like every other interval.
            let measured = Interval::plain(m.map(|x| x.0), m.map(|x| (x.1, x.2)))
                .within(0.0, 100.0)
                .to_string();
            let diff = m.map(|(v, _, _)| v - r.published);
            vec![
                Cell::text(&r.model),
                Cell::text(&r.published_model),
                Cell::text(&r.metric),
                Cell::num(Some(r.published), format!("{:.1}", r.published)),
                Cell::num(m.map(|x| x.0), measured),
                Cell::num(m.map(|x| x.1), ""),
                Cell::num(m.map(|x| x.2), ""),
                Cell::num(diff, diff.map_or("-".into(), |d| format!("{d:+.1}"))),
                Cell::text(r.verdict),
            ]
        })
        .collect();
    Tabular {
        keys: vec![
            "model",
            "published_as",
            "metric",
            "published",
            "measured",
            "ci_low",
            "ci_high",
            "difference",
            "verdict",
        ],
        titles: vec![
            "model",
            "published as",
            "metric",
            "published",
            "measured [95% CI]",
            "",
            "",
            "diff",
            "verdict",
        ],
        rows,
        machine_only: if with_model {
            &["ci_low", "ci_high"]
        } else {
            &["model", "published_as", "ci_low", "ci_high"]
        },
        group: None,
    }
}

/// The run's size and protocol differences from the paper, each stated once with the models it
/// applies to (all audited models when none are named).
fn warnings(results: &RunResults, benchmark: &str, rows: &[AuditRow]) -> Vec<String> {
    let manifest = results.manifest.as_ref();
    let problems = results.models.first().map_or(0, |m| m.problems.len());
    let mut out = Vec::new();
    if let Some(expected) = expected_problems(benchmark).filter(|&e| e != problems) {
        out.push(format!(
            "warning: the run scored {problems} problems; {benchmark} has {expected}{}",
            manifest
                .and_then(|m| m.dataset.limit)
                .map(|l| format!(" (the run was limited to {l})"))
                .unwrap_or_default()
        ));
    }
    let audited: BTreeSet<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    let (mode, judge) = manifest
        .map(crate::rundir::manifest::Manifest::grading)
        .unwrap_or(("rule".into(), None));
    let mut per_model: Vec<(&str, Vec<String>)> = Vec::new();
    for m in results
        .models
        .iter()
        .filter(|m| audited.contains(m.name.as_str()))
    {
        let Some(mm) = manifest.and_then(|x| x.models.get(&m.name)) else {
            continue;
        };
        let grader = (mode.as_str(), judge.as_deref());
        let imported = manifest.and_then(|x| x.imported.as_ref());
        let source = imported
            .and_then(|i| i.models.get(&m.name))
            .map(|i| &i.settings);
        let ws = protocol_warnings(
            &mm.sampling,
            &results.ks,
            &results.dataset,
            benchmark,
            (grader, source),
        );
        per_model.push((&m.name, ws));
    }
    out.extend(group_warnings(&per_model, audited.len()));
    out
}

/// Each warning once, in first-seen order, naming its models unless it applies to all `audited`.
fn group_warnings(per_model: &[(&str, Vec<String>)], audited: usize) -> Vec<String> {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (model, warnings) in per_model {
        for w in warnings {
            match groups.iter_mut().find(|(t, _)| *t == w.as_str()) {
                Some((_, models)) => models.push(model),
                None => groups.push((w, vec![model])),
            }
        }
    }
    groups
        .into_iter()
        .map(|(w, models)| {
            if models.len() == audited {
                format!("warning: {w}")
            } else {
                format!("warning: {w} (models: {})", models.join(", "))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_metric_names() {
        assert_eq!(parse_published_metric("Greedy"), Some(MetricKind::Greedy));
        assert_eq!(
            parse_published_metric("Pass@16"),
            Some(MetricKind::PassAtK { k: 16 })
        );
        assert_eq!(
            parse_published_metric("mG-Pass@16"),
            Some(MetricKind::MGPassAtK { k: 16 })
        );
        assert_eq!(
            parse_published_metric("G-Pass@16_0.75"),
            Some(MetricKind::GPassAtK {
                k: 16,
                tau: "0.75".parse().unwrap()
            })
        );
        assert_eq!(parse_published_metric("G-Pass@16"), None);
    }

    #[test]
    fn warnings_are_stated_once_with_their_models() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let per_model = [
            ("a", w(&["temperature 0.7", "rule grader"])),
            ("b", w(&["temperature 0.7", "rule grader", "n = 16"])),
            ("c", w(&["rule grader"])),
        ];
        assert_eq!(
            group_warnings(&per_model, 3),
            [
                "warning: temperature 0.7 (models: a, b)",
                "warning: rule grader",
                "warning: n = 16 (models: b)"
            ]
        );
    }

    /// The paper's protocol: n = 48, temperature 1.0, top-p 0.8, 8,192 tokens, with a greedy answer.
    fn paper_settings() -> SamplingSettings {
        SamplingSettings {
            n: 48,
            temperature: 1.0,
            top_p: 0.8,
            top_k: None,
            seed: 42,
            max_tokens: Some(8192),
            greedy: true,
            use_n_param: false,
            n_per_request: 1,
            stop: vec![],
        }
    }

    #[test]
    fn math500_l5_is_the_papers_level_5_benchmark() {
        assert_eq!(guess_benchmark("math500_l5"), Some("MATH500-L5"));
        let s = paper_settings();
        let judge = ("judge", Some("Qwen2.5-72B-Instruct"));
        let l5 = protocol_warnings(&s, &[16], "math500_l5", "MATH500-L5", (judge, None));
        assert!(l5.is_empty(), "{l5:?}");
        let full = protocol_warnings(&s, &[16], "math500", "MATH500-L5", (judge, None));
        assert!(full.join(" ").contains("`math500_l5`"), "{full:?}");
    }

    #[test]
    fn bad_rows_name_line_and_field() {
        let p = Path::new("pub.csv");
        let text = "source,benchmark,model,metric,value\ns,B,M,Pass@16,12.5\ns,B,M,Pass@x,1\n";
        let e = parse_published(text, p).unwrap_err().to_string();
        assert!(e.contains("pub.csv:3:") && e.contains("`metric`"), "{e}");
        let e = parse_published("source,benchmark,model,metric,value\ns,B,M,Greedy,abc\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pub.csv:2:") && e.contains("`value`"), "{e}");
        let e = parse_published("source,model\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing column `benchmark`"), "{e}");
        let ok = parse_published(
            text.lines().take(2).collect::<Vec<_>>().join("\n").as_str(),
            p,
        )
        .unwrap();
        assert_eq!((ok[0].value, ok[0].line), (12.5, 2));
    }

    #[test]
    fn an_imported_run_is_audited_on_the_settings_its_source_recorded() {
        let s = SamplingSettings {
            greedy: false,
            ..paper_settings()
        };
        let recorded = crate::rundir::provenance::SourceSettings {
            temperature: Some(0.6),
            ..Default::default()
        };
        let judge = ("judge", Some("Qwen2.5-72B-Instruct"));
        let w = protocol_warnings(&s, &[16], "aime25", "AIME2025", (judge, Some(&recorded)));
        let all = w.join("\n");
        assert!(all.contains("temperature 0.6"), "{all}");
        assert!(
            all.contains("top-p not recorded by the imported files"),
            "{all}"
        );
        assert!(all.contains("max tokens not recorded"), "{all}");
    }

    #[test]
    fn protocol_differences_are_listed() {
        let s = SamplingSettings {
            n: 16,
            temperature: 0.7,
            top_p: 0.95,
            max_tokens: Some(1024),
            ..paper_settings()
        };
        let w = protocol_warnings(
            &s,
            &[16],
            "livemathbench_202412",
            "LiveMathBench-202412",
            (("rule", None), None),
        );
        let all = w.join("\n");
        for needle in [
            "n = 16",
            "temperature 0.7",
            "top-p 0.95",
            "max tokens 1024",
            "English half",
            "LLM judge",
        ] {
            assert!(all.contains(needle), "{needle}: {all}");
        }
        let paper_judge = protocol_warnings(
            &s,
            &[16],
            "aime25",
            "AIME2025",
            (("judge", Some("Qwen/Qwen2.5-72B-Instruct")), None),
        );
        assert!(!paper_judge.join("\n").contains("judge"), "{paper_judge:?}");
        let other = protocol_warnings(
            &s,
            &[16],
            "x",
            "AIME2025",
            (("rule_then_judge", Some("gpt-4o")), None),
        )
        .join("\n");
        assert!(
            other.contains("judged by gpt-4o") && other.contains("rules rejected"),
            "{other}"
        );
    }
}
