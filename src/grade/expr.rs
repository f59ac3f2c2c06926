//! Tokenizer and recursive-descent parser from normalised LaTeX to an answer tree.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::Zero;

/// Deepest nesting the parser follows before giving up (bounds recursion).
const MAX_DEPTH: usize = 60;
/// Longest token stream parsed; longer answers are compared as text only.
const MAX_TOKENS: usize = 3_000;
/// Longest number literal parsed (longer ones are compared as text).
const MAX_NUMBER_DIGITS: usize = 1_000;
/// Largest decimal exponent accepted in `1e5`-style literals.
const MAX_SCI_EXP: i64 = 400;

const UNITS: &[&str] = &[
    "cm", "mm", "km", "meter", "meters", "metre", "metres", "mile", "miles", "inch", "inches",
    "feet", "foot", "ft", "yard", "yards", "unit", "units", "sq", "square", "cubic", "degree",
    "degrees", "deg", "hour", "hours", "hr", "hrs", "minutes", "seconds", "dollar", "dollars",
    "cent", "cents", "yuan", "euro", "euros", "kg", "gram", "grams", "pound", "pounds", "lb",
    "lbs", "ounce", "ounces", "oz", "liter", "liters", "litre", "litres", "ml", "mph", "day",
    "days", "week", "weeks", "year", "years", "month", "months", "people", "students", "ways",
    "times", "mm", "m", "kmh",
];

