//! settings.json, the task half of the two-file configuration: parsing with line:column errors,
//! checking each key, and merging a task into the TOML document's `[evaluation]` and `[[models]]`.

use super::{closest, ConfigError};
use crate::util::hex;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// The file name looked for beside the config when `--settings` is not given.
pub const DEFAULT_NAME: &str = "settings.json";

/// One task object of settings.json, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    pub task_name: Option<String>,
    pub dataset_path: Option<String>,
    pub prompt_template: Option<String>,
    pub answer_extract_regex: Option<String>,
    pub answer_extract_regex_list: Option<Vec<String>>,
    pub g_pass_thresholds: Option<Vec<f64>>,
    pub concurrency: Option<i64>,
    pub save_raw_responses: Option<bool>,
    pub resume_from_checkpoint: Option<bool>,
    pub checkpoint_interval: Option<i64>,
}

/// Where a run's task came from; stored in the manifest beside the config.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskFile {
    pub path: String,
    /// The whole file as parsed (every task of an array).
    pub content: serde_json::Value,
    /// sha256 of the file's bytes, hex.
    pub sha256: String,
    /// The task's position when the file holds an array of tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_name: Option<String>,
}

/// A parsed settings file: its tasks, with what the manifest records about it.
#[derive(Debug)]
pub struct TaskList {
    pub tasks: Vec<(RawTask, TaskFile)>,
    text: String,
    path: PathBuf,
}

/// Reads and checks a settings file: one task object or an array of them.
pub fn read(path: &Path) -> Result<TaskList, ConfigError> {
    let text = crate::util::read_bounded_string(path, crate::util::MAX_TEXT_FILE).map_err(|e| {
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line: None,
            message: format!("cannot read the settings file: {e}"),
        }
    })?;
    parse(&text, path)
}

/// Parses settings text; `path` names the file in messages and anchors `dataset_path`.
pub fn parse(text: &str, path: &Path) -> Result<TaskList, ConfigError> {
    let is_array = text.trim_start().starts_with('[');
    let raws: Vec<RawTask> = if is_array {
        serde_json::from_str(text).map_err(|e| json_error(&e, text, path))?
    } else {
        vec![serde_json::from_str(text).map_err(|e| json_error(&e, text, path))?]
    };
    if raws.is_empty() {
        return Err(at(path, 1, 1, "the array holds no task object".into()));
    }
    let content: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let sha256 = hex(&Sha256::digest(text.as_bytes()));
    let spans = object_spans(text);
    let list = TaskList {
        tasks: Vec::new(),
        text: text.to_string(),
        path: path.to_path_buf(),
    };
    let mut tasks = Vec::with_capacity(raws.len());
    let mut names: Vec<String> = Vec::new();
    for (i, raw) in raws.into_iter().enumerate() {
        let span = spans.get(i).copied().unwrap_or((0, text.len()));
        list.check(&raw, span)?;
        let name = raw.task_name.clone();
        if is_array {
            let shown = name.clone().unwrap_or_else(|| format!("task{}", i + 1));
            if names.contains(&shown) {
                return Err(list.err(span, "task_name", format!("{shown:?} names two tasks")));
            }
            names.push(shown);
        }
        let file = TaskFile {
            path: path.display().to_string(),
            content: content.clone(),
            sha256: sha256.clone(),
            index: is_array.then_some(i),
            task_name: name,
        };
        tasks.push((raw, file));
    }
    Ok(TaskList { tasks, ..list })
}

/// A serde_json error as one line: file:line:column, with a suggestion for unknown keys.
fn json_error(e: &serde_json::Error, text: &str, path: &Path) -> ConfigError {
    let msg = e.to_string();
    // serde_json appends " at line L column C"; the location goes in front instead.
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    let message = match msg.strip_prefix("unknown field `") {
        Some(rest) => {
            let bad = rest.split('`').next().unwrap_or_default();
            let expected: Vec<&str> = rest.split('`').skip(2).step_by(2).collect();
            let hint = closest(bad, expected.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| format!("; valid keys: {}", expected.join(", ")));
            format!("unknown key `{bad}`{hint}")
        }
        None => match key_before(text, e.line(), e.column()) {
            Some(key) if e.is_data() => format!("`{key}`: {msg}"),
            _ => msg,
        },
    };
    at(path, e.line(), e.column(), message)
}

/// The last `"key":` on `line` before `column`: the key a bad value belongs to.
fn key_before(text: &str, line: usize, column: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let head = l.get(..column.min(l.len()))?;
    let colon = head.rfind("\":")?;
    let open = head[..colon].rfind('"')?;
    Some(head[open + 1..colon].to_string())
}

