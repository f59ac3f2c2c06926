//! Reading JSONL files into problems: field mapping, answer post-processing, checks and sha256.

use crate::util::hex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::registry::{self, AnswerPost, Entry};
use super::{datasets_dir, Dataset, DatasetError, FieldMap, Language, Problem};

/// Load a registered dataset by name, or any `.jsonl` file by path (then `fields` applies; without
/// it the fields are `id`, `question` and `answer`). Without an `id` field named, lines are numbered
/// when the first line has no `id`. `fields` is ignored for registered names.
pub fn load(name_or_path: &str, fields: Option<&FieldMap>) -> Result<Dataset, DatasetError> {
    if let Some(entry) = registry::lookup(name_or_path) {
        return load_entry(entry, &datasets_dir());
    }
    let path = Path::new(name_or_path);
    if looks_like_path(name_or_path) || path.is_file() {
        return load_path(path, fields);
    }
    let known = registry::names().join(", ");
    Err(DatasetError::UnknownDataset {
        name: name_or_path.to_string(),
        suggestion: registry::closest(name_or_path).map(str::to_string),
        known,
    })
}

fn looks_like_path(text: &str) -> bool {
    text.contains('/')
        || text.contains(std::path::MAIN_SEPARATOR)
        || text.ends_with(".jsonl")
        || text.ends_with(".json")
}

/// Load a registered dataset from the files under `dir`.
pub(super) fn load_entry(entry: &Entry, dir: &Path) -> Result<Dataset, DatasetError> {
    let files: Vec<(PathBuf, Option<String>)> = entry
        .sources
        .iter()
        .map(|s| (dir.join(s.file), s.subset.map(str::to_string)))
        .collect();
    let mapping = Mapping {
        id: match entry.id {
            Some(field) => IdRule::Field(field),
            None => IdRule::LineNumber,
        },
        question: entry.question,
        answer: entry.answer,
        subset: entry.subset,
        extra: Extra::Listed(entry.extra),
        post: entry.post,
    };
    let mut dataset = build(entry.name.to_string(), &files, &mapping, entry.language)?;
    if let Some((field, value)) = entry.only {
        dataset
            .problems
            .retain(|p| p.fields.get(field).map(String::as_str) == Some(value));
        // A subset is another dataset: its hash covers the file and the filter.
        let mut h = Sha256::new();
        h.update(format!("{}\n{field}={value}", dataset.sha256));
        dataset.sha256 = hex(&h.finalize());
    }
    Ok(dataset)
}

/// Load any JSONL file through a field mapping.
pub(super) fn load_path(path: &Path, fields: Option<&FieldMap>) -> Result<Dataset, DatasetError> {
    let default = FieldMap::default();
    let map = fields.unwrap_or(&default);
    // Without an `id` field named, ids come from `id` when the file has one: restating the
    // question or answer field must not turn ids into line numbers.
    let id = match (fields, map.id.as_deref()) {
        (Some(_), Some(field)) => IdRule::Field(field),
        _ => IdRule::Auto,
    };
    let mapping = Mapping {
        id,
        question: &map.question,
        answer: &map.answer,
        subset: map.subset.as_deref(),
        extra: Extra::AllOthers,
        post: AnswerPost::Verbatim,
    };
    let files = [(path.to_path_buf(), None)];
    build(
        path.display().to_string(),
        &files,
        &mapping,
        Language::English,
    )
}

enum IdRule<'a> {
    Field(&'a str),
    LineNumber,
    /// `id` when the file's first record has one, else line numbers.
    Auto,
}

enum Extra<'a> {
    Listed(&'a [&'a str]),
    AllOthers,
}

struct Mapping<'a> {
    id: IdRule<'a>,
    question: &'a str,
    answer: &'a str,
    subset: Option<&'a str>,
    extra: Extra<'a>,
    post: AnswerPost,
}

fn build(
    name: String,
    files: &[(PathBuf, Option<String>)],
    mapping: &Mapping<'_>,
    language: Language,
) -> Result<Dataset, DatasetError> {
    let mut hasher = Sha256::new();
    let mut problems = Vec::new();
    let mut seen: HashMap<String, (PathBuf, usize)> = HashMap::new();
    let prefix_ids = files.len() > 1;
    for (path, subset) in files {
        let bytes =
            crate::util::read_bounded(path, crate::util::MAX_DATA_FILE).map_err(|source| {
                DatasetError::Io {
                    path: path.clone(),
                    source,
                }
            })?;
        hasher.update(&bytes);
        let before = problems.len();
        let file = FileContext {
            path,
            subset: subset.as_deref(),
            prefix_ids,
        };
        parse_file(&bytes, &file, mapping, &mut seen, &mut problems)?;
        if problems.len() == before {
            return Err(DatasetError::EmptyFile { path: path.clone() });
        }
    }
    Ok(Dataset {
        name,
        files: files.iter().map(|(p, _)| p.clone()).collect(),
        sha256: hex(&hasher.finalize()),
        language,
        default_template: language.default_template().to_string(),
        problems,
    })
}

