//! LaTeX shown as readable text: what stands between math delimiters (`$…$`, `$$…$$`, `\(…\)`,
//! `\[…\]`) becomes Unicode (`\frac{1}{2}` → `1/2`, `x^{2}` → `x²`, `\sqrt{3}` → `√3`, `\le` →
//! `≤`), prose around it is kept as written (code in a response is not math). Text in, text out:
//! the page escapes the result like any other run text. Unknown commands stay as written.

/// Groups nested deeper than this are shown as written (the converter recurses per group).
const MAX_DEPTH: usize = 24;

/// `text` with its math made readable; prose outside the delimiters kept (but `\$` → `$`).
/// A text without delimiters that uses LaTeX commands is read as math whole.
pub fn readable(text: &str) -> String {
    segments(text).into_iter().map(|s| s.0).collect()
}

/// `text` as readable pieces, each with whether it was math.
fn segments(text: &str) -> Vec<(String, bool)> {
    let delimited = text.contains('$') || text.contains("\\(") || text.contains("\\[");
    if !delimited {
        return vec![if has_command(text) {
            (math(text), true)
        } else {
            (text.to_string(), false)
        }];
    }
    let prose = |s: &str| (s.replace("\\$", "$"), false);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some((at, open, close)) = next_open(rest) else {
            out.push(prose(rest));
            break;
        };
        let inner = &rest[at + open.len()..];
        match closing(inner, close).filter(|&end| end > 0) {
            Some(end) => {
                out.push(prose(&rest[..at]));
                let mut shown = math(&inner[..end]);
                rest = &inner[end + close.len()..];
                // Display math is a block of its own: text right after it is a new word.
                if open.len() == 2 && rest.starts_with(|c: char| c.is_alphanumeric()) {
                    shown.push(' ');
                }
                out.push((shown, true));
            }
            // An opening with no closing: a dollar sign in prose, kept.
            None => {
                out.push((rest[..at + open.len()].to_string(), false));
                rest = inner;
            }
        }
    }
    out
}

/// Where `close` first occurs in `s` outside a backslash escape (`\$` closes nothing).
fn closing(s: &str, close: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(close.as_bytes()) {
            return Some(i);
        }
        let escaped = bytes[i] == b'\\' && close.starts_with('$');
        i += if escaped { 2 } else { 1 };
    }
    None
}

/// The first opening delimiter in `s`: where, and the opening and closing text.
fn next_open(s: &str) -> Option<(usize, &'static str, &'static str)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if bytes.get(i + 1) == Some(&b'(') => return Some((i, "\\(", "\\)")),
            b'\\' if bytes.get(i + 1) == Some(&b'[') => return Some((i, "\\[", "\\]")),
            // `\$` is a dollar sign, never a delimiter.
            b'\\' => i += 2,
            b'$' if bytes.get(i + 1) == Some(&b'$') => return Some((i, "$$", "$$")),
            b'$' => return Some((i, "$", "$")),
            _ => i += 1,
        }
    }
    None
}

/// Whether `s` holds a LaTeX command this module knows (`\frac`, `\sqrt`, `\le`, …).
fn has_command(s: &str) -> bool {
    s.match_indices('\\').any(|(at, _)| {
        let name: String = s[at + 1..]
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        !name.is_empty() && known(&name)
    })
}

fn known(name: &str) -> bool {
    symbol(name).is_some()
        || TWO_ARGS.contains(&name)
        || ONE_ARG.contains(&name)
        || ACCENTS.iter().any(|(n, _)| *n == name)
        || FUNCTIONS.contains(&name)
        || DROPPED.contains(&name)
        || [
            "sqrt", "begin", "end", "mathbb", "pmod", "bmod", "mod", "not",
        ]
        .contains(&name)
}

/// Math (without its delimiters) as readable text, spaces collapsed.
pub fn math(s: &str) -> String {
    let mut p = Parser {
        chars: s.chars().collect(),
        at: 0,
        depth: 0,
    };
    let out = p.sequence(None);
    let mut collapsed = String::with_capacity(out.len());
    for word in out.split(' ').filter(|w| !w.is_empty()) {
        if !collapsed.is_empty() && !word.starts_with([';', ',', ')']) && !collapsed.ends_with('(')
        {
            collapsed.push(' ');
        }
        collapsed.push_str(word);
    }
    collapsed
}

