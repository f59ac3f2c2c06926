//! The fake Batch API: `/v1/files` (multipart upload, content download) and `/v1/batches`
//! (create, get). A batch runs its input lines through the normal responder once it is done.

use crate::{Recorded, Shared};
use serde_json::{json, Value};

/// How a batch ends once it has been polled [`BatchPlan::polls`] times, and the faults it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlan {
    /// Polls of a batch answered `in_progress` before the final status.
    pub polls: u32,
    /// Final status: `completed`, `failed`, `expired` or `cancelled`.
    pub end: String,
    /// Polls answered at all: later ones get 404, as for a batch the server has forgotten.
    pub gone_after: Option<u32>,
    /// The output file keeps only its first lines (a completed batch that lost some).
    pub keep_lines: Option<usize>,
    /// The first input lines fail: they go to an error file with this message.
    pub error_lines: Option<(usize, String)>,
    /// Poll replies carry this `id` instead of the batch's own.
    pub reported_id: Option<String>,
    /// Poll replies of a completed batch carry this `output_file_id`.
    pub reported_output_file_id: Option<String>,
}

impl Default for BatchPlan {
    fn default() -> Self {
        BatchPlan {
            polls: 1,
            end: "completed".to_string(),
            gone_after: None,
            keep_lines: None,
            error_lines: None,
            reported_id: None,
            reported_output_file_id: None,
        }
    }
}

/// Uploaded and generated files plus batches, by id.
#[derive(Default)]
pub(crate) struct Store {
    files: Vec<Vec<u8>>,
    batches: Vec<Batch>,
}

struct Batch {
    input_file_id: String,
    polls: u32,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    total: usize,
}

/// Why a batch request was refused: (status, message).
type Refusal = (u16, String);

impl Store {
    fn add_file(&mut self, bytes: Vec<u8>) -> String {
        self.files.push(bytes);
        format!("file-{}", self.files.len() - 1)
    }

    pub(crate) fn file(&self, id: &str) -> Option<&[u8]> {
        let i: usize = id.strip_prefix("file-")?.parse().ok()?;
        self.files.get(i).map(Vec::as_slice)
    }

    fn batch_index(&self, id: &str) -> Option<usize> {
        let i: usize = id.strip_prefix("batch_")?.parse().ok()?;
        (i < self.batches.len()).then_some(i)
    }
}

/// `POST /v1/files`: the `file` part of a multipart body with `purpose=batch`.
pub(crate) fn upload(
    shared: &Shared,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, Refusal> {
    let boundary = content_type
        .and_then(|ct| {
            ct.split(';')
                .find_map(|p| p.trim().strip_prefix("boundary="))
        })
        .map(|b| b.trim_matches('"').to_string())
        .ok_or((400, "expected a multipart/form-data body".to_string()))?;
    let parts = multipart(body, &boundary);
    let purpose = parts
        .iter()
        .find(|(n, _)| n == "purpose")
        .map(|(_, v)| v.as_slice());
    if purpose != Some(b"batch".as_slice()) {
        return Err((400, "purpose must be `batch`".to_string()));
    }
    let (_, file) = parts
        .into_iter()
        .find(|(n, _)| n == "file")
        .ok_or((400, "missing `file` part".to_string()))?;
    let bytes = file.len();
    let id = shared.store().add_file(file);
    Ok(
        json!({"id": id, "object": "file", "bytes": bytes, "purpose": "batch", "filename": "input.jsonl"}),
    )
}

/// Named parts of a multipart body; malformed parts are skipped.
fn multipart(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delim = format!("--{boundary}");
    split(body, delim.as_bytes())
        .into_iter()
        .skip(1)
        .filter_map(|part| {
            let part = part.strip_prefix(b"\r\n")?;
            let end = part.windows(4).position(|w| w == b"\r\n\r\n")?;
            let head = String::from_utf8_lossy(&part[..end]);
            let name = head.split(';').find_map(|p| {
                p.trim()
                    .strip_prefix("name=")
                    .map(|n| n.trim_matches('"').to_string())
            })?;
            let data = &part[end + 4..];
            Some((name, data.strip_suffix(b"\r\n").unwrap_or(data).to_vec()))
        })
        .collect()
}

fn split<'a>(hay: &'a [u8], needle: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            out.push(&hay[start..i]);
            i += needle.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&hay[start..]);
    out
}

