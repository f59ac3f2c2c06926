//! Answer-level equivalence: relations, labels, sets, tuples, intervals, matrices and scalars.

use super::eval::{eval, exact, has_decimal, to_f64, C, POINTS};
use super::expr::{parse, Expr, RelOp};
use super::extract::choice_letters;
use super::normalize::{holds, normalize_latex, strip_styled_letters, text_form};
use super::{GradeConfig, ListOrder, Percent, StyledLetters, Tolerance};
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use regex::Regex;
use std::sync::{LazyLock, OnceLock};

/// At most this many `±` expansions per answer (2^3 sign choices).
const MAX_PM: usize = 3;
/// Answers longer than this skip LaTeX normalisation.
const MAX_NORMALIZE_BYTES: usize = 20_000;
/// Longer answers are compared as text only.
const MAX_PARSE_BYTES: usize = 8_000;
/// Tolerance floor for comparing symbolic values evaluated in floating point.
const FLOAT_TOL: f64 = 1e-8;

/// An extracted answer after normalisation and parsing.
pub(super) struct ParsedAnswer {
    pub norm: String,
    pub text: String,
    pub node: Option<Expr>,
    /// Written with `%` (or "percent"), which normalisation drops.
    pub percent: bool,
    /// Several option letters (`A, C`, `ACD`), as a set: bit 0 is A.
    pub letters: Option<u8>,
    /// The value of an answer written with words around it: a value and a unit (`15000 kcal
    /// m^{-2} yr^{-1}`), or values each followed by prose (`E_1 with probability 1/3, and E_2 …`).
    /// Read only when the answer and its gold differ otherwise (most never need it).
    unit_value: OnceLock<Option<Expr>>,
}

impl ParsedAnswer {
    /// The value of an answer written with words around it ([`ParsedAnswer::unit_value`]).
    fn value_in_words(&self) -> Option<&Expr> {
        self.unit_value
            .get_or_init(|| {
                if self.node.as_ref().is_some_and(is_constant) {
                    return None;
                }
                value_before_unit(&self.norm).or_else(|| values_before_prose(&self.norm))
            })
            .as_ref()
    }
}

/// `3,5`: two integers joined by a bare comma, which may be a decimal comma.
static COMMA_PAIR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(-?\d+),(\d+)$").expect("static regex"));

/// A gold of two numbers joined by a comma read with a decimal comma (`0,111` → 0.111), and
/// whether its shape says it is one: not one digit after the comma (`0,1` is a list) and not
/// thousands (`1,234`).
pub(super) fn decimal_comma_reading(gold: &ParsedAnswer) -> Option<(ParsedAnswer, bool)> {
    if !gold.norm.contains(',') {
        return None;
    }
    let t = gold.norm.trim();
    // `\d` is any Unicode digit, so every char numeric is necessary for a match: most golds with
    // a comma (`(1, 2)`, `x, y`) fail this before the regex.
    if !t.chars().all(|c| c == ',' || c == '-' || c.is_numeric()) {
        return None;
    }
    let c = COMMA_PAIR.captures(t)?;
    let (int, frac) = (c[1].trim_start_matches('-'), &c[2]);
    let thousands = frac.len() == 3 && (1..=3).contains(&int.len()) && !int.starts_with('0');
    let decimal = frac.len() > 1 && !thousands;
    Some((prepare(&format!("{}.{}", &c[1], frac)), decimal))
}

pub(super) fn prepare(raw: &str) -> ParsedAnswer {
    if raw.len() > MAX_NORMALIZE_BYTES {
        // Far too long to be a final answer: compare the text as is.
        let norm = raw.trim().to_string();
        let text = text_form(&norm);
        return ParsedAnswer {
            norm,
            text,
            node: None,
            percent: false,
            letters: None,
            unit_value: OnceLock::new(),
        };
    }
    let percent = raw.contains('%') || holds(raw, "ercent") || holds(raw, "pct");
    let norm = truth_list(normalize_latex(raw));
    let text = text_form(&norm);
    let node = if norm.len() > MAX_PARSE_BYTES {
        None
    } else {
        parse(&norm).or_else(|| final_value(&norm)).map(simplify)
    };
    let letters = letter_set(&norm);
    ParsedAnswer {
        norm,
        text,
        node,
        percent,
        letters,
        unit_value: OnceLock::new(),
    }
}

/// A bracketed list of truth values (`[True, False, True]`), as TheoremQA's golds write them.
static TRUTH_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\[\s*(?:true|false)(?:\s*,\s*(?:true|false))+\s*\]$").expect("static regex")
});

/// `[True, False]` → `[1, 0]`: a list of truth values is the list of their 0/1 values, the way
/// TheoremQA writes such golds.
fn truth_list(norm: String) -> String {
    let t = norm.trim();
    if !t.starts_with('[') || !TRUTH_LIST.is_match(t) {
        return norm;
    }
    let items: Vec<&str> = norm.trim()[1..norm.trim().len() - 1]
        .split(',')
        .map(|w| {
            if w.trim().eq_ignore_ascii_case("true") {
                "1"
            } else {
                "0"
            }
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// A unit after a value: words (`kcal`, `m`, `gm`), powers (`^{-2}`, `^3`), `/` and `\cdot`.
static UNIT_TAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z]+|\s+|~|\^\s*\{?\s*[-+]?\s*\d+\s*\}?|/|\*|\\cdot|\.|\(|\))+$")
        .expect("static regex")
});

/// `E_1 with probability \frac13, and E_2 with probability \frac23` → `E_1, E_2`: the answer's
/// items (split at commas, "and", "or"), each cut where its prose starts.
fn values_before_prose(norm: &str) -> Option<Expr> {
    if norm.len() > 400 || prose_at(norm).is_none() {
        return None;
    }
    let mut heads = Vec::new();
    for item in split_items(norm) {
        // A connecting word opens the item (`and E_2 …`).
        let item = item.trim();
        let item = ["and ", "or "]
            .iter()
            .find_map(|w| item.strip_prefix(w))
            .unwrap_or(item);
        let head = prose_at(item).map_or(item, |at| &item[..at]);
        let head = head.trim().trim_end_matches([',', ':', ';']).trim();
        if head.is_empty() {
            return None;
        }
        heads.push(head);
    }
    if heads.is_empty() {
        return None;
    }
    parse(&heads.join(", ")).map(simplify)
}

/// Items of an answer at its top-level commas.
fn split_items(norm: &str) -> Vec<&str> {
    let (mut depth, mut from, mut out) = (0i32, 0, Vec::new());
    for (i, c) in norm.char_indices() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&norm[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&norm[from..]);
    out
}

