//! Comparing two runs: per model (matched by name) and metric, B − A over the problems both runs
//! scored (matched by id), an exact paired test per row, Holm's correction over the rows, the
//! checks that the two runs measured the same thing, and the text `gpassk compare` shows.

use crate::analysis::history::{drift, RunEntry};
use crate::error::BadInput;
use crate::metrics::{to_f64, MetricIdentity, MetricKind};
use crate::report::{md_text, Cell, Interval, TableFormat, Tabular};
use crate::rundir::difference::{Difference, ModelSetting};
use crate::rundir::manifest::Status;
use crate::rundir::RunDir;
use crate::scoring::{ModelScore, RunResults};
use crate::stats::paired::paired_test_by;
use crate::stats::paired::{ALPHA, MIN_SHARED};
use crate::stats::{cluster_indices, cluster_key, holm, PairedTest};
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
    /// Other names of the same quantity, shown in this row (`G-Pass@4_0.25` is `Pass@4`).
    pub same_as: Vec<String>,
    pub test: PairedTest,
    /// In the tested family (the headline metrics, declared before the data); other rows are
    /// exploratory: shown, never flagged.
    pub in_family: bool,
    /// Holm-adjusted p-value over the family's tested rows; `None` outside it or untested.
    pub adjusted: Option<f64>,
    /// The smallest change this benchmark detects here ([`PairedTest::detectable`] at Holm's
    /// strictest step), for the family's tested rows.
    pub detectable: Option<f64>,
}

impl Comparison {
    /// True when the difference is significant at [`ALPHA`] after Holm's correction.
    pub fn flagged(&self) -> bool {
        self.in_family && self.adjusted.is_some_and(|p| p < ALPHA)
    }

    /// The row's flag in compare's words: `REGRESSED` or `improved` for a flagged change of the
    /// tested family, `untested` when too few problems are shared for a test, `exploratory`
    /// outside the family, empty otherwise.
    pub fn flag(&self) -> &'static str {
        match (
            self.in_family,
            self.test.p,
            self.flagged(),
            self.test.delta > 0.0,
        ) {
            (false, ..) => "exploratory",
            (true, None, ..) => "untested",
            (true, Some(_), false, _) => "",
            (true, Some(_), true, true) => Verdict::Improved.as_str(),
            (true, Some(_), true, false) => Verdict::Regressed.as_str(),
        }
    }

    /// The metric with the other names of its quantity: `Pass@4 = G-Pass@4_0.25`, or
    /// `Pass@1 = G-Pass@1_0.25…1.0` for a run of them.
    pub fn label(&self) -> String {
        match self.same_as.as_slice() {
            [] => self.metric.clone(),
            [one] => format!("{} = {one}", self.metric),
            [first, .., last] => {
                let tail = last.rsplit('_').next().unwrap_or(last);
                format!("{} = {first}…{tail}", self.metric)
            }
        }
    }
}

/// Rows of a comparison, and the rows left out with the reason.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compared {
    pub rows: Vec<Comparison>,
    pub skipped: Vec<String>,
    /// Tested rows of the family: Holm's correction runs over these.
    pub family_tested: usize,
}

/// Pairs every metric of every model present in both runs (a quantity once, whatever its
/// names), then applies Holm's correction over the rows `in_family` keeps.
pub fn compare(
    a: &RunResults,
    b: &RunResults,
    in_family: &dyn Fn(&MetricKind) -> bool,
) -> Compared {
    let mut out = Compared::default();
    for mb in &b.models {
        let Some(ma) = a.models.iter().find(|m| m.name == mb.name) else {
            continue;
        };
        compare_model(ma, mb, in_family, &mut out);
    }
    let tested: Vec<usize> = (0..out.rows.len())
        .filter(|&i| out.rows[i].in_family && out.rows[i].test.p.is_some())
        .collect();
    let raw: Vec<f64> = tested.iter().filter_map(|&i| out.rows[i].test.p).collect();
    out.family_tested = tested.len();
    let strictest = ALPHA / tested.len().max(1) as f64;
    for (&i, p) in tested.iter().zip(holm(&raw)) {
        let row = &mut out.rows[i];
        row.adjusted = Some(p);
        row.detectable = row.test.detectable(strictest);
    }
    out
}

