//! Names shortened to a width: one text head…tail ([`abbreviate`]), or the names of one output
//! together ([`shorten_names`]), so that no two shortened names read the same.

/// Separators of a name's words: a kept part is widened to whole words when there is room.
const SEPARATORS: &[char] = &['-', '_', '.', '/', ' ', '(', ')', '+', ':'];

/// `DeepSeek-R1-Distill-Qwen-32B` → `DeepSee…Qwen-32B` at 16: head and tail around an ellipsis, so
/// the same text always reads the same and the size suffix stays visible.
pub fn abbreviate(text: &str, width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= width {
        return text.to_string();
    }
    if width < 3 {
        return chars[..width].iter().collect();
    }
    let head = (width - 1) / 2;
    let tail = width - 1 - head;
    let mut s: String = chars[..head].iter().collect();
    s.push('…');
    s.extend(&chars[chars.len() - tail..]);
    s
}

/// The width of a model's short name in documents (report.md, report.html, history, the
/// viewer) and in terminal tables at 80 columns: one short name per model wherever it is shown.
pub const SHORT_NAME: usize = 20;

/// How wide names are shown in a terminal column that leaves them `room` characters: at most
/// [`SHORT_NAME`] (the short names of the documents) on a narrow terminal, the whole room on a
/// wide one, so wider terminals show longer names.
pub fn name_width(room: usize) -> usize {
    if room < SHORT_NAME + 10 {
        room.min(SHORT_NAME)
    } else {
        room
    }
}

/// The names of one output, each at most `width` characters, and kept apart. When every name
/// fits, they are returned as they are. Otherwise what all names share at the start or end (whole
/// words: `-weekly`, `deepseek-ai-`) is dropped first; each name still too long keeps the words
/// that tell it apart (those with digits and those few other names have weigh most), an ellipsis
/// for each gap (`meta…Llama-3.1-405B…eval`). Names that still read alike keep instead the part
/// where they differ from each other, with as much of their head and tail as fits around it
/// (`Llam…70B…uct` and `Llam…8B…ruct` at 12); only when that still leaves two alike do they end
/// in a number (`…~1`, `…~2`). Equal names stay equal; widths under 4 cannot always keep names
/// apart. [`name_legend`] pairs each shortened name with its full name.
pub fn shorten_names<S: AsRef<str>>(names: &[S], width: usize) -> Vec<String> {
    let full: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    if full.iter().all(|n| n.chars().count() <= width) {
        return full.iter().map(|n| n.to_string()).collect();
    }
    // What all names share at the end goes first (`-Instruct`, `-weekly`); the shared start
    // (the family) only when a name is still too long without it.
    let mut cores = without_shared(&full, false);
    if cores.iter().any(|c| c.chars().count() > width) {
        let ends: Vec<&str> = cores.iter().map(String::as_str).collect();
        cores = without_shared(&ends, true);
    }
    let names: Vec<&str> = cores.iter().map(String::as_str).collect();
    let words = WordWeights::of(&names);
    let mut forms: Vec<String> = names
        .iter()
        .map(|n| {
            if n.chars().count() <= width {
                n.to_string()
            } else {
                fit_words(n, width, &words).unwrap_or_else(|| abbreviate(n, width))
            }
        })
        .collect();
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    let groups = alike(&names, &forms);
    for (i, group) in groups.iter().enumerate() {
        let others: Vec<&[char]> = group.iter().map(|&j| chars[j].as_slice()).collect();
        if let Some(form) = around(&chars[i], &others, width) {
            forms[i] = form;
        }
    }
    let left: Vec<usize> = (alike(&names, &forms).iter().enumerate())
        .filter(|(_, group)| !group.is_empty())
        .map(|(i, _)| i)
        .collect();
    // Numbered in the order of the names among those numbered alike (the same head…tail),
    // so no two end the same; names never hold `~`, so no other form reads like these.
    let mut given: Vec<String> = Vec::new();
    for i in left {
        let rank = (1..).find(|r| !given.contains(&numbered(names[i], *r, width)));
        let form = numbered(names[i], rank.unwrap_or(1), width);
        given.push(form.clone());
        forms[i] = form;
    }
    forms
}