fn at(path: &Path, line: usize, column: usize, message: String) -> ConfigError {
    ConfigError::Json {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

impl TaskList {
    /// An error about `key` inside the task object spanning `span` (byte range).
    fn err(&self, span: (usize, usize), key: &str, message: String) -> ConfigError {
        let needle = format!("\"{key}\"");
        let start = self.text[span.0..span.1]
            .find(&needle)
            .map_or(span.0, |o| span.0 + o);
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
        at(&self.path, line, column, format!("`{key}`: {message}"))
    }

    /// Checks every value of one task; the TOML resolve then never sees a bad JSON value.
    fn check(&self, t: &RawTask, span: (usize, usize)) -> Result<(), ConfigError> {
        let err = |key: &str, m: String| self.err(span, key, m);
        if let Some(p) = &t.prompt_template {
            if !p.contains("{question}") {
                return Err(err("prompt_template", "must contain {question}".into()));
            }
        }
        if let Some(n) = &t.task_name {
            if n.trim().is_empty() {
                return Err(err("task_name", "must not be empty".into()));
            }
        }
        let regexes = t
            .answer_extract_regex
            .iter()
            .map(|r| ("answer_extract_regex", r));
        let list = t.answer_extract_regex_list.iter().flatten();
        for (key, pat) in regexes.chain(list.map(|r| ("answer_extract_regex_list", r))) {
            super::compile_answer_regex(pat)
                .map_err(|e| err(key, format!("{pat:?} does not compile: {e}")))?;
        }
        if let Some(ts) = &t.g_pass_thresholds {
            if ts.is_empty() {
                return Err(err("g_pass_thresholds", "must list at least one τ".into()));
            }
            for x in ts {
                format!("{x:?}")
                    .parse::<crate::metrics::Tau>()
                    .map_err(|e| err("g_pass_thresholds", e.to_string()))?;
            }
        }
        if let Some(c) = t.concurrency {
            if !(1..=100_000).contains(&c) {
                return Err(err(
                    "concurrency",
                    format!("{c} must be between 1 and 100000"),
                ));
            }
        }
        if let Some(c) = t.checkpoint_interval {
            if c < 1 {
                return Err(err(
                    "checkpoint_interval",
                    format!("{c} must be at least 1"),
                ));
            }
        }
        if let Some(d) = &t.dataset_path {
            self.dataset(d).map_err(|m| err("dataset_path", m))?;
        }
        Ok(())
    }

    /// `dataset_path` as the TOML's `dataset`: a shipped name as is, else a path made relative to
    /// the settings file, which must exist.
    fn dataset(&self, d: &str) -> Result<String, String> {
        if d.trim().is_empty() {
            return Err("must name a .jsonl file or a shipped dataset".into());
        }
        let looks_like_path = d.contains('/') || d.contains('\\') || d.ends_with(".jsonl");
        if !looks_like_path && crate::dataset::registry::lookup(d).is_some() {
            return Ok(d.to_string());
        }
        let base = self.path.parent().unwrap_or(Path::new(""));
        let full = base.join(d);
        if full.is_file() {
            return Ok(full.display().to_string());
        }
        let stem = Path::new(d)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let hint = match crate::dataset::registry::lookup(stem) {
            Some(_) => {
                format!("; a shipped dataset has the same name: use \"dataset_path\": \"{stem}\"")
            }
            None => crate::dataset::registry::closest(stem)
                .map(|s| format!("; did you mean the shipped dataset \"{s}\"?"))
                .unwrap_or_default(),
        };
        Err(format!(
            "{d} not found (looked for {}, relative to the settings file){hint}",
            full.display()
        ))
    }

    /// Writes task `i` into the TOML document; returns the keys the TOML set differently.
    pub fn merge_into(&self, i: usize, doc: &mut Table) -> Vec<String> {
        let t = &self.tasks[i].0;
        let mut differ = Vec::new();
        let ev = table_mut(doc, "evaluation");
        let mut put = |key: &str, json_key: &str, v: Option<Value>| {
            let Some(v) = v else { return };
            if ev.get(key).is_some_and(|old| old != &v) {
                differ.push(format!("`{json_key}` (config.toml [evaluation] `{key}`)"));
            }
            ev.insert(key.to_string(), v);
        };
        put(
            "task_name",
            "task_name",
            t.task_name.clone().map(Value::String),
        );
        let dataset = t.dataset_path.as_deref().and_then(|d| self.dataset(d).ok());
        put("dataset", "dataset_path", dataset.map(Value::String));
        put(
            "prompt_template",
            "prompt_template",
            t.prompt_template.clone().map(Value::String),
        );
        let mut regexes: Vec<String> = t.answer_extract_regex.iter().cloned().collect();
        for r in t.answer_extract_regex_list.iter().flatten() {
            if !regexes.contains(r) {
                regexes.push(r.clone());
            }
        }
        let regexes = (!regexes.is_empty())
            .then(|| Value::Array(regexes.into_iter().map(Value::String).collect()));
        put("answer_extract_regex", "answer_extract_regex", regexes);
        let taus = t
            .g_pass_thresholds
            .as_ref()
            .map(|ts| Value::Array(ts.iter().map(|&x| Value::Float(x)).collect()));
        put("g_pass_thresholds", "g_pass_thresholds", taus);
        let flag = |b: Option<bool>| b.map(Value::Boolean);
        put(
            "save_raw_responses",
            "save_raw_responses",
            flag(t.save_raw_responses),
        );
        put(
            "resume_from_checkpoint",
            "resume_from_checkpoint",
            flag(t.resume_from_checkpoint),
        );
        if let Some(c) = t.concurrency {
            differ.extend(set_concurrency(doc, c));
        }
        differ
    }
}

/// The JSON's `concurrency` becomes every model's own, so it overrides `[api]`.
fn set_concurrency(doc: &mut Table, c: i64) -> Option<String> {
    let api = doc.get("api").and_then(|a| a.get("concurrency")).cloned();
    let mut differ = api.is_some_and(|v| v != Value::Integer(c));
    if let Some(Value::Array(models)) = doc.get_mut("models") {
        for m in models.iter_mut().filter_map(Value::as_table_mut) {
            let old = m.insert("concurrency".into(), Value::Integer(c));
            differ |= old.is_some_and(|v| v != Value::Integer(c));
        }
    }
    differ.then(|| "`concurrency` (config.toml [api] or [[models]] `concurrency`)".to_string())
}

/// The sub-table `key` of `doc`, created when absent.
pub(super) fn table_mut<'a>(doc: &'a mut Table, key: &str) -> &'a mut Table {
    let slot = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    if !slot.is_table() {
        *slot = Value::Table(Table::new());
    }
    slot.as_table_mut().expect("just made a table")
}

