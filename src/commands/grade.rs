//! `gpassk grade`: grade one pair or a JSONL file of cases and report agreement with labels.

use crate::error::ExitStatus;
use crate::grade::{
    gold_answer, grade_with_options, normal_form, GradeConfig, ListOrder, Outcome, Percent, Policy,
    StyledLetters, Tolerance, MAX_DECIMALS,
};
use crate::util::par_map;
use anyhow::Context;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Exit code for unusable input (missing file, malformed line).
const EXIT_BAD_INPUT: i32 = 2;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Gold answer (clean, or wrapped in `$…$` / `\boxed{}`).
    #[arg(
        long,
        requires = "pred",
        conflicts_with = "cases",
        allow_hyphen_values = true
    )]
    pub gold: Option<String>,
    /// Model response to grade against --gold.
    #[arg(long, requires = "gold", allow_hyphen_values = true)]
    pub pred: Option<String>,
    /// JSONL file of {"gold","pred"[,"expected","source","options"]} cases.
    #[arg(long)]
    pub cases: Option<PathBuf>,
    /// Options of a multiple-choice problem, in order A, B, … (repeatable; with --gold).
    #[arg(long = "option", allow_hyphen_values = true)]
    pub options: Vec<String>,
    /// One JSON object per case instead of the human-readable report.
    #[arg(long)]
    pub json: bool,
    /// Decimals agree when equal after rounding to this many places (default 6, as Math-Verify).
    #[arg(long, conflicts_with = "rel_tol")]
    pub precision: Option<u32>,
    /// Compare decimals by relative difference instead of rounding.
    #[arg(long)]
    pub rel_tol: Option<f64>,
    /// Unbracketed lists `1, 2`: "any" order (default) or "as_written".
    #[arg(long, default_value = "any")]
    pub list_order: String,
    /// A value written with %: "either" (28% matches 28 and 0.28; default) or "strip" (28 only).
    #[arg(long, default_value = "either")]
    pub percent: String,
    /// `\mathcal{B}` vs `B`: "distinct" (default) or "same".
    #[arg(long, default_value = "distinct")]
    pub styled_letters: String,
    /// Extraction regex tried before the built-in rules (repeatable).
    #[arg(long = "extract-regex")]
    pub extract_regex: Vec<String>,
}

/// One graded case.
struct Graded {
    gold: String,
    pred: String,
    extracted: Option<String>,
    equivalent: bool,
}

fn grade_pair(gold: &str, pred: &str, options: &[String], cfg: &GradeConfig) -> Graded {
    let v = grade_with_options(gold, pred, options, cfg);
    Graded {
        gold: gold.to_string(),
        pred: pred.to_string(),
        extracted: v.extracted,
        equivalent: v.outcome == Outcome::Correct,
    }
}

/// The grading policy from the flags, or a one-line error.
fn policy(args: &Args) -> Result<Policy, String> {
    let tolerance = match (args.precision, args.rel_tol) {
        (Some(d), _) if d > MAX_DECIMALS => {
            return Err(format!(
                "--precision {d}: at most {MAX_DECIMALS} decimal places"
            ))
        }
        (Some(d), _) => Tolerance::Decimals(d),
        (None, Some(t)) if !(t.is_finite() && t >= 0.0) => {
            return Err(format!("--rel-tol {t}: must be a non-negative number"))
        }
        (None, Some(t)) => Tolerance::Relative(t),
        (None, None) => Tolerance::default(),
    };
    let bad = |flag: &str, v: &str, ok: &str| format!("--{flag} {v:?}: use {ok}");
    Ok(Policy {
        tolerance,
        list_order: ListOrder::parse(&args.list_order)
            .ok_or_else(|| bad("list-order", &args.list_order, "\"any\" or \"as_written\""))?,
        percent: Percent::parse(&args.percent)
            .ok_or_else(|| bad("percent", &args.percent, "\"either\" or \"strip\""))?,
        styled_letters: StyledLetters::parse(&args.styled_letters).ok_or_else(|| {
            bad(
                "styled-letters",
                &args.styled_letters,
                "\"distinct\" or \"same\"",
            )
        })?,
    })
}

fn json_line(g: &Graded) -> String {
    json!({"gold": g.gold, "pred": g.pred, "extracted": g.extracted, "equivalent": g.equivalent})
        .to_string()
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    Ok(match run_code(args)? {
        0 => ExitStatus::Success,
        EXIT_BAD_INPUT => ExitStatus::BadInput,
        _ => ExitStatus::Failure,
    })
}

