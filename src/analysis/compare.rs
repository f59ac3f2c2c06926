//! Comparing two runs: per model (matched by name) and metric, B − A over the problems both runs
//! scored (matched by id), an exact paired test per row, Holm's correction over the rows, the
//! checks that the two runs measured the same thing, and the text `gpassk compare` shows.

use crate::analysis::entry::{drift, RunEntry};
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
use crate::util::{shorten_names, Paint, Tone};
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

    /// The row's flag in compare's words, the same in every output (terminal, Markdown, CSV,
    /// JSON, the viewer, history): `REGRESSED` or `improved` for a flagged change of the tested
    /// family, `untested` when too few problems are shared for a test, `exploratory`
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
            (true, Some(_), true, true) => "improved",
            (true, Some(_), true, false) => "REGRESSED",
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
            Verdict::Improved => "IMPROVED",
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
/// family rows, or why the model cannot be compared; and the drift (`drift`: (model, change)
/// pairs) every compared model shares, said once ([`gather`]), the rest under each model's
/// verdict. "Every model" is the models with a verdict of their own: one that failed in a run
/// has no fingerprint to share, and counting it would repeat the others' one change per model.
pub fn verdicts(
    a: &RunResults,
    b: &RunResults,
    compared: &Compared,
    drift: &[(String, String)],
) -> (Vec<ModelVerdict>, Vec<String>) {
    let mut names: Vec<&str> = b.models.iter().map(|m| m.name.as_str()).collect();
    for m in &a.models {
        if !names.contains(&m.name.as_str()) {
            names.push(&m.name);
        }
    }
    let mut verdicts: Vec<ModelVerdict> = names
        .into_iter()
        .map(|name| {
            let (verdict, reason) = match not_comparable(a, b, name) {
                Some(why) => (Verdict::NotComparable, why),
                None => from_rows(name, compared),
            };
            ModelVerdict {
                model: name.to_string(),
                verdict,
                reason,
                drift: Vec::new(),
            }
        })
        .collect();
    let compared_models: Vec<&str> = (verdicts.iter())
        .filter(|v| v.verdict != Verdict::NotComparable)
        .map(|v| v.model.as_str())
        .collect();
    let (shared, own) = gather(drift, &compared_models);
    for v in &mut verdicts {
        v.drift = (own.iter().filter(|(m, _)| *m == v.model))
            .map(|(_, d)| d.clone())
            .collect();
    }
    (verdicts, shared)
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
        // Every flagged metric, however many: the table beside it has the p-values.
        let listed: Vec<String> = (flagged.iter())
            .map(|c| format!("{} {:+.1}", c.metric, 100.0 * c.test.delta))
            .collect();
        return (verdict, listed.join(", "));
    }
    let problems = family[0].test.problems;
    let moved: Vec<&&Comparison> = family.iter().filter(|c| c.test.spread > 0.0).collect();
    if moved.is_empty() {
        let fewest = PairedTest::fewest_moving(ALPHA / compared.family_tested.max(1) as f64);
        return (
            verdict,
            format!(
                "every headline value is the same on all {problems} problems (a flag needs at \
                 least {fewest} of them to move one way)"
            ),
        );
    }
    let sizes: Vec<f64> = moved.iter().filter_map(|c| c.detectable).collect();
    let lo = sizes.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = sizes.iter().copied().fold(0.0, f64::max);
    let size = if sizes.is_empty() {
        return (verdict, format!("on {problems} problems"));
    } else if (100.0 * lo).round() == (100.0 * hi).round() {
        format!("{:.0}", 100.0 * hi)
    } else {
        format!("{:.0}–{:.0}", 100.0 * lo, 100.0 * hi)
    };
    (
        verdict,
        format!("80% power only from about {size} points ({problems} problems)"),
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

/// Every setting that differs between the two runs for the models both hold, named; a change
/// every model shares is said once (`all 6 models: temperature: 1 in A, 0.7 in B`).
pub fn setting_differences(a: &RunResults, b: &RunResults) -> Vec<String> {
    let (Some(ma), Some(mb)) = (&a.manifest, &b.manifest) else {
        return vec!["a run has no manifest: its settings cannot be checked".into()];
    };
    let mut run_wide = Vec::new();
    let mut per_model: Vec<(String, String)> = Vec::new();
    for d in ma.differences(mb) {
        let Some((model, what, x, y)) = setting_difference(&d) else {
            continue;
        };
        match model {
            None => run_wide.push(format!("{what}: {x} in A, {y} in B")),
            Some(m) => per_model.push((m, format!("{what}: {x} in A, {y} in B"))),
        }
    }
    let models: Vec<&str> = (b.models.iter())
        .filter(|m| a.models.iter().any(|x| x.name == m.name))
        .map(|m| m.name.as_str())
        .collect();
    let (shared, own) = gather(&per_model, &models);
    run_wide.extend(shared);
    run_wide.extend(own.into_iter().map(|(m, d)| format!("{m} {d}")));
    run_wide
}

/// What compare warns of in a difference: the model it concerns (none for the whole run), what
/// differs, and its values in A and B; `None` for the rest.
fn setting_difference(d: &Difference) -> Option<(Option<String>, String, String, String)> {
    let grading = |(mode, judge): &(String, Option<String>)| {
        judge
            .as_ref()
            .map_or(mode.clone(), |j| format!("{mode} (judge {j})"))
    };
    let debug = |v: Option<u32>| format!("{v:?}");
    Some(match d {
        Difference::PromptTemplate(c) => (
            None,
            "prompt template".into(),
            format!("{:?}", c.before),
            format!("{:?}", c.after),
        ),
        Difference::PromptHash(c) => (
            None,
            "prompt hash (template and few-shot turns)".into(),
            c.before.clone(),
            c.after.clone(),
        ),
        Difference::Grader(c) => (None, "grader".into(), grading(&c.before), grading(&c.after)),
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
            (Some(model.clone()), what.to_string(), x, y)
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
/// change of six models is one line, not six. A model outside `models` keeps its notes.
pub fn gather(notes: &[(String, String)], models: &[&str]) -> (Vec<String>, Vec<(String, String)>) {
    let everyone = |text: &str| {
        models.len() > 1 && (models.iter()).all(|m| notes.iter().any(|(n, t)| n == m && t == text))
    };
    let mut shared: Vec<String> = Vec::new();
    let mut own = Vec::new();
    for (model, text) in notes {
        if everyone(text) && models.contains(&model.as_str()) {
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

/// The flag of a row as people read it: [`Comparison::flag`] with its arrow (`▼ REGRESSED`,
/// `▲ improved`).
fn flag_text(c: &Comparison) -> &'static str {
    match c.flag() {
        "REGRESSED" => "▼ REGRESSED",
        "improved" => "▲ improved",
        other => other,
    }
}

/// The shown rows as cells for machines: raw fractions and p-values, the metric's own name.
fn tabular(shown: &[&Comparison]) -> Tabular {
    let pct = |v: f64| Cell::num(Some(v), Interval::percent(Some(v), None).to_string());
    let rows = shown
        .iter()
        .map(|c| {
            let d = &c.test;
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
                Cell::num(c.detectable, String::new()),
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
            "detectable",
            "problems",
            "family",
            "flag",
        ],
        rows,
        machine_only: &[],
        group: None,
    }
}

/// How `compare`'s human output looks: the width it fits, colour, and whether the exploratory
/// rows are shown (`--all`).
#[derive(Debug, Clone, Copy)]
pub struct Look {
    pub width: usize,
    pub paint: Paint,
    pub all: bool,
    /// Rows were chosen by --metric/--k.
    pub filtered: bool,
}

/// What `gpassk compare` prints: in a machine format the table alone. In a human one: the runs
/// (by `names`) and what changed for the whole run or every model (`notes`: settings, drift),
/// then the verdict of each model under its name (the short name the table uses `=` the full
/// one), then one table of the shown rows, a line saying how to read it, and last the rows that
/// are significant.
pub fn render(
    [run_a, run_b]: [&str; 2],
    compared: &Compared,
    verdicts: &[ModelVerdict],
    shown: &[&Comparison],
    notes: &[String],
    format: TableFormat,
    look: Look,
) -> anyhow::Result<String> {
    if !format.is_human() {
        return tabular(shown).render(format);
    }
    let md = format == TableFormat::Md;
    let width = if md { usize::MAX } else { look.width.max(40) };
    let paint = if md { Paint::off() } else { look.paint };
    let names: Vec<&str> = verdicts.iter().map(|v| v.model.as_str()).collect();
    let table = Table::of(shown, &names, width);
    let mut out = String::new();
    // A line of text; in Markdown a paragraph of its own.
    let mut line = |s: &str, indent: &str| {
        let text = if md {
            md_text(s) + "\n"
        } else {
            crate::report::wrap(s, width, indent)
        };
        out.push_str(&paint.marks(&text));
        out.push('\n');
    };
    line(&format!("A: {}", printable(run_a)), "");
    line(&format!("B: {}", printable(run_b)), "");
    for n in notes {
        line(&printable(n), "  ");
    }
    out.push_str(&verdict_block(verdicts, &table, md, width, paint));
    out.push('\n');
    out.push_str(&table.render(md, paint));
    if md {
        // A line right under a Markdown table would be read as one more row.
        out.push('\n');
    }
    out.push_str(&footer(
        compared,
        shown,
        &table,
        look.filtered,
        md,
        width,
        paint,
    ));
    Ok(out)
}

/// Each model's verdict under its name, `short = full` when the table shortens it; its own
/// drift (what every model shares is said above, once) after the verdict.
fn verdict_block(
    verdicts: &[ModelVerdict],
    table: &Table,
    md: bool,
    width: usize,
    paint: Paint,
) -> String {
    let mut out = String::new();
    for v in verdicts {
        let full = printable(&v.model);
        let short = table.short(&v.model);
        // Only what changed, or cannot be told, stands out.
        let tone = match v.verdict {
            Verdict::Regressed => Some(Tone::Bad),
            Verdict::Improved => Some(Tone::Good),
            Verdict::Mixed | Verdict::NotComparable => Some(Tone::Warn),
            Verdict::NoDetectableChange => None,
        };
        let word = match v.verdict {
            Verdict::Regressed => format!("▼ {}", v.verdict.as_str()),
            Verdict::Improved => format!("▲ {}", v.verdict.as_str()),
            Verdict::Mixed => format!("▲▼ {}", v.verdict.as_str()),
            _ => v.verdict.as_str().to_string(),
        };
        let mut what = v.reason.clone();
        for d in &v.drift {
            what.push_str(&format!("; drift: {}", printable(d)));
        }
        let named = if short == full {
            full.to_string()
        } else {
            format!("{short} = {full}")
        };
        if md {
            let named = if short == full {
                format!("**{}**", md_text(&full))
            } else {
                format!("**{}** = {}", md_text(&short), md_text(&full))
            };
            out.push_str(&format!("- {named}: {word}: {}\n", md_text(&what)));
            continue;
        }
        out.push_str(&paint.paint(&crate::report::wrap(&named, width, "  "), Tone::Strong));
        out.push('\n');
        let text = crate::report::wrap(&format!("{word}: {what}"), width - 2, "    ");
        let (head, rest) = text.split_at(word.len());
        let head = tone.map_or_else(|| head.to_string(), |t| paint.paint(head, t));
        out.push_str(&format!("  {head}{rest}\n"));
    }
    out
}

/// The rows people read: a row per shown model and metric, the model's short name on its first
/// row only. The names are shortened together ([`shorten_names`]) to what the width leaves
/// them; when too little is left, each model's rows go under its full name instead.
struct Table {
    /// Full and short names of every model of the comparison.
    names: Vec<(String, String)>,
    /// Model names in a column (else on lines of their own above their rows).
    column: bool,
    header: [&'static str; 6],
    rows: Vec<[String; 6]>,
}

impl Table {
    fn of(shown: &[&Comparison], models: &[&str], width: usize) -> Table {
        let header = ["model", "metric", "A → B", "B − A", "p (Holm)", "flag"];
        let pct = |v: f64| Interval::percent(Some(v), None).to_string();
        let a_width = shown
            .iter()
            .map(|c| pct(c.test.a).chars().count())
            .max()
            .unwrap_or(0);
        let rows: Vec<[String; 6]> = shown
            .iter()
            .map(|c| {
                let d = &c.test;
                [
                    c.model.clone(),
                    c.label(),
                    format!("{:>a_width$} → {}", pct(d.a), pct(d.b)),
                    format!("{:+.1}", 100.0 * d.delta),
                    p_text(c.adjusted),
                    flag_text(c).to_string(),
                ]
            })
            .collect();
        let widths = column_widths(&header, &rows);
        let rest: usize = widths[1..].iter().map(|w| w + 2).sum();
        // Markdown has no width of its own: the documents' short names.
        let room = if width == usize::MAX {
            crate::util::SHORT_NAME
        } else {
            width.saturating_sub(rest)
        };
        let longest = models.iter().map(|m| m.chars().count()).max().unwrap_or(0);
        let column = room >= 12 || longest <= room;
        let short = if column {
            shorten_names(models, crate::util::name_width(room))
        } else {
            models.iter().map(|m| m.to_string()).collect()
        };
        Table {
            names: models.iter().map(|m| m.to_string()).zip(short).collect(),
            column,
            header,
            rows,
        }
    }

    /// The name the table shows for `model`.
    fn short(&self, model: &str) -> String {
        (self.names.iter())
            .find(|(full, _)| full == model)
            .map_or_else(
                || printable(model).into_owned(),
                |(_, s)| printable(s).into_owned(),
            )
    }

    /// The table: padded columns on a terminal (numbers right-aligned), else Markdown.
    fn render(&self, md: bool, paint: Paint) -> String {
        let rows: Vec<[String; 6]> = (self.rows.iter().enumerate())
            .map(|(i, r)| {
                let mut r = r.clone();
                let first = i == 0 || self.rows[i - 1][0] != r[0];
                r[0] = if first || md {
                    self.short(&r[0])
                } else {
                    String::new()
                };
                r
            })
            .collect();
        if md {
            let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
            let rows: Vec<Vec<String>> = (rows.iter())
                .map(|r| r.iter().map(|c| c.trim().to_string()).collect())
                .collect();
            return crate::report::md_table(&header, &rows, 1);
        }
        let skip = usize::from(!self.column);
        let widths = column_widths(&self.header, &rows);
        let line = |cells: &[String]| -> String {
            let mut text = String::new();
            for (c, cell) in cells.iter().enumerate().skip(skip) {
                let w = widths[c];
                let pad = w.saturating_sub(cell.chars().count());
                let numeric = matches!(c, 3 | 4);
                let body = if c == 5 {
                    paint.marks(cell)
                } else {
                    cell.clone()
                };
                if numeric {
                    text.push_str(&" ".repeat(pad));
                    text.push_str(&body);
                } else {
                    text.push_str(&body);
                    text.push_str(&" ".repeat(pad));
                }
                text.push_str("  ");
            }
            text.trim_end().to_string() + "\n"
        };
        let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
        let mut out = paint.paint(line(&header).trim_end(), Tone::Faint) + "\n";
        for (i, r) in rows.iter().enumerate() {
            if !self.column && (i == 0 || self.rows[i - 1][0] != self.rows[i][0]) {
                out.push_str(&paint.paint(&self.short(&self.rows[i][0]), Tone::Strong));
                out.push('\n');
            }
            out.push_str(&line(r));
        }
        out
    }
}

/// The widest cell of each column, header included.
fn column_widths(header: &[&str; 6], rows: &[[String; 6]]) -> [usize; 6] {
    let mut widths = header.map(|h| h.chars().count());
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths
}

/// Under the table: rows left out, untested differences, how to read the table, and last the
/// significant rows by name.
fn footer(
    compared: &Compared,
    shown: &[&Comparison],
    table: &Table,
    filtered: bool,
    md: bool,
    width: usize,
    paint: Paint,
) -> String {
    let mut lines: Vec<String> = compared.skipped.clone();
    let tested = compared.family_tested;
    let untested = (compared.rows.iter())
        .filter(|c| c.in_family && c.test.p.is_none())
        .count();
    if untested > 0 {
        lines.push(format!(
            "{untested} differences not tested: fewer than {MIN_SHARED} shared problems \
             cannot support a flag"
        ));
    }
    let mut how = format!(
        "B − A in points; Holm at {}% over {tested} tests",
        100.0 * ALPHA
    );
    let hidden = compared.rows.len() - shown.len();
    if shown.iter().any(|c| !c.in_family) {
        how.push_str("; exploratory rows are never flagged");
    }
    if hidden > 0 && filtered {
        how.push_str(&format!(
            "; {} of {} rows shown (--metric/--k)",
            shown.len(),
            compared.rows.len()
        ));
    } else if hidden > 0 {
        how.push_str(&format!("; --all adds {hidden} exploratory rows"));
    }
    lines.push(how);
    lines.push(significant_line(compared, table));
    let mut out = String::new();
    for l in &lines {
        if md {
            out.push_str(&format!("{}\n\n", md_text(l)));
        } else {
            out.push_str(&paint.marks(&crate::report::wrap(l, width, "  ")));
            out.push('\n');
        }
    }
    out
}

/// `significant (5 of 30): <model> Greedy ▼, Pass@16 ▼; <model> mG-Pass@16 ▼`: every flagged
/// row of the family, shown or not, by model.
fn significant_line(compared: &Compared, table: &Table) -> String {
    let tested = compared.family_tested;
    let flagged: Vec<&Comparison> = compared.rows.iter().filter(|c| c.flagged()).collect();
    if flagged.is_empty() {
        return format!("significant: none of the {tested} tests");
    }
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for c in &flagged {
        let mark = if c.test.delta > 0.0 { "▲" } else { "▼" };
        let item = format!("{} {mark}", c.metric);
        match groups.last_mut() {
            Some((m, items)) if *m == c.model => items.push(item),
            _ => groups.push((c.model.clone(), vec![item])),
        }
    }
    let parts: Vec<String> = (groups.iter())
        .map(|(m, items)| format!("{} {}", table.short(m), items.join(", ")))
        .collect();
    format!(
        "significant ({} of {tested}): {}",
        flagged.len(),
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect()
    }

    /// Issue 40: the same change of every model is said once; a change some models share, or
    /// the change of the only model, stays per model.
    #[test]
    fn a_change_every_model_shares_is_said_once() {
        let fp = "system fingerprint: a → b (100.0% of samples)";
        let notes = pairs(&[
            ("x", fp),
            ("y", fp),
            ("z", fp),
            ("y", "served model: p → q"),
        ]);
        let (shared, own) = gather(&notes, &["x", "y", "z"]);
        assert_eq!(shared, [format!("all 3 models: {fp}")]);
        assert_eq!(own, pairs(&[("y", "served model: p → q")]));
        let (shared, own) = gather(&notes, &["x", "y", "z", "w"]);
        assert!(shared.is_empty());
        assert_eq!(own.len(), 4);
        let (shared, own) = gather(&pairs(&[("x", fp)]), &["x"]);
        assert!(shared.is_empty() && own.len() == 1);
    }
}