/// Byte spans of the top-level objects (one for an object file, one per element of an array).
fn object_spans(text: &str) -> Vec<(usize, usize)> {
    let (mut spans, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    let (mut in_str, mut escaped) = (false, false);
    let top = if text.trim_start().starts_with('[') {
        1
    } else {
        0
    };
    for (i, c) in text.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => {
                if depth == top && c == '{' {
                    start = i;
                }
                depth += 1;
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == top && c == '}' {
                    spans.push((start, i + 1));
                }
            }
            _ => {}
        }
    }
    spans
}

/// The settings file for a config: `explicit`, else `settings.json` beside the config if present.
pub fn discover(config: &Path, explicit: Option<&Path>) -> Option<(PathBuf, bool)> {
    if let Some(p) = explicit {
        return Some((p.to_path_buf(), false));
    }
    let beside = config.parent().unwrap_or(Path::new("")).join(DEFAULT_NAME);
    beside.is_file().then_some((beside, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_each_task_object() {
        let text = "[\n {\"a\": \"}\"},\n {\"b\": [1, {\"c\": 2}]}\n]";
        let spans = object_spans(text);
        assert_eq!(spans.len(), 2);
        assert_eq!(&text[spans[0].0..spans[0].1], "{\"a\": \"}\"}");
        assert!(text[spans[1].0..spans[1].1].ends_with("}]}"));
    }

    #[test]
    fn unknown_key_names_line_column_and_suggestion() {
        let e = parse(
            "{\n  \"task_name\": \"x\",\n  \"concurency\": 8\n}",
            Path::new("s.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("s.json:3:"), "{e}");
        assert!(e.contains("did you mean `concurrency`?"), "{e}");
    }

    #[test]
    fn bad_value_points_at_its_key_in_the_right_task() {
        let text = "[{\"task_name\": \"a\", \"concurrency\": 2},\n {\"task_name\": \"b\", \"concurrency\": 0}]";
        let e = parse(text, Path::new("s.json")).unwrap_err().to_string();
        assert!(
            e.starts_with("s.json:2:21: `concurrency`: 0 must be"),
            "{e}"
        );
    }
}
