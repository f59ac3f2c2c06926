//! `gpassk grade`: grade one pair or a JSONL file of cases and report agreement with labels.

use crate::error::ExitStatus;
use crate::grade::{equivalent, extract, gold_answer, normal_form, GradeConfig};
use anyhow::Context;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Exit code for unusable input (missing file, malformed line).
const EXIT_BAD_INPUT: i32 = 2;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Gold answer (clean, or wrapped in `$…$` / `\boxed{}`).
    #[arg(long, requires = "pred", conflicts_with = "cases")]
    pub gold: Option<String>,
    /// Model response to grade against --gold.
    #[arg(long, requires = "gold")]
    pub pred: Option<String>,
    /// JSONL file of {"gold","pred"[,"expected"]} cases.
    #[arg(long)]
    pub cases: Option<PathBuf>,
    /// One JSON object per case instead of the human-readable report.
    #[arg(long)]
    pub json: bool,
    /// Relative tolerance for decimals.
    #[arg(long, default_value_t = 1e-6)]
    pub rel_tol: f64,
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

fn grade_pair(gold: &str, pred: &str, cfg: &GradeConfig) -> Graded {
    let extracted = extract(pred, cfg);
    let ok = extracted
        .as_deref()
        .is_some_and(|e| equivalent(&gold_answer(gold), e, cfg));
    Graded {
        gold: gold.to_string(),
        pred: pred.to_string(),
        extracted,
        equivalent: ok,
    }
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
    if !(args.rel_tol.is_finite() && args.rel_tol >= 0.0) {
        eprintln!(
            "error: --rel-tol {}: must be a finite non-negative number",
            args.rel_tol
        );
        return Ok(EXIT_BAD_INPUT);
    }
    let mut cfg = GradeConfig {
        rel_tol: args.rel_tol,
        ..GradeConfig::default()
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
    let g = grade_pair(gold, pred, &cfg);
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
}

fn read_cases(path: &PathBuf) -> Result<Vec<Case>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("{shown}:{n}: bad JSON: {e}"))?;
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
        cases.push(Case {
            line: n,
            gold: field("gold")?,
            pred: field("pred")?,
            expected,
        });
    }
    Ok(cases)
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

fn run_cases(path: &PathBuf, as_json: bool, cfg: &GradeConfig) -> anyhow::Result<i32> {
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
    for c in &cases {
        let g = grade_pair(&c.gold, &c.pred, cfg);
        if g.equivalent {
            correct += 1;
        }
        if let Some(exp) = c.expected {
            labelled += 1;
            if exp == g.equivalent {
                agree += 1;
            } else {
                disagreements.push((c.line, exp, g.extracted.clone()));
            }
        }
        if as_json {
            out.push_str(&json_line(&g));
            out.push('\n');
        }
    }
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .context("writing results")?;
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
        for (line, exp, extracted) in &disagreements {
            let c = cases.iter().find(|c| c.line == *line);
            let (gold, pred) = c.map_or((String::new(), String::new()), |c| {
                (short(&c.gold, 60), short(&c.pred, 80))
            });
            report.push_str(&format!(
                "  line {line}: expected {exp}, got {}; gold {gold:?}; extracted {:?}; pred {pred:?}\n",
                !exp,
                extracted.as_deref().unwrap_or("(nothing)")
            ));
        }
    }
    if summary_to_stderr {
        eprint!("{report}");
    } else {
        stdout
            .write_all(report.as_bytes())
            .context("writing report")?;
    }
    Ok(0)
}
