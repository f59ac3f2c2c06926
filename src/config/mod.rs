//! The run configuration: reading `config.toml`, validating it, and resolving it into [`RunSettings`].
//!
//! Two stages: [`raw`] mirrors the file (unknown keys rejected), `settings` is the validated value
//! the rest of the program uses. Errors name the file, the line and the key.

mod api;
mod judge;
pub mod overrides;
mod paid;
pub mod raw;
mod search;
mod settings;
pub mod settings_json;
pub mod store;
mod verifier;

pub use api::ApiSettings;
pub use judge::{GraderMode, JudgeInput, JudgeSettings, DEFAULT_PROMPT, PLACEHOLDERS};
pub use paid::PaidCalls;
pub use search::{
    AnswerSelect, Prefix, RewardMode, SearchSettings, Strategy, TerminalReward, JUDGE_MAX_TOKENS,
    SEARCH_KEYS,
};
pub use settings::{
    parse_metric, EvalSettings, ModelSettings, RunSettings, SamplingSettings,
    DEFAULT_HEURISTIC_WARN,
};

pub use settings_json::TaskFile;
pub use verifier::{Aggregation, VerifierSettings, DEFAULT_MAX_STEPS};

pub(crate) use crate::util::closest;
use crate::util::{read_bounded_string, MAX_TEXT_FILE};
use overrides::Override;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

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
    /// A settings.json problem: serde_json gives line and column.
    #[error("{path}:{line}:{column}: {message}", path = .path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

/// Where `run`, `label` and `score` read their configuration from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub config: PathBuf,
    /// `--settings FILE`; without it a `settings.json` beside the config is read when present.
    pub settings: Option<PathBuf>,
    /// `--set KEY=VALUE` arguments, in order.
    pub overrides: Vec<String>,
}

/// The resolved configuration of every task (one when there is no settings file, one per object
/// of a settings.json array), and notes the command prints once on stderr.
#[derive(Debug)]
pub struct Loaded {
    pub tasks: Vec<RunSettings>,
    pub notes: Vec<String>,
}

/// Reads config.toml, merges each settings.json task into it (the JSON wins for its keys), applies
/// the `--set` overrides last, and resolves each result like a plain config file.
pub fn load_sources(src: &Sources) -> Result<Loaded, ConfigError> {
    let path = src.config.as_path();
    let text = read_bounded_string(path, MAX_TEXT_FILE).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let overrides = parse_overrides(&src.overrides, path)?;
    // Parsed once as the typed config so errors in the file keep their line and suggestion.
    read_raw(&text, path)?;
    let doc: Table = toml::from_str(&text).map_err(|e| parse_error(&e, &text, path))?;
    let mut notes = Vec::new();
    let file = match settings_json::discover(path, src.settings.as_deref()) {
        None => None,
        Some((p, found)) => {
            if found {
                notes.push(format!(
                    "reading task settings from {} (found beside the config; --settings picks another file)",
                    p.display()
                ));
            }
            Some(settings_json::read(&p)?)
        }
    };
    let count = file.as_ref().map_or(1, |f| f.tasks.len());
    let (mut tasks, mut differ) = (Vec::with_capacity(count), Vec::<String>::new());
    for i in 0..count {
        let mut doc = doc.clone();
        if let Some(f) = &file {
            for d in f.merge_into(i, &mut doc) {
                if !differ.contains(&d) {
                    differ.push(d);
                }
            }
        }
        let mut s = resolve_doc(doc, &overrides, &text, path)?;
        s.task_file = file.as_ref().map(|f| f.tasks[i].1.clone());
        s.overrides = src.overrides.clone();
        tasks.push(s);
    }
    if !differ.is_empty() {
        notes.push(format!(
            "settings.json and config.toml both set {}; the settings.json value is used",
            differ.join(", ")
        ));
    }
    let intervals = file.iter().flat_map(|f| &f.tasks);
    if let Some(n) = intervals.filter_map(|t| t.0.checkpoint_interval).next() {
        notes.push(format!(
            "settings.json `checkpoint_interval` = {n} is accepted but changes nothing: gpassk appends every sample to its checkpoint as it arrives"
        ));
    }
    Ok(Loaded { tasks, notes })
}

fn parse_overrides(args: &[String], path: &Path) -> Result<Vec<Override>, ConfigError> {
    args.iter()
        .map(|a| {
            Override::parse(a).map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                line: None,
                message,
            })
        })
        .collect()
}