const FUNCS: &[&str] = &[
    "sin", "cos", "tan", "sec", "csc", "cot", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "ln", "log", "exp", "sqrt",
];

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Num(String),
    /// Mixed number `7 3/4` (whole, numerator, denominator), written with a space.
    Mixed(String, String, String),
    Ident(String),
    Cmd(String),
    Op(char),
    Le,
    Ge,
    Ne,
    Approx,
    Pm,
    Mp,
    LSet,
    RSet,
    RowSep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RelOp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    Ne,
    Approx,
    In,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Expr {
    /// Exact value; the flag says it was written as a decimal (compared with tolerance).
    Num(BigRational, bool),
    Sym(String),
    Pi,
    E,
    I,
    Inf,
    Add(Vec<Expr>),
    Mul(Vec<Expr>),
    Neg(Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
    Pow(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    /// `a ± b`.
    Pm(Box<Expr>, Box<Expr>),
    Fact(Box<Expr>),
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Set(Vec<Expr>),
    Ratio(Vec<Expr>),
    Union(Vec<Expr>),
    Interval(bool, Box<Expr>, Box<Expr>, bool),
    Matrix(Vec<Vec<Expr>>),
    Rel(Vec<Expr>, Vec<RelOp>),
}

pub(super) fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // Bracket depth of the tokens emitted so far (for thousands-separator decisions).
    let mut group_depth: i32 = 0;
    let mut seen = 0;
    while i < chars.len() {
        if out.len() > MAX_TOKENS {
            return None;
        }
        for t in &out[seen..] {
            match t {
                Tok::Op('(' | '[') | Tok::LSet => group_depth += 1,
                Tok::Op(')' | ']') | Tok::RSet => group_depth = (group_depth - 1).max(0),
                _ => {}
            }
        }
        seen = out.len();
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            i = push_number(&mut out, &chars, i, group_depth > 0);
            continue;
        }
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            push_word(&mut out, &word, &chars, &mut i);
            continue;
        }
        if c == '\\' {
            let Some(&n) = chars.get(i + 1) else {
                i += 1;
                continue;
            };
            if n == '\\' {
                out.push(Tok::RowSep);
                i += 2;
            } else if n == '{' {
                out.push(Tok::LSet);
                i += 2;
            } else if n == '}' {
                out.push(Tok::RSet);
                i += 2;
            } else if n.is_ascii_alphabetic() {
                let start = i + 1;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_alphabetic() {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                match glued_greek(&name) {
                    // `\piG`: the letter `\pi` written against the name `G`.
                    Some((greek, rest)) => {
                        push_cmd(&mut out, greek);
                        out.extend(rest.chars().map(|c| Tok::Ident(c.to_string())));
                    }
                    None => push_cmd(&mut out, &name),
                }
            } else if n == '|' {
                out.push(Tok::Op('|'));
                i += 2;
            } else {
                i += 2;
            }
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        match two.as_str() {
            "<=" => out.push(Tok::Le),
            ">=" => out.push(Tok::Ge),
            "!=" => out.push(Tok::Ne),
            _ => {
                if c.is_alphabetic() {
                    // CJK words after a value (`9页`, `12元`) are units; Greek letters are names.
                    if is_cjk(c) && ends_in_words(&out, &chars, i) {
                        i += 1;
                        continue;
                    }
                    out.push(Tok::Ident(c.to_string()));
                } else {
                    out.push(Tok::Op(c));
                }
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Some(out)
}

/// Pushes the number at `i` (a mixed number when one follows); returns where scanning resumes.
fn push_number(out: &mut Vec<Tok>, chars: &[char], i: usize, in_group: bool) -> usize {
    let (tok, next) = scan_number(chars, i, in_group);
    let after_op = out
        .last()
        .is_some_and(|t| matches!(t, Tok::Op('/' | '^' | '.')));
    match mixed_fraction(chars, next, &tok) {
        Some((a, b, end)) if !after_op => {
            out.push(Tok::Mixed(tok, a, b));
            end
        }
        _ => {
            out.push(Tok::Num(tok));
            next
        }
    }
}

/// ` 3/4` after a whole number: a proper fraction separated by spaces makes a mixed number.
fn mixed_fraction(chars: &[char], at: usize, whole: &str) -> Option<(String, String, usize)> {
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut i = at;
    while chars.get(i) == Some(&' ') {
        i += 1;
    }
    if i == at {
        return None;
    }
    let digits = |from: usize| {
        let mut j = from;
        while chars.get(j).is_some_and(char::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let a_end = digits(i);
    if a_end == i || chars.get(a_end) != Some(&'/') {
        return None;
    }
    let b_end = digits(a_end + 1);
    if b_end == a_end + 1 || b_end - i > 18 {
        return None;
    }
    if chars
        .get(b_end)
        .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | '/' | '^' | '_'))
    {
        return None;
    }
    let a: String = chars[i..a_end].iter().collect();
    let b: String = chars[a_end + 1..b_end].iter().collect();
    let (x, y) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
    (x < y).then_some((a, b, b_end))
}

/// Scans a number; inside brackets a single `,ddd` group is a list separator (`(12,102)`).
fn scan_number(chars: &[char], start: usize, in_group: bool) -> (String, usize) {
    let mut i = start;
    let mut s = String::new();
    while i < chars.len() && chars[i].is_ascii_digit() {
        s.push(chars[i]);
        i += 1;
    }
    // Thousands groups `1,234,567` / `1 234 567`; only when the lead group has 1–3 digits.
    if (1..=3).contains(&s.len()) && !s.starts_with('0') {
        let seps: &[char] = if in_group { &[','] } else { &[',', ' '] };
        for &sep in seps {
            let mut j = i;
            let mut groups = String::new();
            while j + 3 < chars.len() + 1
                && chars.get(j) == Some(&sep)
                && chars[j + 1..]
                    .iter()
                    .take(3)
                    .filter(|c| c.is_ascii_digit())
                    .count()
                    == 3
                && !chars.get(j + 4).is_some_and(|c| c.is_ascii_digit())
            {
                groups.extend(&chars[j + 1..j + 4]);
                j += 4;
            }
            let needed = if in_group { 6 } else { 3 };
            if groups.len() >= needed {
                s.push_str(&groups);
                i = j;
                break;
            }
        }
    }
    if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
        s.push('.');
        i += 1;
        while i < chars.len() && chars[i].is_ascii_digit() {
            s.push(chars[i]);
            i += 1;
        }
    }
    // Scientific notation `1.5e-3`.
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        let mut exp = String::new();
        if matches!(chars.get(j), Some('+' | '-')) {
            exp.push(chars[j]);
            j += 1;
        }
        let digits_start = j;
        while j < chars.len() && chars[j].is_ascii_digit() {
            exp.push(chars[j]);
            j += 1;
        }
        if j > digits_start && !chars.get(j).is_some_and(|c| c.is_ascii_alphabetic()) {
            s.push('e');
            s.push_str(&exp);
            i = j;
        }
    }
    (s, i)
}

fn push_word(out: &mut Vec<Tok>, word: &str, chars: &[char], i: &mut usize) {
    let lower = word.to_ascii_lowercase();
    match lower.as_str() {
        "and" | "or" | "und" => out.push(Tok::Op(',')),
        "gcd" | "lcm" => out.push(Tok::Cmd(lower.clone())),
        "pi" => out.push(Tok::Cmd("pi".into())),
        "inf" | "infty" | "infinity" => out.push(Tok::Cmd("infty".into())),
        w if FUNCS.contains(&w) => out.push(Tok::Cmd(w.to_string())),
        w if word.len() >= 2 && UNITS.contains(&w) => {
            // A trailing `^2` belongs to the unit (`cm^2`).
            let mut j = *i;
            while chars.get(j) == Some(&' ') {
                j += 1;
            }
            if chars.get(j) == Some(&'^') {
                let mut k = j + 1;
                if chars.get(k) == Some(&'{') {
                    k += 1;
                }
                if chars.get(k).is_some_and(|c| c.is_ascii_digit()) {
                    k += 1;
                    if chars.get(k) == Some(&'}') {
                        k += 1;
                    }
                    *i = k;
                }
            }
        }
        _ if word.len() >= 3 && ends_in_words(out, chars, *i) => {
            // Trailing unit-like words after a value (`5 apples`) are not part of the answer.
        }
        _ => {
            for c in word.chars() {
                out.push(Tok::Ident(c.to_string()));
            }
        }
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7AF}')
}

/// True when a value precedes and only words follow up to the end of the item.
fn ends_in_words(out: &[Tok], chars: &[char], from: usize) -> bool {
    let after_value = matches!(
        out.last(),
        Some(Tok::Num(_) | Tok::Op(')' | '}' | ']') | Tok::Cmd(_))
    );
    after_value
        && chars[from.min(chars.len())..]
            .iter()
            .take_while(|c| !matches!(c, ',' | ';'))
            .all(|c| c.is_alphabetic() || c.is_whitespace() || matches!(c, '.' | '。'))
}

/// Greek letters, longest spelling first where one begins another.
const GREEK: &[&str] = &[
    "varepsilon",
    "vartheta",
    "varsigma",
    "upsilon",
    "Upsilon",
    "epsilon",
    "varrho",
    "varphi",
    "lambda",
    "Lambda",
    "alpha",
    "beta",
    "gamma",
    "Gamma",
    "delta",
    "Delta",
    "theta",
    "Theta",
    "kappa",
    "sigma",
    "Sigma",
    "omega",
    "Omega",
    "zeta",
    "iota",
    "eta",
    "rho",
    "tau",
    "phi",
    "Phi",
    "chi",
    "psi",
    "Psi",
    "mu",
    "nu",
    "xi",
    "Xi",
    "pi",
    "Pi",
];

/// `\piG` → (`pi`, `G`): an unknown command that is a Greek letter with up to three Latin
/// letters written against it (a name never continues a Greek letter's spelling).
fn glued_greek(name: &str) -> Option<(&str, &str)> {
    // A letter needs two bytes and the name one; a Greek letter is at most ten bytes and at
    // most three letters follow it. `\null` and siunitx's `\num` are commands of their own.
    if !(3..=13).contains(&name.len()) || matches!(name, "null" | "num") {
        return None;
    }
    // A name that is itself a Greek letter finds itself here and has no rest. The first byte is
    // compared before the rest: most commands share no Greek initial.
    let first = name.as_bytes()[0];
    let greek = GREEK
        .iter()
        .find(|g| g.as_bytes()[0] == first && name.starts_with(*g))?;
    let rest = &name[greek.len()..];
    (!rest.is_empty() && rest.len() <= 3).then_some((greek, rest))
}

fn push_cmd(out: &mut Vec<Tok>, name: &str) {
    let tok = match name {
        "le" | "leq" | "leqslant" => Tok::Le,
        "ge" | "geq" | "geqslant" => Tok::Ge,
        "ne" | "neq" => Tok::Ne,
        "approx" | "simeq" | "approxeq" => Tok::Approx,
        "pm" => Tok::Pm,
        "mp" => Tok::Mp,
        "lt" => Tok::Op('<'),
        "gt" => Tok::Op('>'),
        "cdot" | "times" | "ast" => Tok::Op('*'),
        "div" => Tok::Op('/'),
        "colon" => Tok::Op(':'),
        "lbrace" => Tok::LSet,
        "rbrace" => Tok::RSet,
        "vert" | "lvert" | "rvert" | "mid" => Tok::Op('|'),
        "langle" => Tok::Op('('),
        "rangle" => Tok::Op(')'),
        "infty" | "infin" => Tok::Cmd("infty".into()),
        "dfrac" | "tfrac" | "cfrac" => Tok::Cmd("frac".into()),
        "land" | "wedge" => Tok::Op(','),
        "mod" | "bmod" => Tok::Cmd("bmod".into()),
        _ => Tok::Cmd(name.to_string()),
    };
    out.push(tok);
}

pub(super) fn parse_number(s: &str) -> Option<Expr> {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(p) => (&s[..p], s[p + 1..].parse::<i64>().ok()?),
        None => (s, 0),
    };
    let decimal = mant.contains('.');
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let n: BigInt = match small_digits(int, frac) {
        Some(v) => BigInt::from(v),
        None => {
            let digits = format!("{int}{frac}");
            if digits.len() > MAX_NUMBER_DIGITS {
                return None;
            }
            if digits.is_empty() {
                BigInt::zero()
            } else {
                digits.parse().ok()?
            }
        }
    };
    if exp.abs() > MAX_SCI_EXP {
        return None;
    }
    let ten = BigInt::from(10);
    let mut value = if frac.is_empty() {
        BigRational::from_integer(n)
    } else {
        BigRational::new(n, num_traits::pow(ten.clone(), frac.len()))
    };
    if exp > 0 {
        value *= BigRational::from_integer(num_traits::pow(ten, exp as usize));
    } else if exp < 0 {
        value /= BigRational::from_integer(num_traits::pow(ten, (-exp) as usize));
    }
    Some(Expr::Num(value, decimal || exp != 0))
}

/// The digits of `int` then `frac` as one u64, when they are at most 19 ASCII digits (always
/// below 2^64): most numbers, read without building and parsing a text of them.
fn small_digits(int: &str, frac: &str) -> Option<u64> {
    let digits = || int.bytes().chain(frac.bytes());
    (int.len() + frac.len() <= 19 && digits().all(|b| b.is_ascii_digit()))
        .then(|| digits().fold(0, |v, b| v * 10 + u64::from(b - b'0')))
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    abs_depth: usize,
    /// Inside a trigonometric function's argument, where `^\circ` means π/180.
    trig_depth: usize,
}

type PResult = Result<Expr, ()>;

/// Parses a normalised answer; `None` when it is not understood as mathematics.
pub(super) fn parse(s: &str) -> Option<Expr> {
    let toks = tokenize(s)?;
    if toks.is_empty() {
        return None;
    }
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        abs_depth: 0,
        trig_depth: 0,
    };
    let node = p.parse_top().ok()?;
    (p.pos == p.toks.len()).then_some(node)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k)
    }

    fn bump(&mut self) -> Option<Tok> {
        // Tokens are read once, front to back (nothing looks behind `pos`): a consumed one is
        // taken, not cloned.
        let t = self
            .toks
            .get_mut(self.pos)
            .map(|t| std::mem::replace(t, Tok::RowSep));
        self.pos += 1;
        t
    }

    fn is_op(&self, c: char) -> bool {
        matches!(self.peek(), Some(Tok::Op(x)) if *x == c)
    }

    fn is_cmd(&self, name: &str) -> bool {
        matches!(self.peek(), Some(Tok::Cmd(c)) if c == name)
    }

    fn expect_op(&mut self, c: char) -> Result<(), ()> {
        if self.is_op(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(())
        }
    }

    fn enter(&mut self) -> Result<(), ()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(())
        } else {
            Ok(())
        }
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn parse_top(&mut self) -> PResult {
        let groups = self.parse_seq(&[])?;
        if groups.len() == 1 {
            let mut items = groups.into_iter().next().unwrap_or_default();
            return match items.len() {
                0 => Err(()),
                1 => items.pop().ok_or(()),
                _ => Ok(Expr::List(items)),
            };
        }
        let elems: Vec<Expr> = groups
            .into_iter()
            .map(|mut g| {
                if g.len() == 1 {
                    g.pop().unwrap_or(Expr::List(vec![]))
                } else {
                    Expr::Tuple(g)
                }
            })
            .collect();
        Ok(Expr::List(elems))
    }

    /// Items separated by `,` within groups separated by `;`, up to a closer (not consumed).
    fn parse_seq(&mut self, closers: &[Tok]) -> Result<Vec<Vec<Expr>>, ()> {
        let mut groups = vec![Vec::new()];
        loop {
            match self.peek() {
                None => break,
                Some(t) if closers.contains(t) => break,
                Some(Tok::Op(',')) => {
                    self.pos += 1;
                }
                Some(Tok::Op(';')) => {
                    self.pos += 1;
                    if groups.last().is_some_and(|g| !g.is_empty()) {
                        groups.push(Vec::new());
                    }
                }
                Some(_) => {
                    let item = self.parse_rel()?;
                    if let Some(g) = groups.last_mut() {
                        g.push(item);
                    }
                    // Items must be separated.
                    match self.peek() {
                        None | Some(Tok::Op(',' | ';')) => {}
                        Some(t) if closers.contains(t) => {}
                        _ => return Err(()),
                    }
                }
            }
        }
        if groups.len() > 1 && groups.last().is_some_and(|g| g.is_empty()) {
            groups.pop();
        }
        Ok(groups)
    }

    fn relop(&self) -> Option<RelOp> {
        Some(match self.peek()? {
            Tok::Op('=') => RelOp::Eq,
            Tok::Op('<') => RelOp::Lt,
            Tok::Op('>') => RelOp::Gt,
            Tok::Le => RelOp::Le,
            Tok::Ge => RelOp::Ge,
            Tok::Ne => RelOp::Ne,
            Tok::Approx => RelOp::Approx,
            Tok::Cmd(c) if c == "in" => RelOp::In,
            _ => return None,
        })
    }

    fn parse_rel(&mut self) -> PResult {
        self.enter()?;
        let first = self.parse_union()?;
        // Most items are a single term: no lists for them.
        if self.relop().is_none() {
            self.leave();
            return Ok(first);
        }
        let mut parts = vec![first];
        let mut ops = Vec::new();
        while let Some(op) = self.relop() {
            self.pos += 1;
            parts.push(self.parse_union()?);
            ops.push(op);
        }
        self.leave();
        Ok(Expr::Rel(parts, ops))
    }

    fn parse_union(&mut self) -> PResult {
        let first = self.parse_ratio()?;
        if !self.is_cmd("cup") {
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.is_cmd("cup") {
            self.pos += 1;
            parts.push(self.parse_ratio()?);
        }
        Ok(Expr::Union(parts))
    }

    fn parse_ratio(&mut self) -> PResult {
        let first = self.parse_sum()?;
        if !self.is_op(':') {
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.is_op(':') {
            self.pos += 1;
            parts.push(self.parse_sum()?);
        }
        Ok(Expr::Ratio(parts))
    }

    fn parse_sum(&mut self) -> PResult {
        self.enter()?;
        let mut acc = self.parse_term()?;
        loop {
            match self.peek() {
                Some(Tok::Op('+')) => {
                    self.pos += 1;
                    let t = self.parse_term()?;
                    acc = add(acc, t);
                }
                Some(Tok::Op('-')) => {
                    self.pos += 1;
                    let t = self.parse_term()?;
                    acc = add(acc, Expr::Neg(Box::new(t)));
                }
                Some(Tok::Pm) => {
                    self.pos += 1;
                    let t = self.parse_term()?;
                    acc = Expr::Pm(Box::new(acc), Box::new(t));
                }
                Some(Tok::Mp) => {
                    self.pos += 1;
                    let t = self.parse_term()?;
                    acc = Expr::Pm(Box::new(acc), Box::new(Expr::Neg(Box::new(t))));
                }
                _ => break,
            }
        }
        self.leave();
        Ok(acc)
    }

    fn starts_primary(&self) -> bool {
        match self.peek() {
            Some(Tok::Num(_) | Tok::Mixed(..) | Tok::Ident(_) | Tok::LSet) => true,
            Some(Tok::Op('(')) => true,
            Some(Tok::Op('|')) => self.abs_depth == 0,
            Some(Tok::Cmd(c)) => !matches!(
                c.as_str(),
                "cup" | "in" | "end" | "rfloor" | "rceil" | "degree" | "bmod"
            ),
            _ => false,
        }
    }

    fn parse_term(&mut self) -> PResult {
        let mut acc = self.parse_unary()?;
        let mut divisions = 0;
        loop {
            if self.is_op('*') {
                self.pos += 1;
                let f = self.parse_unary()?;
                acc = mul(acc, f);
            } else if self.is_op('/') {
                self.pos += 1;
                // Division chains nest to the left; bound them like any other nesting.
                divisions += 1;
                if divisions > MAX_DEPTH {
                    return Err(());
                }
                let d = self.parse_unary()?;
                acc = Expr::Div(Box::new(acc), Box::new(d));
            } else if self.is_cmd("bmod") {
                self.pos += 1;
                let m = self.parse_unary()?;
                acc = Expr::Call("mod".into(), vec![acc, m]);
            } else if is_function_name(&acc) && self.is_op('(') {
                // `f(x)` is a function's value, not the product f·x.
                let Expr::Sym(name) = acc else {
                    return Err(());
                };
                acc = match self.parse_primary()? {
                    Expr::Tuple(args) if !args.is_empty() => Expr::Call(name, args),
                    arg => Expr::Call(name, vec![arg]),
                };
            } else if self.starts_primary() {
                // `1 2` is two numbers, not the product 2 (and never 12).
                if matches!(self.peek(), Some(Tok::Num(_) | Tok::Mixed(..))) && ends_in_number(&acc)
                {
                    return Err(());
                }
                let f = self.parse_power()?;
                acc = mul(acc, f);
            } else {
                break;
            }
        }
        Ok(acc)
    }

    fn parse_unary(&mut self) -> PResult {
        self.enter()?;
        let r = match self.peek() {
            Some(Tok::Op('-')) => {
                self.pos += 1;
                self.parse_unary().map(|n| Expr::Neg(Box::new(n)))
            }
            Some(Tok::Op('+')) => {
                self.pos += 1;
                self.parse_unary()
            }
            Some(Tok::Pm) => {
                self.pos += 1;
                self.parse_unary()
                    .map(|n| Expr::Pm(Box::new(int(0)), Box::new(n)))
            }
            Some(Tok::Mp) => {
                self.pos += 1;
                self.parse_unary()
                    .map(|n| Expr::Pm(Box::new(int(0)), Box::new(Expr::Neg(Box::new(n)))))
            }
            _ => self.parse_power(),
        };
        self.leave();
        r
    }

    fn parse_power(&mut self) -> PResult {
        let base = self.parse_postfix()?;
        if self.is_op('^') {
            self.pos += 1;
            let e = self.parse_exponent()?;
            return Ok(Expr::Pow(Box::new(base), Box::new(e)));
        }
        Ok(base)
    }

    fn parse_exponent(&mut self) -> PResult {
        self.enter()?;
        let r = if self.is_op('-') {
            self.pos += 1;
            self.parse_exponent().map(|n| Expr::Neg(Box::new(n)))
        } else if self.is_op('+') {
            self.pos += 1;
            self.parse_exponent()
        } else {
            let p = self.parse_postfix()?;
            if self.is_op('^') {
                self.pos += 1;
                self.parse_exponent()
                    .map(|e| Expr::Pow(Box::new(p), Box::new(e)))
            } else {
                Ok(p)
            }
        };
        self.leave();
        r
    }

    fn parse_postfix(&mut self) -> PResult {
        let mut p = self.parse_primary()?;
        let mut factorials = 0;
        loop {
            if self.is_op('!') {
                self.pos += 1;
                factorials += 1;
                if factorials > 3 {
                    return Err(());
                }
                p = Expr::Fact(Box::new(p));
            } else if self.is_op('_') {
                self.pos += 1;
                let sub = self.raw_arg()?;
                p = match p {
                    Expr::Sym(name) => Expr::Sym(format!("{name}_{sub}")),
                    Expr::Num(v, _) => Expr::Sym(format!("{v}_{sub}")),
                    Expr::Call(name, args) => Expr::Call(format!("{name}_{sub}"), args),
                    other => other,
                };
            } else if self.is_cmd("degree") {
                self.pos += 1;
                // Degrees are a unit, except inside a trigonometric function.
                if self.trig_depth > 0 {
                    let rad = Expr::Div(Box::new(Expr::Pi), Box::new(int(180)));
                    p = mul(p, rad);
                }
            } else if self.is_op('\'') {
                self.pos += 1;
                p = match p {
                    Expr::Sym(name) => Expr::Sym(format!("{name}'")),
                    other => other,
                };
            } else {
                break;
            }
        }
        Ok(p)
    }

    /// Raw text of a `{...}` group or a single token (for subscripts and names).
    fn raw_arg(&mut self) -> Result<String, ()> {
        if self.is_op('{') {
            self.pos += 1;
            let mut depth = 1usize;
            let mut s = String::new();
            while let Some(t) = self.bump() {
                match t {
                    Tok::Op('{') => depth += 1,
                    Tok::Op('}') => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(s);
                        }
                    }
                    _ => {}
                }
                s.push_str(&tok_text(&t));
            }
            Err(())
        } else {
            self.bump().map(|t| tok_text(&t)).ok_or(())
        }
    }

    /// A macro argument: `{...}` group or a single primary.
    fn arg(&mut self) -> PResult {
        if self.is_op('{') {
            self.pos += 1;
            let mut groups = self.parse_seq(&[Tok::Op('}')])?;
            self.expect_op('}')?;
            let mut items: Vec<Expr> = groups.drain(..).flatten().collect();
            return match items.len() {
                0 => Err(()),
                1 => items.pop().ok_or(()),
                _ => Ok(Expr::List(items)),
            };
        }
        self.parse_primary()
    }

    fn parse_primary(&mut self) -> PResult {
        self.enter()?;
        let r = self.parse_primary_inner();
        self.leave();
        r
    }

    fn parse_primary_inner(&mut self) -> PResult {
        let tok = self.bump().ok_or(())?;
        match tok {
            Tok::Num(s) => {
                let n = parse_number(&s).ok_or(())?;
                // Mixed number `3\frac12` means 3 + 1/2.
                if !s.contains(['.', 'e']) && self.is_cmd("frac") {
                    if let (
                        Some(Tok::Op('{')),
                        Some(Tok::Num(a)),
                        Some(Tok::Op('}')),
                        Some(Tok::Op('{')),
                        Some(Tok::Num(b)),
                        Some(Tok::Op('}')),
                    ) = (
                        self.peek_at(1),
                        self.peek_at(2),
                        self.peek_at(3),
                        self.peek_at(4),
                        self.peek_at(5),
                        self.peek_at(6),
                    ) {
                        if !a.contains(['.', 'e']) && !b.contains(['.', 'e']) {
                            let a = parse_number(a).ok_or(())?;
                            let b = parse_number(b).ok_or(())?;
                            self.pos += 7;
                            return Ok(Expr::Add(vec![n, Expr::Div(Box::new(a), Box::new(b))]));
                        }
                    }
                }
                Ok(n)
            }
            Tok::Mixed(w, a, b) => {
                let (w, a, b) = (parse_number(&w), parse_number(&a), parse_number(&b));
                let (w, a, b) = (w.ok_or(())?, a.ok_or(())?, b.ok_or(())?);
                Ok(Expr::Add(vec![w, Expr::Div(Box::new(a), Box::new(b))]))
            }
            Tok::Ident(s) => Ok(match s.as_str() {
                "e" => Expr::E,
                "i" => Expr::I,
                _ => Expr::Sym(s),
            }),
            Tok::Op(open @ ('(' | '[')) => {
                let groups = self.parse_seq(&[Tok::Op(')'), Tok::Op(']')])?;
                let close = match self.bump() {
                    Some(Tok::Op(c)) => c,
                    _ => return Err(()),
                };
                let mut items: Vec<Expr> = groups.into_iter().flatten().collect();
                let mixed = open == '[' || close == ']';
                match items.len() {
                    0 => Ok(Expr::Tuple(vec![])),
                    1 => items.pop().ok_or(()),
                    2 if mixed => {
                        let b = items.pop().ok_or(())?;
                        let a = items.pop().ok_or(())?;
                        Ok(Expr::Interval(
                            open == '[',
                            Box::new(a),
                            Box::new(b),
                            close == ']',
                        ))
                    }
                    _ if open == '(' && close == ']' => Err(()),
                    _ if open == '[' && close == ')' => Err(()),
                    _ => Ok(Expr::Tuple(items)),
                }
            }
            Tok::Op('{') => {
                let groups = self.parse_seq(&[Tok::Op('}')])?;
                self.expect_op('}')?;
                let mut items: Vec<Expr> = groups.into_iter().flatten().collect();
                match items.len() {
                    0 => Err(()),
                    1 => items.pop().ok_or(()),
                    _ => Ok(Expr::List(items)),
                }
            }
            Tok::LSet => {
                let groups = self.parse_seq(&[Tok::RSet])?;
                if self.bump() != Some(Tok::RSet) {
                    return Err(());
                }
                Ok(Expr::Set(groups.into_iter().flatten().collect()))
            }
            Tok::Op('|') => {
                self.abs_depth += 1;
                let inner = self.parse_sum()?;
                self.abs_depth -= 1;
                self.expect_op('|')?;
                Ok(Expr::Call("abs".into(), vec![inner]))
            }
            Tok::Cmd(name) => self.parse_command(&name),
            _ => Err(()),
        }
    }

    fn parse_command(&mut self, name: &str) -> PResult {
        match name {
            "frac" | "over" => {
                let a = self.arg()?;
                let b = self.arg()?;
                Ok(Expr::Div(Box::new(a), Box::new(b)))
            }
            "binom" | "dbinom" | "tbinom" => {
                let a = self.arg()?;
                let b = self.arg()?;
                Ok(Expr::Call("binom".into(), vec![a, b]))
            }
            "sqrt" => {
                if self.is_op('[') {
                    self.pos += 1;
                    let groups = self.parse_seq(&[Tok::Op(']')])?;
                    self.expect_op(']')?;
                    let mut items: Vec<Expr> = groups.into_iter().flatten().collect();
                    let n = if items.len() == 1 {
                        items.pop().ok_or(())?
                    } else {
                        return Err(());
                    };
                    let a = self.arg()?;
                    return Ok(Expr::Pow(
                        Box::new(a),
                        Box::new(Expr::Div(Box::new(int(1)), Box::new(n))),
                    ));
                }
                let a = self.arg()?;
                Ok(Expr::Call("sqrt".into(), vec![a]))
            }
            "pi" => Ok(Expr::Pi),
            "emptyset" | "varnothing" => Ok(Expr::Set(Vec::new())),
            "infty" => Ok(Expr::Inf),
            "dots" | "ldots" | "cdots" | "dotsm" | "dotsb" => Ok(Expr::Sym("...".into())),
            "lfloor" | "lceil" => {
                let inner = self.parse_sum()?;
                let close = if name == "lfloor" { "rfloor" } else { "rceil" };
                if !matches!(self.bump(), Some(Tok::Cmd(c)) if c == close) {
                    return Err(());
                }
                Ok(Expr::Call(name[1..].to_string(), vec![inner]))
            }
            "begin" => self.parse_env(),
            "sum" | "prod" | "int" | "lim" => {
                // Bounds become part of the operator's name; the body is the following product.
                let mut full = name.to_string();
                for _ in 0..2 {
                    if self.is_op('_') || self.is_op('^') {
                        let c = if self.is_op('_') { '_' } else { '^' };
                        self.pos += 1;
                        full.push(c);
                        full.push_str(&self.raw_arg()?);
                    }
                }
                let body = self.parse_term()?;
                Ok(Expr::Call(full, vec![body]))
            }
            f if FUNCS.contains(&f) || matches!(f, "arccot" | "arcsec" | "arccsc" | "lg") => {
                self.parse_function(f)
            }
            "cup" | "in" | "end" | "rfloor" | "rceil" => Err(()),
            other => {
                // Unknown macro: a named symbol (with its braced argument, e.g. `\overline{AB}`).
                if self.is_op('{') {
                    let a = self.raw_arg()?;
                    Ok(Expr::Sym(format!("\\{other}{{{a}}}")))
                } else {
                    Ok(Expr::Sym(format!("\\{other}")))
                }
            }
        }
    }

    /// `\sin^2(x)`, `\log_2 8`: a named function with optional power and base.
    fn parse_function(&mut self, f: &str) -> PResult {
        let mut power = None;
        let mut base = None;
        for _ in 0..2 {
            if self.is_op('^') {
                self.pos += 1;
                power = Some(self.parse_exponent()?);
            } else if self.is_op('_') {
                self.pos += 1;
                base = Some(self.arg()?);
            }
        }
        let trig = matches!(f, "sin" | "cos" | "tan" | "sec" | "csc" | "cot");
        self.trig_depth += usize::from(trig);
        let a = if self.is_op('(') || self.is_op('{') {
            self.parse_postfix()
        } else {
            self.parse_power()
        };
        self.trig_depth -= usize::from(trig);
        let a = a?;
        let mut node = match (f, base) {
            ("log", Some(b)) => Expr::Div(
                Box::new(Expr::Call("ln".into(), vec![a])),
                Box::new(Expr::Call("ln".into(), vec![b])),
            ),
            _ => Expr::Call(f.to_string(), vec![a]),
        };
        if let Some(p) = power {
            node = Expr::Pow(Box::new(node), Box::new(p));
        }
        Ok(node)
    }

    fn parse_env(&mut self) -> PResult {
        let env = self.raw_arg()?;
        let env = env.trim_end_matches('*');
        let matrixish = matches!(
            env,
            "pmatrix"
                | "bmatrix"
                | "Bmatrix"
                | "vmatrix"
                | "Vmatrix"
                | "matrix"
                | "smallmatrix"
                | "array"
        );
        if !matrixish {
            return Err(());
        }
        if env == "array" && self.is_op('{') {
            self.raw_arg()?;
        }
        let mut rows: Vec<Vec<Expr>> = vec![Vec::new()];
        loop {
            match self.peek() {
                None => return Err(()),
                Some(Tok::Cmd(c)) if c == "end" => {
                    self.pos += 1;
                    self.raw_arg()?;
                    break;
                }
                Some(Tok::RowSep) => {
                    self.pos += 1;
                    rows.push(Vec::new());
                }
                Some(Tok::Op('&')) => {
                    self.pos += 1;
                }
                Some(_) => {
                    let cell = self.parse_sum()?;
                    if let Some(r) = rows.last_mut() {
                        r.push(cell);
                    }
                }
            }
        }
        rows.retain(|r| !r.is_empty());
        if rows.is_empty() {
            return Err(());
        }
        // `vmatrix` is a determinant, a number.
        if env.starts_with(['v', 'V']) {
            return Ok(Expr::Call("det".into(), vec![Expr::Matrix(rows)]));
        }
        Ok(Expr::Matrix(rows))
    }
}

