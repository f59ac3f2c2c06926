//! `gpassk compare <run A> <run B>`: per model (matched by name) and metric, B − A over the problems
//! both runs scored (matched by id), with a paired bootstrap interval and a flag when it excludes 0.

use crate::error::BadInput;
use crate::metrics::to_f64;
use crate::scoring::{load_run, ModelScore, RunResults};
use crate::stats::{paired_difference, Difference};
use anyhow::Result;
use clap::Args;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline run directory.
    pub run_a: PathBuf,
    /// The run compared with it.
    pub run_b: PathBuf,
    /// Exit 1 when a flagged drop (B below A) exceeds this many percentage points.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
}

/// One compared metric of one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub model: String,
    /// The metric as named in config files (`pass@16`, `g_pass@16_t0.5`, `maj@n`, …).
    pub metric: String,
    pub diff: Difference,
}

/// Pairs every metric of every model present in both runs.
pub fn compare(a: &RunResults, b: &RunResults) -> Vec<Comparison> {
    let mut out = Vec::new();
    for mb in &b.models {
        let Some(ma) = a.models.iter().find(|m| m.name == mb.name) else {
            continue;
        };
        out.extend(compare_model(ma, mb));
    }
    out
}

fn compare_model(ma: &ModelScore, mb: &ModelScore) -> Vec<Comparison> {
    let index: HashMap<&str, usize> = ma
        .problems
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    let mut out = Vec::new();
    for (cb, metric) in mb.values.metrics.iter().enumerate() {
        let Some(ca) = ma.values.column(metric) else {
            continue;
        };
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
        if let Some(diff) = paired_difference(&pairs) {
            out.push(Comparison {
                model: mb.name.clone(),
                metric: metric.to_string(),
                diff,
            });
        }
    }
    out
}

/// True when a flagged drop is larger than `pct` percentage points.
pub fn regressed(c: &Comparison, pct: f64) -> bool {
    c.diff.significant() && c.diff.delta < 0.0 && -100.0 * c.diff.delta > pct
}

pub fn run(args: CompareArgs) -> Result<crate::error::ExitStatus> {
    Ok(match run_code(args)? {
        0 => crate::error::ExitStatus::Success,
        _ => crate::error::ExitStatus::Failure,
    })
}

fn run_code(args: CompareArgs) -> Result<u8> {
    if let Some(p) = args.fail_on_regression {
        if !(p.is_finite() && p >= 0.0) {
            return Err(BadInput(format!(
                "--fail-on-regression {p}: give a number of percentage points ≥ 0"
            ))
            .into());
        }
    }
    let a = load_run(&args.run_a)?;
    let b = load_run(&args.run_b)?;
    let rows = compare(&a, &b);
    for m in &b.models {
        if !a.models.iter().any(|x| x.name == m.name) {
            eprintln!("note: model {} is only in {}", m.name, args.run_b.display());
        }
    }
    for m in &a.models {
        if !b.models.iter().any(|x| x.name == m.name) {
            eprintln!("note: model {} is only in {}", m.name, args.run_a.display());
        }
    }
    if rows.is_empty() {
        return Err(BadInput(format!(
            "{} and {} share no model with scored problems (models are matched by name)",
            args.run_a.display(),
            args.run_b.display()
        ))
        .into());
    }
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "model", "metric", "A %", "B %", "B − A", "95% CI", "problems", "flag",
    ]);
    let mut failed = Vec::new();
    for c in &rows {
        let d = &c.diff;
        let flag = match (d.significant(), d.delta > 0.0) {
            (false, _) => "",
            (true, true) => "improved",
            (true, false) => "REGRESSED",
        };
        if args.fail_on_regression.is_some_and(|p| regressed(c, p)) {
            failed.push(format!(
                "{} {} {:+.1} points",
                c.model,
                c.metric,
                100.0 * d.delta
            ));
        }
        t.add_row([
            c.model.clone(),
            c.metric.clone(),
            format!("{:.1}", 100.0 * d.a),
            format!("{:.1}", 100.0 * d.b),
            format!("{:+.1}", 100.0 * d.delta),
            format!("[{:+.1}, {:+.1}]", 100.0 * d.ci.0, 100.0 * d.ci.1),
            d.problems.to_string(),
            flag.to_string(),
        ]);
    }
    println!(
        "B − A in percentage points, paired bootstrap over shared problems\nA: {}\nB: {}\n{t}",
        args.run_a.display(),
        args.run_b.display()
    );
    let flagged = rows.iter().filter(|c| c.diff.significant()).count();
    println!("{flagged} of {} differences exclude zero", rows.len());
    if !failed.is_empty() {
        eprintln!(
            "regression beyond {} points: {}",
            args.fail_on_regression.unwrap_or_default(),
            failed.join("; ")
        );
        return Ok(1);
    }
    Ok(0)
}
