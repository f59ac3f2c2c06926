//! The run configuration: reading `config.toml`, validating it, and resolving it into [`Settings`].
//!
//! Two stages: [`raw`] mirrors the file (unknown keys rejected), [`settings`] is the validated value
//! the rest of the program uses. Errors name the file, the line and the key.

mod judge;
pub mod raw;
mod settings;

pub use judge::{GraderMode, JudgeInput, JudgeSettings, DEFAULT_PROMPT, PLACEHOLDERS};
pub use settings::{
    parse_metric, ApiSettings, EvalSettings, ModelSettings, SamplingSettings, Settings,
};

pub(crate) use crate::util::closest;
use std::path::{Path, PathBuf};

/// A config problem the user must fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read config: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}{}: {message}", line_suffix(*line))]
    Invalid {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

/// Reads and resolves a config file.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    load_str(&text, path)
}

/// Resolves config text; `path` is used in messages and for the config hash's provenance.
pub fn load_str(text: &str, path: &Path) -> Result<Settings, ConfigError> {
    let raw: raw::RawConfig = toml::from_str(text).map_err(|e| parse_error(&e, text, path))?;
    settings::resolve(raw, text, path)
}

/// Resolves a config stored as JSON (a run manifest's `config`): it is turned back into TOML text
/// and resolved like a file, so the same validation applies. The config hash is of that text.
pub fn load_json(value: &serde_json::Value, path: &Path) -> Result<Settings, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: None,
        message,
    };
    let raw: raw::RawConfig = serde_json::from_value(value.clone())
        .map_err(|e| invalid(format!("stored config is not a gpassk config: {e}")))?;
    let text = toml::to_string(&raw)
        .map_err(|e| invalid(format!("stored config cannot be written as TOML: {e}")))?;
    load_str(&text, path)
}

/// A regex error as one line: the `regex` crate draws the pattern with a caret under the fault
/// over several lines; keep its last line (`error: …`) and the position it gives.
pub fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.iter().rposition(|l| l.starts_with("error:")) {
        Some(i) => lines[i].trim_start_matches("error:").trim().to_string(),
        None => lines.join("; "),
    }
}

/// Turns a toml/serde error into one line with the location and, for unknown keys, a suggestion.
/// The offending line's text is never echoed: it could hold a value the user would not want printed.
fn parse_error(e: &toml::de::Error, text: &str, path: &Path) -> ConfigError {
    // toml's messages may span lines; the location is reported separately below.
    let msg = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let line = e.span().map(|s| line_of(text, s.start));
    let section = line.map(|l| section_at(text, l)).unwrap_or_default();
    let table = if section.is_empty() {
        "the top level".to_string()
    } else {
        format!("[{section}]")
    };
    let message = if let Some(rest) = msg.strip_prefix("unknown field `") {
        let bad = rest.split('`').next().unwrap_or_default().to_string();
        let expected: Vec<String> = rest
            .split('`')
            .skip(2)
            .step_by(2)
            .map(str::to_string)
            .collect();
        let mut m = format!("unknown key `{bad}` in {table}");
        if let Some(s) = closest(&bad, expected.iter().map(String::as_str)) {
            m.push_str(&format!("; did you mean `{s}`?"));
        } else if !expected.is_empty() {
            m.push_str(&format!("; valid keys: {}", expected.join(", ")));
        }
        if bad.contains("key") && !bad.ends_with("_env") {
            m.push_str(" (API keys are read from the environment variable named by `api_key_env`)");
        }
        m
    } else {
        let key = line.and_then(|l| key_on_line(text, l));
        match key {
            Some(k) => format!("`{k}` in {table}: {msg}"),
            None => msg,
        }
    };
    ConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    }
}

/// The closest of several names, for "did you mean" hints.
pub(crate) fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The table header in force at a 1-based line: "api", "models", "evaluation.fields", or "".
pub(crate) fn section_at(text: &str, line: usize) -> String {
    let mut section = String::new();
    for l in text.lines().take(line) {
        if let Some(h) = header(l) {
            section = h.0;
        }
    }
    section
}

/// Parses a `[table]` or `[[array]]` header line into (name, is_array).
fn header(line: &str) -> Option<(String, bool)> {
    let t = line.split('#').next().unwrap_or("").trim();
    if let Some(inner) = t.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")) {
        return Some((inner.trim().to_string(), true));
    }
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    Some((inner.trim().to_string(), false))
}

fn key_on_line(text: &str, line: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let (k, _) = l.split_once('=')?;
    let k = k.trim().trim_matches('"');
    (!k.is_empty() && !k.starts_with('[')).then(|| k.to_string())
}

/// The 1-based line of `key` inside `section` (the `index`-th `[[section]]` for arrays of tables).
pub(crate) fn locate(text: &str, section: &str, index: Option<usize>, key: &str) -> Option<usize> {
    let mut seen: usize = 0;
    let mut in_target = section.is_empty();
    for (i, l) in text.lines().enumerate() {
        if let Some((name, is_array)) = header(l) {
            if is_array && name == section {
                seen += 1;
            }
            in_target = name == section && index.is_none_or(|want| seen == want + 1);
            continue;
        }
        if in_target {
            if let Some((k, _)) = l.split_once('=') {
                if k.trim().trim_matches('"') == key {
                    return Some(i + 1);
                }
            }
        }
    }
    // A key not written in the file: point at the table header if there is one.
    let mut seen = 0;
    for (i, l) in text.lines().enumerate() {
        if let Some((name, is_array)) = header(l) {
            if name == section {
                seen += is_array as usize;
                if index.is_none_or(|want| seen == want + 1) {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_keys_in_tables_and_arrays() {
        let text = "[api]\nbase_url = \"x\"\n[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\ntemperature = 3\n";
        assert_eq!(locate(text, "api", None, "base_url"), Some(2));
        assert_eq!(locate(text, "models", Some(1), "temperature"), Some(7));
        assert_eq!(locate(text, "models", Some(0), "name"), Some(4));
        assert_eq!(locate(text, "models", Some(0), "temperature"), Some(3));
        assert_eq!(section_at(text, 7), "models");
    }

    #[test]
    fn suggests_close_keys_only() {
        let keys = ["temperature", "top_p", "seed"];
        assert_eq!(
            closest("temprature", keys.iter().copied()),
            Some("temperature")
        );
        assert_eq!(closest("sed", keys.iter().copied()), Some("seed"));
        assert_eq!(closest("banana", keys.iter().copied()), None);
    }
}
