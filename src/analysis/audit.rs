//! Auditing a run against published numbers ([`crate::analysis::published`]: the paper's tables,
//! the GPassK README, its leaderboard): each published value beside the run's measurement and its
//! interval, with the sources it came from and where they disagree, and warnings where the run's
//! protocol differs from the paper's (docs/metrics.md, "The paper's protocol": n = 48 for k = 16,
//! temperature 1.0, top-p 0.8, 8,192 max tokens, both languages of LiveMathBench, an LLM judge).

use crate::analysis::published::{
    claims, did_you_mean, disagreements, model_key, nearest, parse_metric, Claim, Published,
    PublishedSet,
};
use crate::config::SamplingSettings;
use crate::error::BadInput;
use crate::metrics::MetricKind;
use crate::report::{Cell, Interval, TableFormat, Tabular};
use crate::scoring::{ModelScore, RunResults};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
            let saw = match mode {
                "judge" => None,
                "rule_then_judge_uncertain" => {
                    Some("the answers the rules guessed or did not find")
                }
                _ => Some("answers the rules rejected"),
            };
            if let Some(saw) = saw {
                w.push(format!(
                    "grader `{mode}`: the judge saw only {saw}; the paper's judge saw every answer"
                ));
            }
        }
    }
    w
}

/// One audited value: a published claim (values of one or more sources that agree) and the run's
/// measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    pub model: String,
    pub published_model: String,
    pub metric: String,
    pub published: f64,
    /// The published value as written (`31.3`, `4.55`).
    pub published_text: String,
    /// The files it came from (indices into the sources read).
    pub files: Vec<usize>,
    /// What each of its values cites (`arXiv2412.13147v5:Table8`, `README.md:136`).
    pub cites: Vec<String>,
    /// Whether another source gives this metric a different value.
    pub contested: bool,
    /// Percent, with its interval.
    pub measured: Option<(f64, f64, f64)>,
    /// "within", "outside" or "not measured".
    pub verdict: &'static str,
}

/// Half a unit of the value's last place on either side of the interval: the table's rounding.
fn rounding(claim: &Claim) -> f64 {
    0.5 * 10f64.powi(-(claim.decimals as i32))
}

/// The published values of one model (the `key` of [`model_key`]), one row per claim.
fn audit_model(m: &ModelScore, key: &str, table: &[&Published]) -> Vec<AuditRow> {
    let mine: Vec<&Published> = table
        .iter()
        .copied()
        .filter(|p| model_key(&p.model) == key)
        .collect();
    let mut metrics: Vec<&MetricKind> = Vec::new();
    for p in &mine {
        if !metrics.contains(&&p.metric) {
            metrics.push(&p.metric);
        }
    }
    let mut rows = Vec::new();
    for metric in metrics {
        let values: Vec<&Published> = mine
            .iter()
            .copied()
            .filter(|p| &p.metric == metric)
            .collect();
        let claims = claims(&values);
        let measured = m
            .estimate(metric, None)
            .and_then(|e| Some((e.value?, e.ci?)))
            .map(|(v, (lo, hi))| (100.0 * v, 100.0 * lo, 100.0 * hi));
        for c in &claims {
            let r = rounding(c);
            let verdict = match measured {
                None => "not measured",
                Some((_, lo, hi)) if c.value >= lo - r && c.value <= hi + r => "within",
                Some(_) => "outside",
            };
            rows.push(AuditRow {
                model: m.name.clone(),
                published_model: mine[0].model.clone(),
                metric: values[0].metric_name.clone(),
                published: c.value,
                published_text: c.text(),
                files: c.files(),
                cites: c.values.iter().map(|v| v.source.clone()).collect(),
                contested: claims.len() > 1,
                measured,
                verdict,
            });
        }
    }
    rows
}

/// The published model a run model is audited against (its [`model_key`]): the `--model-map`
/// entry, else the published model its name or model id spells.
fn target(m: &ModelScore, table: &[&Published], map: &[(String, String)]) -> Option<String> {
    if let Some((_, p)) = map.iter().find(|(r, _)| r == &m.name) {
        return Some(model_key(p));
    }
    [&m.name, &m.model_id]
        .into_iter()
        .map(|n| model_key(n))
        .find(|k| table.iter().any(|p| &model_key(&p.model) == k))
}