/// The (short, full) pairs of the names [`shorten_names`] changed, each name once, in order:
/// the legend printed wherever a short name stands for a long one.
pub fn name_legend<S: AsRef<str>>(names: &[S], short: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, s) in names.iter().map(AsRef::as_ref).zip(short) {
        if name != s && !out.iter().any(|(_, n)| n == name) {
            out.push((s.clone(), name.to_string()));
        }
    }
    out
}

/// Whether `c` separates the words of a name (`.` does not: `3.1`, `Qwen2.5` are one word).
fn separates(c: char) -> bool {
    SEPARATORS.contains(&c) && c != '.'
}

/// The names without what all (distinct) names share at the end (with `start`, at the start),
/// cut between words: a shared end must begin with a separator, a shared start end with one, and
/// every name keeps a letter or digit. One name, or equal names, keep everything.
fn without_shared(names: &[&str], start: bool) -> Vec<String> {
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    let whole = || names.iter().map(|n| n.to_string()).collect();
    if names.iter().all(|n| *n == names[0]) {
        return whole();
    }
    let first = &chars[0];
    let mut cut = (chars.iter().skip(1))
        .map(|c| shared(first, c, !start))
        .min()
        .unwrap_or(0);
    // The separator that must border the cut: the last dropped at the start, the first at the end.
    let border = |cut: usize| {
        if start {
            first[cut - 1]
        } else {
            first[first.len() - cut]
        }
    };
    let keeps = |cut: usize| {
        chars.iter().all(|c| {
            let rest = if start {
                &c[cut..]
            } else {
                &c[..c.len() - cut]
            };
            rest.iter().any(|x| x.is_alphanumeric())
        })
    };
    while cut > 0 && !(separates(border(cut)) && keeps(cut)) {
        cut -= 1;
    }
    if cut == 0 {
        return whole();
    }
    (chars.iter())
        .map(|c| {
            let rest = if start {
                &c[cut..]
            } else {
                &c[..c.len() - cut]
            };
            rest.iter().collect()
        })
        .collect()
}

/// How much each word of a set of names tells: a word with a digit (a size, a version) most,
/// one no other name holds more than one some hold, one most names hold little, one every name
/// holds almost nothing; the first word (the family) a little more.
struct WordWeights {
    /// Lowercased word → how many names hold it.
    held: std::collections::HashMap<String, usize>,
    names: usize,
}

impl WordWeights {
    fn of(names: &[&str]) -> WordWeights {
        let mut held = std::collections::HashMap::new();
        let mut distinct: Vec<&str> = names.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        for name in &distinct {
            let mut seen: Vec<String> = (words(name).into_iter())
                .map(|w| w.text.to_lowercase())
                .collect();
            seen.sort_unstable();
            seen.dedup();
            for w in seen {
                *held.entry(w).or_insert(0) += 1;
            }
        }
        WordWeights {
            held,
            names: distinct.len(),
        }
    }

    fn weight(&self, word: &str, first: bool) -> f64 {
        let kind = if word.chars().any(|c| c.is_ascii_digit()) {
            3.0
        } else {
            1.5
        };
        let held = self.held.get(&word.to_lowercase()).copied().unwrap_or(1);
        let spread = match held {
            1 => 1.0,
            h if h == self.names => 0.05,
            h if 2 * h <= self.names => 0.7,
            _ => 0.35,
        };
        kind * spread + if first { 0.5 } else { 0.0 }
    }
}

/// One word of a name and the separators before it (the last word also holds those after it).
struct Word {
    before: String,
    text: String,
}

