//! Text made safe for a format (HTML, Markdown) and broken to a width: the one escaper per markup,
//! and [`wrap_list`] (with [`wrap`] from `util`), the one way text is broken to the terminal's width.

/// Text for HTML (an element's content or a quoted attribute): `&`, `<`, `>` and quotes escaped.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text inside Markdown (a model name, a server's message): control characters made visible,
/// and the characters that would become markup (emphasis, links, tags, tables, code) escaped.
pub fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::util::printable(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Run text (a model name, a source's label, a path) or a computed cell for Markdown: as written
/// when nothing in it can form markup (`45.2 [38.1, 52.0]`, `p < 0.0001`, `G-Pass@4_0.5`,
/// `gpt-4o`), else through [`md_text`], so a tag, link, entity, code span, emphasis, table pipe
/// or terminal escape in it is shown as text and never obeyed.
pub fn md_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if md_inert(text) {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(md_text(text))
    }
}

/// Whether Markdown (CommonMark with GitHub's tables and strikethrough) shows `text` as written
/// inside a line.
fn md_inert(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
    let markup = chars.iter().enumerate().any(|(i, &c)| {
        let (prev, next) = (
            i.checked_sub(1).and_then(|j| chars.get(j)),
            chars.get(i + 1),
        );
        match c {
            '\\' | '`' | '*' | '|' | '~' => true,
            // An underscore inside a word never starts emphasis.
            '_' => !(word(prev) && word(next)),
            // A tag, comment or autolink starts `<x`, `</`, `<!`, `<?`; `< 0.05` is text.
            '<' => next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')),
            '&' => next.is_some_and(|n| n.is_ascii_alphanumeric() || *n == '#'),
            '#' => i == 0,
            c => c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'),
        }
    });
    // Brackets alone (an interval) are text; a link, image or reference definition is not.
    !markup && !["](", "][", "]:", "!["].iter().any(|m| text.contains(m))
}

/// `text` as a Markdown code span (a run id, a path, a hash): control characters made visible,
/// on one line, fenced by more backticks than it holds in a row so it cannot close the span.
pub fn md_code(text: &str) -> String {
    let text = crate::util::printable(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

pub use crate::util::wrap;

/// `head` then `items` joined by ", ", in lines of at most `width` characters broken only between
/// items, so an item (a name to copy) stays whole; continuation lines start with `indent`.
pub fn wrap_list(head: &str, items: &[&str], width: usize, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = head.to_string();
    let mut fresh = true;
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.to_string()
        };
        if !fresh && line.chars().count() + 1 + piece.chars().count() > width {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(&piece);
        fresh = false;
    }
    lines.push(line);
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        let text = "warning: max tokens 1024; the paper allows 8,192 new tokens (32,768 for o1-like models)";
        let wrapped = wrap(text, 40, "  ");
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 40),
            "{wrapped}"
        );
        assert!(wrapped
            .lines()
            .skip(1)
            .all(|l| l.starts_with("  ") && !l.starts_with("   ")));
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            text.split(' ').collect::<Vec<_>>()
        );
        assert_eq!(wrap("short", 40, "  "), "short");
    }

    #[test]
    fn wrap_list_breaks_between_items_only() {
        let items = [
            "Counting & Probability",
            "Intermediate Algebra",
            "Prealgebra",
        ];
        let wrapped = wrap_list("subsets: ", &items, 36, "  ");
        assert_eq!(
            wrapped,
            "subsets: Counting & Probability,\n  Intermediate Algebra, Prealgebra"
        );
        assert_eq!(wrap_list("subsets: ", &["a"], 36, "  "), "subsets: a");
    }
}
