//! Comparing two runs: per model (matched by name) and metric, B − A over the problems both runs
//! scored (matched by id), an exact paired test per row, Holm's correction over the rows, the
//! checks that the two runs measured the same thing, and the text `gpassk compare` shows.

use crate::analysis::history::{drift, RunEntry};
use crate::error::BadInput;
use crate::metrics::{to_f64, MetricKind};
use crate::report::{Cell, Interval, TableFormat, Tabular};
use crate::rundir::difference::{Difference, ModelSetting};
use crate::rundir::RunDir;
use crate::scoring::{ModelScore, RunResults};
use crate::stats::paired::{ALPHA, MIN_SHARED};
use crate::stats::{holm, paired_test, PairedTest};
use crate::util::printable;
use std::collections::HashMap;
use std::path::Path;

/// One compared metric of one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub model: String,
    /// The metric as the reports name it (`Pass@16`, `G-Pass@16_0.5`, `maj@n`, …).
    pub metric: String,
    pub kind: MetricKind,
    pub test: PairedTest,
    /// Holm-adjusted p-value over every tested row of the comparison; `None` when untested.
    pub adjusted: Option<f64>,
}

impl Comparison {
    /// True when the difference is significant at [`ALPHA`] after Holm's correction.
    pub fn flagged(&self) -> bool {
        self.adjusted.is_some_and(|p| p < ALPHA)
    }
}

/// Rows of a comparison, and the rows left out with the reason.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compared {
    pub rows: Vec<Comparison>,
    pub skipped: Vec<String>,
}

/// Pairs every metric of every model present in both runs, then applies Holm's correction.
pub fn compare(a: &RunResults, b: &RunResults) -> Compared {
    let mut out = Compared::default();
    for mb in &b.models {
        let Some(ma) = a.models.iter().find(|m| m.name == mb.name) else {
            continue;
        };
        compare_model(ma, mb, &mut out);
    }
    let tested: Vec<usize> = (0..out.rows.len())
        .filter(|&i| out.rows[i].test.p.is_some())
        .collect();
    let raw: Vec<f64> = tested.iter().filter_map(|&i| out.rows[i].test.p).collect();
    for (&i, p) in tested.iter().zip(holm(&raw)) {
        out.rows[i].adjusted = Some(p);
    }
    out
}

fn compare_model(ma: &ModelScore, mb: &ModelScore, out: &mut Compared) {
    let index: HashMap<&str, usize> = ma
        .problems
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    for (cb, metric) in mb.values.metrics.iter().enumerate() {
        let Some(ca) = ma.values.column(metric) else {
            continue;
        };
        if *metric == MetricKind::Majority && ma.n != mb.n {
            out.skipped.push(format!(
                "{} maj@n: not compared, n = {} in A and {} in B (a majority of more votes is \
                 a different metric)",
                mb.name, ma.n, mb.n
            ));
            continue;
        }
        let pairs: Vec<(f64, f64)> = mb
            .problems
            .iter()
            .enumerate()
            .filter_map(|(ib, p)| {
                let ia = *index.get(p.id.as_str())?;
                let va = ma.values.rows[ia][ca].as_ref()?;
                let vb = mb.values.rows[ib][cb].as_ref()?;
                Some((to_f64(va), to_f64(vb)))
            })
            .collect();
        if let Some(test) = paired_test(&pairs) {
            out.rows.push(Comparison {
                model: mb.name.clone(),
                metric: crate::report::metric_label(metric),
                kind: metric.clone(),
                test,
                adjusted: None,
            });
        }
    }
}

/// True when a flagged drop is larger than `pct` percentage points.
pub fn regressed(c: &Comparison, pct: f64) -> bool {
    c.flagged() && c.test.delta < 0.0 && -100.0 * c.test.delta > pct
}

/// Refuses two runs on different datasets (by content: the same file may be named by another
/// path): their problem ids may coincide by accident.
pub fn check_dataset(a: &RunResults, b: &RunResults) -> Result<(), BadInput> {
    let differs = match (&a.manifest, &b.manifest) {
        (Some(x), Some(y)) => x
            .differences(y)
            .iter()
            .any(|d| matches!(d, Difference::Dataset(_))),
        // Results scored without a manifest: by the scored dataset's hash.
        _ => a.dataset_sha256 != b.dataset_sha256,
    };
    if !differs {
        return Ok(());
    }
    let short = |h: &str| h.chars().take(12).collect::<String>();
    let imported_alone = [a, b].iter().any(|r| {
        r.manifest
            .as_ref()
            .and_then(|m| m.imported.as_ref())
            .is_some_and(|i| i.dataset_sha256.is_none())
    });
    let hint = if imported_alone {
        " (an imported run compares with a native one when it was imported with --dataset NAME)"
    } else {
        ""
    };
    Err(BadInput(format!(
        "different datasets: A ran on {} (sha256 {}), B on {} (sha256 {}); compare needs the \
         same dataset{hint}",
        a.dataset,
        short(&a.dataset_sha256),
        b.dataset,
        short(&b.dataset_sha256)
    )))
}

