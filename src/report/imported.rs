//! What reports add for an imported run (`gpassk import`): where it came from, the source's
//! verdicts beside gpassk's re-grade (agreement and the metrics from each), and the source's
//! stored aggregates beside their recomputation.

use super::markup::Grid;
use super::tabular::{Cell, TableFormat, Tabular};
use super::Interval;
use crate::metrics::MetricKind;
use crate::rundir::provenance::ImportInfo;
use crate::scoring::RunResults;
use crate::util::{printable, short};

/// The provenance lines of an imported run; empty for a native one.
pub(super) fn provenance(results: &RunResults) -> Vec<String> {
    let Some(info) = results.manifest.as_ref().and_then(|m| m.imported.as_ref()) else {
        return Vec::new();
    };
    let mut lines = vec![
        format!("format: {} ({})", info.format, printable(&info.layout)),
        format!("imported: {}", info.imported_at),
        format!("gold answers from {}", info.gold_from),
        format!("source verdicts: {}", printable(&info.verdicts)),
    ];
    for f in &info.files {
        lines.push(format!(
            "file: {} ({} bytes, sha256 {})",
            printable(&f.path),
            f.bytes,
            short(&f.sha256)
        ));
    }
    for (name, m) in &info.models {
        let s = &m.settings;
        let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "not recorded".into());
        lines.push(format!(
            "{name}: source name {:?}; {} samples ({} with a source verdict{}); temperature {}, top-p {}, max tokens {}, n asked {}",
            printable(&m.source_name),
            m.samples,
            m.with_source_verdict,
            match m.duplicates {
                0 => String::new(),
                d => format!(", {d} duplicate records left out"),
            },
            or_unknown(s.temperature.map(|t| t.to_string())),
            or_unknown(s.top_p.map(|t| t.to_string())),
            or_unknown(s.max_tokens.map(|t| t.to_string())),
            or_unknown(s.nominal_n.map(|t| t.to_string())),
        ));
    }
    if info.bad_records > 0 {
        lines.push(format!(
            "{} malformed records skipped (--skip-bad), first: {}",
            info.bad_records,
            info.bad_examples.first().map_or("", |s| s.as_str())
        ));
    }
    lines.extend(info.notes.iter().map(|n| printable(n).into_owned()));
    lines
}

/// Per model: the samples both judged, by the two verdicts.
fn agreement_table(results: &RunResults) -> Option<Tabular> {
    let rows: Vec<Vec<Cell>> = results
        .models
        .iter()
        .filter_map(|m| {
            let a = m.source.as_ref()?.agreement;
            let share = (a.total() > 0).then(|| a.agreeing() as f64 / a.total() as f64);
            Some(vec![
                Cell::text(&m.name),
                Cell::int(a.total()),
                Cell::int(a.both_correct),
                Cell::int(a.only_gpassk),
                Cell::int(a.only_source),
                Cell::int(a.both_wrong),
                Cell::num(
                    share,
                    share.map_or("-".into(), |s| format!("{:.1}%", 100.0 * s)),
                ),
            ])
        })
        .collect();
    (!rows.is_empty()).then_some(Tabular {
        keys: vec![
            "model",
            "judged_by_both",
            "both_correct",
            "only_gpassk",
            "only_source",
            "both_wrong",
            "agreement",
        ],
        titles: vec![
            "model",
            "judged by both",
            "both correct",
            "only gpassk",
            "only the source",
            "both wrong",
            "agree",
        ],
        rows,
        machine_only: &[],
        group: None,
    })
}

/// The headline metrics from each verdict, a row per model and metric.
fn metrics_table(results: &RunResults) -> Option<Tabular> {
    let shown: Vec<&MetricKind> = results
        .shown
        .iter()
        .filter(|m| !matches!(m, MetricKind::Greedy | MetricKind::Majority))
        .collect();
    let mut rows = Vec::new();
    for m in &results.models {
        let Some(src) = &m.source else { continue };
        // A source that judged fewer samples per problem than any k shown has no metric here.
        let value = |metric: &&MetricKind| src.estimate(metric, None).and_then(|e| e.value);
        if shown.iter().all(|metric| value(metric).is_none()) {
            continue;
        }
        for metric in &shown {
            let ours = m.estimate(metric, None);
            let theirs = src.estimate(metric, None);
            rows.push(vec![
                Cell::text(&m.name),
                Cell::text(super::metric_label(metric)),
                Cell::num(ours.and_then(|e| e.value), Interval::of(ours).to_string()),
                Cell::num(
                    theirs.and_then(|e| e.value),
                    Interval::of(theirs).to_string(),
                ),
            ]);
        }
    }
    (!rows.is_empty()).then_some(Tabular {
        keys: vec!["model", "metric", "gpassk", "source"],
        titles: vec![
            "model",
            "metric",
            "gpassk's verdicts",
            "the source's verdicts",
        ],
        rows,
        machine_only: &[],
        group: Some("model"),
    })
}

