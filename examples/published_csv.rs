//! Writes a published source that gpassk reads (the GPassK README's tables, its leaderboard
//! `results.json`) as the CSV `gpassk audit --published` reads, with the reader the audit uses, so
//! the shipped CSVs hold exactly what the originals say. `scripts/published-gpassk.sh` runs it.
//!
//! Usage: `cargo run --example published_csv -- LABEL FILE > OUT.csv`; each row's `source` is
//! `LABEL:LINE` for Markdown, `LABEL` for JSON.

use gpassk::analysis::published::parse_source;
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [label, file] = args.as_slice() else {
        anyhow::bail!("usage: published_csv LABEL FILE");
    };
    let path = PathBuf::from(file);
    let text = std::fs::read_to_string(&path)?;
    let mut out = csv::Writer::from_writer(std::io::stdout());
    out.write_record(["source", "benchmark", "model", "metric", "value"])?;
    for v in parse_source(&text, &path)? {
        let source = match v.line {
            0 => label.clone(),
            line => format!("{label}:{line}"),
        };
        let value = format!("{:.*}", v.decimals, v.value);
        out.write_record([&source, &v.benchmark, &v.model, &v.metric_name, &value])?;
    }
    out.flush()?;
    Ok(())
}