fn compare_model(
    ma: &ModelScore,
    mb: &ModelScore,
    in_family: &dyn Fn(&MetricKind) -> bool,
    out: &mut Compared,
) {
    let index: HashMap<&str, usize> = ma
        .problems
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    let mut seen: HashMap<MetricIdentity, usize> = HashMap::new();
    for (cb, metric) in mb.values.metrics.iter().enumerate() {
        let Some(ca) = ma.values.column(metric) else {
            continue;
        };
        if let Some(&row) = seen.get(&metric.identity()) {
            let row = &mut out.rows[row];
            row.same_as.push(crate::report::metric_label(metric));
            row.in_family |= in_family(metric);
            continue;
        }
        if *metric == MetricKind::Majority && ma.n != mb.n {
            out.skipped.push(format!(
                "{} maj@n: not compared, n = {} in A and {} in B (a majority of more votes is \
                 a different metric)",
                mb.name, ma.n, mb.n
            ));
            continue;
        }
        let (pairs, keys): (Vec<(f64, f64)>, Vec<String>) = mb
            .problems
            .iter()
            .enumerate()
            .filter_map(|(ib, p)| {
                let ia = *index.get(p.id.as_str())?;
                let va = ma.values.rows[ia][ca].as_ref()?;
                let vb = mb.values.rows[ib][cb].as_ref()?;
                let key = cluster_key(&p.id, p.group.as_deref());
                Some(((to_f64(va), to_f64(vb)), key))
            })
            .unzip();
        let (clusters, units) = cluster_indices(keys.iter().map(String::as_str));
        let clusters = (units < pairs.len()).then_some(clusters.as_slice());
        if let Some(test) = paired_test_by(&pairs, clusters) {
            seen.insert(metric.identity(), out.rows.len());
            out.rows.push(Comparison {
                model: mb.name.clone(),
                metric: crate::report::metric_label(metric),
                kind: metric.clone(),
                same_as: Vec::new(),
                test,
                in_family: in_family(metric),
                adjusted: None,
                detectable: None,
            });
        }
    }
}

/// What a comparison concludes about one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Improved,
    Regressed,
    /// Flagged both ways: better on some headline metrics, worse on others.
    Mixed,
    NoDetectableChange,
    NotComparable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "REGRESSED",
            Verdict::Mixed => "CHANGED both ways",
            Verdict::NoDetectableChange => "no detectable change",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// One model's verdict, why, and what else changed for it (served model, fingerprint).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelVerdict {
    pub model: String,
    pub verdict: Verdict,
    pub reason: String,
    pub drift: Vec<String>,
}