/// Symbols read with a space either side (`a · b`, `x ≤ 3`).
const SPACED: &[&str] = &[
    "·", "×", "÷", "±", "∓", "≤", "≥", "≠", "≈", "≡", "≅", "∼", "≃", "∝", "→", "←", "⇒", "⇐", "↔",
    "⇔", "↦", "∈", "∉", "∋", "⊂", "⊆", "⊃", "⊇", "∪", "∩", "∖", "∧", "∨", "⊕", "⊗",
];

struct Parser {
    chars: Vec<char>,
    at: usize,
    depth: usize,
}

const TWO_ARGS: &[&str] = &[
    "frac", "dfrac", "tfrac", "cfrac", "binom", "dbinom", "tbinom",
];
/// Commands shown as their argument.
const ONE_ARG: &[&str] = &[
    "text",
    "textrm",
    "textbf",
    "textit",
    "textsf",
    "texttt",
    "textnormal",
    "mathrm",
    "mathbf",
    "mathit",
    "mathsf",
    "mathtt",
    "mathnormal",
    "mathcal",
    "mathscr",
    "mathfrak",
    "boldsymbol",
    "operatorname",
    "mbox",
    "hbox",
    "fbox",
    "boxed",
    "emph",
];
/// Commands dropped with their argument.
const SKIPPED: &[&str] = &["hspace", "vspace", "phantom", "label", "tag"];
/// Commands dropped (sizes, styles, spacing).
const DROPPED: &[&str] = &[
    "left",
    "right",
    "middle",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "biggl",
    "biggr",
    "displaystyle",
    "textstyle",
    "scriptstyle",
    "limits",
    "nolimits",
    "nonumber",
    "notag",
    "quad",
    "qquad",
];
/// Accents: the combining mark put after each character of the argument.
const ACCENTS: &[(&str, char)] = &[
    ("bar", '\u{304}'),
    ("overline", '\u{305}'),
    ("hat", '\u{302}'),
    ("widehat", '\u{302}'),
    ("tilde", '\u{303}'),
    ("widetilde", '\u{303}'),
    ("vec", '\u{20D7}'),
    ("dot", '\u{307}'),
    ("ddot", '\u{308}'),
    ("underline", '\u{332}'),
    ("overrightarrow", '\u{20D7}'),
];
/// Operator names shown as words.
const FUNCTIONS: &[&str] = &[
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "log", "ln", "lg", "exp", "lim", "liminf", "limsup", "max", "min", "sup", "inf", "det", "gcd",
    "lcm", "deg", "dim", "ker", "arg", "Pr",
];