/// Audits every model of a run that has published values.
pub fn audit(
    results: &RunResults,
    published: &[Published],
    benchmark: &str,
    map: &[(String, String)],
) -> Vec<AuditRow> {
    let table = on_benchmark(published, benchmark);
    let mut out = Vec::new();
    for m in &results.models {
        if let Some(key) = target(m, &table, map) {
            out.extend(audit_model(m, &key, &table));
        }
    }
    out
}

fn on_benchmark<'a>(published: &'a [Published], benchmark: &str) -> Vec<&'a Published> {
    published
        .iter()
        .filter(|p| p.benchmark == benchmark)
        .collect()
}

/// The benchmark's published model names, each spelling once.
fn model_names<'a>(published: &'a [Published], benchmark: &str) -> Vec<&'a str> {
    let mut seen = BTreeSet::new();
    on_benchmark(published, benchmark)
        .into_iter()
        .filter(|p| seen.insert(model_key(&p.model)))
        .map(|p| p.model.as_str())
        .collect()
}

/// Run models with no published row for the benchmark, each with the nearest published names.
fn unmatched_models(
    results: &RunResults,
    published: &[Published],
    benchmark: &str,
    map: &[(String, String)],
) -> Vec<(String, Vec<String>)> {
    let table = on_benchmark(published, benchmark);
    let names = model_names(published, benchmark);
    results
        .models
        .iter()
        .filter(|m| target(m, &table, map).is_none())
        .map(|m| {
            let mut near = nearest(&m.name, names.iter().copied());
            if near.is_empty() {
                near = nearest(&m.model_id, names.iter().copied());
            }
            let near = near.into_iter().map(str::to_string).collect();
            (m.name.clone(), near)
        })
        .collect()
}