/// A verdict per model of either run (B's order, then models only A has): from the flagged
/// family rows, or why the model cannot be compared; `drift` holds (model, change) pairs.
pub fn verdicts(
    a: &RunResults,
    b: &RunResults,
    compared: &Compared,
    drift: &[(String, String)],
) -> Vec<ModelVerdict> {
    let mut names: Vec<&str> = b.models.iter().map(|m| m.name.as_str()).collect();
    for m in &a.models {
        if !names.contains(&m.name.as_str()) {
            names.push(&m.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let (verdict, reason) = match not_comparable(a, b, name) {
                Some(why) => (Verdict::NotComparable, why),
                None => from_rows(name, compared),
            };
            let drift = (drift.iter())
                .filter(|(m, _)| m == name)
                .map(|(_, d)| d.clone())
                .collect();
            ModelVerdict {
                model: name.to_string(),
                verdict,
                reason,
                drift,
            }
        })
        .collect()
}

/// Why `name` cannot be compared: absent from a run, or failed in one (with its error).
fn not_comparable(a: &RunResults, b: &RunResults, name: &str) -> Option<String> {
    for (run, r) in [("A", a), ("B", b)] {
        if !r.models.iter().any(|m| m.name == name) {
            return Some(format!("not in run {run}"));
        }
        let entry = r.manifest.as_ref().and_then(|m| m.models.get(name));
        let usable = r
            .models
            .iter()
            .any(|m| m.name == name && !m.problems.is_empty());
        if entry.is_some_and(|e| e.status == Status::Failed) || !usable {
            let error = entry.and_then(|e| e.error.as_deref());
            let why = error.map_or(String::new(), |e| format!(": {}", printable(e)));
            return Some(format!("failed in run {run}{why}"));
        }
    }
    None
}

/// The verdict of a model both runs scored, from its family rows.
fn from_rows(name: &str, compared: &Compared) -> (Verdict, String) {
    let family: Vec<&Comparison> = (compared.rows.iter())
        .filter(|c| c.model == name && c.in_family && c.test.p.is_some())
        .collect();
    if family.is_empty() {
        let shared =
            (compared.rows.iter().find(|c| c.model == name)).map_or(0, |c| c.test.problems);
        return (
            Verdict::NotComparable,
            format!("{shared} shared problems; a test needs at least {MIN_SHARED}"),
        );
    }
    let flagged: Vec<&&Comparison> = family.iter().filter(|c| c.flagged()).collect();
    let (up, down) = (
        flagged.iter().any(|c| c.test.delta > 0.0),
        flagged.iter().any(|c| c.test.delta < 0.0),
    );
    let verdict = match (up, down) {
        (true, true) => Verdict::Mixed,
        (true, false) => Verdict::Improved,
        (false, true) => Verdict::Regressed,
        (false, false) => Verdict::NoDetectableChange,
    };
    if verdict != Verdict::NoDetectableChange {
        let listed: Vec<String> = (flagged.iter().take(3))
            .map(|c| {
                let p = match c.adjusted {
                    Some(p) if p < 1e-4 => "p < 0.0001".to_string(),
                    p => format!("p = {}", p_text(p)),
                };
                format!("{} {:+.1} points ({p})", c.metric, 100.0 * c.test.delta)
            })
            .collect();
        let more = flagged.len().saturating_sub(3);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return (verdict, format!("{}{more}", listed.join(", ")));
    }
    let problems = family[0].test.problems;
    let moved: Vec<&&Comparison> = family.iter().filter(|c| c.test.spread > 0.0).collect();
    if moved.is_empty() {
        let floor = family
            .iter()
            .filter_map(|c| c.detectable)
            .fold(0.0, f64::max);
        return (
            verdict,
            format!(
                "every headline value is the same on all {problems} problems (a change \
                 would need about {:.0} points to be flagged)",
                100.0 * floor
            ),
        );
    }
    let sizes: Vec<f64> = moved.iter().filter_map(|c| c.detectable).collect();
    let lo = sizes.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = sizes.iter().copied().fold(0.0, f64::max);
    let size = if (100.0 * lo).round() == (100.0 * hi).round() {
        format!("{:.0}", 100.0 * hi)
    } else {
        format!("{:.0}–{:.0}", 100.0 * lo, 100.0 * hi)
    };
    (
        verdict,
        format!(
            "on {problems} problems only changes of about {size} points are detectable (80% power)"
        ),
    )
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

/// A note per model only one of the runs holds (B's first); `names` name the runs.
pub fn unmatched_models(a: &RunResults, b: &RunResults, [run_a, run_b]: [&str; 2]) -> Vec<String> {
    let mut out = Vec::new();
    for (run, here, there) in [(run_b, b, a), (run_a, a, b)] {
        for m in &here.models {
            if !there.models.iter().any(|x| x.name == m.name) {
                out.push(format!("note: model {} is only in {run}", m.name));
            }
        }
    }
    out
}

/// Why two runs gave no row to compare: no shared model, or no shared scored problem.
pub fn nothing_compared(a: &RunResults, b: &RunResults, [run_a, run_b]: [&str; 2]) -> BadInput {
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
    BadInput(format!("{run_a} and {run_b} {why}"))
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

/// A run directory and its scored results as the entry [`drift_lines`] reads.
pub fn folder_entry(dir: &Path, r: &RunResults) -> Result<RunEntry, BadInput> {
    // The manifest was read with the results; only results without one read it here.
    let dir = RunDir::at(dir);
    let manifest = match &r.manifest {
        Some(m) => m.clone(),
        None => dir.read_manifest()?,
    };
    Ok(RunEntry::of_dir(dir, manifest))
}

/// Every served-model or fingerprint change of the models of B (`b`) from run A to run B, as
/// (model, change) pairs.
pub fn drift_lines([ea, eb]: [&RunEntry; 2], b: &RunResults) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in &b.models {
        for d in drift(ea, eb, &m.name) {
            out.push((m.name.clone(), printable(&d.describe()).into_owned()));
        }
    }
    out
}

/// Notes about models split into those every one of `models` has (said once, `all 6 models:
/// …`, when there are two models or more) and the rest, per model, in order: one fingerprint
/// change of six models is one line, not six.
pub fn gather(notes: &[(String, String)], models: &[&str]) -> (Vec<String>, Vec<(String, String)>) {
    let everyone = |text: &str| {
        models.len() > 1 && (models.iter()).all(|m| notes.iter().any(|(n, t)| n == m && t == text))
    };
    let mut shared: Vec<String> = Vec::new();
    let mut own = Vec::new();
    for (model, text) in notes {
        if everyone(text) {
            let line = format!("all {} models: {text}", models.len());
            if !shared.contains(&line) {
                shared.push(line);
            }
        } else {
            own.push((model.clone(), text.clone()));
        }
    }
    (shared, own)
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
            let detect = c
                .detectable
                .map_or("-".into(), |x| format!("±{:.1}", 100.0 * x));
            vec![
                Cell::text(&c.model),
                // Machines get the metric's own name; its other names go in `same_as`.
                Cell {
                    text: c.label(),
                    raw: serde_json::Value::String(c.metric.clone()),
                },
                Cell::text(c.same_as.join(",")),
                pct(d.a),
                pct(d.b),
                Cell::num(Some(d.delta), format!("{:+.1}", 100.0 * d.delta)),
                Cell::num(d.p, p_text(d.p)),
                Cell::num(c.adjusted, p_text(c.adjusted)),
                Cell::num(c.detectable, detect),
                Cell::int(d.problems as u64),
                Cell {
                    text: c.in_family.to_string(),
                    raw: serde_json::Value::Bool(c.in_family),
                },
                Cell::text(c.flag()),
            ]
        })
        .collect();
    Tabular {
        keys: vec![
            "model",
            "metric",
            "same_as",
            "a",
            "b",
            "delta",
            "p",
            "p_holm",
            "detectable",
            "problems",
            "family",
            "flag",
        ],
        titles: vec![
            "model",
            "metric",
            "same as",
            "A %",
            "B %",
            "B − A",
            "p",
            "p (Holm)",
            "detect ±",
            "problems",
            "family",
            "flag",
        ],
        rows,
        machine_only: &["same_as", "p", "problems", "family"],
        group: Some("model"),
    }
}

