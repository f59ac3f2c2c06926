//! `gpassk calc`: the metrics of one problem from n, c and k, as a table or one JSON object.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::metrics::{exact_text, problem_metrics, to_f64, Tau, GLOSSARY, GLOSSARY_INTRO};
use crate::report::wrap;
use crate::util::coarse_k_note;
use anyhow::Result;
use clap::Args;
use num_rational::BigRational;
use serde::Serialize;

/// The one line `gpassk --help` lists for `calc`.
pub const ABOUT: &str = "Compute pass@k, G-Pass@k_τ and mG-Pass@k for one problem from n, c and k.";

/// `gpassk calc --help`'s description: [`ABOUT`] and what each metric and `m` mean, in 80 columns.
pub fn long_about() -> String {
    let mut text = format!("{ABOUT}\n\n{}\n", wrap(GLOSSARY_INTRO, 80, ""));
    for (term, meaning) in GLOSSARY {
        let indent = " ".repeat(15);
        let line = format!("  {term:<12} {meaning}");
        text.push_str(&format!("{}\n", wrap(&line, 80, &indent)));
    }
    text
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk calc --n 48 --c 30 --k 16\n  gpassk calc --n 16 --c 9 --k 8 --tau 0.5 --tau 1/3 --json"
)]
pub struct CalcArgs {
    /// Samples drawn for the problem.
    #[arg(long)]
    pub n: u64,
    /// Correct samples among them.
    #[arg(long)]
    pub c: u64,
    /// Samples per attempt (k ≤ n).
    #[arg(long)]
    pub k: u64,
    /// Thresholds τ in [0, 1] as decimals or fractions; repeat the flag [default: 0.25 0.5 0.75 1.0].
    #[arg(long = "tau")]
    pub taus: Vec<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Value {
    exact: String,
    value: f64,
}

impl From<&BigRational> for Value {
    fn from(x: &BigRational) -> Self {
        Value {
            exact: exact_text(x),
            value: to_f64(x),
        }
    }
}

#[derive(Serialize)]
struct GValue {
    tau: String,
    threshold: u64,
    exact: String,
    value: f64,
}

#[derive(Serialize)]
struct CalcOutput {
    n: u64,
    c: u64,
    k: u64,
    pass_at_k: Value,
    g_pass_at_k: Vec<GValue>,
    mg_pass_at_k: Value,
}

pub fn run(args: CalcArgs) -> Result<ExitStatus> {
    let taus: Vec<Tau> = if args.taus.is_empty() {
        Tau::default_grid()
    } else {
        args.taus
            .iter()
            .map(|t| {
                t.parse::<Tau>()
                    .map_err(|e| BadInput(format!("--tau: {e}")))
            })
            .collect::<Result<_, _>>()?
    };
    let m = problem_metrics(args.n, args.c, args.k, &taus).map_err(bad_input)?;
    let out = CalcOutput {
        n: args.n,
        c: args.c,
        k: args.k,
        pass_at_k: (&m.pass_at_k).into(),
        g_pass_at_k: taus
            .iter()
            .zip(&m.g_pass_at_k)
            .map(|(t, g)| GValue {
                tau: t.text().to_string(),
                threshold: t.threshold(args.k),
                exact: exact_text(g),
                value: to_f64(g),
            })
            .collect(),
        mg_pass_at_k: (&m.mg_pass_at_k).into(),
    };
    if let Some(note) = coarse_k_note(args.k, &[("this n", args.n)]) {
        eprintln!("{note}");
    }
    if args.k % 2 == 1 && args.k > 1 {
        eprintln!("note: k is odd: mG-Pass@k is the paper's (2/k)·Σ over integer thresholds, not the integral over τ");
    }
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        print!("{}", table(&out));
    }
    Ok(ExitStatus::Success)
}

fn table(out: &CalcOutput) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(vec!["metric", "m", "value", "exact"]);
    let short = |e: &str| {
        if e.len() > 40 {
            "(long: see --json)".to_string()
        } else {
            e.to_string()
        }
    };
    t.add_row(vec![
        format!("pass@{}", out.k),
        "1".into(),
        format!("{:.6}", out.pass_at_k.value),
        short(&out.pass_at_k.exact),
    ]);
    for g in &out.g_pass_at_k {
        t.add_row(vec![
            format!("G-Pass@{}_{}", out.k, g.tau),
            g.threshold.to_string(),
            format!("{:.6}", g.value),
            short(&g.exact),
        ]);
    }
    t.add_row(vec![
        format!("mG-Pass@{}", out.k),
        format!("{}..{}", out.k.div_ceil(2) + 1, out.k),
        format!("{:.6}", out.mg_pass_at_k.value),
        short(&out.mg_pass_at_k.exact),
    ]);
    format!("n = {}, c = {}, k = {}\n{t}\n", out.n, out.c, out.k)
}