/// Applies the overrides to a document and resolves it; `text` (the file as written) gives the
/// lines of errors and the config hash.
fn resolve_doc(
    mut doc: Table,
    overrides: &[Override],
    text: &str,
    path: &Path,
) -> Result<RunSettings, ConfigError> {
    overrides::apply(&mut doc, overrides, path)?;
    let raw: raw::RawConfig =
        Value::Table(doc.clone())
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid {
                path: path.to_path_buf(),
                line: None,
                message: e.message().trim().to_string(),
            })?;
    settings::resolve(raw, text, path).map_err(|e| overrides::blame(e, &doc, overrides))
}

/// A user's answer regex, compiled so that it meets responses as the grader sees them: full-width
/// characters folded like the response text (`答案：` matches `答案:`), and `^`/`$` matching at line
/// ends, so an answer on the last line matches even when text or a newline follows.
pub(crate) fn compile_answer_regex(pat: &str) -> Result<regex::Regex, regex::Error> {
    let mut folded = String::with_capacity(pat.len());
    for c in pat.chars() {
        if c.is_ascii() {
            folded.push(c);
        } else {
            let one = crate::grade::normalize_unicode(c.encode_utf8(&mut [0; 4]));
            folded.push_str(&regex::escape(&one));
        }
    }
    regex::RegexBuilder::new(&folded)
        .multi_line(true)
        .crlf(true)
        .build()
}

/// Reads and resolves a config file.
pub fn load(path: &Path) -> Result<RunSettings, ConfigError> {
    let text = read_bounded_string(path, MAX_TEXT_FILE).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    load_str(&text, path)
}

/// Resolves config text; `path` is used in messages and for the config hash's provenance.
pub fn load_str(text: &str, path: &Path) -> Result<RunSettings, ConfigError> {
    settings::resolve(read_raw(text, path)?, text, path)
}

/// The first stage alone: config text as written, an unknown key or a value of the wrong type an
/// error naming the line and key (with the nearest valid key); nothing is resolved or checked.
pub fn read_raw(text: &str, path: &Path) -> Result<raw::RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| parse_error(&e, text, path))
}

/// Resolves a config stored as JSON (a run manifest's `config`): it is turned back into TOML text
/// and resolved like a file, so the same validation applies. The config hash is of that text.
pub fn load_json(value: &serde_json::Value, path: &Path) -> Result<RunSettings, ConfigError> {
    load_json_with(value, path, &[])
}