fn run_code(args: Args) -> anyhow::Result<i32> {
    let mut cfg = match policy(&args) {
        Ok(policy) => GradeConfig {
            policy,
            ..GradeConfig::default()
        },
        Err(msg) => {
            eprintln!("error: {msg}");
            return Ok(EXIT_BAD_INPUT);
        }
    };
    for (i, r) in args.extract_regex.iter().enumerate() {
        match regex::Regex::new(r) {
            Ok(re) => cfg.extract_regex.push(re),
            Err(e) => {
                let e = crate::config::regex_error(&e);
                eprintln!("error: --extract-regex #{}: {e}", i + 1);
                return Ok(EXIT_BAD_INPUT);
            }
        }
    }
    if let Some(path) = &args.cases {
        return run_cases(path, args.json, &cfg);
    }
    let (Some(gold), Some(pred)) = (&args.gold, &args.pred) else {
        eprintln!("error: give --gold and --pred, or --cases FILE.jsonl");
        return Ok(EXIT_BAD_INPUT);
    };
    let g = grade_pair(gold, pred, &args.options, &cfg);
    if args.json {
        println!("{}", json_line(&g));
        return Ok(0);
    }
    let gold_clean = gold_answer(gold);
    let (gold_norm, gold_key) = normal_form(&gold_clean);
    println!("gold:       {gold_clean}");
    println!("  normal:   {gold_norm}");
    println!("  key:      {gold_key}");
    match &g.extracted {
        Some(e) => {
            let (norm, key) = normal_form(e);
            println!("extracted:  {e}");
            println!("  normal:   {norm}");
            println!("  key:      {key}");
            println!(
                "verdict:    {}",
                if g.equivalent { "correct" } else { "wrong" }
            );
        }
        None => {
            println!("extracted:  (nothing)");
            println!("verdict:    no_answer");
        }
    }
    Ok(0)
}

struct Case {
    line: usize,
    gold: String,
    pred: String,
    expected: Option<bool>,
    source: Option<String>,
    options: Vec<String>,
}

fn read_cases(path: &std::path::Path) -> Result<Vec<Case>, String> {
    let shown = path.display().to_string();
    let text = crate::util::read_bounded_string(path, crate::util::MAX_DATA_FILE)
        .map_err(|e| format!("{shown}: {e}"))?;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, line))
        .collect();
    // Lines parse on every core; the first bad one in file order is the one reported.
    par_map(&lines, |&(n, line)| parse_case(&shown, n, line))
        .into_iter()
        .collect()
}

fn parse_case(shown: &str, n: usize, line: &str) -> Result<Case, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("{shown}:{n}: bad JSON: {e}"))?;
    let field = |k: &str| -> Result<String, String> {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{shown}:{n}: missing string field \"{k}\""))
    };
    let expected = match v.get("expected") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(format!("{shown}:{n}: \"expected\" must be true or false")),
    };
    let source = match v.get("source") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(format!("{shown}:{n}: \"source\" must be a string")),
    };
    let bad_options = || format!("{shown}:{n}: \"options\" must be a list of strings");
    let options = match v.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|o| o.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad_options)?,
        Some(_) => return Err(bad_options()),
    };
    Ok(Case {
        line: n,
        gold: field("gold")?,
        pred: field("pred")?,
        expected,
        source,
        options,
    })
}

fn short(s: &str, max: usize) -> String {
    let flat: String = s.chars().map(|c| if c == '\n' { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let tail: String = flat
        .chars()
        .rev()
        .take(max)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{tail}")
}

fn run_cases(path: &std::path::Path, as_json: bool, cfg: &GradeConfig) -> anyhow::Result<i32> {
    let cases = match read_cases(path) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("error: {msg}");
            return Ok(EXIT_BAD_INPUT);
        }
    };
    let mut labelled = 0usize;
    let mut agree = 0usize;
    let mut correct = 0usize;
    let mut disagreements = Vec::new();
    let mut out = String::new();
    // Per source: (labelled, agreeing).
    let mut by_source: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let graded = par_map(&cases, |c| grade_pair(&c.gold, &c.pred, &c.options, cfg));
    for (c, g) in cases.iter().zip(graded) {
        if let (Some(src), Some(exp)) = (&c.source, c.expected) {
            let e = by_source.entry(src.as_str()).or_default();
            e.0 += 1;
            e.1 += usize::from(exp == g.equivalent);
        }
        if g.equivalent {
            correct += 1;
        }
        if let Some(exp) = c.expected {
            labelled += 1;
            if exp == g.equivalent {
                agree += 1;
            } else {
                disagreements.push((c, exp, g.extracted.clone()));
            }
        }
        if as_json {
            out.push_str(&json_line(&g));
            out.push('\n');
        }
    }
    crate::util::write_stdout(out.as_bytes()).context("writing results")?;
    let summary_to_stderr = as_json;
    let mut report = String::new();
    report.push_str(&format!(
        "graded {} cases: {} equivalent\n",
        cases.len(),
        correct
    ));
    if labelled > 0 {
        let pct = 100.0 * agree as f64 / labelled as f64;
        report.push_str(&format!(
            "agreement with expected: {agree}/{labelled} ({pct:.1}%)\n"
        ));
        for (src, (n, ok)) in &by_source {
            let pct = 100.0 * *ok as f64 / *n as f64;
            report.push_str(&format!("  source {src}: {ok}/{n} ({pct:.1}%)\n"));
        }
        for (c, exp, extracted) in &disagreements {
            let (gold, pred) = (short(&c.gold, 60), short(&c.pred, 80));
            report.push_str(&format!(
                "  line {}: expected {exp}, got {}; gold {gold:?}; extracted {:?}; pred {pred:?}\n",
                c.line,
                !exp,
                extracted.as_deref().unwrap_or("(nothing)")
            ));
        }
    }
    if summary_to_stderr {
        eprint!("{report}");
    } else {
        crate::util::write_stdout(report.as_bytes()).context("writing report")?;
    }
    Ok(0)
}