/// Commands that stand for one symbol, and the symbol.
const SYMBOLS: &[(&str, &str)] = &[
    ("alpha", "α"),
    ("beta", "β"),
    ("gamma", "γ"),
    ("delta", "δ"),
    ("epsilon", "ε"),
    ("varepsilon", "ε"),
    ("zeta", "ζ"),
    ("eta", "η"),
    ("theta", "θ"),
    ("vartheta", "θ"),
    ("iota", "ι"),
    ("kappa", "κ"),
    ("lambda", "λ"),
    ("mu", "μ"),
    ("nu", "ν"),
    ("xi", "ξ"),
    ("pi", "π"),
    ("varpi", "π"),
    ("rho", "ρ"),
    ("varrho", "ρ"),
    ("sigma", "σ"),
    ("varsigma", "σ"),
    ("tau", "τ"),
    ("upsilon", "υ"),
    ("phi", "φ"),
    ("varphi", "φ"),
    ("chi", "χ"),
    ("psi", "ψ"),
    ("omega", "ω"),
    ("Gamma", "Γ"),
    ("Delta", "Δ"),
    ("Theta", "Θ"),
    ("Lambda", "Λ"),
    ("Xi", "Ξ"),
    ("Pi", "Π"),
    ("Sigma", "Σ"),
    ("Upsilon", "Υ"),
    ("Phi", "Φ"),
    ("Psi", "Ψ"),
    ("Omega", "Ω"),
    ("cdot", "·"),
    ("cdotp", "·"),
    ("times", "×"),
    ("div", "÷"),
    ("pm", "±"),
    ("mp", "∓"),
    ("le", "≤"),
    ("leq", "≤"),
    ("leqslant", "≤"),
    ("ge", "≥"),
    ("geq", "≥"),
    ("geqslant", "≥"),
    ("ne", "≠"),
    ("neq", "≠"),
    ("lt", "<"),
    ("gt", ">"),
    ("approx", "≈"),
    ("equiv", "≡"),
    ("cong", "≅"),
    ("sim", "∼"),
    ("simeq", "≃"),
    ("propto", "∝"),
    ("infty", "∞"),
    ("to", "→"),
    ("rightarrow", "→"),
    ("leftarrow", "←"),
    ("gets", "←"),
    ("Rightarrow", "⇒"),
    ("implies", "⇒"),
    ("Leftarrow", "⇐"),
    ("leftrightarrow", "↔"),
    ("Leftrightarrow", "⇔"),
    ("iff", "⇔"),
    ("mapsto", "↦"),
    ("in", "∈"),
    ("notin", "∉"),
    ("ni", "∋"),
    ("subset", "⊂"),
    ("subseteq", "⊆"),
    ("supset", "⊃"),
    ("supseteq", "⊇"),
    ("cup", "∪"),
    ("cap", "∩"),
    ("setminus", "∖"),
    ("emptyset", "∅"),
    ("varnothing", "∅"),
    ("forall", "∀"),
    ("exists", "∃"),
    ("neg", "¬"),
    ("lnot", "¬"),
    ("land", "∧"),
    ("wedge", "∧"),
    ("lor", "∨"),
    ("vee", "∨"),
    ("oplus", "⊕"),
    ("otimes", "⊗"),
    ("circ", "∘"),
    ("bullet", "•"),
    ("star", "⋆"),
    ("ast", "∗"),
    ("degree", "°"),
    ("angle", "∠"),
    ("measuredangle", "∡"),
    ("triangle", "△"),
    ("perp", "⊥"),
    ("parallel", "∥"),
    ("mid", "|"),
    ("nmid", "∤"),
    ("sum", "Σ"),
    ("prod", "Π"),
    ("int", "∫"),
    ("iint", "∬"),
    ("oint", "∮"),
    ("partial", "∂"),
    ("nabla", "∇"),
    ("ldots", "…"),
    ("dots", "…"),
    ("dotsc", "…"),
    ("dotsb", "…"),
    ("dotsm", "…"),
    ("dotsi", "…"),
    ("dotso", "…"),
    ("cdots", "…"),
    ("vdots", "⋮"),
    ("ddots", "⋱"),
    ("prime", "′"),
    ("lfloor", "⌊"),
    ("rfloor", "⌋"),
    ("lceil", "⌈"),
    ("rceil", "⌉"),
    ("langle", "⟨"),
    ("rangle", "⟩"),
    ("lvert", "|"),
    ("rvert", "|"),
    ("vert", "|"),
    ("lVert", "‖"),
    ("rVert", "‖"),
    ("Vert", "‖"),
    ("ell", "ℓ"),
    ("hbar", "ħ"),
    ("Re", "ℜ"),
    ("Im", "ℑ"),
    ("aleph", "ℵ"),
    ("square", "□"),
    ("diamond", "◇"),
    ("clubsuit", "♣"),
    ("diamondsuit", "♢"),
    ("heartsuit", "♡"),
    ("spadesuit", "♠"),
    ("checkmark", "✓"),
    ("colon", ":"),
    ("And", "&"),
];

fn symbol(name: &str) -> Option<&'static str> {
    SYMBOLS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Characters with a superscript form, and those forms, in the same order.
