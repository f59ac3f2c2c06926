//! `gpassk grade`: grade one pair or a JSONL file of cases and report agreement with labels.

use crate::error::ExitStatus;
use crate::grade::{
    gold_answer, grade_with_options, normal_form, DecimalMark, FoundBy, GradeConfig, ListOrder,
    Outcome, Percent, Policy, StyledLetters, Tolerance, MAX_DECIMALS,
};
use crate::util::{par_map, Lines, MAX_LINE};
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
    /// A comma between a gold's digits: "auto" (default: by its shape; `0,1` is two values,
    /// `1,234` thousands, `0,111` a decimal), "point" (never a decimal) or "comma" (always).
    #[arg(long, default_value = "auto")]
    pub decimal_mark: String,
    /// Extraction regex tried before the built-in rules (repeatable).
    #[arg(long = "extract-regex")]
    pub extract_regex: Vec<String>,
}

/// One graded case.
struct Graded {
    extracted: Option<String>,
    found_by: FoundBy,
    equivalent: bool,
}

fn grade_pair(gold: &str, pred: &str, options: &[String], cfg: &GradeConfig) -> Graded {
    let v = grade_with_options(gold, pred, options, cfg);
    Graded {
        extracted: v.extracted,
        found_by: v.found_by,
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
        decimal_mark: DecimalMark::parse(&args.decimal_mark).ok_or_else(|| {
            bad(
                "decimal-mark",
                &args.decimal_mark,
                "\"auto\", \"point\" or \"comma\"",
            )
        })?,
    })
}

fn json_line(gold: &str, pred: &str, g: &Graded) -> String {
    json!({
        "gold": gold,
        "pred": pred,
        "extracted": g.extracted,
        "found_by": g.found_by,
        "equivalent": g.equivalent
    })
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
        println!("{}", json_line(gold, pred, &g));
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
            println!("  found by: {}", g.found_by);
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

/// The fields of a case line that grading reads, each as the JSON value written (the last one
/// when a key repeats, as a parsed object keeps it). Other fields (a case file's provenance,
/// settings, notes) are checked for syntax and skipped, not built into values: building them
/// cost as much as grading a short case. So a value there that JSON allows but a parsed value
/// cannot hold (`1e400`, an unpaired `\ud800`) no longer stops grading; a syntax error still
/// does. A line that is not an object has none of the fields.
#[derive(Default)]
struct CaseFields {
    gold: Option<Value>,
    pred: Option<Value>,
    expected: Option<Value>,
    source: Option<Value>,
    options: Option<Value>,
}

impl<'de> serde::Deserialize<'de> for CaseFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CaseFieldsVisitor)
    }
}

struct CaseFieldsVisitor;