fn words(name: &str) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut before = String::new();
    let mut text = String::new();
    for c in name.chars() {
        if separates(c) {
            if !text.is_empty() {
                out.push(Word {
                    before: std::mem::take(&mut before),
                    text: std::mem::take(&mut text),
                });
            }
            before.push(c);
        } else {
            text.push(c);
        }
    }
    if !text.is_empty() {
        out.push(Word { before, text });
    } else if let Some(last) = out.last_mut() {
        last.text.push_str(&before);
    }
    out
}

/// What a gap (an ellipsis) costs against the words it keeps: fewer pieces read better.
const GAP_COST: f64 = 1.0;

/// `name` in at most `width` characters as the words that tell most (see [`WordWeights`]), in
/// order, an ellipsis wherever words are left out; None when no single word fits.
fn fit_words(name: &str, width: usize, weights: &WordWeights) -> Option<String> {
    let ws = words(name);
    let count = ws.len();
    if count == 0 {
        return None;
    }
    let len = |s: &str| s.chars().count();
    // A word repeated (deepseek-ai-DeepSeek) tells nothing the second time.
    let weight: Vec<f64> = (0..count)
        .map(|j| {
            let lower = ws[j].text.to_lowercase();
            let again = ws[..j].iter().any(|w| w.text.to_lowercase() == lower);
            // Earlier words weigh more: a name reads from its start (the family, the size).
            let place = 1.25 - 0.5 * j as f64 / count.saturating_sub(1).max(1) as f64;
            let w = weights.weight(&ws[j].text, j == 0) * place;
            if again {
                w / 5.0
            } else {
                w
            }
        })
        .collect();
    // best[j][c]: the best (score, previous kept word) of forms whose last kept word is j, c
    // characters long so far.
    let mut best: Vec<Vec<Cell>> = vec![vec![None; width + 1]; count];
    for j in 0..count {
        let lead = if j == 0 { len(&ws[0].before) } else { 1 };
        let cost = lead + len(&ws[j].text);
        // A name that starts with an ellipsis is the hardest to recognise.
        let gaps = if j == 0 { 0.0 } else { 2.0 * GAP_COST };
        if cost <= width {
            improve(&mut best[j][cost], weight[j] - gaps, None);
        }
        for i in 0..j {
            let step = if i + 1 == j { len(&ws[j].before) } else { 1 };
            let gap = if i + 1 == j { 0.0 } else { GAP_COST };
            for c in 0..=width {
                let Some((score, _)) = best[i][c] else {
                    continue;
                };
                let to = c + step + len(&ws[j].text);
                if to <= width {
                    improve(&mut best[j][to], score + weight[j] - gap, Some(i));
                }
            }
        }
    }
    // The best whole form: a trailing ellipsis when the last word is left out.
    let mut end: Option<(f64, usize, usize)> = None;
    for (j, row) in best.iter().enumerate() {
        let trail = usize::from(j + 1 < count);
        for (c, cell) in row.iter().enumerate() {
            let Some((score, _)) = cell else { continue };
            let score = score - if trail == 1 { GAP_COST } else { 0.0 };
            let better = end
                .is_none_or(|(s, _, ec)| score > s + 1e-9 || (score > s - 1e-9 && c + trail > ec));
            if c + trail <= width && better {
                end = Some((score, j, c + trail));
            }
        }
    }
    let (_, mut j, total) = end?;
    let mut c = total - usize::from(j + 1 < count);
    let mut kept = vec![j];
    while let Some((_, Some(i))) = best[j][c] {
        let step = if i + 1 == j { len(&ws[j].before) } else { 1 };
        c -= step + len(&ws[j].text);
        j = i;
        kept.push(j);
    }
    kept.reverse();
    let mut out = String::new();
    for (n, &k) in kept.iter().enumerate() {
        let joined = n > 0 && kept[n - 1] + 1 == k;
        if joined || (n == 0 && k == 0) {
            out.push_str(&ws[k].before);
        } else {
            out.push('…');
        }
        out.push_str(&ws[k].text);
    }
    if kept.last().is_some_and(|&k| k + 1 < count) {
        out.push('…');
    }
    Some(out)
}

