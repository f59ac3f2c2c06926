//! `gpassk compare <run A> <run B>`: per model (matched by name) and metric, B − A over the problems
//! both runs scored (matched by id), an exact paired test per row, Holm's correction over the rows,
//! and the checks that the two runs measured the same thing.

use super::{MetricFilter, OutFormat};
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::metrics::{to_f64, MetricKind};
use crate::report::{Cell, TableFormat, Tabular};
use crate::rundir::RunDir;
use crate::scoring::{load_run, ModelScore, RunResults};
use crate::stats::paired::{ALPHA, MIN_SHARED};
use crate::stats::{holm, paired_test, PairedTest};
use crate::util::printable;
use anyhow::Result;
use clap::Args;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk compare results/<old> results/<new>\n  gpassk compare results/<old> results/<new> --metric Pass@16,G-Pass@16_1.0 --format md\n  gpassk compare results/<old> results/<new> --fail-on-regression 5 --format json\n  gpassk compare --baseline previous results/<new> --fail-on-regression 5 --fail-on-drift"
)]
pub struct CompareArgs {
    /// The baseline run directory (with `--baseline previous`: the run to check).
    pub run_a: PathBuf,
    /// The run compared with it.
    #[arg(required_unless_present = "baseline")]
    pub run_b: Option<PathBuf>,
    /// `previous`: compare the one run given with the latest earlier run of the same config on
    /// the same dataset in its results folder (for cron).
    #[arg(long, value_parser = ["previous"], conflicts_with = "run_b")]
    pub baseline: Option<String>,
    /// Exit 1 when the served model or system fingerprint of a model changed between the runs.
    #[arg(long)]
    pub fail_on_drift: bool,
    /// Exit 1 when a flagged drop (B below A) exceeds this many percentage points.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// table (fits the terminal), md (to paste into a PR), json or csv (raw fractions in [0, 1]).
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutFormat,
    /// Rows shown (and checked by --fail-on-regression); Holm still corrects over every tested row.
    #[command(flatten)]
    pub filter: MetricFilter,
}

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
fn check_dataset(a: &RunResults, b: &RunResults) -> Result<(), BadInput> {
    if a.dataset_sha256 == b.dataset_sha256 {
        return Ok(());
    }
    let short = |h: &str| h.chars().take(12).collect::<String>();
    Err(BadInput(format!(
        "different datasets: A ran on {} (sha256 {}), B on {} (sha256 {}); compare needs the \
         same dataset",
        a.dataset,
        short(&a.dataset_sha256),
        b.dataset,
        short(&b.dataset_sha256)
    )))
}

/// Every setting that differs between the two runs for the models both hold, named.
pub fn setting_differences(a: &RunResults, b: &RunResults) -> Vec<String> {
    let (Some(ma), Some(mb)) = (&a.manifest, &b.manifest) else {
        return vec!["a run has no manifest: its settings cannot be checked".into()];
    };
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: {x} in A, {y} in B"));
        }
    };
    differ(
        "prompt template",
        format!("{:?}", ma.prompt_template),
        format!("{:?}", mb.prompt_template),
    );
    differ(
        "prompt hash (template and few-shot turns)",
        ma.prompt_hash.clone(),
        mb.prompt_hash.clone(),
    );
    let grading = |m: &crate::rundir::manifest::Manifest| {
        let (mode, judge) = m.grading();
        judge.map_or(mode.clone(), |j| format!("{mode} (judge {j})"))
    };
    differ("grader", grading(ma), grading(mb));
    for (name, xa) in &ma.models {
        let Some(xb) = mb.models.get(name) else {
            continue;
        };
        let (sa, sb) = (&xa.sampling, &xb.sampling);
        let mut model = |what: &str, x: String, y: String| {
            differ(&format!("{name} {what}"), x, y);
        };
        model("model id", xa.model_id.clone(), xb.model_id.clone());
        model("n", sa.n.to_string(), sb.n.to_string());
        model(
            "temperature",
            sa.temperature.to_string(),
            sb.temperature.to_string(),
        );
        model("top-p", sa.top_p.to_string(), sb.top_p.to_string());
        model(
            "top-k",
            format!("{:?}", sa.top_k),
            format!("{:?}", sb.top_k),
        );
        model(
            "max tokens",
            format!("{:?}", sa.max_tokens),
            format!("{:?}", sb.max_tokens),
        );
    }
    out
}