/// A line per unmatched run model, its name whole, and under it the nearest published names.
fn unmatched_text(unmatched: &[(String, Vec<String>)]) -> String {
    unmatched
        .iter()
        .map(|(n, near)| {
            let near: Vec<&str> = near.iter().map(String::as_str).collect();
            match did_you_mean(&near) {
                Some(hint) => format!("  {n}\n    {hint}"),
                None => format!("  {n}\n    no published name is near it"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The sources in messages: the file, or how many there are.
fn sources_text(set: &PublishedSet) -> String {
    match set.files.as_slice() {
        [one] => one.display().to_string(),
        many => format!("{} published sources", many.len()),
    }
}

/// The benchmark audited: `given`, else the one the dataset's name is; it must be in a source.
fn pick_benchmark(
    given: Option<&str>,
    set: &PublishedSet,
    results: &RunResults,
) -> Result<String, BadInput> {
    let benchmarks: BTreeSet<&str> = set.values.iter().map(|p| p.benchmark.as_str()).collect();
    let listed = benchmarks.iter().copied().collect::<Vec<_>>().join(", ");
    let hint = |name: &str| {
        did_you_mean(&nearest(name, benchmarks.iter().copied()))
            .map(|h| format!("{h} "))
            .unwrap_or_default()
    };
    let benchmark = match given {
        Some(b) => b.to_string(),
        None => guess_benchmark(&results.dataset)
            .map(str::to_string)
            .ok_or_else(|| {
                BadInput(format!(
                    "cannot tell which published benchmark dataset {} is; pass --benchmark ({}one of: {listed})",
                    results.dataset,
                    hint(&results.dataset).replace("did you mean ", "did you mean --benchmark "),
                ))
            })?,
    };
    if !benchmarks.contains(benchmark.as_str()) {
        return Err(BadInput(format!(
            "--benchmark {benchmark:?}: not in {}; {}(they have: {listed})",
            sources_text(set),
            hint(&benchmark),
        )));
    }
    Ok(benchmark)
}

/// Refuses a `--model-map` entry naming a model the run or the benchmark's sources lack.
fn check_model_map(
    set: &PublishedSet,
    results: &RunResults,
    benchmark: &str,
    map: &[(String, String)],
) -> Result<(), BadInput> {
    let published_models = model_names(&set.values, benchmark);
    let run_models: Vec<&str> = results.models.iter().map(|m| m.name.as_str()).collect();
    for (r, p) in map {
        if !run_models.contains(&r.as_str()) {
            let hint = did_you_mean(&nearest(r, run_models.iter().copied()))
                .map(|h| format!("{h} "))
                .unwrap_or_default();
            return Err(BadInput(format!(
                "--model-map {r}={p}: the run has no model {r:?}; {hint}(it has: {})",
                run_models.join(", ")
            )));
        }
        if !published_models
            .iter()
            .any(|m| model_key(m) == model_key(p))
        {
            let hint = did_you_mean(&nearest(p, published_models.iter().copied()))
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            return Err(BadInput(format!(
                "--model-map {r}={p}: {benchmark} has no model {p:?} in {}{hint}",
                sources_text(set)
            )));
        }
    }
    Ok(())
}

/// What to audit: a scored run against published sources.
pub struct AuditInput<'a> {
    pub run_dir: &'a Path,
    pub results: &'a RunResults,
    pub published: &'a PublishedSet,
    /// The benchmark in those sources; guessed from the dataset's name when `None`.
    pub benchmark: Option<&'a str>,
    /// Run model names mapped to published ones.
    pub map: &'a [(String, String)],
}

/// What `gpassk audit` shows, in the order it is shown: what the verdicts rest on first.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditReport {
    /// The heading above the table, for people.
    pub title: String,
    /// One line per source read: `[1] datasets/published/gpassk_paper_v5.csv`.
    pub sources: Vec<String>,
    /// The run's size and protocol differences from the paper.
    pub warnings: Vec<String>,
    /// The audited values on which the sources disagree, one line each.
    pub contested: Vec<String>,
    /// The table in the format asked for.
    pub body: String,
    /// The verdict counts and the models not audited.
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
        let (results, set, map) = (self.results, self.published, self.map);
        let benchmark = pick_benchmark(self.benchmark, set, results)?;
        check_model_map(set, results, &benchmark, map)?;
        let unmatched = unmatched_models(results, &set.values, &benchmark, map);
        let rows: Vec<AuditRow> = audit(results, &set.values, &benchmark, map)
            .into_iter()
            .filter(|r| parse_metric(&r.metric).is_some_and(|m| keep(&m)))
            .collect();
        if rows.is_empty() {
            let msg = if unmatched.is_empty() {
                format!("no published {benchmark} value to audit: no published metric matches --metric/--k")
            } else {
                format!(
                    "no published {benchmark} value to audit: no run model matches a published \
                     model by name;\n  map them with --model-map RUN=PUBLISHED:\n{}",
                    unmatched_text(&unmatched)
                )
            };
            return Err(BadInput(msg).into());
        }
        let outside = rows.iter().filter(|r| r.verdict == "outside").count();
        Ok(AuditReport {
            title: format!(
                "audit of {} against published {benchmark} values; measured with 95% CI (over problems, docs/intervals.md), in %",
                self.run_dir.display()
            ),
            sources: source_lines(set, format),
            warnings: warnings(results, &benchmark, &rows),
            contested: contested_lines(&rows),
            body: render(&rows, format, &set.files)?,
            notes: closing_notes(&rows, &unmatched, set, &benchmark),
            shown: rows.len(),
            outside,
        })
    }
}

fn source_lines(set: &PublishedSet, format: TableFormat) -> Vec<String> {
    let legend = (0..set.files.len()).map(|i| format!("[{}] {}", i + 1, set.citation(i)));
    match format {
        TableFormat::Table | TableFormat::Md => {
            std::iter::once("sources (column src):".to_string())
                .chain(legend)
                .collect()
        }
        // The machine formats cite each value's own source in the `sources` column.
        _ => Vec::new(),
    }
}

/// `DeepSeek-Distill-Qwen-32B G-Pass@16_1.0: 31.3 [1, 2] vs 33.6 [3]`, once per contested metric.
fn contested_lines(rows: &[AuditRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for r in rows.iter().filter(|r| r.contested) {
        if !seen.insert((&r.model, &r.metric)) {
            continue;
        }
        let claims: Vec<String> = rows
            .iter()
            .filter(|o| o.model == r.model && o.metric == r.metric)
            .map(|o| format!("{} {}", o.published_text, src_text(&o.files)))
            .collect();
        out.push(format!(
            "* the sources disagree on {} {}: {}",
            r.published_model,
            r.metric,
            claims.join(" vs ")
        ));
    }
    out
}

/// `[1, 2]`: the 1-based source numbers of the legend.
fn src_text(files: &[usize]) -> String {
    let n: Vec<String> = files.iter().map(|f| (f + 1).to_string()).collect();
    format!("[{}]", n.join(", "))
}

/// The verdict counts, the disagreements outside this audit, and the models not audited.
fn closing_notes(
    rows: &[AuditRow],
    unmatched: &[(String, Vec<String>)],
    set: &PublishedSet,
    benchmark: &str,
) -> Vec<String> {
    let count = |v: &str| rows.iter().filter(|r| r.verdict == v).count();
    let mut notes = vec![format!(
        "{} within, {} outside, {} not measured (of {} published values shown)",
        count("within"),
        count("outside"),
        count("not measured"),
        rows.len()
    )];
    let audited: BTreeSet<String> = rows.iter().map(|r| model_key(&r.published_model)).collect();
    let elsewhere = disagreements(&set.values)
        .iter()
        .filter(|d| d.benchmark != benchmark || !audited.contains(&model_key(d.model)))
        .count();
    if elsewhere > 0 {
        notes.push(format!(
            "the sources also disagree on {elsewhere} values of other models or benchmarks"
        ));
    }
    for (name, near) in unmatched {
        let near: Vec<&str> = near.iter().map(String::as_str).collect();
        notes.push(match did_you_mean(&near) {
            Some(hint) => format!("not audited: {name} has no published {benchmark} row; {hint} (--model-map {name}={})", near[0]),
            None => format!("not audited: {name} has no published {benchmark} row (map it with --model-map {name}=PUBLISHED)"),
        });
    }
    notes
}

/// The rows in `format`; the terminal table has one section per model, so it fits 80 columns.
fn render(rows: &[AuditRow], format: TableFormat, files: &[PathBuf]) -> anyhow::Result<String> {
    if format != TableFormat::Table {
        return tabular(rows, true, files).render(format);
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
        let head = format!("{model} (published as {published}):");
        out.push_str(&crate::util::wrap(
            &head,
            crate::util::terminal_width(),
            "  ",
        ));
        out.push('\n');
        out.push_str(&tabular(&part, false, files).render(format)?);
    }
    Ok(out)
}

/// The table; `files` are the sources' paths, which the machine formats name in full.
fn tabular(rows: &[AuditRow], with_model: bool, files: &[PathBuf]) -> Tabular {
    let rows = rows.iter().map(|r| cells(r, files)).collect();
    Tabular {
        keys: vec![
            "model",
            "published_as",
            "metric",
            "published",
            "files",
            "sources",
            "contested",
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
            "src",
            "",
            "",
            "measured [95% CI]",
            "",
            "",
            "diff",
            "verdict",
        ],
        rows,
        machine_only: if with_model {
            &["sources", "contested", "ci_low", "ci_high"]
        } else {
            &[
                "model",
                "published_as",
                "sources",
                "contested",
                "ci_low",
                "ci_high",
            ]
        },
        group: None,
    }
}

fn cells(r: &AuditRow, files: &[PathBuf]) -> Vec<Cell> {
    let m = r.measured;
    // Already in points: held to the percentage scale like every other interval.
    let measured = Interval::plain(m.map(|x| x.0), m.map(|x| (x.1, x.2)))
        .within(0.0, 100.0)
        .to_string();
    let diff = m.map(|(v, _, _)| v - r.published);
    // A contested value's sources carry a `*`, pointing at the lines above the table.
    let star = if r.contested { "*" } else { "" };
    let src: Vec<String> = r.files.iter().map(|f| (f + 1).to_string()).collect();
    let paths: Vec<String> = r
        .files
        .iter()
        .map(|&f| files[f].display().to_string())
        .collect();
    vec![
        Cell::text(&r.model),
        Cell::text(&r.published_model),
        Cell::text(&r.metric),
        Cell::num(Some(r.published), r.published_text.clone()),
        Cell {
            text: format!("{}{star}", src.join(",")),
            raw: serde_json::Value::String(paths.join("; ")),
        },
        Cell::text(r.cites.join("; ")),
        Cell {
            text: r.contested.to_string(),
            raw: serde_json::Value::Bool(r.contested),
        },
        Cell::num(m.map(|x| x.0), measured),
        Cell::num(m.map(|x| x.1), ""),
        Cell::num(m.map(|x| x.2), ""),
        Cell::num(diff, diff.map_or("-".into(), |d| format!("{d:+.1}"))),
        Cell::text(r.verdict),
    ]
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
        let uncertain = protocol_warnings(
            &s,
            &[16],
            "x",
            "AIME2025",
            (("rule_then_judge_uncertain", Some("gpt-4o")), None),
        )
        .join("\n");
        assert!(
            uncertain.contains("the judge saw only the answers the rules guessed or did not find"),
            "{uncertain}"
        );
    }
}