/// A note per model only one of the runs holds (B's first).
pub fn unmatched_models(a: &RunResults, b: &RunResults, [run_a, run_b]: [&Path; 2]) -> Vec<String> {
    let mut out = Vec::new();
    for (run, here, there) in [(run_b, b, a), (run_a, a, b)] {
        for m in &here.models {
            if !there.models.iter().any(|x| x.name == m.name) {
                out.push(format!(
                    "note: model {} is only in {}",
                    m.name,
                    run.display()
                ));
            }
        }
    }
    out
}

/// Why two runs gave no row to compare: no shared model, or no shared scored problem.
pub fn nothing_compared(a: &RunResults, b: &RunResults, [run_a, run_b]: [&Path; 2]) -> BadInput {
    let names =
        |r: &RunResults| -> Vec<String> { r.models.iter().map(|m| m.name.clone()).collect() };
    let why = if names(a).iter().any(|n| names(b).contains(n)) {
        "share no scored problem (problems are matched by id)".to_string()
    } else {
        format!(
            "share no model (models are matched by name): A has {}, B has {}",
            names(a).join(", "),
            names(b).join(", ")
        )
    };
    BadInput(format!("{} and {} {why}", run_a.display(), run_b.display()))
}

/// Every setting that differs between the two runs for the models both hold, named.
pub fn setting_differences(a: &RunResults, b: &RunResults) -> Vec<String> {
    let (Some(ma), Some(mb)) = (&a.manifest, &b.manifest) else {
        return vec!["a run has no manifest: its settings cannot be checked".into()];
    };
    ma.differences(mb)
        .iter()
        .filter_map(|d| {
            let (what, x, y) = setting_difference(d)?;
            Some(format!("{what}: {x} in A, {y} in B"))
        })
        .collect()
}

/// What compare warns of in a difference, with its values in A and B; `None` for the rest.
fn setting_difference(d: &Difference) -> Option<(String, String, String)> {
    let grading = |(mode, judge): &(String, Option<String>)| {
        judge
            .as_ref()
            .map_or(mode.clone(), |j| format!("{mode} (judge {j})"))
    };
    let debug = |v: Option<u32>| format!("{v:?}");
    Some(match d {
        Difference::PromptTemplate(c) => (
            "prompt template".into(),
            format!("{:?}", c.before),
            format!("{:?}", c.after),
        ),
        Difference::PromptHash(c) => (
            "prompt hash (template and few-shot turns)".into(),
            c.before.clone(),
            c.after.clone(),
        ),
        Difference::Grader(c) => ("grader".into(), grading(&c.before), grading(&c.after)),
        Difference::Model { model, setting } => {
            let (what, x, y) = match setting {
                ModelSetting::ModelId(c) => ("model id", c.before.clone(), c.after.clone()),
                ModelSetting::N(c) => ("n", c.before.to_string(), c.after.to_string()),
                ModelSetting::Temperature(c) => {
                    ("temperature", c.before.to_string(), c.after.to_string())
                }
                ModelSetting::TopP(c) => ("top-p", c.before.to_string(), c.after.to_string()),
                ModelSetting::TopK(c) => ("top-k", debug(c.before), debug(c.after)),
                ModelSetting::MaxTokens(c) => ("max tokens", debug(c.before), debug(c.after)),
                ModelSetting::Seed(_) | ModelSetting::Stop(_) => return None,
            };
            (format!("{model} {what}"), x, y)
        }
        _ => return None,
    })
}

/// The shown rows whose flagged drop exceeds `pct` points, one line each.
pub fn regressions(shown: &[&Comparison], pct: f64) -> Vec<String> {
    shown
        .iter()
        .filter(|c| regressed(c, pct))
        .map(|c| {
            format!(
                "  {} {}: {:+.1} points",
                c.model,
                c.metric,
                100.0 * c.test.delta
            )
        })
        .collect()
}