const SUPERSCRIPTS: (&str, &str) = (
    "0123456789+-−=()nixykmtabcdersT′",
    "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿⁱˣʸᵏᵐᵗᵃᵇᶜᵈᵉʳˢᵀ′",
);
/// Characters with a subscript form, and those forms, in the same order.
const SUBSCRIPTS: (&str, &str) = ("0123456789+-−=()aeijknmorx", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑᵢⱼₖₙₘₒᵣₓ");

fn small((from, to): (&str, &str), c: char) -> Option<char> {
    let i = from.chars().position(|x| x == c)?;
    to.chars().nth(i)
}

fn superscript(c: char) -> Option<char> {
    small(SUPERSCRIPTS, c)
}

fn subscript(c: char) -> Option<char> {
    small(SUBSCRIPTS, c)
}

/// Whether a fraction's part or a root's argument needs parentheses to read unambiguously.
fn compound(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    s.chars().count() > 1
        && s.chars()
            .any(|c| c.is_whitespace() || "+-−=,/·×÷<>≤≥±".contains(c))
}

fn wrap(s: String) -> String {
    if compound(&s) {
        format!("({s})")
    } else {
        s
    }
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// Items up to `stop` (consumed) or the end.
    fn sequence(&mut self, stop: Option<char>) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if Some(c) == stop {
                self.at += 1;
                return out;
            }
            self.item(&mut out);
        }
        out
    }

    fn item(&mut self, out: &mut String) {
        let Some(c) = self.peek() else { return };
        self.at += 1;
        match c {
            '\\' => self.command(out),
            '{' => {
                let inner = self.group();
                out.push_str(&inner);
            }
            '^' => {
                let arg = self.argument();
                out.push_str(&script(&arg, superscript, '^'));
            }
            '_' => {
                let arg = self.argument();
                out.push_str(&script(&arg, subscript, '_'));
            }
            '~' | '&' => out.push(' '),
            '\'' => out.push('′'),
            '\n' | '\t' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }

    /// A `{…}` group's content (its opening brace read); deeper than [`MAX_DEPTH`], as written.
    fn group(&mut self) -> String {
        if self.depth >= MAX_DEPTH {
            let start = self.at;
            let mut open = 1;
            while let Some(c) = self.peek() {
                self.at += 1;
                open += i32::from(c == '{') - i32::from(c == '}');
                if open == 0 {
                    return self.chars[start..self.at - 1].iter().collect();
                }
            }
            return self.chars[start..].iter().collect();
        }
        self.depth += 1;
        let inner = self.sequence(Some('}'));
        self.depth -= 1;
        inner
    }

    /// One argument, trimmed.
    fn argument(&mut self) -> String {
        self.text_argument().trim().to_string()
    }

    /// One argument as written: a group, a command, or one character (spaces before it
    /// skipped); text commands keep the spaces inside their group.
    fn text_argument(&mut self) -> String {
        while self.peek() == Some(' ') {
            self.at += 1;
        }
        let mut out = String::new();
        match self.peek() {
            Some('{') => {
                self.at += 1;
                out = self.group();
            }
            Some(_) => self.item(&mut out),
            None => {}
        }
        out
    }

    /// An optional `[…]` argument.
    fn optional(&mut self) -> Option<String> {
        (self.peek() == Some('[')).then(|| {
            self.at += 1;
            self.sequence(Some(']'))
        })
    }

    fn command(&mut self, out: &mut String) {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.at += 1;
        }
        if self.at == start {
            // `\{`, `\%`, `\,`, `\\`: one character after the backslash.
            let Some(c) = self.peek() else { return };
            self.at += 1;
            match c {
                ',' | ';' | ':' | ' ' => out.push(' '),
                '!' => {}
                '\\' => out.push_str("; "),
                '|' => out.push('‖'),
                c => out.push(c),
            }
            return;
        }
        let name: String = self.chars[start..self.at].iter().collect();
        // A space after a command's name only ends the name.
        while self.peek() == Some(' ') {
            self.at += 1;
        }
        self.named(&name, out);
    }

    fn named(&mut self, name: &str, out: &mut String) {
        if let Some(s) = symbol(name) {
            if SPACED.contains(&s) {
                out.push_str(&format!(" {s} "));
            } else {
                out.push_str(s);
            }
            return;
        }
        match name {
            "not" => {
                let mut next = String::new();
                self.item(&mut next);
                let negated = match next.trim() {
                    "=" => " ≠ ".to_string(),
                    "∈" => " ∉ ".into(),
                    "⊂" => " ⊄ ".into(),
                    "⊆" => " ⊈ ".into(),
                    "≡" => " ≢ ".into(),
                    other => format!("¬{other}"),
                };
                out.push_str(&negated);
            }
            _ if TWO_ARGS.contains(&name) => {
                let (a, b) = (self.argument(), self.argument());
                if name.ends_with("binom") {
                    out.push_str(&format!("C({a}, {b})"));
                } else {
                    out.push_str(&format!("{}/{}", wrap(a), wrap(b)));
                }
            }
            "sqrt" => {
                let index = self.optional();
                let arg = self.argument();
                if let Some(n) = index {
                    out.push_str(&script(n.trim(), superscript, '^'));
                }
                out.push('√');
                out.push_str(&wrap(arg));
            }
            "mathbb" => {
                let arg = self.argument();
                out.push_str(&double_struck(&arg));
            }
            "begin" => {
                let env = self.argument();
                if env.starts_with("array") || env.starts_with("tabular") {
                    self.argument();
                }
                out.push_str(brackets(&env).0);
            }
            "end" => {
                let env = self.argument();
                out.push_str(brackets(&env).1);
            }
            "pmod" => {
                let arg = self.argument();
                out.push_str(&format!(" (mod {arg})"));
            }
            "bmod" | "mod" => out.push_str(" mod "),
            "quad" | "qquad" => out.push(' '),
            _ if ONE_ARG.contains(&name) => {
                let arg = self.text_argument();
                out.push_str(&arg);
            }
            _ if SKIPPED.contains(&name) => {
                self.argument();
            }
            _ if DROPPED.contains(&name) => {}
            _ if FUNCTIONS.contains(&name) => {
                out.push_str(name);
                if self.peek().is_some_and(char::is_alphanumeric) {
                    out.push(' ');
                }
            }
            _ => match ACCENTS.iter().find(|(n, _)| *n == name) {
                Some((_, mark)) => {
                    let arg = self.argument();
                    for c in arg.chars() {
                        out.push(c);
                        out.push(*mark);
                    }
                }
                None => {
                    out.push('\\');
                    out.push_str(name);
                    out.push(' ');
                }
            },
        }
    }
}