/// Where the first prose word (three letters or more, not a command nor a function's name;
/// "or" counts) starts in `s`.
fn prose_at(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let word = &s[start..i];
        let command = start > 0 && b[start - 1] == b'\\';
        let math = matches!(
            word,
            "sin"
                | "cos"
                | "tan"
                | "log"
                | "exp"
                | "sqrt"
                | "frac"
                | "min"
                | "max"
                | "gcd"
                | "lcm"
                | "det"
                | "mod"
        );
        if !command && !math && (word.len() >= 3 || matches!(word, "or")) {
            return Some(start);
        }
    }
    None
}

/// `15000  kcal m ^{-2}` → 15000, `[12, 8, 5] mW` → the list: a constant value, a space, then only
/// a unit (a run of two letters or more, or one of the one-letter SI units).
fn value_before_unit(norm: &str) -> Option<Expr> {
    let b = norm.as_bytes();
    let (mut depth, mut i) = (0i32, 0);
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 1;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                continue;
            }
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            c if c.is_ascii_alphabetic() && depth == 0 => break,
            _ => {}
        }
        i += 1;
    }
    let (value, tail) = norm.split_at(i);
    let spaced = value.ends_with([' ', '~']);
    let tail = tail.trim_end_matches(['.', ' ']);
    if !spaced || tail.is_empty() || tail.len() > 40 || !UNIT_TAIL.is_match(tail) {
        return None;
    }
    let letters: String = tail.chars().filter(char::is_ascii_alphabetic).collect();
    let si = matches!(
        letters.as_str(),
        "m" | "g" | "s" | "A" | "V" | "W" | "J" | "N" | "K" | "L"
    );
    if letters.len() < 2 && !si {
        return None;
    }
    let node = parse(value.trim_end_matches(['~', ' ']))?;
    let constant = match &node {
        Expr::List(v) | Expr::Tuple(v) => v.iter().all(is_constant),
        n => is_constant(n),
    };
    constant.then(|| simplify(node))
}

/// A prepared answer that is one constant value.
pub(super) fn is_number(p: &ParsedAnswer) -> bool {
    p.node
        .as_ref()
        .is_some_and(|n| is_scalar(n) && is_constant(n))
}

/// The set of several option letters an answer names (`A, C`, `(A)(C)`, `ACD`), as bits.
fn letter_set(norm: &str) -> Option<u8> {
    let t = norm.trim();
    if t.len() < 2 || t.len() > 40 || !t.starts_with(['(', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'])
    {
        return None;
    }
    let set = choice_letters(t, true)?;
    Some(
        set.bytes()
            .filter(u8::is_ascii_uppercase)
            .fold(0, |m, c| m | 1 << (c - b'A')),
    )
}

/// `\begin{…}…\end{…} = 3`, `17 \bmod 5 = 2`: when the whole does not parse, a constant after
/// the last top-level `=` is the answer.
fn final_value(norm: &str) -> Option<Expr> {
    let b = norm.as_bytes();
    let mut depth = 0i32;
    let mut at = None;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            b'=' if depth == 0 && (i == 0 || !matches!(b[i - 1], b'<' | b'>' | b'!' | b'\\')) => {
                at = Some(i)
            }
            _ => {}
        }
    }
    let rhs = parse(&norm[at? + 1..])?;
    is_constant(&rhs).then_some(rhs)
}

/// Equivalence of two answers with no roles: a bare `3,5` on either side may be a decimal comma.
pub(super) fn equivalent_prepared(a: &ParsedAnswer, b: &ParsedAnswer, cfg: &GradeConfig) -> bool {
    equivalent_sided(a, b, cfg, true)
}

/// Equivalence of a response's answer with its gold. The response's `3,5` may be a decimal
/// comma against a single-number gold; the gold's own comma is read as the gold's shape and the
/// `decimal_mark` setting decide (`0,1` is two values unless the setting says "comma").
pub(super) fn equivalent_to_gold(
    gold: &ParsedAnswer,
    pred: &ParsedAnswer,
    cfg: &GradeConfig,
) -> bool {
    equivalent_sided(gold, pred, cfg, false)
}

fn equivalent_sided(a: &ParsedAnswer, b: &ParsedAnswer, cfg: &GradeConfig, a_pair: bool) -> bool {
    if plain_equivalent(a, b, cfg) {
        return true;
    }
    // A unit on either side (`144 \mbox{ m}^3` against 144): the values are compared.
    let (x, y) = (a.value_in_words(), b.value_in_words());
    if x.is_some() || y.is_some() {
        if let (Some(x), Some(y)) = (x.or(a.node.as_ref()), y.or(b.node.as_ref())) {
            if same(x, y, cfg) {
                return true;
            }
        }
    }
    let policy = &cfg.policy;
    if policy.percent == Percent::Either && a.percent != b.percent {
        // `28\%` is also the number 0.28.
        let (pct, other) = if a.percent { (a, b) } else { (b, a) };
        if let (Some(x), Some(y)) = (&pct.node, &other.node) {
            let hundredth = Expr::Div(Box::new(x.clone()), Box::new(super::expr::int(100)));
            if is_scalar(x) && same(&hundredth, y, cfg) {
                return true;
            }
        }
    }
    if policy.styled_letters == StyledLetters::Same {
        let (x, y) = (strip_styled_letters(&a.norm), strip_styled_letters(&b.norm));
        if x.is_some() || y.is_some() {
            let x = prepare(x.as_deref().unwrap_or(&a.norm));
            let y = prepare(y.as_deref().unwrap_or(&b.norm));
            return plain_equivalent(&x, &y, cfg);
        }
    }
    // `3,5` against a single number: a decimal comma (a list or grouping would not match anyway).
    let pairs: &[(&ParsedAnswer, &ParsedAnswer)] =
        if a_pair { &[(a, b), (b, a)] } else { &[(a, b)] };
    for &(one, pair) in pairs {
        if !pair.norm.contains(',') {
            continue;
        }
        if let (Some(n), Some(c)) = (&one.node, COMMA_PAIR.captures(&pair.norm)) {
            if is_scalar(n) {
                if let Some(dec) = prepare(&format!("{}.{}", &c[1], &c[2])).node {
                    return same(n, &dec, cfg);
                }
            }
        }
    }
    false
}