/// What `gpassk compare` prints: in a machine format the table alone; in a human one the
/// verdict per model first, then the table with its legend, the runs (by `names`), the setting
/// `differences` and the counts of tested and flagged rows.
pub fn render(
    [run_a, run_b]: [&str; 2],
    compared: &Compared,
    verdicts: &[ModelVerdict],
    shown: &[&Comparison],
    differences: &[String],
    format: TableFormat,
) -> anyhow::Result<String> {
    let body = tabular(shown).render(format)?;
    if !format.is_human() {
        return Ok(body);
    }
    let md = format == TableFormat::Md;
    let mut out = String::new();
    // A line of text; in Markdown a paragraph of its own.
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(if md { "\n\n" } else { "\n" });
    };
    line(&format!("A: {}", printable(run_a)));
    line(&format!("B: {}", printable(run_b)));
    for d in differences {
        line(&format!("WARNING: the runs differ: {d}"));
    }
    if !differences.is_empty() {
        line("differences may come from these settings");
    }
    // One width for every wrapped line (Markdown is not wrapped).
    let width = crate::util::terminal_width().clamp(40, 100);
    out.push_str(&verdict_block(compared, verdicts, md, width));
    out.push_str(&legend(md, width));
    out.push_str(&body);
    if md && !body.ends_with("\n\n") {
        // A line right under a Markdown table would be read as one more row.
        out.push('\n');
    }
    out.push_str(&footer(compared, shown, md, width));
    Ok(out)
}