fn tok_text(t: &Tok) -> String {
    match t {
        Tok::Num(s) | Tok::Ident(s) => s.clone(),
        Tok::Mixed(w, a, b) => format!("{w} {a}/{b}"),
        Tok::Cmd(c) => format!("\\{c}"),
        Tok::Op(c) => c.to_string(),
        Tok::Le => "<=".into(),
        Tok::Ge => ">=".into(),
        Tok::Ne => "!=".into(),
        Tok::Approx => "~".into(),
        Tok::Pm => "+-".into(),
        Tok::Mp => "-+".into(),
        Tok::LSet => "{".into(),
        Tok::RSet => "}".into(),
        Tok::RowSep => ";".into(),
    }
}

/// `f`, `g`, `h`, and any name with a prime (`f'`, `p'`: a derivative): names of functions.
fn is_function_name(n: &Expr) -> bool {
    matches!(n, Expr::Sym(s) if s.ends_with('\'') || matches!(s.as_str(), "f" | "g" | "h"))
}

/// True when the last factor of `n` is a plain number.
fn ends_in_number(n: &Expr) -> bool {
    match n {
        Expr::Num(..) => true,
        Expr::Mul(v) => v.last().is_some_and(ends_in_number),
        _ => false,
    }
}

pub(super) fn int(n: i64) -> Expr {
    Expr::Num(BigRational::from_integer(BigInt::from(n)), false)
}

