//! Finding a harness's files under the paths given, and reading the small values every reader
//! meets in them: text, verdicts, Git LFS pointers.

use super::source::ImportError;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Every file under `paths` (folders walked in name order) whose name `wanted` accepts; a file
/// named on its own is always taken.
pub(crate) fn files_under(
    paths: &[PathBuf],
    wanted: impl Fn(&Path) -> bool,
) -> Result<Vec<PathBuf>, ImportError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(ImportError::io("read", p))?;
        if meta.is_dir() {
            walk(p, &wanted, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(
    dir: &Path,
    wanted: &dyn Fn(&Path) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<(), ImportError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(ImportError::io("read folder", dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        // Symlinks are not followed: an archive folder linking to itself must not loop.
        let Ok(meta) = std::fs::symlink_metadata(&e) else {
            continue;
        };
        if meta.is_dir() {
            walk(&e, wanted, out)?;
        } else if meta.is_file() && wanted(&e) {
            out.push(e);
        }
    }
    Ok(())
}

/// A file's name as text (lossy), for matching.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `files` with each file once, in their first order, when a folder and a file inside it name
/// the same file two ways (the sink refuses what is left: the same file under two names).
pub(crate) fn distinct_files(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    files
        .into_iter()
        .filter(|f| {
            let key = std::fs::canonicalize(f)
                .or_else(|_| std::path::absolute(f))
                .unwrap_or_else(|_| f.clone());
            seen.insert(key)
        })
        .collect()
}

/// A JSON value as the text a grader reads: strings as they are, numbers and others as JSON.
pub(crate) fn json_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(a) if a.len() == 1 => json_text(&a[0]),
        other => Some(other.to_string()),
    }
}

/// A per-sample verdict: booleans, 1 and 0, `"true"`/`"correct"`/`"yes"` and their opposites.
/// A number strictly between 0 and 1 is partial credit (Ok(None): no yes-or-no verdict); any
/// other number, NaN (Python's `json` writes it bare: read as the text `NaN`) and any other text
/// is not a verdict (Err, saying what it is). Null is no verdict.
pub(crate) fn verdict(v: &Value) -> Result<Option<bool>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Ok(Some(true)),
            Some(0.0) => Ok(Some(false)),
            Some(x) if x > 0.0 && x < 1.0 => Ok(None),
            _ => Err(format!("{n} is not a verdict (0 to 1)")),
        },
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "correct" | "yes" => Ok(Some(true)),
            "false" | "0" | "incorrect" | "wrong" | "no" => Ok(Some(false)),
            _ => Err(format!(
                "{} is not a verdict (true/false or 1/0)",
                crate::util::printable(&v.to_string())
            )),
        },
        other => Err(format!(
            "{} is not a verdict (true/false or 1/0)",
            crate::util::printable(&other.to_string())
        )),
    }
}

/// The first line of every Git LFS pointer file.
const LFS_HEADER: &[u8] = b"version https://git-lfs.github.com/spec/v1";

/// When `path` is a Git LFS pointer (a small text file standing for a file the clone did not
/// fetch), what it says: `a Git LFS pointer to a 12 MB file (oid sha256:…)`.
pub(crate) fn lfs_pointer(path: &Path) -> Option<String> {
    let mut head = Vec::new();
    crate::util::open_regular(path)
        .ok()?
        .take(1024)
        .read_to_end(&mut head)
        .ok()?;
    lfs_pointer_text(&head)
}

/// [`lfs_pointer`] of a file's first bytes.
pub(crate) fn lfs_pointer_text(head: &[u8]) -> Option<String> {
    if !head.starts_with(LFS_HEADER) {
        return None;
    }
    let text = String::from_utf8_lossy(head);
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
    };
    let size = field("size ").and_then(|s| s.parse::<u64>().ok());
    let oid = field("oid ").unwrap_or_default();
    Some(format!(
        "a Git LFS pointer{}, not the file itself ({}): fetch it with `git lfs pull` in its repository",
        size.map(|s| format!(" to a {s}-byte file")).unwrap_or_default(),
        crate::util::printable(crate::util::short(&oid))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdicts_in_range_partial_credit_and_the_rest_refused() {
        assert_eq!(verdict(&json!(true)), Ok(Some(true)));
        assert_eq!(verdict(&json!(0)), Ok(Some(false)));
        assert_eq!(verdict(&json!(1.0)), Ok(Some(true)));
        assert_eq!(verdict(&json!("Correct")), Ok(Some(true)));
        assert_eq!(verdict(&json!(0.5)), Ok(None));
        assert_eq!(verdict(&Value::Null), Ok(None));
        for bad in [json!(7.5), json!(-1), json!("NaN"), json!("A"), json!([1])] {
            assert!(verdict(&bad).is_err(), "{bad}");
        }
        assert!(verdict(&json!(7.5)).unwrap_err().contains("7.5"));
    }

    #[test]
    fn lfs_pointers_are_named_with_their_size() {
        let text = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n";
        let said = lfs_pointer_text(text).unwrap();
        assert!(
            said.contains("12345-byte") && said.contains("git lfs pull"),
            "{said}"
        );
        assert!(lfs_pointer_text(b"{\"a\": 1}").is_none());
    }
}