/// The options' letter a prepared answer names: its letter, or the option whose value it is.
/// A set of several letters (`A, B`, `(A), (B)`) names no single option: `None`, so the sets
/// are compared as sets and never equal one letter.
fn option_index(p: &ParsedAnswer, options: &[ParsedAnswer], cfg: &GradeConfig) -> Option<usize> {
    if p.letters.is_some() {
        return None;
    }
    if let Some(c) = choice_letter(&p.text) {
        let i = (c as u8 - b'a') as usize;
        return (i < options.len()).then_some(i);
    }
    options.iter().position(|o| plain_equivalent(p, o, cfg))
}

/// Multiple choice with known options: `Some(same)` when both answers name an option.
pub(super) fn same_option(
    gold: &ParsedAnswer,
    pred: &ParsedAnswer,
    options: &[ParsedAnswer],
    cfg: &GradeConfig,
) -> Option<bool> {
    if options.is_empty() {
        return None;
    }
    let g = option_index(gold, options, cfg)?;
    let p = option_index(pred, options, cfg)?;
    Some(g == p)
}

/// An option without its leading label: `A. 12`, `(B) 15`, `C) 18`, `D: 21` → the value.
pub(super) fn strip_option_label(o: &str) -> &str {
    let t = o.trim();
    let b = t.as_bytes();
    let (open, at) = if b.first() == Some(&b'(') {
        (true, 1)
    } else {
        (false, 0)
    };
    if b.get(at).is_some_and(u8::is_ascii_uppercase) {
        let next = b.get(at + 1).copied();
        let labelled = match next {
            Some(b')') => true,
            Some(b'.' | b':') => !open,
            _ => false,
        };
        if labelled {
            return t[at + 2..].trim();
        }
    }
    t
}