fn add(a: Expr, b: Expr) -> Expr {
    match a {
        Expr::Add(mut v) => {
            v.push(b);
            Expr::Add(v)
        }
        other => Expr::Add(vec![other, b]),
    }
}

fn mul(a: Expr, b: Expr) -> Expr {
    match a {
        Expr::Mul(mut v) => {
            v.push(b);
            Expr::Mul(v)
        }
        other => Expr::Mul(vec![other, b]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Expr {
        parse(s).unwrap_or_else(|| panic!("no parse: {s}"))
    }

    #[test]
    fn numbers_read_from_a_u64_equal_the_text_parse() {
        // The text round trip that every number took before the u64 path.
        let by_text = |s: &str| {
            let (mant, exp) = match s.find(['e', 'E']) {
                Some(p) => (&s[..p], s[p + 1..].parse::<i64>().ok()?),
                None => (s, 0),
            };
            let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
            let digits = format!("{int}{frac}");
            let n: BigInt = if digits.is_empty() {
                BigInt::zero()
            } else {
                digits.parse().ok()?
            };
            let scale = BigRational::from_integer(num_traits::pow(
                BigInt::from(10),
                exp.unsigned_abs() as usize,
            ));
            let v = BigRational::new(n, num_traits::pow(BigInt::from(10), frac.len()));
            let v = if exp < 0 { v / scale } else { v * scale };
            Some(Expr::Num(v, mant.contains('.') || exp != 0))
        };
        let cases = [
            "0",
            "007",
            "42",
            "12.50",
            ".5",
            "5.",
            "",
            ".",
            "0.000",
            "1e3",
            "2.5e-2",
            "3E+2",
            "9999999999999999999",
            "99999999999.99999999",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234567890.5",
            "1.5e-3",
            "+5",
        ];
        for s in cases {
            assert_eq!(parse_number(s), by_text(s), "{s:?}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(p("1,234,567"), int(1_234_567));
        assert_eq!(p("1 000"), int(1000));
        assert!(matches!(p("1.5e-3"), Expr::Num(_, true)));
        assert!(matches!(p("1,2"), Expr::List(_)));
        assert!(matches!(p("0,100"), Expr::List(_)));
        assert_eq!(p("12,102"), int(12_102));
        assert!(matches!(p("(12,102)"), Expr::Tuple(_)));
        assert!(matches!(p("(1,234,567)"), Expr::Num(..)));
    }

    #[test]
    fn structures() {
        assert!(matches!(p("(1,2)"), Expr::Tuple(_)));
        assert!(matches!(p("[0,1)"), Expr::Interval(true, _, _, false)));
        assert!(matches!(p("\\{1,2\\}"), Expr::Set(_)));
        assert!(matches!(p("(1,2) \\cup (3,4)"), Expr::Union(_)));
        assert!(matches!(
            p("\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}"),
            Expr::Matrix(_)
        ));
        assert!(matches!(p("x \\le 3"), Expr::Rel(_, _)));
        assert!(matches!(p("7:32"), Expr::Ratio(_)));
        assert!(matches!(p("1 \\pm \\sqrt{2}"), Expr::Pm(_, _)));
    }

    #[test]
    fn mixed_number() {
        assert_eq!(
            p("3\\frac{1}{2}"),
            Expr::Add(vec![int(3), Expr::Div(Box::new(int(1)), Box::new(int(2)))])
        );
    }

    #[test]
    fn deep_nesting_fails_cleanly() {
        let s = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(parse(&s).is_none());
    }

    #[test]
    fn regression_long_division_and_factorial_chains() {
        let div = format!("1{}", "/1".repeat(2_000));
        assert!(parse(&div).is_none());
        let fact = format!("3{}", "!".repeat(2_000));
        assert!(parse(&fact).is_none());
        assert!(parse("1/2/3").is_some());
    }

    #[test]
    fn units_are_skipped() {
        assert_eq!(p("125 miles"), int(125));
        assert_eq!(p("15 cm^2"), int(15));
        assert_eq!(p("5 apples"), int(5));
        assert_eq!(p("9页"), int(9));
        assert!(matches!(p("2α"), Expr::Mul(_)));
        assert_eq!(p("5 red apples, 6 pears"), Expr::List(vec![int(5), int(6)]));
        assert!(matches!(p("odd"), Expr::Mul(_)));
    }
}