/// The brackets a matrix environment draws around its rows.
fn brackets(env: &str) -> (&'static str, &'static str) {
    match env {
        "pmatrix" => ("(", ")"),
        "bmatrix" => ("[", "]"),
        "Bmatrix" => ("{", "}"),
        "vmatrix" => ("|", "|"),
        "Vmatrix" => ("‖", "‖"),
        "cases" => ("{ ", ""),
        _ => ("", ""),
    }
}

/// A super- or subscript: in small characters when each has one, else `^x` or `^(…)`.
fn script(arg: &str, small: fn(char) -> Option<char>, mark: char) -> String {
    let arg: String = arg.chars().filter(|c| !c.is_whitespace()).collect();
    let arg = arg.as_str();
    if arg == "∘" && mark == '^' {
        return "°".into();
    }
    if let Some(s) = arg.chars().map(small).collect::<Option<String>>() {
        if !s.is_empty() {
            return s;
        }
    }
    if arg.chars().count() == 1 {
        format!("{mark}{arg}")
    } else {
        format!("{mark}({arg})")
    }
}

fn double_struck(arg: &str) -> String {
    arg.chars()
        .map(|c| match c {
            'N' => 'ℕ',
            'Z' => 'ℤ',
            'Q' => 'ℚ',
            'R' => 'ℝ',
            'C' => 'ℂ',
            'P' => 'ℙ',
            c => c,
        })
        .collect()
}

/// Words after which a full stop does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "no", "fig",
];