/// [`load_json`] with `--set` overrides applied to the stored config (`gpassk score --set`).
pub fn load_json_with(
    value: &serde_json::Value,
    path: &Path,
    set: &[String],
) -> Result<RunSettings, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: None,
        message,
    };
    let raw: raw::RawConfig = serde_json::from_value(value.clone())
        .map_err(|e| invalid(format!("stored config is not a gpassk config: {e}")))?;
    let text = toml::to_string(&raw)
        .map_err(|e| invalid(format!("stored config cannot be written as TOML: {e}")))?;
    if set.is_empty() {
        return load_str(&text, path);
    }
    let overrides = parse_overrides(set, path)?;
    let doc: Table = toml::from_str(&text).map_err(|e| parse_error(&e, &text, path))?;
    let mut s = resolve_doc(doc, &overrides, &text, path)?;
    s.overrides = set.to_vec();
    Ok(s)
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
    fn dollar_anchored_answer_regex_works_on_multi_line_responses() {
        let re = compile_answer_regex("答案：(.+)$").unwrap();
        let cfg = crate::grade::GradeConfig {
            extract_regex: vec![re],
            ..Default::default()
        };
        let response = "先算 3 步。\n答案：42\n（检查完毕，用时 5 分钟）\n";
        assert_eq!(crate::grade::extract(response, &cfg).as_deref(), Some("42"));
        let crlf = "思考\r\n答案：17\r\n";
        assert_eq!(crate::grade::extract(crlf, &cfg).as_deref(), Some("17"));
        // Full-width punctuation that is a regex metacharacter once folded stays literal.
        let paren = compile_answer_regex("结果（(\\d+)）").unwrap();
        assert!(paren.is_match("结果(12)"));
        assert!(!paren.is_match("结果12"));
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

    #[test]
    fn the_heuristic_warning_threshold_and_the_uncertain_grader() {
        let base = "[api]\nbase_url = \"http://127.0.0.1:1\"\n[[models]]\nname = \"a\"\n[evaluation]\ndataset = \"gsm8k\"\n";
        let load = |extra: &str| load_str(&format!("{base}{extra}"), Path::new("cfg.toml"));
        let warn = |extra: &str| load(extra).unwrap().evaluation.heuristic_warn;
        assert_eq!(warn(""), DEFAULT_HEURISTIC_WARN);
        assert_eq!(warn("heuristic_warn = 0.05\n"), 0.05);
        assert_eq!(warn("heuristic_warn = 0\n"), 0.0);
        for bad in ["heuristic_warn = 20\n", "heuristic_warn = -0.1\n"] {
            let msg = load(bad).unwrap_err().to_string();
            assert!(
                msg.contains("evaluation.heuristic_warn") && msg.contains("cfg.toml"),
                "{msg}"
            );
        }
        let judged = "grader = \"rule_then_judge_uncertain\"\n[judge]\nmodel_id = \"j\"\n";
        assert_eq!(
            load(judged).unwrap().evaluation.grader,
            GraderMode::RuleThenJudgeUncertain
        );
        let msg = load("grader = \"uncertain\"\n").unwrap_err().to_string();
        assert!(msg.contains("\"rule_then_judge_uncertain\""), "{msg}");
    }

    #[test]
    fn grading_policy_keys() {
        use crate::grade::{ListOrder, Percent, Policy, StyledLetters, Tolerance};
        let base = "[api]\nbase_url = \"http://127.0.0.1:1\"\n[[models]]\nname = \"a\"\n[evaluation]\ndataset = \"gsm8k\"\n";
        let load = |extra: &str| load_str(&format!("{base}{extra}"), Path::new("cfg.toml"));
        let policy = |extra: &str| load(extra).unwrap().evaluation.grading;
        assert_eq!(policy(""), Policy::default());
        assert_eq!(policy("").tolerance, Tolerance::Decimals(6));
        let p = policy("precision = 3\nlist_order = \"as_written\"\npercent = \"strip\"\nstyled_letters = \"same\"\n");
        assert_eq!(p.tolerance, Tolerance::Decimals(3));
        assert_eq!(p.list_order, ListOrder::AsWritten);
        assert_eq!(p.percent, Percent::Strip);
        assert_eq!(p.styled_letters, StyledLetters::Same);
        assert_eq!(
            policy("decimal_mark = \"comma\"\n").decimal_mark,
            crate::grade::DecimalMark::Comma
        );
        assert_eq!(
            policy("rel_tol = 1e-4\n").tolerance,
            Tolerance::Relative(1e-4)
        );
        for (bad, key) in [
            ("precision = 2\nrel_tol = 1e-3\n", "rel_tol"),
            ("precision = 40\n", "precision"),
            ("percent = \"half\"\n", "percent"),
            ("list_order = \"sorted\"\n", "list_order"),
            ("decimal_mark = \"european\"\n", "decimal_mark"),
        ] {
            let msg = load(bad).unwrap_err().to_string();
            assert!(msg.contains(key) && msg.contains("cfg.toml"), "{msg}");
        }
    }

    #[test]
    fn stream_deadline_defaults_to_timeout_plus_max_tokens_and_is_overridable_per_model() {
        use std::time::Duration;
        let load = |api: &str, sampling: &str, model_b: &str| {
            let text = format!("[api]\nbase_url = \"http://127.0.0.1:1\"\ntimeout = 10\n{api}[sampling]\n{sampling}[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\n{model_b}[evaluation]\ndataset = \"gsm8k\"\n");
            load_str(&text, Path::new("cfg.toml"))
        };
        let deadlines = |api: &str, sampling: &str, model_b: &str| {
            let s = load(api, sampling, model_b).unwrap();
            s.models
                .iter()
                .map(|m| m.api.stream_deadline.as_secs_f64())
                .collect::<Vec<_>>()
        };
        // timeout + max_tokens / 5 tokens per second; without max_tokens, timeout + 2 h.
        assert_eq!(deadlines("", "", ""), [7210.0, 7210.0]);
        assert_eq!(
            deadlines("", "max_tokens = 1000\n", "max_tokens = 50\n"),
            [210.0, 20.0]
        );
        assert_eq!(
            deadlines("", "max_tokens = 1000000\n", ""),
            [7210.0, 7210.0]
        );
        assert_eq!(
            deadlines("stream_deadline = 45\n", "", "stream_deadline = 2.5\n"),
            [45.0, 2.5]
        );
        let s = load(
            "stream = true\nstream_deadline = 45\n",
            "",
            "stream = false\n",
        )
        .unwrap();
        assert_eq!(s.models[0].api.streaming(), Some(Duration::from_secs(45)));
        assert_eq!(s.models[1].api.streaming(), None);
        for bad in ["stream_deadline = 0\n", "stream_deadline = -3\n"] {
            let msg = load(bad, "", "").unwrap_err().to_string();
            assert!(
                msg.contains("stream_deadline") && msg.contains("cfg.toml"),
                "{msg}"
            );
        }
    }
}
