//! The import readers on untrusted files: JSON Lines read line by line and top-level JSON arrays
//! and objects read entry by entry (src/import/stream.rs), through each harness's reader. Never a
//! panic; a sample always names a file the reader registered; a bad file is an error that names it.
//!
//! Input: one selector byte (the layout, and whether bad records are skipped), then the file.
#![no_main]

use gpassk::import::source::Role;
use gpassk::import::{At, Format, ImportError, ReadOptions, Sink, SourceSample};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where each format finds its files (by the format's `--format` name), as the fixtures under
/// tests/fixtures/import lay them out.
const LAYOUTS: [(&str, &str); 11] = [
    ("jsonl", "samples.jsonl"),
    (
        "lm-eval",
        "stub-math/samples_gpk_arith_2026-12-01T16-40-52.890522.jsonl",
    ),
    (
        "lm-eval",
        "stub-math/results_2026-12-01T16-40-52.890522.json",
    ),
    ("opencompass", "predictions/stub-math/gpk_arith.json"),
    ("evalscope", "reviews/stub-math/gsm8k_main.jsonl"),
    ("evalscope", "predictions/stub-math/gsm8k_main.jsonl"),
    ("qwen-math", "gpk_arith/test_cot_-1_seed0_t0.7_s0_e-1.jsonl"),
    (
        "inspect",
        "2026-12-05T16-59-16-00-00_gpk-arith_J23YNLuarNmeqWkrijJ6xN.json",
    ),
    (
        "inspect",
        "2026-12-05T16-59-12-00-00_gpk-arith_XwB2Z9XcDStWFFp8Pen4CR.eval",
    ),
    ("nemo-skills", "eval-results/gpk_arith/output-rs0.jsonl"),
    ("tau-bench", "gpt-4o-airline.json"),
];

/// One scratch folder per layout, under /dev/shm when there is one (no disk writes per input).
fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("gpassk-fuzz-import-{}", std::process::id()));
        for i in 0..LAYOUTS.len() {
            let _ = std::fs::remove_dir_all(dir.join(i.to_string()));
        }
        dir
    })
}

struct Collect {
    files: Vec<PathBuf>,
    samples: usize,
    skip_bad: bool,
}

impl Sink for Collect {
    fn open(&mut self, path: &Path, _role: Role) -> Result<usize, ImportError> {
        self.files.push(path.to_path_buf());
        Ok(self.files.len() - 1)
    }
    fn sample(&mut self, sample: SourceSample) -> Result<(), ImportError> {
        assert!(
            sample.file < self.files.len(),
            "a sample of an unregistered file"
        );
        self.samples += 1;
        Ok(())
    }
    fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError> {
        let path = self.path(file).to_path_buf();
        if self.skip_bad {
            Ok(())
        } else {
            Err(ImportError::Bad { path, at, message })
        }
    }
    fn path(&self, file: usize) -> &Path {
        &self.files[file]
    }
    fn wants(&mut self, _: &Path, _: Option<&str>, _: Option<&str>) -> bool {
        true
    }
    fn belongs(&mut self, file: usize, _dataset: &str) {
        assert!(
            file < self.files.len(),
            "an unregistered file said to belong"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, file)) = data.split_first() else {
        return;
    };
    let layout = usize::from(which) % LAYOUTS.len();
    let (format, name) = LAYOUTS[layout];
    let format = Format::named(format).expect("a format of the layouts is known");
    let dir = root().join(layout.to_string());
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, file).unwrap();
    let mut sink = Collect {
        files: Vec::new(),
        samples: 0,
        skip_bad: which & 0x80 != 0,
    };
    if let Err(e) = format.read(
        std::slice::from_ref(&dir),
        &ReadOptions::default(),
        &mut sink,
    ) {
        let message = e.to_string();
        assert!(!message.trim().is_empty(), "an empty error");
    }
});