/// `POST /v1/batches`.
pub(crate) fn create(shared: &Shared, body: &Value) -> Result<Value, Refusal> {
    let input = body
        .get("input_file_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if body.get("endpoint").and_then(Value::as_str) != Some("/v1/chat/completions") {
        return Err((400, "endpoint must be /v1/chat/completions".to_string()));
    }
    let mut store = shared.store();
    let total = match store.file(input) {
        Some(bytes) => bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        None => return Err((404, format!("no file `{input}`"))),
    };
    store.batches.push(Batch {
        input_file_id: input.to_string(),
        polls: 0,
        output_file_id: None,
        error_file_id: None,
        total,
    });
    let i = store.batches.len() - 1;
    Ok(view(i, &store.batches[i], "validating", plan_of(shared)))
}

/// `GET /v1/batches/{id}`: counts the poll; the first poll past the plan runs the batch.
/// The store stays locked throughout, so concurrent polls never answer a batch twice.
pub(crate) fn get(shared: &Shared, id: &str) -> Result<Value, Refusal> {
    let plan = &shared.batch_plan;
    let mut store = shared.store();
    let i = store
        .batch_index(id)
        .ok_or((404, format!("no batch `{id}`")))?;
    store.batches[i].polls += 1;
    if plan.gone_after.is_some_and(|n| store.batches[i].polls > n) {
        return Err((404, format!("No batch found with id '{id}'.")));
    }
    if store.batches[i].polls <= plan.polls {
        return Ok(view(i, &store.batches[i], "in_progress", plan));
    }
    if plan.end == "completed" && store.batches[i].output_file_id.is_none() {
        let input = store.batches[i].input_file_id.clone();
        let lines = store.file(&input).map(<[u8]>::to_vec).unwrap_or_default();
        let (out, errors) = run_lines(shared, &lines);
        let out = store.add_file(out);
        store.batches[i].output_file_id = Some(out);
        if !errors.is_empty() {
            store.batches[i].error_file_id = Some(store.add_file(errors));
        }
    }
    Ok(view(i, &store.batches[i], &plan.end, plan))
}

fn plan_of(shared: &Shared) -> &BatchPlan {
    &shared.batch_plan
}

/// Answers every input line with the responder, in OpenAI's batch output format: the output
/// file, and the error file of the lines the plan fails.
fn run_lines(shared: &Shared, input: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let plan = &shared.batch_plan;
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    for (k, line) in input
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let Ok(req) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let Some((_, message)) = plan.error_lines.as_ref().filter(|(n, _)| k < *n) {
            let row = json!({
                "id": format!("batch_req_{k}"),
                "custom_id": req.get("custom_id"),
                "response": null,
                "error": {"code": "invalid_api_key", "message": message},
            });
            errors.extend_from_slice(row.to_string().as_bytes());
            errors.push(b'\n');
            continue;
        }
        if plan.keep_lines.is_some_and(|n| k >= n) {
            continue;
        }
        let body = req.get("body").cloned().unwrap_or(Value::Null);
        let rec: std::sync::Arc<Recorded> = shared.record("/v1/chat/completions", None, body);
        let reply = (shared.responder)(&rec);
        let row = json!({
            "id": format!("batch_req_{k}"),
            "custom_id": req.get("custom_id"),
            "response": {"status_code": 200, "request_id": format!("req_{k}"), "body": crate::completion::render(&rec, &reply)},
            "error": null,
        });
        out.extend_from_slice(row.to_string().as_bytes());
        out.push(b'\n');
    }
    (out, errors)
}

fn view(i: usize, b: &Batch, status: &str, plan: &BatchPlan) -> Value {
    let done = if status == "completed" { b.total } else { 0 };
    let output = match (&b.output_file_id, &plan.reported_output_file_id) {
        (Some(_), Some(other)) => Some(other.clone()),
        (own, _) => own.clone(),
    };
    json!({
        "id": plan.reported_id.clone().unwrap_or_else(|| format!("batch_{i}")),
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "input_file_id": b.input_file_id,
        "completion_window": "24h",
        "status": status,
        "output_file_id": output,
        "error_file_id": b.error_file_id,
        "request_counts": {"total": b.total, "completed": done, "failed": 0},
    })
}