impl<'de> serde::de::Visitor<'de> for CaseFieldsVisitor {
    type Value = CaseFields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CaseFields, A::Error> {
        let mut c = CaseFields::default();
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "gold" => &mut c.gold,
                "pred" => &mut c.pred,
                "expected" => &mut c.expected,
                "source" => &mut c.source,
                "options" => &mut c.options,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(c)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<CaseFields, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(CaseFields::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<CaseFields, E> {
        Ok(CaseFields::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<CaseFields, E> {
        Ok(CaseFields::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<CaseFields, E> {
        Ok(CaseFields::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<CaseFields, E> {
        Ok(CaseFields::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<CaseFields, E> {
        Ok(CaseFields::default())
    }

    fn visit_unit<E>(self) -> Result<CaseFields, E> {
        Ok(CaseFields::default())
    }
}

fn parse_case(shown: &str, n: usize, line: &str) -> Result<Case, String> {
    let mut v: CaseFields =
        serde_json::from_str(line).map_err(|e| format!("{shown}:{n}: bad JSON: {e}"))?;
    let expected = match &v.expected {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(format!("{shown}:{n}: \"expected\" must be true or false")),
    };
    let source = match v.source.take() {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(format!("{shown}:{n}: \"source\" must be a string")),
    };
    let bad_options = || format!("{shown}:{n}: \"options\" must be a list of strings");
    let options = match &v.options {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|o| o.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad_options)?,
        Some(_) => return Err(bad_options()),
    };
    // Gold and response are moved out of the parsed line, not copied.
    let field = |value: Option<Value>, k: &str| match value {
        Some(Value::String(s)) => Ok(s),
        _ => Err(format!("{shown}:{n}: missing string field \"{k}\"")),
    };
    Ok(Case {
        line: n,
        gold: field(v.gold, "gold")?,
        pred: field(v.pred, "pred")?,
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

/// Lines graded together: enough to keep both cores busy, few enough that memory stays flat.
const BATCH_LINES: usize = 16384;
const BATCH_BYTES: usize = 64 << 20;

/// What the summary keeps of a file's cases while they stream past.
#[derive(Default)]
struct Tally {
    cases: usize,
    correct: usize,
    labelled: usize,
    agree: usize,
    /// Per source: (labelled, agreeing).
    by_source: BTreeMap<String, (usize, usize)>,
    /// Per way the answer was found: (cases, labelled, agreeing).
    by_found: BTreeMap<FoundBy, (usize, usize, usize)>,
    /// Line, expected verdict, what was extracted, gold and response shortened.
    disagreements: Vec<(usize, bool, Option<String>, String, String)>,
}

impl Tally {
    fn add(&mut self, c: &Case, g: &Graded) {
        self.cases += 1;
        self.correct += usize::from(g.equivalent);
        let found = self.by_found.entry(g.found_by).or_default();
        found.0 += 1;
        let Some(exp) = c.expected else { return };
        found.1 += 1;
        found.2 += usize::from(exp == g.equivalent);
        if let Some(src) = &c.source {
            let e = self.by_source.entry(src.clone()).or_default();
            e.0 += 1;
            e.1 += usize::from(exp == g.equivalent);
        }
        self.labelled += 1;
        if exp == g.equivalent {
            self.agree += 1;
        } else {
            let (gold, pred) = (short(&c.gold, 60), short(&c.pred, 80));
            (self.disagreements).push((c.line, exp, g.extracted.clone(), gold, pred));
        }
    }

    fn report(&self) -> String {
        let mut report = format!("graded {} cases: {} equivalent\n", self.cases, self.correct);
        if self.labelled == 0 {
            report.push_str(&self.found_report());
            return report;
        }
        let (agree, labelled) = (self.agree, self.labelled);
        let pct = 100.0 * agree as f64 / labelled as f64;
        report.push_str(&format!(
            "agreement with expected: {agree}/{labelled} ({pct:.1}%)\n"
        ));
        for (src, (n, ok)) in &self.by_source {
            let pct = 100.0 * *ok as f64 / *n as f64;
            report.push_str(&format!("  source {src}: {ok}/{n} ({pct:.1}%)\n"));
        }
        report.push_str(&self.found_report());
        for (line, exp, extracted, gold, pred) in &self.disagreements {
            report.push_str(&format!(
                "  line {line}: expected {exp}, got {}; gold {gold:?}; extracted {:?}; pred {pred:?}\n",
                !exp,
                extracted.as_deref().unwrap_or("(nothing)")
            ));
        }
        report
    }
}

impl Tally {
    /// One line per way answers were found (in the order the rules are tried): how many cases,
    /// and the agreement among the labelled ones; `last_math` and `last_number` are guesses.
    fn found_report(&self) -> String {
        let mut out = String::new();
        for (by, (cases, labelled, agree)) in &self.by_found {
            let guess = if by.is_heuristic() {
                " (heuristic)"
            } else {
                ""
            };
            out.push_str(&format!("  found_by {by}{guess}: {cases} cases"));
            if *labelled > 0 {
                let pct = 100.0 * *agree as f64 / *labelled as f64;
                out.push_str(&format!(", agreement {agree}/{labelled} ({pct:.1}%)"));
            }
            out.push('\n');
        }
        out
    }
}

/// Reads the next batch of non-empty lines, numbered (empty at the end of the file), and the
/// error that stopped reading, if one did: the lines before it are still graded.
fn next_batch(lines: &mut Lines, shown: &str) -> (Vec<(usize, String)>, Option<String>) {
    let (mut batch, mut bytes, mut buf) = (Vec::new(), 0, Vec::new());
    while batch.len() < BATCH_LINES && bytes < BATCH_BYTES {
        let n = match lines.next_into(&mut buf) {
            Ok(Some(n)) => n,
            Ok(None) => break,
            Err(e) => return (batch, Some(format!("{shown}: {e}"))),
        };
        let Ok(line) = std::str::from_utf8(&buf) else {
            return (batch, Some(format!("{shown}:{n}: not UTF-8 text")));
        };
        if !line.trim().is_empty() {
            bytes += line.len();
            batch.push((n, line.to_string()));
        }
    }
    (batch, None)
}

/// Streams the file in batches graded on every core; `--json` lines are written as each batch
/// ends, so a bad line stops the command after the lines before it were written.
fn run_cases(path: &std::path::Path, as_json: bool, cfg: &GradeConfig) -> anyhow::Result<i32> {
    let shown = path.display().to_string();
    let mut lines = match Lines::open(path, MAX_LINE) {
        Ok(lines) => lines,
        Err(e) => {
            eprintln!("error: {shown}: {e}");
            return Ok(EXIT_BAD_INPUT);
        }
    };
    let mut tally = Tally::default();
    loop {
        let (batch, stopped) = next_batch(&mut lines, &shown);
        if batch.is_empty() && stopped.is_none() {
            break;
        }
        let graded = par_map(&batch, |(n, line)| {
            let c = parse_case(&shown, *n, line)?;
            let g = grade_pair(&c.gold, &c.pred, &c.options, cfg);
            Ok::<_, String>((c, g))
        });
        let mut out = String::new();
        for result in graded {
            let (c, g) = match result {
                Ok(graded) => graded,
                Err(msg) => {
                    crate::util::write_stdout(out.as_bytes()).context("writing results")?;
                    eprintln!("error: {msg}");
                    return Ok(EXIT_BAD_INPUT);
                }
            };
            tally.add(&c, &g);
            if as_json {
                out.push_str(&json_line(&c.gold, &c.pred, &g));
                out.push('\n');
            }
        }
        crate::util::write_stdout(out.as_bytes()).context("writing results")?;
        if let Some(msg) = stopped {
            eprintln!("error: {msg}");
            return Ok(EXIT_BAD_INPUT);
        }
    }
    let report = tally.report();
    if as_json {
        eprint!("{report}");
    } else {
        crate::util::write_stdout(report.as_bytes()).context("writing report")?;
    }
    Ok(0)
}
