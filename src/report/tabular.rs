//! Tables of cells for `compare`, `audit` and `history`, in the format the caller picks: a
//! terminal table that fits the width, Markdown to paste into a PR, or CSV/JSON with raw
//! (unrounded) values; and [`wrap`] and [`wrap_list`], the one way text is broken to the terminal's
//! width.

use crate::util::terminal_width;
use serde_json::Value;

/// The formats a [`Tabular`] renders to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    Table,
    Md,
    Json,
    Csv,
}

impl TableFormat {
    /// Human formats carry notes and warnings on stdout; machine formats keep stdout parseable.
    pub fn is_human(self) -> bool {
        matches!(self, TableFormat::Table | TableFormat::Md)
    }
}

/// One cell: the rounded text people read and the raw value machines get.
#[derive(Debug, Clone)]
pub struct Cell {
    pub text: String,
    pub raw: Value,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        let s = s.into();
        Cell {
            raw: Value::String(s.clone()),
            text: s,
        }
    }

    /// A count.
    pub fn int(n: u64) -> Cell {
        Cell {
            text: n.to_string(),
            raw: Value::from(n),
        }
    }

    /// A number shown as `text`; `None` is empty text and JSON null.
    pub fn num(raw: Option<f64>, text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            raw: raw
                .filter(|v| v.is_finite())
                .map_or(Value::Null, Value::from),
        }
    }
}

/// Column keys (CSV header, JSON field names), column titles for people, and rows.
pub struct Tabular {
    pub keys: Vec<&'static str>,
    pub titles: Vec<&'static str>,
    pub rows: Vec<Vec<Cell>>,
    /// Keys of columns only the machine formats carry (kept out of the terminal's width).
    pub machine_only: &'static [&'static str],
    /// In the terminal table, rows are grouped under a heading line by this key's text (and the
    /// column dropped), so long names do not squeeze the other columns.
    pub group: Option<&'static str>,
}

impl Tabular {
    pub fn render(&self, format: TableFormat) -> anyhow::Result<String> {
        Ok(match format {
            TableFormat::Table => self.table(),
            TableFormat::Md => self.markdown(),
            TableFormat::Json => {
                let rows: Vec<serde_json::Map<String, Value>> = self
                    .rows
                    .iter()
                    .map(|r| {
                        self.keys
                            .iter()
                            .zip(r)
                            .map(|(k, c)| (k.to_string(), c.raw.clone()))
                            .collect()
                    })
                    .collect();
                serde_json::to_string_pretty(&rows)? + "\n"
            }
            TableFormat::Csv => {
                let mut w = csv::Writer::from_writer(Vec::new());
                w.write_record(&self.keys)?;
                for r in &self.rows {
                    w.write_record(r.iter().map(|c| match &c.raw {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        v => v.to_string(),
                    }))?;
                }
                String::from_utf8(w.into_inner()?)?
            }
        })
    }

    /// Indices of the columns people see.
    fn human_columns(&self) -> Vec<usize> {
        (0..self.keys.len())
            .filter(|&i| !self.machine_only.contains(&self.keys[i]))
            .collect()
    }

    fn table(&self) -> String {
        let Some(g) = self
            .group
            .and_then(|g| self.keys.iter().position(|k| *k == g))
        else {
            return self.table_of(&self.rows, &self.human_columns());
        };
        let cols: Vec<usize> = self
            .human_columns()
            .into_iter()
            .filter(|&c| c != g)
            .collect();
        let mut heads: Vec<&str> = self.rows.iter().map(|r| r[g].text.as_str()).collect();
        heads.dedup();
        let mut out = String::new();
        for head in heads {
            let rows: Vec<Vec<Cell>> = self
                .rows
                .iter()
                .filter(|r| r[g].text == head)
                .cloned()
                .collect();
            let shown = crate::util::printable(head);
            out.push_str(&format!("{shown}:\n{}", self.table_of(&rows, &cols)));
        }
        out
    }

    fn table_of(&self, rows: &[Vec<Cell>], cols: &[usize]) -> String {
        let mut t = comfy_table::Table::new();
        // Rules above, under the header and below; no vertical lines or row rules (room for text).
        t.load_preset("  ── ──      ──    ");
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        t.set_width(u16::try_from(terminal_width()).unwrap_or(u16::MAX));
        t.set_header(cols.iter().map(|&i| self.titles[i]));
        for r in rows {
            t.add_row(
                cols.iter()
                    .map(|&i| crate::util::printable(&r[i].text).into_owned()),
            );
        }
        for c in t.column_iter_mut() {
            c.set_padding((0, 1));
        }
        t.to_string()
            .lines()
            .map(|l| format!("{}\n", l.trim_end()))
            .collect()
    }

    /// Markdown that pastes into a PR (see [`super::paste`]): long texts of the group column
    /// (model names) become labels, spelled out in a legend table before the table.
    fn markdown(&self) -> String {
        let cols = self.human_columns();
        let header: Vec<String> = cols.iter().map(|&i| self.titles[i].to_string()).collect();
        let mut rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| cols.iter().map(|&i| r[i].text.clone()).collect())
            .collect();
        let group = self
            .group
            .and_then(|g| cols.iter().position(|&i| self.keys[i] == g));
        let Some(at) = group else {
            return super::paste::table(&header, &rows, 1);
        };
        let names: Vec<&str> = rows.iter().map(|r| r[at].as_str()).collect();
        let prefix = header[at]
            .chars()
            .next()
            .unwrap_or('N')
            .to_ascii_uppercase();
        let Some(legend) = super::paste::Legend::of(&names, prefix) else {
            return super::paste::table(&header, &rows, 1);
        };
        let pairs: Vec<Vec<String>> = legend
            .pairs
            .iter()
            .map(|(l, n)| vec![l.clone(), n.clone()])
            .collect();
        let legend_header = vec!["label".to_string(), header[at].clone()];
        let mut out = super::paste::table(&legend_header, &pairs, 1);
        for r in &mut rows {
            r[at] = legend.label(&r[at]).to_string();
        }
        out.push('\n');
        out.push_str(&super::paste::table(&header, &rows, 1));
        out
    }
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

/// `text` broken at spaces into lines of at most `width` characters (a longer word stays whole);
/// continuation lines start with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    // True while the line holds nothing but its indent.
    let mut fresh = true;
    for word in text.split(' ') {
        if !fresh && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    lines.push(line);
    lines.join("\n")
}

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