/// The verdicts: a heading naming the tested family, then per model its name on a line of its
/// own (long names never squeeze the text) and the verdict, reason and drift under it.
fn verdict_block(compared: &Compared, verdicts: &[ModelVerdict], md: bool, width: usize) -> String {
    let head = format!(
        "Verdict per model (tested: the headline metrics; Holm at {}% over {} tests)",
        100.0 * ALPHA,
        compared.family_tested
    );
    let mut out = if md {
        format!("**{head}**\n\n")
    } else {
        format!("{}\n", crate::report::wrap(&head, width, ""))
    };
    for v in verdicts {
        let name = printable(&v.model);
        let mut what = format!("{}: {}", v.verdict.as_str(), v.reason);
        for d in &v.drift {
            what.push_str(&format!("; drift: {d}"));
        }
        if md {
            out.push_str(&format!("- **{}**: {}\n", md_text(&name), md_text(&what)));
        } else {
            out.push_str(&format!("  {name}\n"));
            out.push_str(&format!(
                "    {}\n",
                crate::report::wrap(&what, width - 4, "    ")
            ));
        }
    }
    out.push('\n');
    out
}

/// How to read the table.
fn legend(md: bool, width: usize) -> String {
    let text = "B − A in percentage points over the problems both runs scored; exact paired \
        sign-flip test (McNemar for 0/1 values), Holm-corrected over the headline metrics only; \
        other rows are exploratory (shown, never flagged); a quantity with two names is one \
        row; detect: the change 80% power would catch at Holm's strictest level";
    if md {
        format!("{text}\n\n")
    } else {
        format!("{}\n", crate::report::wrap(text, width, ""))
    }
}

/// The lines under the table: skipped rows and the counts of tested, flagged and shown rows.
fn footer(compared: &Compared, shown: &[&Comparison], md: bool, width: usize) -> String {
    let mut lines: Vec<String> = compared.skipped.clone();
    let tested = compared.family_tested;
    let flagged = compared.rows.iter().filter(|c| c.flagged()).count();
    lines.push(format!(
        "{flagged} of {tested} tested headline differences significant at {}% family-wise (Holm over {tested} tests)",
        100.0 * ALPHA
    ));
    let exploratory = compared.rows.iter().filter(|c| !c.in_family).count();
    if exploratory > 0 {
        lines.push(format!(
            "{exploratory} exploratory rows, not part of the tested family"
        ));
    }
    if shown.len() < compared.rows.len() {
        lines.push(format!(
            "{} of {} rows shown (--metric/--k)",
            shown.len(),
            compared.rows.len()
        ));
    }
    let untested = (compared.rows.iter())
        .filter(|c| c.in_family && c.test.p.is_none())
        .count();
    if untested > 0 {
        lines.push(format!(
            "{untested} differences not tested: fewer than {MIN_SHARED} shared problems \
             cannot support a flag"
        ));
    }
    if md {
        return lines.iter().map(|l| format!("{l}\n\n")).collect();
    }
    (lines.iter())
        .map(|l| format!("{}\n", crate::report::wrap(l, width, "  ")))
        .collect()
}
