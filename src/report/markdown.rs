//! `report.md`: a Markdown write-up of a run: its models, summary per k, what the numbers mean,
//! per-subset table, counts, notes and the run's provenance. Tables paste into a PR (see
//! [`super::paste`]): long model names become their short names, the Models table their legend.

use super::markup::{notes, search_grid, search_notes, subset_grid, summaries, Grid, MEANING};
use super::paste::{self, Legend};
use super::text::{md_code, md_safe};
use super::Exporter;
use crate::scoring::RunResults;

pub struct MarkdownReport;

/// How this report's tables are laid out: the model labels every table uses.
struct Tables {
    legend: Option<Legend>,
}

impl Tables {
    fn of(results: &RunResults) -> Tables {
        let names: Vec<&str> = results.models.iter().map(|m| m.name.as_str()).collect();
        Tables {
            legend: Legend::of(&names),
        }
    }

    /// A grid as titled Markdown tables; `keys` leading columns are repeated when it splits, and a
    /// `model` column shows labels when the names are long.
    fn section(&self, grid: &Grid, keys: usize) -> String {
        format!("## {}\n\n{}\n", grid.title, self.table(grid, keys))
    }

    fn table(&self, grid: &Grid, keys: usize) -> String {
        let model = grid.header.iter().position(|h| h == "model");
        let rows: Vec<Vec<String>> = match (&self.legend, model) {
            (Some(legend), Some(at)) => grid
                .rows
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    r[at] = legend.label(&r[at]).to_string();
                    r
                })
                .collect(),
            _ => grid.rows.clone(),
        };
        paste::table(&grid.header, &rows, keys)
    }

    /// The models: short name (when names are long), name, and only where they say something
    /// else, the model id and the names the servers answered as.
    fn models(&self, results: &RunResults) -> String {
        let served = |m: &crate::scoring::ModelScore| -> String {
            let names: Vec<&str> = m.served_models.keys().map(String::as_str).collect();
            names.join(", ")
        };
        let ids = results.models.iter().any(|m| m.model_id != m.name);
        let answered =
            (results.models.iter()).any(|m| !m.served_models.is_empty() && served(m) != m.model_id);
        let mut header = vec!["model"];
        if self.legend.is_some() {
            header.insert(0, "short name");
        }
        if ids {
            header.push("model id");
        }
        if answered {
            header.push("served as");
        }
        let rows: Vec<Vec<String>> = results
            .models
            .iter()
            .map(|m| {
                let mut row = vec![m.name.clone()];
                if let Some(legend) = &self.legend {
                    row.insert(0, legend.label(&m.name).to_string());
                }
                if ids {
                    row.push(m.model_id.clone());
                }
                if answered {
                    row.push(served(m));
                }
                row
            })
            .collect();
        let header: Vec<String> = header.into_iter().map(String::from).collect();
        // No `model` relabelling here: this table is the legend.
        format!("## Models\n\n{}\n", paste::table(&header, &rows, 1))
    }
}

/// The cost line as a paragraph; empty when no model is priced.
fn cost_paragraph(results: &RunResults) -> String {
    super::summary::cost_line(results)
        .map(|line| format!("{}\n\n", md_safe(&line)))
        .unwrap_or_default()
}

/// The search and sampling cost table with its notes; empty when no model searched.
fn search_section(results: &RunResults, tables: &Tables) -> String {
    let Some(grid) = search_grid(results) else {
        return String::new();
    };
    let mut md = tables.section(&grid, 1);
    for n in search_notes(results) {
        md.push_str(&format!("- {}\n", md_safe(&n)));
    }
    md.push('\n');
    md
}

/// "Verifier versus voting": the curves' table, what it means and rests on, and the agreement
/// with step labels; empty without a verifier.
fn verifier_section(results: &RunResults, tables: &Tables) -> String {
    use super::verifier;
    let grids = verifier::grids(results);
    if grids.is_empty() {
        return String::new();
    }
    let esc = md_safe;
    let mut md = format!("## {}\n\n{}\n\n", verifier::TITLE, esc(verifier::MEANING));
    for grid in &grids {
        md.push_str(&format!(
            "### {}\n\n{}\n",
            grid.title,
            tables.table(grid, 2)
        ));
    }
    let mut notes = verifier::coverage_notes(results);
    notes.extend(verifier::estimation_note(results));
    for n in notes {
        md.push_str(&format!("- {}\n", esc(&n)));
    }
    md.push('\n');
    if let Some(grid) = verifier::labels_grid(results) {
        md.push_str(&tables.section(&grid, 1));
        md.push_str(&format!("{}\n\n", verifier::labels_meaning()));
    }
    md
}

/// "What these numbers mean", a list of terms.
fn meaning(results: &RunResults) -> String {
    let mut md = String::from("## What these numbers mean\n\n");
    for (term, text) in MEANING {
        md.push_str(&format!("- **{term}**: {text}\n"));
    }
    let imported = results.manifest.as_ref().and_then(|m| m.imported.as_ref());
    if imported.is_some_and(|i| i.format == "tau-bench") {
        md.push_str(PASS_HAT_K);
    }
    md.push('\n');
    md
}

/// τ-bench's reliability metric is G-Pass@k at τ = 1: its name beside gpassk's.
const PASS_HAT_K: &str = "- **pass^k** (τ-bench, τ²-bench): G-Pass@k\\_1.0 above, the chance that k trials drawn from a task's trials all succeed, averaged over tasks. Each task counts the trials it has (a task with fewer than k is left out of that k); an errored trial counts as a failure unless the import was run with `--errored drop` (docs/import.md says which harness does which)\n";