/// The first sentence of `text`, its math readable, on one line (whitespace collapsed), at most
/// `max` characters (cut at a word, with `…`). A sentence ends at `.`, `?` or `!` before a space
/// (not after an abbreviation or an initial), or at the CJK marks; in math only at a full stop
/// that closes it (`$n!$` is a factorial, `$x = 5.$` ends a sentence).
pub fn first_sentence(text: &str, max: usize) -> String {
    // Each character, and whether it may end a sentence where it stands.
    let mut chars: Vec<(char, bool)> = Vec::new();
    for (piece, is_math) in segments(text) {
        let last = piece.trim_end().chars().count();
        for (i, c) in piece.chars().enumerate() {
            let end = if is_math {
                c == '.' && i + 1 == last
            } else {
                matches!(c, '.' | '?' | '!' | '。' | '？' | '！' | '．')
            };
            let space = c.is_whitespace();
            if !(space && chars.last().is_none_or(|l| l.0 == ' ')) {
                chars.push((if space { ' ' } else { c }, end));
            }
        }
    }
    let at = |i: usize| chars.get(i).map(|c| c.0);
    let mut end = chars.len();
    for i in 0..chars.len() {
        let (c, may) = chars[i];
        let cjk = matches!(c, '。' | '？' | '！' | '．');
        if !may || !(cjk || at(i + 1).is_none_or(|n| n == ' ')) {
            continue;
        }
        let word: String = chars[..i]
            .iter()
            .rev()
            .take_while(|c| c.0 != ' ')
            .map(|c| c.0)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let lower = word.to_lowercase();
        let initial = word.chars().count() == 1 && word.chars().all(char::is_uppercase);
        if c == '.' && (ABBREVIATIONS.contains(&lower.as_str()) || initial) {
            continue;
        }
        end = i + 1;
        break;
    }
    let sentence: String = chars[..end].iter().map(|c| c.0).collect();
    crate::util::clip_words(sentence.trim(), max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn math_between_delimiters_reads_as_unicode_and_prose_is_kept() {
        let cases = [
            ("$\\frac{1}{2}$", "1/2"),
            ("$\\dfrac{x+1}{2y}$", "(x+1)/2y"),
            ("costs $\\$20$ at $25\\%$ off", "costs $20 at 25% off"),
            (
                "$z\\not= i$ and $\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}$",
                "z ≠ i and (1; -2)",
            ),
            ("\\[x = 1\\]where", "x = 1 where"),
            ("$(-1)^{n + 1}$", "(-1)ⁿ⁺¹"),
            ("Find $x^{2}+y_1 \\le 10$.", "Find x²+y₁ ≤ 10."),
            ("$2\\cdot 3\\cdot4$", "2 · 3 · 4"),
            ("$\\sqrt{3}$ and $\\sqrt[3]{x+1}$", "√3 and ³√(x+1)"),
            ("\\(\\angle ABC = 90^\\circ\\)", "∠ABC = 90°"),
            ("$$\\sum_{k=1}^{n} k$$", "Σₖ₌₁ⁿ k"),
            (
                "It costs \\$5, or $2\\cdot\\pi r$.",
                "It costs $5, or 2 · πr.",
            ),
            ("$\\text{if } x \\in \\mathbb{R}$", "if x ∈ ℝ"),
            ("$\\binom{10}{3}$", "C(10, 3)"),
            ("$\\frac{-1}{4}$", "-1/4"),
            ("$\\left( \\frac{a}{b} \\right)^{xy}$", "(a/b)ˣʸ"),
            ("$\\overline{AB}$", "A\u{305}B\u{305}"),
            ("$x^{\\alpha}$", "x^α"),
            ("$a \\unknown b$", "a \\unknown b"),
            ("a lone $ sign", "a lone $ sign"),
            ("no math at all: x^2 in code", "no math at all: x^2 in code"),
            ("Compute \\frac{3}{4} of 12", "Compute 3/4 of 12"),
            ("$\\boxed{42}$", "42"),
            ("$7 \\pmod{5}$", "7 (mod 5)"),
        ];
        for (raw, want) in cases {
            assert_eq!(readable(raw), want, "{raw}");
        }
        // Deep nesting neither recurses without bound nor loses the text.
        let deep = format!("${}x{}$", "{".repeat(10_000), "}".repeat(10_000));
        assert!(readable(&deep).contains('x'));
        assert_eq!(readable("$\\frac{1}"), "$\\frac{1}", "unclosed: as written");
    }

    #[test]
    fn the_first_sentence_ends_at_its_full_stop_not_an_abbreviation_or_a_decimal() {
        let q = "Let $f(x) = \\frac{x^2}{3.5}$, e.g. for $x \\ge 0$. Find\n$f(7)$ exactly.";
        assert_eq!(first_sentence(q, 120), "Let f(x) = x²/3.5, e.g. for x ≥ 0.");
        assert_eq!(first_sentence("What is 2+2? Explain.", 120), "What is 2+2?");
        assert_eq!(
            first_sentence("How many zeroes end $42!$ (42 factorial)? Say.", 120),
            "How many zeroes end 42! (42 factorial)?"
        );
        assert_eq!(
            first_sentence("Let $g(x) = f(x + 5).$  Compute $g.$", 120),
            "Let g(x) = f(x + 5)."
        );
        assert_eq!(
            first_sentence("玩具飞机价格是30元。一架飞机比一辆汽车贵多少钱？", 120),
            "玩具飞机价格是30元。"
        );
        assert_eq!(
            first_sentence("One sentence only", 120),
            "One sentence only"
        );
        let long = "word ".repeat(60);
        let cut = first_sentence(&long, 40);
        assert!(cut.chars().count() <= 40 && cut.ends_with('…'), "{cut}");
    }
}