pub fn run(args: CompareArgs) -> Result<ExitStatus> {
    if let Some(p) = args.fail_on_regression {
        if !(p.is_finite() && p >= 0.0) {
            return Err(BadInput(format!(
                "--fail-on-regression {p}: give a number of percentage points ≥ 0"
            ))
            .into());
        }
    }
    let (run_a, run_b) = resolve_runs(&args)?;
    let a = load_run(&RunDir::at(&run_a)).map_err(bad_input)?;
    let b = load_run(&RunDir::at(&run_b)).map_err(bad_input)?;
    check_dataset(&a, &b)?;
    let names =
        |r: &RunResults| -> Vec<String> { r.models.iter().map(|m| m.name.clone()).collect() };
    for (run, here, there) in [(&run_b, &b, &a), (&run_a, &a, &b)] {
        for m in &here.models {
            if !there.models.iter().any(|x| x.name == m.name) {
                eprintln!("note: model {} is only in {}", m.name, run.display());
            }
        }
    }
    let compared = compare(&a, &b);
    if compared.rows.is_empty() {
        let why = if names(&a).iter().any(|n| names(&b).contains(n)) {
            "share no scored problem (problems are matched by id)".to_string()
        } else {
            format!(
                "share no model (models are matched by name): A has {}, B has {}",
                names(&a).join(", "),
                names(&b).join(", ")
            )
        };
        return Err(BadInput(format!("{} and {} {why}", run_a.display(), run_b.display())).into());
    }
    let differences = setting_differences(&a, &b);
    for d in &differences {
        eprintln!("WARNING: the runs differ: {d}");
    }
    let shown: Vec<&Comparison> = compared
        .rows
        .iter()
        .filter(|c| args.filter.keeps(&c.kind))
        .collect();
    if shown.is_empty() {
        return Err(BadInput(
            "--metric/--k: no compared metric matches (names as in the reports, e.g. Pass@16, G-Pass@16_0.5)".into(),
        )
        .into());
    }
    print_comparison(&args, [&run_a, &run_b], &compared, &shown, &differences)?;
    let failed: Vec<String> = match args.fail_on_regression {
        Some(p) => shown
            .iter()
            .filter(|c| regressed(c, p))
            .map(|c| {
                format!(
                    "  {} {}: {:+.1} points",
                    c.model,
                    c.metric,
                    100.0 * c.test.delta
                )
            })
            .collect(),
        None => Vec::new(),
    };
    let drifted = if args.fail_on_drift {
        report_drift(&run_a, &run_b, &b)?
    } else {
        false
    };
    if !failed.is_empty() {
        eprintln!(
            "regression beyond {} points in {} of the rows:\n{}",
            args.fail_on_regression.unwrap_or_default(),
            failed.len(),
            failed.join("\n")
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(if drifted {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Runs A and B: the two given, or with `--baseline previous` the previous comparable run and
/// the one given.
fn resolve_runs(args: &CompareArgs) -> Result<(PathBuf, PathBuf)> {
    match (&args.baseline, &args.run_b) {
        (None, Some(b)) => Ok((args.run_a.clone(), b.clone())),
        (Some(_), None) => match crate::analysis::history::previous_run(&args.run_a)? {
            Some(prev) => {
                eprintln!("baseline: {}", prev.display());
                Ok((prev, args.run_a.clone()))
            }
            None => Err(BadInput(format!(
                "--baseline previous: no earlier run of the same config on the same dataset \
                 beside {}",
                args.run_a.display()
            ))
            .into()),
        },
        _ => Err(BadInput("give two runs, or one run with --baseline previous".into()).into()),
    }
}

/// Prints every served-model or fingerprint change of the models of B; true when there was one.
fn report_drift(run_a: &Path, run_b: &Path, b: &RunResults) -> Result<bool> {
    let entry = |dir: &Path| -> Result<crate::analysis::history::RunEntry> {
        Ok(crate::analysis::history::RunEntry {
            dir: dir.to_path_buf(),
            manifest: crate::rundir::RunDir::at(dir).read_manifest()?,
        })
    };
    let (ea, eb) = (entry(run_a)?, entry(run_b)?);
    let mut drifted = false;
    for m in &b.models {
        for d in crate::analysis::history::drift(&ea, &eb, &m.name) {
            eprintln!("drift: {}: {}", m.name, printable(&d.describe()));
            drifted = true;
        }
    }
    Ok(drifted)
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
    let pct = |v: f64| Cell::num(Some(v), format!("{:.1}", 100.0 * v));
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

fn print_comparison(
    args: &CompareArgs,
    [run_a, run_b]: [&Path; 2],
    compared: &Compared,
    shown: &[&Comparison],
    differences: &[String],
) -> Result<()> {
    let format = TableFormat::from(args.format);
    let body = tabular(shown).render(format)?;
    if !format.is_human() {
        print!("{body}");
        return Ok(());
    }
    let md = format == TableFormat::Md;
    let line = |s: String| if md { format!("{s}\n") } else { s };
    println!("B − A in percentage points over the problems both runs scored; exact paired");
    println!(
        "{}",
        line("sign-flip test (McNemar for 0/1 values), Holm-corrected over the tested rows".into())
    );
    println!("{}", line(format!("A: {}", run_a.display())));
    println!("{}", line(format!("B: {}", run_b.display())));
    for d in differences {
        println!("{}", line(format!("WARNING: the runs differ: {d}")));
    }
    if !differences.is_empty() {
        println!(
            "{}",
            line("differences may come from these settings".into())
        );
    }
    print!("{body}");
    for s in &compared.skipped {
        println!("{}", line(s.clone()));
    }
    let tested = compared.rows.iter().filter(|c| c.test.p.is_some()).count();
    let flagged = compared.rows.iter().filter(|c| c.flagged()).count();
    println!(
        "{}",
        line(format!(
            "{flagged} of {tested} tested differences significant at {}% family-wise (Holm over {tested} tests)",
            100.0 * ALPHA
        ))
    );
    if shown.len() < compared.rows.len() {
        println!(
            "{}",
            line(format!(
                "{} of {} rows shown (--metric/--k)",
                shown.len(),
                compared.rows.len()
            ))
        );
    }
    let untested = compared.rows.len() - tested;
    if untested > 0 {
        println!(
            "{}",
            line(format!(
                "{untested} differences not tested: fewer than {MIN_SHARED} shared problems \
                 cannot support a flag"
            ))
        );
    }
    Ok(())
}
