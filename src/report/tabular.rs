//! Tables of cells for `compare`, `audit` and `history`, in the format the caller picks: a
//! terminal table that fits the width, Markdown to paste into a PR, or CSV/JSON with raw
//! (unrounded) values. Escaping and wrapping are `text.rs`'s.

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
    /// (model names) become their short names, spelled out in a legend table before the table.
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
        let Some(legend) = super::paste::Legend::of(&names) else {
            return super::paste::table(&header, &rows, 1);
        };
        let pairs: Vec<Vec<String>> = legend
            .pairs
            .iter()
            .map(|(l, n)| vec![l.clone(), n.clone()])
            .collect();
        let legend_header = vec!["short name".to_string(), header[at].clone()];
        let mut out = super::paste::table(&legend_header, &pairs, 1);
        for r in &mut rows {
            r[at] = legend.label(&r[at]).to_string();
        }
        out.push('\n');
        out.push_str(&super::paste::table(&header, &rows, 1));
        out
    }
}