fn plain_equivalent(a: &ParsedAnswer, b: &ParsedAnswer, cfg: &GradeConfig) -> bool {
    if !a.text.is_empty() && a.text == b.text {
        return true;
    }
    // Several letters are a set: `A, C` is `AC`, and neither is `C`.
    if a.letters.is_some() || b.letters.is_some() {
        let single = |p: &ParsedAnswer| {
            choice_letter(&p.text)
                .filter(|c| p.text.len() <= 3 && *c <= 'h')
                .map(|c| 1u8 << (c as u8 - b'a'))
        };
        if let (Some(x), Some(y)) = (a.letters.or(single(a)), b.letters.or(single(b))) {
            return x == y;
        }
    }
    // Multiple choice: a single-letter answer matches `(B)`, `B.`, `(B) 12`, `B) 12`.
    if let (Some(x), Some(y)) = (choice_letter(&a.text), choice_letter(&b.text)) {
        if a.text.chars().count() == 1 || b.text.chars().count() == 1 {
            return x == y;
        }
    }
    if let (Some(x), Some(y)) = (&a.node, &b.node) {
        if same(x, y, cfg) {
            return true;
        }
    }
    // `(C) 9` against a non-letter gold: the option's value is the answer.
    for (gold, pred) in [(a, b), (b, a)] {
        if choice_letter(&gold.text).is_none() {
            if let Some(rest) = strip_choice_label(&pred.norm) {
                let inner = prepare(rest);
                if !gold.text.is_empty() && gold.text == inner.text {
                    return true;
                }
                if let (Some(x), Some(y)) = (&gold.node, &inner.node) {
                    if same(x, y, cfg) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// The text after a leading option label `(C)` / `C)`, if any.
fn strip_choice_label(norm: &str) -> Option<&str> {
    let t = norm.trim_start();
    let t = t.strip_prefix('(').unwrap_or(t);
    let mut it = t.char_indices();
    let (_, letter) = it.next()?;
    let (close, c) = it.next()?;
    if !letter.is_ascii_uppercase() || c != ')' {
        return None;
    }
    let rest = t[close + 1..].trim();
    (!rest.is_empty()).then_some(rest)
}

/// The option letter of a multiple-choice answer in text form (`b`, `(b)`, `b.`, `(b)12`, `b)12`).
fn choice_letter(text: &str) -> Option<char> {
    let t = text.strip_prefix('(').unwrap_or(text);
    let mut it = t.chars();
    let letter = it.next().filter(|c| c.is_ascii_lowercase())?;
    match it.next() {
        None => Some(letter),
        Some(')' | '.' | ':') => Some(letter),
        _ => None,
    }
}

/// Rewrites a parsed answer into comparison form: `±` expanded, chains reduced, matrices folded.
pub(super) fn simplify(n: Expr) -> Expr {
    match n {
        Expr::List(v) => Expr::List(v.into_iter().flat_map(expand_item).collect()),
        Expr::Set(v) => Expr::Set(v.into_iter().flat_map(expand_item).collect()),
        other => {
            let mut items = expand_item(other);
            if items.len() == 1 {
                items.pop().unwrap_or(Expr::List(vec![]))
            } else {
                Expr::Set(items)
            }
        }
    }
}

fn expand_item(n: Expr) -> Vec<Expr> {
    let n = reduce(n);
    if count_pm(&n) > MAX_PM || count_pm(&n) == 0 {
        return vec![n];
    }
    expand_pm(&n)
}

fn count_pm(n: &Expr) -> usize {
    match n {
        Expr::Pm(a, b) => 1 + count_pm(a) + count_pm(b),
        Expr::Neg(a) | Expr::Fact(a) => count_pm(a),
        Expr::Div(a, b) | Expr::Pow(a, b) => count_pm(a) + count_pm(b),
        Expr::Add(v) | Expr::Mul(v) | Expr::Call(_, v) | Expr::Rel(v, _) => {
            v.iter().map(count_pm).sum()
        }
        _ => 0,
    }
}

/// Every sign choice of the `±` signs in `n`.
fn expand_pm(n: &Expr) -> Vec<Expr> {
    let many = |v: &[Expr], build: &dyn Fn(Vec<Expr>) -> Expr| -> Vec<Expr> {
        let mut acc: Vec<Vec<Expr>> = vec![Vec::new()];
        for x in v {
            let opts = expand_pm(x);
            acc = acc
                .into_iter()
                .flat_map(|prefix| {
                    opts.iter().map(move |o| {
                        let mut p = prefix.clone();
                        p.push(o.clone());
                        p
                    })
                })
                .collect();
        }
        acc.into_iter().map(build).collect()
    };
    match n {
        Expr::Pm(a, b) => {
            let mut out = Vec::new();
            for x in expand_pm(a) {
                for y in expand_pm(b) {
                    out.push(Expr::Add(vec![x.clone(), y.clone()]));
                    out.push(Expr::Add(vec![x.clone(), Expr::Neg(Box::new(y))]));
                }
            }
            out
        }
        Expr::Neg(a) => expand_pm(a)
            .into_iter()
            .map(|x| Expr::Neg(Box::new(x)))
            .collect(),
        Expr::Fact(a) => expand_pm(a)
            .into_iter()
            .map(|x| Expr::Fact(Box::new(x)))
            .collect(),
        Expr::Div(a, b) => many(&[(**a).clone(), (**b).clone()], &|mut v| {
            let d = v.pop().unwrap_or(Expr::List(vec![]));
            let n = v.pop().unwrap_or(Expr::List(vec![]));
            Expr::Div(Box::new(n), Box::new(d))
        }),
        Expr::Pow(a, b) => many(&[(**a).clone(), (**b).clone()], &|mut v| {
            let e = v.pop().unwrap_or(Expr::List(vec![]));
            let b = v.pop().unwrap_or(Expr::List(vec![]));
            Expr::Pow(Box::new(b), Box::new(e))
        }),
        Expr::Add(v) => many(v, &Expr::Add),
        Expr::Mul(v) => many(v, &Expr::Mul),
        Expr::Call(name, v) => many(v, &|args| Expr::Call(name.clone(), args)),
        Expr::Rel(v, ops) => many(v, &|parts| Expr::Rel(parts, ops.clone())),
        other => vec![other.clone()],
    }
}

/// Reduces relation chains (`x = 5+5 = 10` → `x = 10`, `a < x < b` → interval, `x ∈ S` → `S`).
fn reduce(n: Expr) -> Expr {
    match n {
        Expr::Rel(mut parts, mut ops) => {
            // `= … ≈ 11` and `\frac{\sqrt3}{3} ≈ 0.577`: the exact value is the answer;
            // `x ≈ 11` alone is an equation.
            while ops.last() == Some(&RelOp::Approx)
                && (ops.contains(&RelOp::Eq)
                    || parts.len() == 2 && is_constant(&parts[0]) && !is_label(&parts[0]))
            {
                ops.pop();
                parts.pop();
            }
            if ops.is_empty() {
                return parts.pop().map(reduce).unwrap_or(Expr::List(vec![]));
            }
            for op in ops.iter_mut() {
                if *op == RelOp::Approx {
                    *op = RelOp::Eq;
                }
            }
            if ops.len() == 1 && ops[0] == RelOp::In && is_label(&parts[0]) {
                return parts.pop().map(reduce).unwrap_or(Expr::List(vec![]));
            }
            if ops.len() > 1 && ops.iter().all(|o| *o == RelOp::Eq) {
                // `a + d + e = -2 + 5 - 3 = 0`: a computation whose steps are numbers states
                // the value of whatever it starts from.
                if parts[1..].iter().all(is_constant) && !is_constant(&parts[0]) {
                    return parts.pop().map(reduce).unwrap_or(Expr::List(vec![]));
                }
                let last = parts.pop().unwrap_or(Expr::List(vec![]));
                let first = parts.swap_remove(0);
                return Expr::Rel(vec![first, last], vec![RelOp::Eq]);
            }
            let lower = |o: RelOp| matches!(o, RelOp::Lt | RelOp::Le);
            let upper = |o: RelOp| matches!(o, RelOp::Gt | RelOp::Ge);
            let same_way = ops.len() == 2
                && ((lower(ops[0]) && lower(ops[1])) || (upper(ops[0]) && upper(ops[1])));
            if same_way && is_label(&parts[1]) {
                let (o1, o2) = (ops[0], ops[1]);
                let (mut lo, mut hi, mut lo_closed, mut hi_closed) = (
                    parts[0].clone(),
                    parts[2].clone(),
                    o1 == RelOp::Le,
                    o2 == RelOp::Le,
                );
                if upper(o1) {
                    std::mem::swap(&mut lo, &mut hi);
                    (lo_closed, hi_closed) = (o2 == RelOp::Ge, o1 == RelOp::Ge);
                }
                // `a ≤ |z| ≤ b` with `a ≥ 0` is `[-b, -a] ∪ [a, b]`.
                if matches!(&parts[1], Expr::Call(f, _) if f == "abs")
                    && exact(&lo).is_some_and(|q| !q.is_negative())
                {
                    let neg = |n: &Expr| Expr::Neg(Box::new(n.clone()));
                    let left = Expr::Interval(
                        hi_closed,
                        Box::new(neg(&hi)),
                        Box::new(neg(&lo)),
                        lo_closed,
                    );
                    let right = Expr::Interval(lo_closed, Box::new(lo), Box::new(hi), hi_closed);
                    return Expr::Union(vec![left, right]);
                }
                return Expr::Interval(lo_closed, Box::new(lo), Box::new(hi), hi_closed);
            }
            Expr::Rel(parts, ops)
        }
        Expr::Add(v) => matrix_sum(&v).unwrap_or(Expr::Add(v)),
        Expr::Mul(v) => matrix_product(&v).unwrap_or(Expr::Mul(v)),
        other => other,
    }
}

fn as_matrix(n: &Expr) -> Option<&Vec<Vec<Expr>>> {
    match n {
        Expr::Matrix(m) => Some(m),
        _ => None,
    }
}

/// `A + B` of equally shaped matrices, entry by entry.
fn matrix_sum(v: &[Expr]) -> Option<Expr> {
    let ms: Vec<&Vec<Vec<Expr>>> = v.iter().map(as_matrix).collect::<Option<_>>()?;
    let first = ms.first()?;
    let shape = |m: &Vec<Vec<Expr>>| m.iter().map(Vec::len).collect::<Vec<_>>();
    if ms.iter().any(|m| shape(m) != shape(first)) {
        return None;
    }
    let rows = first
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (0..r.len())
                .map(|j| Expr::Add(ms.iter().map(|m| m[i][j].clone()).collect()))
                .collect()
        })
        .collect();
    Some(Expr::Matrix(rows))
}

/// Products of matrices and scalars, when the shapes allow it.
fn matrix_product(v: &[Expr]) -> Option<Expr> {
    if !v.iter().any(|x| matches!(x, Expr::Matrix(_))) {
        return None;
    }
    let mut scalar: Vec<Expr> = Vec::new();
    let mut acc: Option<Vec<Vec<Expr>>> = None;
    for x in v {
        match (x, acc.take()) {
            (Expr::Matrix(m), None) => acc = Some(m.clone()),
            (Expr::Matrix(b), Some(a)) => {
                let inner = a.first()?.len();
                if b.len() != inner || a.iter().any(|r| r.len() != inner) {
                    return None;
                }
                let cols = b.first()?.len();
                if b.iter().any(|r| r.len() != cols) {
                    return None;
                }
                let prod = a
                    .iter()
                    .map(|row| {
                        (0..cols)
                            .map(|j| {
                                Expr::Add(
                                    (0..inner)
                                        .map(|k| Expr::Mul(vec![row[k].clone(), b[k][j].clone()]))
                                        .collect(),
                                )
                            })
                            .collect()
                    })
                    .collect();
                acc = Some(prod);
            }
            (s, prev) if is_scalar(s) => {
                scalar.push(s.clone());
                acc = prev;
            }
            _ => return None,
        }
    }
    let m = acc?;
    if scalar.is_empty() {
        return Some(Expr::Matrix(m));
    }
    let scaled = m
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|e| Expr::Mul(scalar.iter().cloned().chain([e]).collect()))
                .collect()
        })
        .collect();
    Some(Expr::Matrix(scaled))
}