/// A form's best score so far and the word kept before its last (none: the last is the first).
type Cell = Option<(f64, Option<usize>)>;

/// Keeps the higher score in `cell` (the first found on a tie).
fn improve(cell: &mut Cell, score: f64, from: Option<usize>) {
    if cell.is_none_or(|(s, _)| score > s + 1e-9) {
        *cell = Some((score, from));
    }
}

/// For each name, the other names (different text) whose form reads the same as its own.
fn alike(names: &[&str], forms: &[String]) -> Vec<Vec<usize>> {
    (0..names.len())
        .map(|i| {
            (0..names.len())
                .filter(|&j| names[j] != names[i] && forms[j] == forms[i])
                .collect()
        })
        .collect()
}

/// `name` in `width` characters keeping the part that tells it from every one of `others` (the
/// span between the longest prefix and the longest suffix it shares with one of them), then as
/// much of its head and tail as fits, an ellipsis in each gap; None when that part cannot fit.
fn around(name: &[char], others: &[&[char]], width: usize) -> Option<String> {
    let len = name.len();
    let prefix = others.iter().map(|o| shared(name, o, false)).max()?;
    let suffix = others.iter().map(|o| shared(name, o, true)).max()?;
    let raw = (prefix, len - suffix.min(len - prefix));
    let words = words_around(name, raw);
    let (d0, d1) = [words, raw]
        .into_iter()
        .find(|&(a, b)| cost(len, (a, b), 0, 0) <= width)?;
    if let Some(form) = one_gap(name, (d0, d1), width) {
        return Some(form);
    }
    let (mut h, mut t) = (0, 0);
    loop {
        let head = h < d0 && cost(len, (d0, d1), h + 1, t) <= width;
        h += usize::from(head);
        let tail = t < len - d1 && cost(len, (d0, d1), h, t + 1) <= width;
        t += usize::from(tail);
        if !head && !tail {
            break;
        }
    }
    let text = |a: usize, b: usize| name[a..b].iter().collect::<String>();
    let gap = |a: usize, b: usize| match b - a {
        0 => String::new(),
        1 => text(a, b),
        _ => "…".into(),
    };
    Some(text(0, h) + &gap(h, d0) + &text(d0, d1) + &gap(d1, len - t) + &text(len - t, len))
}

/// Head characters a one-gap form keeps at least (the family name reads from the start); a tail
/// is this long or empty.
const MIN_HEAD: usize = 3;

/// `name` in `width` characters with a single ellipsis that misses the span `(d0, d1)`, as near
/// the middle as the span allows; None when no such gap leaves [`MIN_HEAD`] characters before it.
fn one_gap(name: &[char], (d0, d1): (usize, usize), width: usize) -> Option<String> {
    let len = name.len();
    let gap = len.checked_sub(width.checked_sub(1)?)?;
    let middle = (width - 1) / 2;
    let before = d0
        .checked_sub(gap)
        .map(|s| s.min(middle))
        .filter(|&s| s >= MIN_HEAD);
    // A tail of a character or two is a fragment: none then.
    let after = Some(middle.max(d1))
        .map(|s| {
            if len - (s + gap).min(len) < MIN_HEAD {
                len.saturating_sub(gap)
            } else {
                s
            }
        })
        .filter(|&s| s >= d1 && s + gap <= len);
    let start = [before, after]
        .into_iter()
        .flatten()
        .min_by_key(|&s| s.abs_diff(middle))?;
    let text = |a: usize, b: usize| name[a..b].iter().collect::<String>();
    Some(text(0, start) + "…" + &text(start + gap, len))
}

/// Characters shown for a head of `h`, the kept span and a tail of `t`: a gap of one character
/// shows it, a longer one an ellipsis.
fn cost(len: usize, (d0, d1): (usize, usize), h: usize, t: usize) -> usize {
    let gap = |g: usize| g.min(1);
    h + (d1 - d0) + t + gap(d0 - h.min(d0)) + gap((len - t).saturating_sub(d1))
}