/// Every served-model or fingerprint change of the models of B from run A to run B, one
/// `drift: …` line each.
pub fn drift_lines(run_a: &Path, run_b: &Path, b: &RunResults) -> Result<Vec<String>, BadInput> {
    let entry = |dir: &Path| -> Result<RunEntry, BadInput> {
        let dir = RunDir::at(dir);
        let manifest = dir.read_manifest()?;
        Ok(RunEntry { dir, manifest })
    };
    let (ea, eb) = (entry(run_a)?, entry(run_b)?);
    let mut out = Vec::new();
    for m in &b.models {
        for d in drift(&ea, &eb, &m.name) {
            out.push(format!("drift: {}: {}", m.name, printable(&d.describe())));
        }
    }
    Ok(out)
}

/// A p-value for the table: four decimals, `-` when untested.
fn p_text(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

/// The shown rows as cells: percentages for people, raw fractions and p-values for machines.
fn tabular(shown: &[&Comparison]) -> Tabular {
    let pct = |v: f64| Cell::num(Some(v), Interval::percent(Some(v), None).to_string());
    let rows = shown
        .iter()
        .map(|c| {
            let d = &c.test;
            let flag = match (d.p, c.flagged(), d.delta > 0.0) {
                (None, _, _) => "untested".to_string(),
                (Some(_), false, _) => String::new(),
                (Some(_), true, true) => "improved".into(),
                (Some(_), true, false) => "REGRESSED".into(),
            };
            vec![
                Cell::text(&c.model),
                Cell::text(&c.metric),
                pct(d.a),
                pct(d.b),
                Cell::num(Some(d.delta), format!("{:+.1}", 100.0 * d.delta)),
                Cell::num(d.p, p_text(d.p)),
                Cell::num(c.adjusted, p_text(c.adjusted)),
                Cell::int(d.problems as u64),
                Cell::text(flag),
            ]
        })
        .collect();
    Tabular {
        keys: vec![
            "model", "metric", "a", "b", "delta", "p", "p_holm", "problems", "flag",
        ],
        titles: vec![
            "model", "metric", "A %", "B %", "B − A", "p", "p (Holm)", "problems", "flag",
        ],
        rows,
        machine_only: &["p"],
        group: Some("model"),
    }
}

/// What `gpassk compare` prints: in a machine format the table alone; in a human one the table
/// with its legend, the runs, the setting `differences` and the counts of tested and flagged rows.
pub fn render(
    [run_a, run_b]: [&Path; 2],
    compared: &Compared,
    shown: &[&Comparison],
    differences: &[String],
    format: TableFormat,
) -> anyhow::Result<String> {
    let body = tabular(shown).render(format)?;
    if !format.is_human() {
        return Ok(body);
    }
    let md = format == TableFormat::Md;
    // The legend's two lines are one paragraph in Markdown.
    let mut out =
        "B − A in percentage points over the problems both runs scored; exact paired\n".to_string();
    // A line of text; in Markdown a paragraph of its own.
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(if md { "\n\n" } else { "\n" });
    };
    line("sign-flip test (McNemar for 0/1 values), Holm-corrected over the tested rows");
    line(&format!("A: {}", run_a.display()));
    line(&format!("B: {}", run_b.display()));
    for d in differences {
        line(&format!("WARNING: the runs differ: {d}"));
    }
    if !differences.is_empty() {
        line("differences may come from these settings");
    }
    out.push_str(&body);
    out.push_str(&footer(compared, shown, md));
    Ok(out)
}

/// The lines under the table: skipped rows and the counts of tested, flagged and shown rows.
fn footer(compared: &Compared, shown: &[&Comparison], md: bool) -> String {
    let mut lines: Vec<String> = compared.skipped.clone();
    let tested = compared.rows.iter().filter(|c| c.test.p.is_some()).count();
    let flagged = compared.rows.iter().filter(|c| c.flagged()).count();
    lines.push(format!(
        "{flagged} of {tested} tested differences significant at {}% family-wise (Holm over {tested} tests)",
        100.0 * ALPHA
    ));
    if shown.len() < compared.rows.len() {
        lines.push(format!(
            "{} of {} rows shown (--metric/--k)",
            shown.len(),
            compared.rows.len()
        ));
    }
    let untested = compared.rows.len() - tested;
    if untested > 0 {
        lines.push(format!(
            "{untested} differences not tested: fewer than {MIN_SHARED} shared problems \
             cannot support a flag"
        ));
    }
    let end = if md { "\n\n" } else { "\n" };
    lines.iter().map(|l| format!("{l}{end}")).collect()
}