/// A name-like side of an equation (`x`, `f(x)`, `|AB|`, `(p,q)`, `V_1:V_2`): no numbers, no sums.
pub(super) fn is_label(n: &Expr) -> bool {
    match n {
        Expr::Sym(_) | Expr::Pi | Expr::E | Expr::I => true,
        Expr::Mul(v) | Expr::Tuple(v) | Expr::Ratio(v) => v.iter().all(is_label),
        Expr::Div(a, b) => is_label(a) && is_label(b),
        Expr::Call(_, v) => v.iter().all(is_label),
        Expr::Pow(a, _) => is_label(a),
        _ => false,
    }
}

fn is_constant(n: &Expr) -> bool {
    match n {
        Expr::Num(..) | Expr::Pi | Expr::E | Expr::I => true,
        Expr::Sym(_) => false,
        Expr::Neg(a) | Expr::Fact(a) => is_constant(a),
        Expr::Add(v) | Expr::Mul(v) | Expr::Call(_, v) => v.iter().all(is_constant),
        Expr::Div(a, b) | Expr::Pow(a, b) => is_constant(a) && is_constant(b),
        // Only as a determinant's argument, the one place a matrix sits inside a scalar.
        Expr::Matrix(rows) => rows.iter().flatten().all(is_constant),
        _ => false,
    }
}

/// `\gcd(12, 18)`: built of numbers and named operations, no unknowns.
fn no_variables(n: &Expr) -> bool {
    match n {
        Expr::Num(..) | Expr::Pi | Expr::E | Expr::I => true,
        Expr::Sym(s) => s.starts_with('\\'),
        Expr::Neg(a) | Expr::Fact(a) => no_variables(a),
        Expr::Add(v) | Expr::Mul(v) | Expr::Call(_, v) | Expr::Tuple(v) | Expr::List(v) => {
            v.iter().all(no_variables)
        }
        Expr::Div(a, b) | Expr::Pow(a, b) => no_variables(a) && no_variables(b),
        Expr::Matrix(rows) => rows.iter().flatten().all(no_variables),
        _ => false,
    }
}

/// `y` or `f(x)`: a name for a function's value, so `y = 2x+3` and `f(x) = 2x+3` agree.
fn is_dependent_name(n: &Expr) -> bool {
    match n {
        Expr::Sym(_) => true,
        Expr::Call(_, v) => v.len() == 1 && matches!(v[0], Expr::Sym(_)),
        _ => false,
    }
}

/// The value an equation states, when it names one (`x = 4` → `4`, `1/2 = 10/9` → `10/9`).
fn stated_value(n: &Expr) -> Option<&Expr> {
    if let Expr::Rel(parts, ops) = n {
        if ops.len() == 1 && ops[0] == RelOp::Eq {
            let (l, r) = (&parts[0], &parts[1]);
            let known = is_constant(r) && (is_constant(l) || no_variables(l));
            if is_label(l) || known {
                return Some(r);
            }
        }
    }
    None
}

/// `x ≤ 3` as the interval `(-∞, 3]` (and the like), when one side is a name and the other constant.
fn rel_interval(n: &Expr) -> Option<Expr> {
    let Expr::Rel(parts, ops) = n else {
        return None;
    };
    if ops.len() != 1 {
        return None;
    }
    let (l, r) = (&parts[0], &parts[1]);
    let (bound, op) = if is_label(l) && is_constant(r) {
        (r, ops[0])
    } else if is_label(r) && is_constant(l) {
        let flipped = match ops[0] {
            RelOp::Lt => RelOp::Gt,
            RelOp::Le => RelOp::Ge,
            RelOp::Gt => RelOp::Lt,
            RelOp::Ge => RelOp::Le,
            other => other,
        };
        (l, flipped)
    } else {
        return None;
    };
    let b = Box::new(bound.clone());
    let inf = || Box::new(Expr::Inf);
    let neg_inf = || Box::new(Expr::Neg(Box::new(Expr::Inf)));
    Some(match op {
        RelOp::Lt => Expr::Interval(false, neg_inf(), b, false),
        RelOp::Le => Expr::Interval(false, neg_inf(), b, true),
        RelOp::Gt => Expr::Interval(false, b, inf(), false),
        RelOp::Ge => Expr::Interval(true, b, inf(), false),
        _ => return None,
    })
}

fn is_range(n: &Expr) -> bool {
    matches!(n, Expr::Interval(..)) || matches!(n, Expr::Tuple(v) if v.len() == 2)
}

fn elems(n: &Expr) -> Option<&[Expr]> {
    match n {
        Expr::List(v) | Expr::Set(v) => Some(v),
        _ => None,
    }
}

/// Structural equivalence of two prepared answer trees.
pub(super) fn same(a: &Expr, b: &Expr, cfg: &GradeConfig) -> bool {
    same_depth(a, b, cfg, 0)
}

