//! `--format auto`: which harness wrote the given files, from their names and first records.

use super::{evalscope, files_under, jsonl, lighteval, lm_eval, opencompass, qwen_math};
use super::{Format, ImportError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files looked at before deciding: an archive folder may hold thousands.
const MAX_LOOKED_AT: usize = 500;

/// A reader's cheap "is this file mine?".
type Claims = fn(&Path) -> bool;

/// The most specific first: generic JSONL would claim the others' JSONL files.
const ORDER: [(Format, Claims); 6] = [
    (Format::LmEval, lm_eval::claims),
    (Format::Opencompass, opencompass::claims),
    (Format::Lighteval, lighteval::claims),
    (Format::Evalscope, evalscope::claims),
    (Format::QwenMath, qwen_math::claims),
    (Format::Jsonl, jsonl::claims),
];

/// The one format the files under `paths` are in; an error naming what was found otherwise.
pub fn detect(paths: &[PathBuf]) -> Result<Format, ImportError> {
    let files = files_under(paths, |_| true)?;
    let mut found: BTreeMap<&'static str, (Format, usize, PathBuf)> = BTreeMap::new();
    for f in files.iter().take(MAX_LOOKED_AT) {
        if let Some(&(format, _)) = ORDER.iter().find(|(_, claims)| claims(f)) {
            found
                .entry(format.as_str())
                .or_insert((format, 0, f.clone()))
                .1 += 1;
        }
    }
    let specific: Vec<&(Format, usize, PathBuf)> = found
        .values()
        .filter(|(f, _, _)| *f != Format::Jsonl)
        .collect();
    match (specific.as_slice(), found.get("jsonl")) {
        ([one], _) => Ok(one.0),
        ([], Some(generic)) => Ok(generic.0),
        ([], None) => Err(ImportError::Input(format!(
            "--format auto: no file under {} looks like lm-eval, OpenCompass, lighteval, EvalScope, Qwen2.5-Math or generic JSONL output; name the format",
            shown(paths)
        ))),
        (several, _) => Err(ImportError::Input(format!(
            "--format auto: the files are of several formats ({}); import them one format at a time",
            several
                .iter()
                .map(|(f, n, p)| format!("{f}: {n} files, e.g. {}", p.display()))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}

fn shown(paths: &[PathBuf]) -> String {
    let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::testing::fixture;

    #[test]
    fn every_fixture_folder_is_told_apart() {
        for (dir, want) in [
            ("lm-eval/v0.4.13", Format::LmEval),
            ("lm-eval/v0.4.13-chat", Format::LmEval),
            ("lm-eval/v0.4.2", Format::LmEval),
            ("opencompass/n-replicas", Format::Opencompass),
            ("opencompass/n-replicas-split", Format::Opencompass),
            ("opencompass/replication-idx-2024-12", Format::Opencompass),
            ("opencompass/num-return-sequences", Format::Opencompass),
            ("lighteval/v0.13.0", Format::Lighteval),
            ("lighteval/v0.10-predictions", Format::Lighteval),
            ("evalscope/v1.14.1", Format::Evalscope),
            ("evalscope/v0.17.1", Format::Evalscope),
            ("qwen-math", Format::QwenMath),
            ("jsonl", Format::Jsonl),
        ] {
            let got = detect(&[fixture(dir)]);
            assert_eq!(got.ok(), Some(want), "{dir}");
        }
    }

    #[test]
    fn mixed_or_unknown_files_are_named_not_guessed() {
        let e = detect(&[fixture("lm-eval/v0.4.13"), fixture("qwen-math")]).unwrap_err();
        assert!(e.to_string().contains("several formats"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
        let e = detect(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(e.to_string().contains("name the format"), "{e}");
    }
}
