//! `report.md`: a Markdown write-up of a run: summary per k, per-subset table, counts, notes and
//! the run's provenance.

use super::markup::{notes, search_grid, search_notes, subset_grid, summaries, Grid};
use super::Exporter;
use crate::scoring::RunResults;

pub struct MarkdownReport;

/// The cost line as a paragraph; empty when no model is priced.
fn cost_paragraph(results: &RunResults) -> String {
    // Names are letters, digits, '.', '_', '-' and '+'; the currency is alphanumeric.
    super::table::cost_line(results)
        .map(|line| format!("{}\n\n", line.replace('_', "\\_")))
        .unwrap_or_default()
}

/// The search and sampling cost table with its notes; empty when no model searched.
fn search_section(results: &RunResults) -> String {
    let Some(grid) = search_grid(results) else {
        return String::new();
    };
    let mut md = format!("## {}\n\n{}\n", grid.title, table(&grid));
    for n in search_notes(results) {
        md.push_str(&format!("- {}\n", n.replace('_', "\\_")));
    }
    md.push('\n');
    md
}

/// A Markdown table; pipes inside cells are escaped.
fn table(grid: &Grid) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!(
        "| {} |\n|{}|\n",
        grid.header
            .iter()
            .map(|h| esc(h))
            .collect::<Vec<_>>()
            .join(" | "),
        grid.header
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { " --- " } else { " ---: " })
            .collect::<Vec<_>>()
            .join("|")
    );
    for row in &grid.rows {
        out.push_str(&format!(
            "| {} |\n",
            row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

/// The incomplete-run banner as a quoted block (empty for a complete run): a partial run must
/// not read as a complete one.
fn banner(results: &RunResults) -> String {
    let mut md = String::new();
    let lines = super::partial::banner(results);
    if let Some((first, rest)) = lines.split_first() {
        md.push_str(&format!("> **{}**\n", first.replace('|', "\\|")));
        for line in rest {
            // Indented banner lines are the per-metric counts: a list under their heading; deeper
            // indented ones continue the item above.
            if line.starts_with("    ") {
                md.push_str(&format!(">   {}\n", line.trim()));
            } else if line.starts_with("  ") {
                md.push_str(&format!("> - {}\n", line.trim()));
            } else {
                md.push_str(&format!(">\n> {}\n", line.trim()));
            }
        }
        md.push('\n');
    }
    md
}

/// An imported run's provenance and its two verdicts; empty for a native run.
fn imported_sections(results: &RunResults) -> String {
    let lines = super::imported::provenance(results);
    if lines.is_empty() {
        return String::new();
    }
    let esc = |s: &str| s.replace('_', "\\_").replace('<', "&lt;");
    let mut md = String::from("## Imported from\n\n");
    for l in &lines {
        md.push_str(&format!("- {}\n", esc(l)));
    }
    md.push('\n');
    for grid in super::imported::grids(results) {
        md.push_str(&format!("## {}\n\n{}\n", grid.title, table(&grid)));
    }
    md
}

impl Exporter for MarkdownReport {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut md = format!("# G-Pass@k report: {}\n\n", results.label());
        md.push_str(&format!(
            "Run `{}` · dataset `{}` (sha256 `{}`)\n\n",
            results.run_id,
            results.dataset,
            results.dataset_sha256.chars().take(12).collect::<String>()
        ));
        md.push_str(&banner(results));
        if let Some(m) = &results.manifest {
            md.push_str(&super::failures::failures_md(&super::failures(m)));
        }
        for grid in summaries(results) {
            md.push_str(&format!("## {}\n\n{}\n", grid.title, table(&grid)));
        }
        if let Some(grid) = subset_grid(results) {
            md.push_str(&format!("## {}\n\n{}\n", grid.title, table(&grid)));
        }
        md.push_str(&imported_sections(results));
        let counts = Grid {
            title: "Samples".into(),
            header: [
                "model",
                "model_id",
                "served as",
                "n",
                "correct",
                "wrong",
                "no answer",
                "truncated",
                "missing",
            ]
            .map(String::from)
            .to_vec(),
            rows: results
                .models
                .iter()
                .map(|m| {
                    vec![
                        m.name.clone(),
                        m.model_id.clone(),
                        m.served_models
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", "),
                        m.n.to_string(),
                        m.correct.to_string(),
                        m.wrong.to_string(),
                        m.no_answer.to_string(),
                        m.truncated.to_string(),
                        m.missing.to_string(),
                    ]
                })
                .collect(),
        };
        md.push_str(&format!("## Samples\n\n{}\n", table(&counts)));
        md.push_str(&cost_paragraph(results));
        md.push_str(&search_section(results));
        md.push_str("## Notes\n\n");
        for n in notes(results) {
            md.push_str(&format!("- {n}\n"));
        }
        if let Some(m) = &results.manifest {
            md.push_str(&run_section(m));
        }
        Ok(md.into_bytes())
    }
}

/// The run's provenance: harness, times, config and each model's settings.
fn run_section(m: &crate::rundir::manifest::Manifest) -> String {
    let mut md = String::from("\n## Run\n\n");
    let mut lines = vec![
        format!("- harness: {}", m.harness),
        format!(
            "- git commit: {}",
            m.git_commit.as_deref().unwrap_or("unknown")
        ),
        format!("- status: {}", m.status),
        format!("- created: {}", m.created_at),
        format!(
            "- finished: {}",
            m.finished_at.as_deref().unwrap_or("not finished")
        ),
        format!("- config: `{}` (hash `{}`)", m.config_path, m.config_hash),
        format!("- prompt hash: `{}`", m.prompt_hash),
    ];
    if let Some(s) = m.shard {
        lines.push(format!("- shard: {s}"));
    }
    if !m.merged_from.is_empty() {
        lines.push(format!("- merged from: {}", m.merged_from.join(", ")));
    }
    for (name, mm) in m.models.iter().filter(|_| m.imported.is_some()) {
        // The source's settings are in "Imported from"; the config's are not real here.
        lines.push(format!(
            "- {name}: `{}`, n = {}, imported, status {}",
            mm.model_id, mm.sampling.n, mm.status
        ));
    }
    for (name, mm) in m.models.iter().filter(|_| m.imported.is_none()) {
        let s = &mm.sampling;
        lines.push(format!(
            "- {name}: `{}`, n = {}, temperature {}, top-p {}, max tokens {}, status {}",
            mm.model_id,
            s.n,
            s.temperature,
            s.top_p,
            s.max_tokens
                .map_or_else(|| "unset".to_string(), |t| t.to_string()),
            mm.status
        ));
    }
    md.push_str(&lines.join("\n"));
    md.push('\n');
    md
}
