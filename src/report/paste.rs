//! Markdown tables that paste into a GitHub pull request without scrolling sideways: at most
//! [`MAX_COLUMNS`] columns a table (wider ones split, the key columns repeated), numbers
//! right-aligned, and long names replaced by their short names, which a legend spells out once.

use crate::util::{name_legend, shorten_names, SHORT_NAME};

/// The most columns a pasted table has; wider tables scroll sideways in a PR.
pub(super) const MAX_COLUMNS: usize = 8;

/// Short names for long names: the one short name of each model ([`shorten_names`] at
/// [`SHORT_NAME`], as every output shows it), spelled out in a legend.
pub(super) struct Legend {
    /// (short, full) pairs of the names shortened.
    pub(super) pairs: Vec<(String, String)>,
}

impl Legend {
    /// The short names of `names` (repeats allowed), or None when every name is short enough
    /// to print as it is.
    pub(super) fn of(names: &[&str]) -> Option<Legend> {
        let mut distinct: Vec<&str> = Vec::new();
        for n in names {
            if !distinct.contains(n) {
                distinct.push(n);
            }
        }
        let short = shorten_names(&distinct, SHORT_NAME);
        let pairs = name_legend(&distinct, &short);
        (!pairs.is_empty()).then_some(Legend { pairs })
    }

    /// The short name of `text` when it is one of the names, else `text` itself.
    pub(super) fn label<'a>(&'a self, text: &'a str) -> &'a str {
        self.pairs
            .iter()
            .find(|(_, n)| n == text)
            .map_or(text, |(l, _)| l.as_str())
    }
}

/// A Markdown table, split into tables of at most `MAX_COLUMNS` (8) columns that each repeat the
/// first `keys` columns; numeric columns are right-aligned, key columns never.
pub fn table(header: &[String], rows: &[Vec<String>], keys: usize) -> String {
    let keys = keys.min(header.len()).min(MAX_COLUMNS - 1);
    let data: Vec<usize> = (keys..header.len()).collect();
    // Balanced parts: 12 data columns become 6 + 6, not 7 + 5.
    let parts = data.len().div_ceil(MAX_COLUMNS - keys).max(1);
    let per_part = data.len().div_ceil(parts).max(1);
    let mut out = String::new();
    for (i, chunk) in data.chunks(per_part).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let cols: Vec<usize> = (0..keys).chain(chunk.iter().copied()).collect();
        out.push_str(&one_table(header, rows, &cols, keys));
    }
    out
}

/// One Markdown table of the columns `cols` (the first `keys` of which are key columns).
fn one_table(header: &[String], rows: &[Vec<String>], cols: &[usize], keys: usize) -> String {
    // Headers are the report's own words; cells may hold run text (names, a source's labels).
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let cell = |s: &str| super::text::md_safe(s).into_owned();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(cols.iter().map(|&c| esc(&header[c])).collect());
    let rules: Vec<&str> = cols
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            if i >= keys && numeric(rows.iter().map(|r| r[c].as_str())) {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    out.push_str(&format!("|{}|\n", rules.join("|")));
    for r in rows {
        out.push_str(&line(cols.iter().map(|&c| cell(&r[c])).collect()));
    }
    out
}

/// Whether a column holds numbers (`45.2 [38.1, 52.0]`, `-3.1`, `98.4%`, `<0.0001`) or dashes
/// standing for missing ones (a column of untested p-values is still a column of numbers).
fn numeric<'a>(cells: impl Iterator<Item = &'a str>) -> bool {
    let mut any = false;
    for cell in cells {
        let t = cell.trim();
        if t.is_empty() {
            continue;
        }
        if matches!(t, "-" | "–") {
            any = true;
            continue;
        }
        let digits = t.trim_start_matches(['+', '-', '−', '<', '>', '≤', '~']);
        if !digits.starts_with(|c: char| c.is_ascii_digit()) {
            return false;
        }
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn wide_tables_split_with_their_keys_and_numbers_align_right() {
        let header: Vec<String> = (0..13).map(|i| format!("c{i}")).collect();
        let mut row = vec!["a-model".to_string()];
        row.extend((1..13).map(|i| format!("{i}.5")));
        let md = table(&header, &[row], 1);
        let tables: Vec<&str> = md.split("\n\n").collect();
        assert_eq!(tables.len(), 2, "{md}");
        for t in &tables {
            let head = t.lines().next().unwrap();
            assert!(head.starts_with("| c0 | "), "{t}");
            assert_eq!(head.matches(" | ").count() + 1, 7, "{t}");
            assert!(t.lines().nth(1).unwrap().starts_with("|---|---:|"), "{t}");
        }
    }

    #[test]
    fn text_columns_stay_left_and_dashes_do_not_count() {
        assert!(numeric(["-", "12.5%", "<0.0001", "+3.0"].into_iter()));
        assert!(!numeric(["12", "REGRESSED"].into_iter()));
        assert!(numeric(["-", ""].into_iter()));
        assert!(!numeric(["", ""].into_iter()));
        let md = table(
            &strings(&["model", "flag", "p"]),
            &[strings(&["m", "improved", "0.01"])],
            1,
        );
        assert!(md.contains("|---|---|---:|"), "{md}");
    }

    #[test]
    fn long_names_get_their_short_names_once() {
        assert!(Legend::of(&["alpha", "beta"]).is_none());
        let long = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-weekly";
        let other = "meta-llama-Llama-3.1-405B-Instruct-weekly";
        let legend = Legend::of(&[long, other, long]).unwrap();
        assert_eq!(legend.pairs.len(), 2);
        let short = shorten_names(&[long, other], SHORT_NAME);
        assert_eq!(legend.label(long), short[0]);
        assert_eq!(legend.label(other), short[1]);
        assert_eq!(legend.label("Pass@4"), "Pass@4");
    }
}
