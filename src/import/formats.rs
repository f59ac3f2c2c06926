//! The formats `gpassk import` reads, listed once: `--format`, `auto`, the help text and every
//! message naming formats come from [`READERS`].

use super::files::{files_under, lfs_pointer};
use super::source::{ImportError, ReadOptions, Reader, Sink, SourceSummary};
use super::tau_bench;
use super::{evalscope, inspect, jsonl, lighteval, lm_eval, nemo_skills, opencompass, qwen_math};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every reader, the most specific first: `auto` asks them in this order, and generic JSONL,
/// which would claim the others' JSONL files, comes last.
pub static READERS: [&Reader; 9] = [
    &lm_eval::READER,
    &opencompass::READER,
    &lighteval::READER,
    &evalscope::READER,
    &inspect::READER,
    &nemo_skills::READER,
    &tau_bench::READER,
    &qwen_math::READER,
    &jsonl::READER,
];

/// A format: one of [`READERS`], by name.
#[derive(Clone, Copy)]
pub struct Format(&'static Reader);

impl Format {
    /// The format named `name`; an error listing the names otherwise.
    pub fn named(name: &str) -> Result<Format, ImportError> {
        READERS
            .iter()
            .find(|r| r.name == name)
            .map(|r| Format(r))
            .ok_or_else(|| {
                ImportError::Input(format!(
                    "unknown format {}: the formats are auto, {}",
                    crate::util::printable(name),
                    names().join(", ")
                ))
            })
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn reader(self) -> &'static Reader {
        self.0
    }

    /// Checks `--field` keys against the reader's, then streams the files into `sink`.
    pub fn read(
        self,
        paths: &[PathBuf],
        opts: &ReadOptions,
        sink: &mut dyn Sink,
    ) -> Result<SourceSummary, ImportError> {
        let known = self.0.fields;
        if let Some(k) = opts.fields.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ImportError::Input(match known {
                [] => format!(
                    "{}: --field {k}=…: {} files have fixed fields; --field is not taken",
                    self.name(),
                    self.name()
                ),
                _ => format!(
                    "{}: --field {k}=…: unknown; {} takes --field {}",
                    self.name(),
                    self.name(),
                    known.join(", ")
                ),
            }));
        }
        (self.0.read)(paths, opts, sink)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Format {}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The format names, in [`READERS`]' order.
pub fn names() -> Vec<&'static str> {
    READERS.iter().map(|r| r.name).collect()
}

/// `name: about` for each format, one per line (the help text).
pub fn described() -> String {
    READERS
        .iter()
        .map(|r| format!("  {:<12} {}", r.name, r.about))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Files looked at before deciding: an archive folder may hold thousands.
const MAX_LOOKED_AT: usize = 500;

/// `--format auto`: the one format the files under `paths` are in; an error naming what was
/// found otherwise (several formats, none, Git LFS pointers in place of files).
pub fn detect(paths: &[PathBuf]) -> Result<Format, ImportError> {
    let files = files_under(paths, |_| true)?;
    let mut found: BTreeMap<&'static str, (Format, usize, PathBuf)> = BTreeMap::new();
    let mut pointers: Vec<(&Path, String)> = Vec::new();
    for f in files.iter().take(MAX_LOOKED_AT) {
        if let Some(r) = READERS.iter().find(|r| (r.claims)(f)) {
            found.entry(r.name).or_insert((Format(r), 0, f.clone())).1 += 1;
        } else if let Some(said) = lfs_pointer(f) {
            pointers.push((f, said));
        }
    }
    // A file only generic JSONL claims beside another harness's files is no file of that
    // harness: it would be left unread, so the mix is refused like any other.
    let all: Vec<&(Format, usize, PathBuf)> = found.values().collect();
    match all.as_slice() {
        [one] => Ok(one.0),
        [] => Err(ImportError::Input(nothing_found(paths, &pointers))),
        several => Err(ImportError::Input(format!(
            "--format auto: the files are of several formats ({}); import them one format at a time",
            several
                .iter()
                .map(|(f, n, p)| {
                    let files = if *n == 1 { "file" } else { "files" };
                    format!("{f}: {n} {files}, e.g. {}", p.display())
                })
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}

fn nothing_found(paths: &[PathBuf], pointers: &[(&Path, String)]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    if let Some((p, said)) = pointers.first() {
        return format!(
            "--format auto: {} is {said}{}",
            p.display(),
            match pointers.len() {
                1 => String::new(),
                n => format!(" ({} more files under {} are too)", n - 1, shown.join(", ")),
            }
        );
    }
    format!(
        "--format auto: no file under {} looks like the output of any format gpassk reads ({}); name the format",
        shown.join(", "),
        names().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::{copy_tree, fixture};

    #[test]
    fn every_fixture_folder_is_told_apart() {
        for (dir, want) in [
            ("lm-eval/v0.4.13", "lm-eval"),
            ("lm-eval/v0.4.13-chat", "lm-eval"),
            ("lm-eval/v0.4.2", "lm-eval"),
            ("opencompass/n-replicas", "opencompass"),
            ("opencompass/n-replicas-split", "opencompass"),
            ("opencompass/replication-idx-2024-12", "opencompass"),
            ("opencompass/num-return-sequences", "opencompass"),
            ("lighteval/v0.13.0", "lighteval"),
            ("lighteval/v0.10-predictions", "lighteval"),
            ("evalscope/v1.14.1", "evalscope"),
            ("evalscope/v0.17.1", "evalscope"),
            ("evalscope/v0.10.1", "evalscope"),
            ("inspect/v0.3.285", "inspect"),
            ("nemo-skills", "nemo-skills"),
            ("tau-bench", "tau-bench"),
            ("qwen-math", "qwen-math"),
            ("jsonl", "jsonl"),
        ] {
            let got = detect(&[fixture(dir)]).map(|f| f.name());
            assert_eq!(got.ok(), Some(want), "{dir}");
        }
    }

    #[test]
    fn mixed_unknown_or_unfetched_files_are_named_not_guessed() {
        let e = detect(&[fixture("lm-eval/v0.4.13"), fixture("qwen-math")]).unwrap_err();
        assert!(e.to_string().contains("several formats"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
        let e = detect(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(e.to_string().contains("name the format"), "{e}");
        assert!(e.to_string().contains("tau-bench"), "{e}");
        let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:abcd\nsize 99\n";
        std::fs::write(dir.path().join("samples.jsonl"), pointer).unwrap();
        let e = detect(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(
            e.to_string().contains("samples.jsonl is a Git LFS pointer"),
            "{e}"
        );
        assert!(Format::named("nope")
            .unwrap_err()
            .to_string()
            .contains("inspect"));
        // A generic JSONL file beside lm-eval's is named, not left unread.
        let mixed = tempfile::tempdir().unwrap();
        copy_tree(&fixture("lm-eval/v0.4.13"), mixed.path(), "");
        let mine = mixed.path().join("mine.jsonl");
        std::fs::copy(fixture("jsonl/one-sample-per-line.jsonl"), mine).unwrap();
        let e = detect(&[mixed.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("lm-eval") && e.contains("jsonl: 1 file,"), "{e}");
    }
}