fn same_depth(a: &Expr, b: &Expr, cfg: &GradeConfig, depth: usize) -> bool {
    if depth > 40 {
        // Too deep to compare by meaning: identical structure is still the same answer.
        return a == b;
    }
    let eq = |x: &Expr, y: &Expr| same_depth(x, y, cfg, depth + 1);
    let ordered =
        |x: &[Expr], y: &[Expr]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq(p, q));
    match (a, b) {
        (Expr::Rel(..), Expr::Rel(..)) => {
            if rel_same(a, b, cfg) {
                return true;
            }
            match (stated_value(a), stated_value(b)) {
                (Some(x), Some(y)) => {
                    let (Expr::Rel(p, _), Expr::Rel(q, _)) = (a, b) else {
                        return false;
                    };
                    let same_name = text_key(&p[0]) == text_key(&q[0]);
                    let both_functions = is_dependent_name(&p[0])
                        && is_dependent_name(&q[0])
                        && !is_constant(x)
                        && !is_constant(y);
                    (same_name || both_functions) && eq(x, y)
                }
                _ => false,
            }
        }
        (Expr::Rel(..), _) => {
            stated_value(a).is_some_and(|x| eq(x, b))
                || (is_range(b) && rel_interval(a).is_some_and(|x| eq(&x, b)))
        }
        (_, Expr::Rel(..)) => {
            stated_value(b).is_some_and(|y| eq(a, y))
                || (is_range(a) && rel_interval(b).is_some_and(|y| eq(a, &y)))
        }
        (Expr::List(x), Expr::Tuple(y)) | (Expr::Tuple(x), Expr::List(y)) => ordered(x, y),
        (Expr::List(x), Expr::List(y)) if cfg.policy.list_order == ListOrder::AsWritten => {
            ordered(x, y)
        }
        _ if elems(a).is_some() || elems(b).is_some() => {
            let x = elems(a).unwrap_or(std::slice::from_ref(a));
            let y = elems(b).unwrap_or(std::slice::from_ref(b));
            if x.len() == 1 && y.len() == 1 {
                return eq(&x[0], &y[0]);
            }
            // Set semantics: `{a, a}` is `a` (e.g. `15\frac{39}{40}` or `\frac{639}{40}`).
            x.iter().all(|p| y.iter().any(|q| eq(p, q)))
                && y.iter().all(|q| x.iter().any(|p| eq(p, q)))
        }
        (Expr::Tuple(x), Expr::Tuple(y)) => ordered(x, y),
        (Expr::Ratio(x), Expr::Ratio(y)) => ordered(x, y) || same_clock_time(x, y),
        // `3:4` is the number 3/4.
        (Expr::Ratio(r), s) | (s, Expr::Ratio(r)) if r.len() == 2 && is_scalar(s) => {
            let q = Expr::Div(Box::new(r[0].clone()), Box::new(r[1].clone()));
            eq(&q, s)
        }
        (Expr::Tuple(t), Expr::Interval(lc, lo, hi, hc))
        | (Expr::Interval(lc, lo, hi, hc), Expr::Tuple(t)) => {
            !*lc && !*hc && t.len() == 2 && eq(&t[0], lo) && eq(&t[1], hi)
        }
        (Expr::Interval(c1, a1, b1, d1), Expr::Interval(c2, a2, b2, d2)) => {
            c1 == c2 && d1 == d2 && eq(a1, a2) && eq(b1, b2)
        }
        (Expr::Union(x), Expr::Union(y)) => {
            x.iter().all(|p| y.iter().any(|q| eq(p, q)))
                && y.iter().all(|q| x.iter().any(|p| eq(p, q)))
        }
        (Expr::Matrix(x), Expr::Matrix(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(r, s)| ordered(r, s))
        }
        _ if is_scalar(a) && is_scalar(b) => scalar_same(a, b, cfg),
        _ => false,
    }
}

/// `20:34` and `20:34:00` are the same clock time.
fn same_clock_time(x: &[Expr], y: &[Expr]) -> bool {
    let (short, long) = if x.len() < y.len() { (x, y) } else { (y, x) };
    let value = |n: &Expr| exact(n).filter(|q| q.is_integer() && !q.is_negative());
    short.len() == 2
        && long.len() == 3
        && value(&long[2]).is_some_and(|q| q == BigRational::from_integer(BigInt::from(0)))
        && short
            .iter()
            .zip(long)
            .all(|(p, q)| value(p).is_some() && value(p) == value(q))
}

fn is_scalar(n: &Expr) -> bool {
    !matches!(
        n,
        Expr::Tuple(_)
            | Expr::List(_)
            | Expr::Set(_)
            | Expr::Ratio(_)
            | Expr::Union(_)
            | Expr::Interval(..)
            | Expr::Matrix(_)
            | Expr::Rel(..)
            | Expr::Pm(..)
    )
}

fn text_key(n: &Expr) -> String {
    format!("{n:?}")
}

fn inf_sign(n: &Expr) -> Option<i8> {
    match n {
        Expr::Inf => Some(1),
        Expr::Neg(a) => inf_sign(a).map(|s| -s),
        _ => None,
    }
}

fn close(a: C, b: C, tol: f64) -> bool {
    let d = a.sub(b).abs();
    d <= tol * a.abs().max(b.abs()) || d <= 1e-12
}

fn scalar_same(a: &Expr, b: &Expr, cfg: &GradeConfig) -> bool {
    if let (Some(x), Some(y)) = (inf_sign(a), inf_sign(b)) {
        return x == y;
    }
    if rounds_to_gold(a, b) {
        return true;
    }
    let decimal = has_decimal(a) || has_decimal(b);
    let tolerance = cfg.policy.tolerance;
    if let (Some(x), Some(y)) = (exact(a), exact(b)) {
        if !decimal || x == y {
            return x == y;
        }
        return match tolerance {
            Tolerance::Decimals(d) => {
                let size = to_f64(&x)
                    .zip(to_f64(&y))
                    .map_or(1.0, |(p, q)| p.abs().max(q.abs()));
                let d = places_for(d, size);
                round_exact(&x, d) == round_exact(&y, d)
            }
            Tolerance::Relative(t) => match (to_f64(&x), to_f64(&y)) {
                (Some(p), Some(q)) => close(C::real(p), C::real(q), t),
                _ => false,
            },
        };
    }
    let matches = |x: C, y: C| match tolerance {
        _ if close(x, y, FLOAT_TOL) && !decimal => true,
        Tolerance::Decimals(d) if decimal => {
            let scale = 10f64.powi(places_for(d, x.abs().max(y.abs())).min(300) as i32);
            let r = |v: f64| (v * scale).round();
            (r(x.re) == r(y.re) && r(x.im) == r(y.im))
                || x.sub(y).abs() <= 1e-13 * x.abs().max(y.abs())
        }
        Tolerance::Relative(t) if decimal => close(x, y, t.max(FLOAT_TOL)),
        _ => false,
    };
    let mut compared = 0;
    for pt in 0..POINTS {
        match (eval(a, pt), eval(b, pt)) {
            (Some(x), Some(y)) => {
                if !matches(x, y) {
                    return false;
                }
                compared += 1;
            }
            (None, None) => {}
            _ => return false,
        }
    }
    compared > 0
}