struct FileContext<'a> {
    path: &'a Path,
    subset: Option<&'a str>,
    prefix_ids: bool,
}

fn parse_file(
    bytes: &[u8],
    file: &FileContext<'_>,
    mapping: &Mapping<'_>,
    seen: &mut HashMap<String, (PathBuf, usize)>,
    problems: &mut Vec<Problem>,
) -> Result<(), DatasetError> {
    let path = file.path;
    let mut resolved_id: Option<Option<&str>> = match mapping.id {
        IdRule::Field(field) => Some(Some(field)),
        IdRule::LineNumber => Some(None),
        IdRule::Auto => None,
    };
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = index + 1;
        let mut raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if index == 0 {
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = std::str::from_utf8(raw).map_err(|e| DatasetError::InvalidUtf8 {
            path: path.to_path_buf(),
            line,
            byte: e.valid_up_to() + 1,
        })?;
        let value: Value = serde_json::from_str(text).map_err(|e| DatasetError::InvalidJson {
            path: path.to_path_buf(),
            line,
            message: format!("{} at column {}", json_error_kind(&e), e.column()),
        })?;
        let Value::Object(record) = value else {
            return Err(DatasetError::NotAnObject {
                path: path.to_path_buf(),
                line,
                found: kind(&value),
            });
        };
        let at = Location { path, line };
        let id_field = *resolved_id
            .get_or_insert_with(|| record.get("id").filter(|v| !v.is_null()).map(|_| "id"));
        let problem = parse_record(&record, &at, file, mapping, id_field)?;
        if let Some((first_path, first_line)) = seen.get(&problem.id) {
            return Err(DatasetError::DuplicateId {
                path: path.to_path_buf(),
                line,
                id: problem.id,
                first_path: first_path.clone(),
                first_line: *first_line,
            });
        }
        seen.insert(problem.id.clone(), (path.to_path_buf(), line));
        problems.push(problem);
    }
    Ok(())
}

struct Location<'a> {
    path: &'a Path,
    line: usize,
}

impl Location<'_> {
    fn missing(&self, field: &str) -> DatasetError {
        DatasetError::MissingField {
            path: self.path.to_path_buf(),
            line: self.line,
            field: field.to_string(),
        }
    }

    /// The field as text; `None` when absent or null.
    fn text(
        &self,
        record: &Map<String, Value>,
        field: &str,
    ) -> Result<Option<String>, DatasetError> {
        match record.get(field) {
            None => Ok(None),
            Some(value) => value_text(value).map_err(|found| DatasetError::InvalidField {
                path: self.path.to_path_buf(),
                line: self.line,
                field: field.to_string(),
                found,
            }),
        }
    }

    fn required(&self, record: &Map<String, Value>, field: &str) -> Result<String, DatasetError> {
        self.text(record, field)?.ok_or_else(|| self.missing(field))
    }
}

