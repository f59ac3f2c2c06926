//! Errors raised while locating, reading and checking datasets; each names the file and 1-based line.

use std::path::PathBuf;

/// A problem with a dataset that the user can fix: every variant says where it is.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The name is neither a registered dataset nor a path to a `.jsonl` file.
    #[error("unknown dataset `{name}`{}; known datasets: {known}", suggestion_text(.suggestion))]
    UnknownDataset {
        name: String,
        suggestion: Option<String>,
        known: String,
    },
    /// The file could not be read at all.
    #[error("{}: cannot read: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file holds no problem (only blank lines, or nothing).
    #[error("{}: the file is empty (no JSON line)", .path.display())]
    EmptyFile { path: PathBuf },
    /// A line is not valid UTF-8.
    #[error("{}:{line}: invalid UTF-8 (at byte {byte} of the line)", .path.display())]
    InvalidUtf8 {
        path: PathBuf,
        line: usize,
        byte: usize,
    },
    /// A line is not valid JSON.
    #[error("{}:{line}: invalid JSON: {message}", .path.display())]
    InvalidJson {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A line is valid JSON but not an object.
    #[error("{}:{line}: expected a JSON object, found {found}", .path.display())]
    NotAnObject {
        path: PathBuf,
        line: usize,
        found: &'static str,
    },
    /// A required field is absent (or `null`).
    #[error("{}:{line}: missing field `{field}`", .path.display())]
    MissingField {
        path: PathBuf,
        line: usize,
        field: String,
    },
    /// A field holds a value that cannot be read as text (an object, or a list of non-strings).
    #[error("{}:{line}: field `{field}` must be a string, number or list of strings, found {found}", .path.display())]
    InvalidField {
        path: PathBuf,
        line: usize,
        field: String,
        found: &'static str,
    },
    /// The answer is empty (after post-processing).
    #[error("{}:{line}: empty answer in field `{field}`", .path.display())]
    EmptyAnswer {
        path: PathBuf,
        line: usize,
        field: String,
    },
    /// The question is empty.
    #[error("{}:{line}: empty question in field `{field}`", .path.display())]
    EmptyQuestion {
        path: PathBuf,
        line: usize,
        field: String,
    },
    /// The answer does not have the shape the dataset's post-processing expects.
    #[error("{}:{line}: malformed answer: {reason}", .path.display())]
    MalformedAnswer {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// Two problems share an id.
    #[error("{}:{line}: duplicate id `{id}` (first seen at {}:{first_line})", .path.display(), .first_path.display())]
    DuplicateId {
        path: PathBuf,
        line: usize,
        id: String,
        first_path: PathBuf,
        first_line: usize,
    },
    /// A few-shot source has fewer usable problems than asked for.
    #[error(
        "few-shot source `{source_name}` has {available} usable examples, {requested} requested"
    )]
    NotEnoughExamples {
        source_name: String,
        requested: usize,
        available: usize,
    },
}

fn suggestion_text(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(name) => format!(" (did you mean `{name}`?)"),
        None => String::new(),
    }
}