/// A gold decimal of three or more significant digits (`0.333`, `1.414`) is the exact answer
/// rounded: an exact answer (`1/3`, `\sqrt{2}`) that rounds to it at the gold's own decimal
/// places agrees. A decimal answer is compared as usual (`1.334` is not `1.33`), and so is a gold
/// of fewer digits (`0.3` is not `1/3`).
fn rounds_to_gold(gold: &Expr, pred: &Expr) -> bool {
    // Cheap tests first: most comparisons have no decimal gold.
    if !has_decimal(gold) || has_decimal(pred) || !no_variables(pred) {
        return false;
    }
    let Some(g) = exact(gold) else {
        return false;
    };
    // The gold's decimal places: the least p with |g|·10^p whole, in integers (a rational
    // product reduces by a gcd at every step).
    let (numer, denom) = (g.numer().abs(), g.denom());
    let mut scaled = numer;
    let mut places = 0u32;
    while !(&scaled % denom).is_zero() {
        if places == 12 {
            return false;
        }
        scaled *= 10u32;
        places += 1;
    }
    if places == 0 || &scaled / denom < BigInt::from(100) {
        return false;
    }
    let target = round_exact(&g, places);
    if let Some(p) = exact(pred) {
        return round_exact(&p, places) == target;
    }
    let (Some(v), Some(t)) = (eval(pred, 0), to_f64(&BigRational::from_integer(target))) else {
        return false;
    };
    v.im.abs() <= 1e-12 * v.re.abs().max(1.0) && (v.re * 10f64.powi(places as i32)).round() == t
}

/// Significant digits a decimal comparison keeps at least: `0.0000672` and `0.000067` agree to six
/// decimal places but are different values.
const MIN_SIGNIFICANT: i32 = 3;

/// Decimal places compared for values of this size: `d`, or more for small values so that
/// [`MIN_SIGNIFICANT`] digits are compared.
fn places_for(d: u32, size: f64) -> u32 {
    if !(size.is_finite() && size > 0.0) {
        return d;
    }
    let needed = MIN_SIGNIFICANT - 1 - size.log10().floor() as i32;
    d.max(needed.clamp(0, 400) as u32)
}

/// `q` rounded half away from zero to `d` decimal places, as an integer count of 10^-d.
fn round_exact(q: &BigRational, d: u32) -> BigInt {
    // In integers: numer·10^d = whole·denom + rest (truncated, rest takes numer's sign).
    let scaled = q.numer() * num_traits::pow(BigInt::from(10), d as usize);
    let (whole, rest) = scaled.div_rem(q.denom());
    if BigInt::from(2) * rest.abs() >= q.denom().abs() {
        whole + scaled.signum()
    } else {
        whole
    }
}

fn canon_op(op: RelOp) -> (RelOp, bool) {
    match op {
        RelOp::Gt => (RelOp::Lt, true),
        RelOp::Ge => (RelOp::Le, true),
        other => (other, false),
    }
}

/// `lhs - rhs` with the operator oriented as `<`/`≤` where needed.
fn rel_form(n: &Expr) -> Option<(Expr, RelOp)> {
    let Expr::Rel(parts, ops) = n else {
        return None;
    };
    if ops.len() != 1 {
        return None;
    }
    let (op, flip) = canon_op(ops[0]);
    let (l, r) = if flip {
        (&parts[1], &parts[0])
    } else {
        (&parts[0], &parts[1])
    };
    if !is_scalar(l) || !is_scalar(r) {
        return None;
    }
    Some((
        Expr::Add(vec![l.clone(), Expr::Neg(Box::new(r.clone()))]),
        op,
    ))
}

/// Relations are equal when their `lhs - rhs` differ by a constant factor (positive for inequalities).
fn rel_same(a: &Expr, b: &Expr, cfg: &GradeConfig) -> bool {
    if let (Expr::Rel(p, o1), Expr::Rel(q, o2)) = (a, b) {
        if o1.len() > 1 || o2.len() > 1 {
            let forward =
                o1 == o2 && p.len() == q.len() && p.iter().zip(q).all(|(x, y)| same(x, y, cfg));
            return forward;
        }
    }
    let (Some((d1, op1)), Some((d2, op2))) = (rel_form(a), rel_form(b)) else {
        return false;
    };
    if op1 != op2 {
        return false;
    }
    let mut ratio: Option<C> = None;
    let mut compared = 0;
    for pt in 0..POINTS {
        let (Some(x), Some(y)) = (eval(&d1, pt), eval(&d2, pt)) else {
            continue;
        };
        compared += 1;
        if x.abs() < 1e-12 && y.abs() < 1e-12 {
            continue;
        }
        let Some(r) = x.div(y) else { return false };
        match ratio {
            None => ratio = Some(r),
            Some(r0) => {
                if !close(r, r0, FLOAT_TOL) {
                    return false;
                }
            }
        }
    }
    if compared == 0 {
        return false;
    }
    match ratio {
        None => true,
        Some(r) => match op1 {
            RelOp::Lt | RelOp::Le => r.im.abs() < 1e-9 && r.re > 0.0,
            _ => r.abs() > 1e-12,
        },
    }
}

/// Voting key: equal keys for answers in the same cheaply decidable equivalence class.
pub(super) fn key(p: &ParsedAnswer) -> String {
    // Letter-only answers ("Evelyn", "odd") are text, compared case-insensitively.
    if !p.text.is_empty() && p.text.chars().all(char::is_alphabetic) {
        return format!("t:{}", p.text);
    }
    match &p.node {
        Some(n) => node_key(n, 0),
        None => format!("t:{}", p.text),
    }
}