/// How many characters `a` and `b` share at the start (or, with `from_end`, at the end).
fn shared(a: &[char], b: &[char], from_end: bool) -> usize {
    if from_end {
        a.iter()
            .rev()
            .zip(b.iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
    } else {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }
}

/// The span `(a, b)` widened to the words it touches (an empty span: the word at its place).
fn words_around(name: &[char], (mut a, mut b): (usize, usize)) -> (usize, usize) {
    let sep = |c: &char| SEPARATORS.contains(c);
    while a > 0 && !sep(&name[a - 1]) {
        a -= 1;
    }
    while b < name.len() && !sep(&name[b]) {
        b += 1;
    }
    (a, b)
}

/// The last resort: `name` abbreviated to leave room for `~rank`.
fn numbered(name: &str, rank: usize, width: usize) -> String {
    let tag = format!("~{rank}");
    let room = width.saturating_sub(tag.chars().count());
    abbreviate(name, room) + &tag
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIX: [&str; 6] = [
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "Qwen/Qwen2.5-Math-7B-Instruct",
        "Qwen/Qwen2.5-Math-7B-Instruct (search)",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    ];

    /// The weekly job of issue 40: six 49–52-character names that share `-weekly`.
    const WEEKLY: [&str; 6] = [
        "meta-llama-Llama-3.1-405B-Instruct-Turbo-eval-weekly",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-bf16-weekly",
        "deepseek-ai-DeepSeek-R1-Distill-Llama-70B-fp8-weekly",
        "Qwen-Qwen2.5-Math-72B-Instruct-vllm-tp4-fp16-weekly",
        "mistralai-Mistral-Large-Instruct-2411-int4-weekly",
        "google-gemma-2-27b-it-sglang-tp2-bf16-canary-weekly",
    ];

    /// Whether `form` reads as `name` cut: its pieces between ellipses appear in it in order
    /// (what all names share may go without an ellipsis; a number `~k` aside).
    fn reads_in_order(form: &str, name: &str) -> bool {
        let form = form.split('~').next().unwrap_or(form);
        let mut rest = name;
        for piece in form.split('…') {
            let Some(at) = rest.find(piece) else {
                return false;
            };
            rest = &rest[at + piece.len()..];
        }
        true
    }

    fn assert_apart(names: &[&str], width: usize) -> Vec<String> {
        let short = shorten_names(names, width);
        let all_fit = names.iter().all(|n| n.chars().count() <= width);
        for (i, s) in short.iter().enumerate() {
            assert!(s.chars().count() <= width, "{s:?} at {width}");
            if all_fit {
                assert_eq!(s, names[i], "names that fit are kept");
            }
            assert!(
                reads_in_order(s, names[i]),
                "{s:?} is not a cut of {}",
                names[i]
            );
            for (j, other) in short.iter().enumerate().skip(i + 1) {
                assert_ne!(s, other, "{} and {} at {width}", names[i], names[j]);
            }
        }
        short
    }

    #[test]
    fn six_long_names_stay_apart_at_every_width() {
        for width in 4..=60 {
            assert_apart(&SIX, width);
            assert_apart(&WEEKLY, width);
        }
        let at = |w| shorten_names(&SIX, w);
        assert_eq!(at(45), SIX.map(String::from).to_vec());
    }

    /// Issue 40: the shared `-weekly` goes before anything is cut, and each short name keeps the
    /// size that tells the model apart, cut between words.
    #[test]
    fn what_all_share_goes_first_and_the_sizes_stay() {
        let short = shorten_names(&WEEKLY, SHORT_NAME);
        for (s, size) in short
            .iter()
            .zip(["405B", "32B", "70B", "72B", "2411", "27b"])
        {
            assert!(s.contains(size) && !s.contains("weekly"), "{short:?}");
        }
        assert_eq!(short[0], "meta-llama…3.1-405B…");
        // At 40 the names lose only what they share and what does not fit.
        let roomy = shorten_names(&WEEKLY, 45);
        assert_eq!(roomy[4], "mistralai-Mistral-Large-Instruct-2411-int4");
        assert_eq!(
            shorten_names(&["a-x-weekly", "a-much-longer-name-weekly"], 10),
            ["x", "much…name"]
        );
    }

    #[test]
    fn the_part_that_differs_is_kept() {
        let short = shorten_names(&SIX, 16);
        assert!(
            short[0].contains("70B") && short[1].contains("8B"),
            "{short:?}"
        );
        assert!(short[3].ends_with("(search)"), "{short:?}");
        assert!(
            short[4].ends_with("32B") && short[5].ends_with("7B"),
            "{short:?}"
        );
        // What both share at either end goes: the sizes are left.
        let pair = shorten_names(&["Llama-3.1-70B-Instruct", "Llama-3.1-8B-Instruct"], 12);
        assert_eq!(pair, ["70B", "8B"]);
    }

    #[test]
    fn names_differing_only_at_the_end_or_start() {
        let ends = ["Qwen2.5-Math-7B-Instruct", "Qwen2.5-Math-7B-Instruct-mcts"];
        for width in 4..30 {
            assert_apart(&ends, width);
        }
        let starts = [
            "a-very-long-shared-model-name",
            "b-very-long-shared-model-name",
        ];
        for width in 4..30 {
            assert_apart(&starts, width);
        }
        for width in 4..8 {
            assert_apart(&["a-a--aab--", "a-bababb--", "a-bbbbbbb-"], width);
        }
        // One word each that differ in one letter: that letter is kept.
        let twins = ["aaaaaaaXbbbbbbb", "aaaaaaaYbbbbbbb"];
        assert_eq!(assert_apart(&twins, 5), ["a…X…b", "a…Y…b"]);
    }

    #[test]
    fn random_sets_of_near_alike_names_stay_apart() {
        // Names over three letters collide far more often than model names do.
        let mut seed = 12_345u64;
        let mut pick = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        for _ in 0..20_000 {
            let (count, len, width) = (2 + pick(7), 9 + pick(6), 4 + pick(12));
            let names: Vec<String> = (0..count)
                .map(|_| (0..len).map(|_| ['a', 'b', '-'][pick(3)]).collect())
                .collect();
            let mut distinct: Vec<&str> = names.iter().map(String::as_str).collect();
            distinct.sort();
            distinct.dedup();
            assert_apart(&distinct, width);
        }
    }

    #[test]
    fn short_sets_and_equal_names_are_left_alone() {
        assert_eq!(shorten_names(&["gpt-4o", "o1"], 12), ["gpt-4o", "o1"]);
        let same = shorten_names(&["same-long-name", "same-long-name"], 8);
        assert_eq!(same[0], same[1]);
        assert!(same[0].chars().count() <= 8, "{same:?}");
        assert_eq!(shorten_names::<&str>(&[], 8), Vec::<String>::new());
    }

    #[test]
    fn the_legend_pairs_each_shortened_name_once() {
        let names = ["a-x-weekly", "a-much-longer-name-weekly", "a-x-weekly"];
        let short = shorten_names(&names, 10);
        assert_eq!(
            name_legend(&names, &short),
            [
                ("x".to_string(), "a-x-weekly".to_string()),
                (
                    "much…name".to_string(),
                    "a-much-longer-name-weekly".to_string()
                )
            ]
        );
        let fits = ["gpt-4o", "o1"];
        assert!(name_legend(&fits, &shorten_names(&fits, 12)).is_empty());
    }

    #[test]
    fn one_text_keeps_head_and_tail() {
        assert_eq!(
            abbreviate("DeepSeek-R1-Distill-Qwen-32B", 16),
            "DeepSee…Qwen-32B"
        );
        assert_eq!(abbreviate("gpt-4o", 16), "gpt-4o");
        assert_eq!(abbreviate("gpt-4o", 2), "gp");
    }
}