/// The incomplete-run banner as a quoted block (empty for a complete run): a partial run must
/// not read as a complete one.
fn banner(results: &RunResults) -> String {
    let mut md = String::new();
    let lines = super::partial::banner(results);
    if let Some((first, rest)) = lines.split_first() {
        md.push_str(&format!("> **{}**\n", md_safe(first)));
        for line in rest {
            // Indented banner lines are the per-metric counts: a list under their heading; deeper
            // indented ones continue the item above.
            if line.starts_with("    ") {
                md.push_str(&format!(">   {}\n", md_safe(line.trim())));
            } else if line.starts_with("  ") {
                md.push_str(&format!("> - {}\n", md_safe(line.trim())));
            } else {
                md.push_str(&format!(">\n> {}\n", md_safe(line.trim())));
            }
        }
        md.push('\n');
    }
    md
}

/// An imported run's provenance and its two verdicts; empty for a native run.
fn imported_sections(results: &RunResults, tables: &Tables) -> String {
    let lines = super::imported::provenance(results);
    if lines.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Imported from\n\n");
    for l in &lines {
        md.push_str(&format!("- {}\n", md_safe(l)));
    }
    md.push('\n');
    for grid in super::imported::grids(results) {
        md.push_str(&tables.section(&grid, 1));
    }
    md
}

impl Exporter for MarkdownReport {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let tables = Tables::of(results);
        let mut md = format!("# G-Pass@k report: {}\n\n", md_safe(&results.label()));
        md.push_str(&format!(
            "Run {} · dataset {} (sha256 {})\n\n",
            md_code(&results.run_id),
            md_code(&results.dataset),
            md_code(&results.dataset_sha256.chars().take(12).collect::<String>())
        ));
        md.push_str(&banner(results));
        if let Some(m) = &results.manifest {
            md.push_str(&super::failures::failures_md(&super::failures(m)));
        }
        md.push_str(&tables.models(results));
        for grid in summaries(results) {
            md.push_str(&tables.section(&grid, 1));
        }
        md.push_str(&meaning(results));
        if let Some(grid) = subset_grid(results) {
            md.push_str(&tables.section(&grid, 2));
        }
        md.push_str(&imported_sections(results, &tables));
        md.push_str(&tables.section(&counts(results), 1));
        let found = super::found_summary(results);
        if let Some(grid) = super::found::found_grid(&found) {
            md.push_str(&tables.section(&grid, 1));
            md.push_str(&super::found::found_md_notes(&found));
        }
        md.push_str(&cost_paragraph(results));
        md.push_str(&search_section(results, &tables));
        md.push_str(&verifier_section(results, &tables));
        md.push_str("## Notes\n\n");
        for n in notes(results) {
            md.push_str(&format!("- {}\n", md_safe(&n)));
        }
        if let Some(m) = &results.manifest {
            md.push_str(&run_section(m));
        }
        Ok(md.into_bytes())
    }
}

/// The sample counts, a row per model (names and ids are in the Models table).
fn counts(results: &RunResults) -> Grid {
    let header = [
        "model",
        "n",
        "correct",
        "wrong",
        "no answer",
        "truncated",
        "missing",
    ];
    Grid {
        title: "Samples".into(),
        header: header.map(String::from).to_vec(),
        rows: results
            .models
            .iter()
            .map(|m| {
                vec![
                    m.name.clone(),
                    m.n.to_string(),
                    m.correct.to_string(),
                    m.wrong.to_string(),
                    m.no_answer.to_string(),
                    m.truncated.to_string(),
                    m.missing.to_string(),
                ]
            })
            .collect(),
    }
}

/// The run's provenance: harness, times, config and each model's settings.
fn run_section(m: &crate::rundir::manifest::Manifest) -> String {
    let mut md = String::from("\n## Run\n\n");
    let mut lines = vec![
        format!("- harness: {}", md_safe(&m.harness)),
        format!(
            "- git commit: {}",
            md_safe(m.git_commit.as_deref().unwrap_or("unknown"))
        ),
        format!("- status: {}", m.status),
        format!("- created: {}", md_safe(&m.created_at)),
        format!(
            "- finished: {}",
            md_safe(m.finished_at.as_deref().unwrap_or("not finished"))
        ),
        format!(
            "- config: {} (hash {})",
            md_code(&m.config_path),
            md_code(&m.config_hash)
        ),
        format!("- prompt hash: {}", md_code(&m.prompt_hash)),
    ];
    if let Some(s) = m.shard {
        lines.push(format!("- shard: {s}"));
    }
    if !m.merged_from.is_empty() {
        lines.push(format!(
            "- merged from: {}",
            md_safe(&m.merged_from.join(", "))
        ));
    }
    for (name, mm) in m.models.iter().filter(|_| m.imported.is_some()) {
        // The source's settings are in "Imported from"; the config's are not real here.
        lines.push(format!(
            "- {}: {}, n = {}, imported, status {}",
            md_safe(name),
            md_code(&mm.model_id),
            mm.sampling.n,
            mm.status
        ));
    }
    for (name, mm) in m.models.iter().filter(|_| m.imported.is_none()) {
        let s = &mm.sampling;
        lines.push(format!(
            "- {}: {}, n = {}, temperature {}, top-p {}, max tokens {}, status {}",
            md_safe(name),
            md_code(&mm.model_id),
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