/// The source's stored aggregates beside the values recomputed from its own verdicts.
fn aggregates_table(info: &ImportInfo) -> Option<Tabular> {
    let rows: Vec<Vec<Cell>> = info
        .aggregates
        .iter()
        .map(|a| {
            let verdict = match a.matches() {
                Some(true) => "matches",
                Some(false) => "DIFFERS",
                None => "not recomputable",
            };
            vec![
                Cell::text(printable(&a.model)),
                Cell::text(printable(&a.name)),
                Cell::num(Some(a.source), number(a.source)),
                Cell::num(a.recomputed, a.recomputed.map_or("-".into(), number)),
                Cell::text(verdict),
                Cell::text(printable(&a.basis)),
            ]
        })
        .collect();
    (!rows.is_empty()).then_some(Tabular {
        keys: vec![
            "model",
            "aggregate",
            "source",
            "recomputed",
            "check",
            "basis",
        ],
        titles: vec![
            "model",
            "aggregate",
            "stored",
            "recomputed",
            "check",
            "from",
        ],
        rows,
        // The basis is a sentence: Markdown, HTML and the machine formats carry it.
        machine_only: &["basis"],
        group: Some("model"),
    })
}

/// A stored or recomputed aggregate to six decimals at most, without trailing zeros, so the two
/// read alike (`0.5625` and `0.5625`, not `0.5625` and `0.562500`).
fn number(x: f64) -> String {
    let text = format!("{x:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.to_string()
    }
}

/// The three tables with their titles, for whichever the run has.
fn tables(results: &RunResults) -> Vec<(&'static str, Tabular)> {
    let mut out = Vec::new();
    if let Some(t) = agreement_table(results) {
        out.push(("Source verdicts beside gpassk's", t));
    }
    if let Some(t) = metrics_table(results) {
        out.push(("Metrics from each verdict", t));
    }
    let info = results.manifest.as_ref().and_then(|m| m.imported.as_ref());
    if let Some(t) = info.and_then(aggregates_table) {
        out.push(("The source's aggregates, recomputed", t));
    }
    out
}

/// The imported-run sections as grids (Markdown and HTML lay them out).
pub(super) fn grids(results: &RunResults) -> Vec<Grid> {
    tables(results)
        .into_iter()
        .map(|(title, t)| Grid {
            title: title.to_string(),
            header: t.titles.iter().map(|s| s.to_string()).collect(),
            rows: t
                .rows
                .iter()
                .map(|r| r.iter().map(|c| c.text.clone()).collect())
                .collect(),
        })
        .collect()
}

/// The imported-run sections for the terminal; empty for a native run.
pub fn source_agreement(results: &RunResults) -> String {
    let mut out = String::new();
    for (title, t) in tables(results) {
        out.push_str(&format!("\n{title}\n"));
        out.push_str(&t.render(TableFormat::Table).unwrap_or_default());
    }
    out
}

/// What `gpassk import` read, for the terminal.
pub fn import_summary(info: &ImportInfo, problems: usize) -> String {
    let samples: u64 = info.models.values().map(|m| m.samples).sum();
    let head = format!(
        "imported {samples} samples of {problems} problems, {} model(s), from {} {} file(s) ({})",
        info.models.len(),
        info.files.len(),
        info.format,
        printable(&info.layout)
    );
    let width = crate::util::terminal_width();
    let verdicts = format!("source verdicts: {}", printable(&info.verdicts));
    let mut out = format!(
        "{}\n{}\n",
        super::wrap(&head, width, "  "),
        super::wrap(&verdicts, width, "  ")
    );
    if info.bad_records > 0 {
        out.push_str(&format!(
            "{} malformed records skipped; the first: {}\n",
            info.bad_records,
            info.bad_examples.join("; ")
        ));
    }
    out
}
