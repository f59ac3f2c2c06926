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

/// The names of one output, each at most `width` characters, shortened only when longer, and
/// kept apart. Each long name is first [`abbreviate`]d; names that then read alike keep instead
/// the part where they differ from each other (widened to whole words), with as much of their
/// head and tail as fits around it, behind one ellipsis when it can be (`Lla…70B-Instruct` and
/// `Llam…8B-Instruct` at 16), else two (`Llam…70B…uct` and `Llam…8B…ruct` at 12, where both
/// were `Llama…struct`). Only when that still leaves two alike do they end in a number (`…~1`,
/// `…~2`). Equal names stay equal; widths under 4 cannot always keep names apart.
pub fn shorten_names<S: AsRef<str>>(names: &[S], width: usize) -> Vec<String> {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    let mut forms: Vec<String> = names.iter().map(|n| abbreviate(n, width)).collect();
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

    fn assert_apart(names: &[&str], width: usize) -> Vec<String> {
        let short = shorten_names(names, width);
        for (i, s) in short.iter().enumerate() {
            assert!(s.chars().count() <= width, "{s:?} at {width}");
            if names[i].chars().count() <= width {
                assert_eq!(s, names[i], "a name that fits is kept");
            }
            for (j, other) in short.iter().enumerate().skip(i + 1) {
                assert_ne!(s, other, "{} and {} at {width}", names[i], names[j]);
            }
        }
        short
    }

    #[test]
    fn six_long_names_stay_apart_at_every_width() {
        for width in 4..=45 {
            assert_apart(&SIX, width);
        }
        let at = |w| shorten_names(&SIX, w);
        assert_eq!(at(45), SIX.map(String::from).to_vec());
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
        let pair = shorten_names(&["Llama-3.1-70B-Instruct", "Llama-3.1-8B-Instruct"], 12);
        assert_eq!(pair, ["Llam…70B…uct", "Llam…8B…ruct"]);
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
        // Only a number keeps the first two apart at 5: the parts that differ are too long.
        let twins = ["a-a--aab--", "a-bababb--", "a-bbbbbbb-"];
        assert_eq!(assert_apart(&twins, 5), ["a…-~1", "a…-~2", "a-…b-"]);
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
        assert_eq!(
            shorten_names(&["same-long-name", "same-long-name"], 8),
            ["sam…name"; 2]
        );
        assert_eq!(shorten_names::<&str>(&[], 8), Vec::<String>::new());
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
