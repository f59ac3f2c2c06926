//! `metrics.csv`: the tidy table, one row per model × dataset × subset × metric × k × τ; and the
//! formula-injection guard every CSV file goes through.

use super::{rows, Exporter, METRIC_COLUMNS};
use crate::scoring::RunResults;

pub struct MetricsCsv;

impl Exporter for MetricsCsv {
    fn file_name(&self) -> &'static str {
        "metrics.csv"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let all = rows(results);
        let mut w = ::csv::Writer::from_writer(Vec::new());
        if all.is_empty() {
            w.write_record(METRIC_COLUMNS)?;
        }
        for (row, _) in all {
            w.serialize(row)?;
        }
        neutralise(&w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?)
    }
}

/// A cell a spreadsheet would run as a formula (`= + - @`, tab, CR at the start) gets a leading
/// `'`, as OWASP advises; numbers (`-0.5`, `1e-3`) are left as they are. JSON keeps raw values.
pub fn safe_cell(cell: &str) -> std::borrow::Cow<'_, str> {
    let risky = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && !is_number(cell) {
        format!("'{cell}").into()
    } else {
        cell.into()
    }
}

/// A plain decimal number: optional sign, digits, optional fraction and exponent.
fn is_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['-', '+']).unwrap_or(e))),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((i, f)) => {
            (digits(i) || i.is_empty())
                && (digits(f) || f.is_empty())
                && !(i.is_empty() && f.is_empty())
        }
        None => digits(mantissa),
    };
    mantissa_ok && exp.is_none_or(digits)
}

/// Rewrites CSV text with every cell passed through [`safe_cell`].
pub(super) fn neutralise(csv_text: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut r = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv_text);
    let mut w = ::csv::Writer::from_writer(Vec::new());
    for rec in r.records() {
        let rec = rec?;
        w.write_record(rec.iter().map(|c| safe_cell(c).into_owned()))?;
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_numbers_kept() {
        for bad in [
            "=HYPERLINK(\"x\")",
            "+cmd|' /C calc'!A0",
            "@SUM(1)",
            "-1+2",
            "\tx",
            "\rx",
            "-inf",
        ] {
            assert_eq!(safe_cell(bad), format!("'{bad}"), "{bad}");
        }
        for fine in ["-0.5", "-3", "1e-3", "-2.5E+4", "alpha", "", "0.25", "a=b"] {
            assert_eq!(safe_cell(fine), fine, "{fine}");
        }
        let out = neutralise(b"id,value\n=1+1,-0.5\n").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "id,value\n'=1+1,-0.5\n");
    }
}