fn parse_record(
    record: &Map<String, Value>,
    at: &Location<'_>,
    file: &FileContext<'_>,
    mapping: &Mapping<'_>,
    id_field: Option<&str>,
) -> Result<Problem, DatasetError> {
    let mut id = match id_field {
        Some(field) => at.required(record, field)?.trim().to_string(),
        None => (at.line - 1).to_string(),
    };
    if id.is_empty() {
        return Err(at.missing(id_field.unwrap_or("id")));
    }
    if file.prefix_ids {
        if let Some(subset) = file.subset {
            id = format!("{subset}/{id}");
        }
    }
    let question = at.required(record, mapping.question)?;
    if question.trim().is_empty() {
        return Err(DatasetError::EmptyQuestion {
            path: at.path.to_path_buf(),
            line: at.line,
            field: mapping.question.to_string(),
        });
    }
    let raw_answer = at.required(record, mapping.answer)?;
    let mut fields = BTreeMap::new();
    let answer = match mapping.post {
        AnswerPost::Verbatim => raw_answer.trim().to_string(),
        AnswerPost::IntegerFloat => integer_float(&raw_answer),
        AnswerPost::StripDollars => strip_dollars(&raw_answer),
        AnswerPost::AfterHashes => {
            let (answer, solution) =
                after_hashes(&raw_answer).ok_or_else(|| DatasetError::MalformedAnswer {
                    path: at.path.to_path_buf(),
                    line: at.line,
                    reason: format!("field `{}` has no `#### ` final answer", mapping.answer),
                })?;
            if !solution.is_empty() {
                fields.insert("solution".to_string(), solution);
            }
            answer
        }
    };
    if answer.is_empty() {
        return Err(DatasetError::EmptyAnswer {
            path: at.path.to_path_buf(),
            line: at.line,
            field: mapping.answer.to_string(),
        });
    }
    let subset = match (file.subset, mapping.subset) {
        (Some(subset), _) => Some(subset.to_string()),
        (None, Some(field)) => Some(at.required(record, field)?.trim().to_string()),
        (None, None) => None,
    };
    match mapping.extra {
        Extra::Listed(names) => {
            for name in names {
                if let Some(value) = at.text(record, name)? {
                    fields.insert((*name).to_string(), value);
                }
            }
        }
        Extra::AllOthers => {
            let used = [
                Some(mapping.question),
                Some(mapping.answer),
                id_field,
                mapping.subset,
            ];
            for (name, value) in record {
                if used.contains(&Some(name.as_str())) {
                    continue;
                }
                // Optional fields that cannot be shown as text are left out rather than refused.
                if let Ok(Some(text)) = value_text(value) {
                    fields.insert(name.clone(), text);
                }
            }
        }
    }
    Ok(Problem {
        id,
        question,
        answer,
        subset,
        fields,
    })
}

/// A JSON value as text: strings as they are, numbers and booleans as written, lists of scalars one
/// item a line. `Ok(None)` for null; `Err(kind)` for objects and nested lists.
fn value_text(value: &Value) -> Result<Option<String>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        Value::Array(items) => {
            let mut lines = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(s) => lines.push(s.clone()),
                    Value::Number(n) => lines.push(n.to_string()),
                    Value::Bool(b) => lines.push(b.to_string()),
                    _ => return Err("a list holding lists, objects or nulls"),
                }
            }
            Ok(Some(lines.join("\n")))
        }
        Value::Object(_) => Err("an object"),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// serde_json's message without its own "at line 1 column N" suffix (a line is parsed alone).
fn json_error_kind(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_string(),
        None => message,
    }
}

/// GSM8K: `(final answer, reasoning)` from `reasoning\n#### 1,234`; `None` without `####`.
pub(crate) fn after_hashes(raw: &str) -> Option<(String, String)> {
    let cut = raw.rfind("####")?;
    let answer = raw[cut + 4..].trim();
    let numeric = answer
        .strip_prefix('-')
        .unwrap_or(answer)
        .chars()
        .all(|c| c.is_ascii_digit() || c == ',' || c == '.');
    let answer = if numeric && answer.contains(',') {
        answer.replace(',', "")
    } else {
        answer.to_string()
    };
    Some((
        answer,
        strip_calculator_notes(&raw[..cut]).trim().to_string(),
    ))
}

/// Removes GSM8K's calculator annotations `<<48/2=24>>`.
fn strip_calculator_notes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<<") {
        match rest[start..].find(">>") {
            Some(end) => {
                out.push_str(&rest[..start]);
                rest = &rest[start + end + 2..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// AMC23: `27.0` → `27`; anything that is not a whole number written with a point is kept.
pub(crate) fn integer_float(raw: &str) -> String {
    let text = raw.trim();
    if text.contains('.') {
        if let Ok(value) = text.parse::<f64>() {
            if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
                return format!("{}", value as i64);
            }
        }
    }
    text.to_string()
}

/// LiveMathBench: `$\frac{1}{2}$` → `\frac{1}{2}`. Only an answer wholly wrapped in `$…$` or
/// `$$…$$` changes; then any stray unescaped `$` inside goes too (the answer is all math).
pub(crate) fn strip_dollars(raw: &str) -> String {
    let text = raw.trim();
    let inner = if text.len() >= 4 && text.starts_with("$$") && text.ends_with("$$") {
        &text[2..text.len() - 2]
    } else if text.len() >= 2
        && text.starts_with('$')
        && text.ends_with('$')
        && !text.ends_with("\\$")
    {
        &text[1..text.len() - 1]
    } else {
        return text.to_string();
    };
    let mut out = String::with_capacity(inner.len());
    let mut previous = None;
    for c in inner.chars() {
        if c != '$' || previous == Some('\\') {
            out.push(c);
        }
        previous = Some(c);
    }
    out.trim().to_string()
}