fn node_key(n: &Expr, depth: usize) -> String {
    if depth > 20 {
        return format!("{n:?}");
    }
    let k = |x: &Expr| node_key(x, depth + 1);
    match n {
        Expr::Rel(..) => match stated_value(n) {
            Some(v) => k(v),
            None => format!("rel:{n:?}"),
        },
        Expr::List(v) | Expr::Set(v) => {
            let mut ks: Vec<String> = v.iter().map(k).collect();
            ks.sort();
            ks.dedup();
            if ks.len() == 1 {
                return ks.pop().unwrap_or_default();
            }
            format!("{{{}}}", ks.join(","))
        }
        Expr::Tuple(v) => format!("({})", v.iter().map(k).collect::<Vec<_>>().join(",")),
        Expr::Ratio(v) => format!("r({})", v.iter().map(k).collect::<Vec<_>>().join(":")),
        Expr::Interval(a, lo, hi, b) => {
            format!(
                "{}{},{}{}",
                if *a { '[' } else { '(' },
                k(lo),
                k(hi),
                if *b { ']' } else { ')' }
            )
        }
        Expr::Union(v) => {
            let mut ks: Vec<String> = v.iter().map(k).collect();
            ks.sort();
            format!("U({})", ks.join(","))
        }
        Expr::Matrix(rows) => format!(
            "M[{}]",
            rows.iter()
                .map(|r| r.iter().map(k).collect::<Vec<_>>().join(","))
                .collect::<Vec<_>>()
                .join(";")
        ),
        _ => {
            if let Some(s) = inf_sign(n) {
                return format!("inf:{s}");
            }
            if let Some(q) = exact(n) {
                return format!("q:{q}");
            }
            let vals: Vec<String> = (0..2)
                .map(|pt| match eval(n, pt) {
                    Some(c) => format!(
                        "{:.8e},{:.8e}",
                        c.re,
                        if c.im.abs() < 1e-12 { 0.0 } else { c.im }
                    ),
                    None => "?".into(),
                })
                .collect();
            if vals.iter().all(|v| v == "?") {
                return format!("e:{n:?}");
            }
            format!("n:{}", vals.join("|"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(a: &str, b: &str) -> bool {
        equivalent_prepared(&prepare(a), &prepare(b), &GradeConfig::default())
    }

    #[test]
    fn tuples_are_ordered_sets_are_not() {
        assert!(eq("(1, 3)", "{1,3}"));
        assert!(!eq("(3, 1)", "{1,3}"));
        assert!(eq("\\{3, 1\\}", "1, 3"));
        assert!(eq("(1,2),(3,4)", "(3,4),(1,2)"));
        assert!(!eq("(1,2),(3,4)", "(2,1),(3,4)"));
        assert!(eq("(0;0;1)", "(0, 0, 1)"));
        assert!(eq("p=5,q=2;p=7,q=2", "(5,2),(7,2)"));
        assert!(eq("\\frac{639}{40}", "15\\frac{39}{40}, \\frac{639}{40}"));
        assert!(!eq("2", "2, 3"));
    }

    #[test]
    fn intervals_and_unions() {
        assert!(eq("(0, 1)", "(0,1)"));
        assert!(eq("[1, \\infty)", "[1,\\infty)"));
        assert!(!eq("[1, \\infty)", "(1,\\infty)"));
        assert!(eq(
            "(2, 12) \\cup (12, 102)",
            "x \\in (2,12) \\cup (12,102)"
        ));
        assert!(eq("-2 \\le x \\le 7", "[-2, 7]"));
        assert!(eq("0 < x < 1", "(0, 1)"));
        assert!(!eq("0 < x \\le 1", "(0, 1)"));
        assert!(eq("5 > x > 1", "(1, 5)"));
        assert!(eq("1 \\le |z| \\le 2", "[-2,-1] \\cup [1,2]"));
        assert!(!eq("1 < x > 2", "3 < y > 4"));
        assert!(eq("x \\le 3", "(-\\infty, 3]"));
        assert!(eq("x > 2", "(2, \\infty)"));
        assert!(!eq("x > 2", "[2, \\infty)"));
    }

    #[test]
    fn matrices_shape_elements_arithmetic() {
        let m = "\\begin{pmatrix}6 & 8 \\\\ 10 & 12\\end{pmatrix}";
        assert!(eq(m, "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix} + \\begin{pmatrix}5 & 6 \\\\ 7 & 8\\end{pmatrix}"));
        assert!(eq(m, "2\\begin{pmatrix}3 & 4 \\\\ 5 & 6\\end{pmatrix}"));
        assert!(!eq(m, "\\begin{pmatrix}6 & 8 & 10 & 12\\end{pmatrix}"));
        let id = "\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}";
        assert!(eq(id, &format!("{id} {id}")));
        assert!(eq(
            "\\left[\\begin{array}{cc}1 & 2\\end{array}\\right]",
            "\\begin{bmatrix}1 & 2\\end{bmatrix}"
        ));
    }

    #[test]
    fn equations_and_inequalities() {
        assert!(eq("x^2/4 + y^2/3 = 1", "x^2/16 + y^2/12 = 1/4"));
        assert!(eq("34x+45y-20z+100=0", "-34x-45y+20z-100=0"));
        assert!(!eq("x < 1", "x > -1"));
        assert!(eq("x <= 1", "-x >= -1"));
        assert!(eq("x != 3", "x \\neq 3"));
        assert!(eq("x = 11", "x = 5+5+1 = 7 = 11"));
        assert!(eq("x = 1/3", "x = 5 = 1/3 \\approx 11"));
        assert!(eq("11", "x \\approx 11"));
        assert!(!eq("7 = 11a+c", "11a+c"));
        assert!(eq("|AB| = 1", "1"));
        assert!(eq("V_1:V_2 = 11:21", "11:21"));
        assert!(!eq("12:00", "1:00"));
    }

    #[test]
    fn plus_minus_expands() {
        assert!(eq("1 \\pm \\sqrt{2}", "1+\\sqrt{2}, 1-\\sqrt{2}"));
        assert!(eq(
            "x = \\frac{-1 \\pm \\sqrt{13}}{4}",
            "\\frac{-1-\\sqrt{13}}{4}, \\frac{-1+\\sqrt{13}}{4}"
        ));
    }

    #[test]
    fn units_percent_degrees_money() {
        assert!(eq("125", "125 \\text{ miles}"));
        assert!(eq("15", "15\\mbox{ cm}^2"));
        assert!(eq("28\\%", "28"));
        assert!(eq("90^\\circ", "90"));
        assert!(eq("\\$16386.17", "16386.17"));
        assert!(eq("1000.99", "1,000.99"));
        assert!(!eq("32349", "32, 349"));
    }

    #[test]
    fn multiple_choice_letters() {
        assert!(eq("B", "(B) 12"));
        assert!(eq("B", "B. 12"));
        assert!(eq("(C)", "c"));
        assert!(!eq("B", "(C) 12"));
        assert!(!eq("B", "Bob"));
        assert!(eq("9", "(C) 9"));
        assert!(eq("(C) 9", "9"));
        assert!(!eq("8", "(C) 9"));
    }

    #[test]
    fn key_matches_single_letter_equivalence() {
        assert_eq!(key(&prepare("E")), key(&prepare("e")));
        assert_eq!(key(&prepare("\\text{(C)}")), key(&prepare("C")));
        assert_eq!(key(&prepare("\\text{Odd}")), key(&prepare("odd")));
    }
}
