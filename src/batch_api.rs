//! `[api] batch = true`: drives the OpenAI Batch API for a model's missing units — upload,
//! create, poll, download — and records the output through the batch file import.

use crate::client::retry::Next;
use crate::client::{ApiError, ApiKey, ErrorClass};
use crate::config::ModelSettings;
use crate::plan::Plan;
use crate::runner::ModelEnd;
use crate::util::{hex, printable, Shutdown};
use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// The poll interval when a model is driven without `batch` set (not reached via `drive_all`).
const DEFAULT_POLL: Duration = Duration::from_secs(30);

/// The most of a Batch API reply read into memory (output files included).
const MAX_REPLY: usize = 256 * 1024 * 1024;

/// A batch as `GET /v1/batches/{id}` reports it; other fields are ignored.
#[derive(Debug, Deserialize)]
struct BatchView {
    id: String,
    status: String,
    #[serde(default)]
    output_file_id: Option<String>,
    #[serde(default)]
    error_file_id: Option<String>,
    #[serde(default)]
    request_counts: Option<Counts>,
}

#[derive(Debug, Default, Deserialize)]
struct Counts {
    #[serde(default)]
    total: u64,
    #[serde(default)]
    completed: u64,
    #[serde(default)]
    failed: u64,
}

/// The Batch API of one model's endpoint.
struct Api<'a> {
    http: reqwest::Client,
    base: String,
    key: Option<&'a ApiKey>,
    model: &'a ModelSettings,
    poll_interval: Duration,
    shutdown: &'a Shutdown,
}

/// How one model's batch ended, for the run to record.
pub struct Driven {
    pub end: ModelEnd,
    /// The batch still to poll (kept in the manifest), or None once it is imported or gone.
    pub batch_id: Option<String>,
}

/// Sends `m`'s missing units as one batch (or polls `batch_id` from an earlier run), waits for it
/// and imports its output into `run_dir`. `save_id` is called as soon as a new batch exists.
pub fn drive(
    plan: &Plan,
    m: &ModelSettings,
    ctx: (&Path, &str),
    key: Option<&ApiKey>,
    batch_id: Option<String>,
    save_id: &mut dyn FnMut(&str) -> Result<()>,
    shutdown: &Shutdown,
) -> Result<Driven> {
    let (run_dir, run_id) = ctx;
    let http = reqwest::Client::builder()
        .timeout(m.api.timeout)
        .build()
        .context("cannot build HTTP client")?;
    let base = m.api.base_url.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base).to_string();
    let api = Api {
        http,
        base,
        key,
        model: m,
        poll_interval: m.api.batch.unwrap_or(DEFAULT_POLL),
        shutdown,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let stem = run_dir.join(format!("batch-{}", hex(m.name.as_bytes())));
    let id = match batch_id {
        Some(id) => id,
        None => {
            let input = stem.with_extension("requests.jsonl");
            let n = crate::batch::export_for(plan, run_dir, &input, Some(&m.name))?;
            if n.requests == 0 {
                return Ok(Driven {
                    end: ModelEnd::Complete,
                    batch_id: None,
                });
            }
            let Some(id) = rt.block_on(api.submit(&input))? else {
                return Ok(interrupted(None));
            };
            save_id(&id)?;
            id
        }
    };
    let Some(view) = rt.block_on(api.wait(&id))? else {
        return Ok(interrupted(Some(id)));
    };
    let Some(text) = rt.block_on(api.outputs(&view))? else {
        return Ok(interrupted(Some(id)));
    };
    let output = stem.with_extension("output.jsonl");
    crate::util::write_atomic(&output, text.as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))?;
    let (_, ends) = crate::batch::import(plan, run_dir, run_id, &output)?;
    let end = ends
        .into_iter()
        .find(|(n, _)| n == &m.name)
        .map_or(ModelEnd::Complete, |(_, e)| e);
    let end = if view.status == "completed" {
        end
    } else {
        ModelEnd::Failed(format!(
            "batch {} ended `{}`",
            printable(&view.id),
            printable(&view.status)
        ))
    };
    Ok(Driven {
        end,
        batch_id: None,
    })
}

fn interrupted(batch_id: Option<String>) -> Driven {
    Driven {
        end: ModelEnd::Interrupted,
        batch_id,
    }
}

impl Api<'_> {
    /// Uploads the request file and creates the batch; None when shut down first.
    async fn submit(&self, input: &Path) -> Result<Option<String>> {
        let bytes =
            std::fs::read(input).with_context(|| format!("cannot read {}", input.display()))?;
        // The boundary must not occur in the file.
        let boundary = (0u64..)
            .map(|i| format!("gpassk-batch-{i:x}"))
            .find(|b| !bytes.windows(b.len()).any(|w| w == b.as_bytes()))
            .unwrap_or_default();
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"requests.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let ct = format!("multipart/form-data; boundary={boundary}");
        let file = self
            .send(|| {
                self.http
                    .post(format!("{}/v1/files", self.base))
                    .header(reqwest::header::CONTENT_TYPE, ct.clone())
                    .body(body.clone())
            })
            .await?;
        let Some(file) = file else { return Ok(None) };
        let file: serde_json::Value = parse(&file, "the file upload reply")?;
        let file_id = safe_id(file["id"].as_str().unwrap_or_default(), "file id")?;
        let create = serde_json::json!({
            "input_file_id": file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        });
        let create = create.to_string();
        let Some(batch) = self
            .send(|| {
                self.http
                    .post(format!("{}/v1/batches", self.base))
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(create.clone())
            })
            .await?
        else {
            return Ok(None);
        };
        let view: BatchView = parse(&batch, "the batch creation reply")?;
        Ok(Some(safe_id(&view.id, "batch id")?))
    }

    /// Polls until the batch reaches a final status; None when shut down first.
    async fn wait(&self, id: &str) -> Result<Option<BatchView>> {
        loop {
            let url = format!("{}/v1/batches/{id}", self.base);
            let Some(text) = self.send(|| self.http.get(&url)).await? else {
                return Ok(None);
            };
            let view: BatchView = parse(&text, "the batch status reply")?;
            let c = view
                .request_counts
                .as_ref()
                .map_or((0, 0, 0), |c| (c.completed, c.failed, c.total));
            eprintln!(
                "batch {} (model {}): {}, {}/{} done, {} failed",
                printable(id),
                printable(&self.model.name),
                printable(&view.status),
                c.0,
                c.2,
                c.1
            );
            if matches!(
                view.status.as_str(),
                "completed" | "failed" | "expired" | "cancelled"
            ) {
                return Ok(Some(view));
            }
            tokio::select! {
                _ = tokio::time::sleep(self.poll_interval) => {}
                _ = self.shutdown.triggered() => return Ok(None),
            }
        }
    }

    /// The output and error files of a finished batch, joined; None when shut down first.
    async fn outputs(&self, view: &BatchView) -> Result<Option<String>> {
        let mut text = String::new();
        for id in [&view.output_file_id, &view.error_file_id]
            .into_iter()
            .flatten()
        {
            let url = format!("{}/v1/files/{id}/content", self.base);
            let Some(part) = self.send(|| self.http.get(&url)).await? else {
                return Ok(None);
            };
            text.push_str(&part);
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
        }
        Ok(Some(text))
    }

    /// One call under the model's retry policy; None when shut down.
    async fn send(&self, req: impl Fn() -> reqwest::RequestBuilder) -> Result<Option<String>> {
        let policy = self.model.api.retry_policy();
        let mut tries = policy.tries(self.shutdown);
        while tries.start().is_some() {
            let req = match self.key {
                Some(k) => k.authorize(req()),
                None => req(),
            };
            let err = match call(req).await {
                Ok(text) => return Ok(Some(text)),
                Err(e) => e,
            };
            match tries.failed(err).await {
                Next::Retry => {}
                Next::Stopped => return Ok(None),
                Next::GaveUp { err, .. } => {
                    let msg = self
                        .key
                        .map_or(err.to_string(), |k| k.redact(&err.to_string()));
                    anyhow::bail!("Batch API ({}): {}", printable(&self.base), printable(&msg));
                }
            }
        }
        Ok(None)
    }
}

/// Sends one request; a transport error, 429 or 5xx is retryable, another status is not.
async fn call(req: reqwest::RequestBuilder) -> Result<String, ApiError> {
    let err = |class, status, message: String| ApiError {
        class,
        status,
        message,
        retry_after: None,
    };
    let resp = req.send().await.map_err(|e| {
        let class = if e.is_timeout() {
            ErrorClass::Timeout
        } else {
            ErrorClass::Connection
        };
        err(class, None, e.to_string())
    })?;
    let status = resp.status().as_u16();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| err(ErrorClass::Connection, Some(status), e.to_string()))?;
    if bytes.len() > MAX_REPLY {
        return Err(err(
            ErrorClass::TooLarge,
            Some(status),
            "reply too large".into(),
        ));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let class = match status {
        200..=299 => return Ok(text),
        429 => ErrorClass::RateLimited,
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::NotFound,
        500..=599 => ErrorClass::Server,
        _ => ErrorClass::BadRequest,
    };
    let short: String = text.chars().take(300).collect();
    Err(err(class, Some(status), short))
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).with_context(|| format!("{what} is not what the Batch API sends"))
}

/// Drives a batch for every model with `batch = true`, keeping each batch id in the manifest
/// while it is pending; returns those models' ends.
pub fn drive_all(
    plan: &Plan,
    run_dir: &Path,
    manifest: &mut crate::manifest::Manifest,
    keys: &std::collections::HashMap<String, Option<ApiKey>>,
    shutdown: &Shutdown,
) -> Result<Vec<(String, ModelEnd)>> {
    let mut ends = Vec::new();
    for m in plan
        .settings
        .models
        .iter()
        .filter(|m| m.api.batch.is_some())
    {
        if shutdown.is_triggered() {
            ends.push((m.name.clone(), ModelEnd::Interrupted));
            continue;
        }
        let old = manifest
            .models
            .get(&m.name)
            .and_then(|e| e.batch_id.clone());
        let run_id = manifest.run_id.clone();
        let set_id = |manifest: &mut crate::manifest::Manifest, id: Option<String>| {
            if let Some(e) = manifest.models.get_mut(&m.name) {
                e.batch_id = id;
            }
            manifest
                .write(run_dir)
                .with_context(|| format!("cannot write the manifest in {}", run_dir.display()))
        };
        let key = keys.get(&m.name).and_then(Option::as_ref);
        let driven = {
            let mut save = |id: &str| set_id(manifest, Some(id.to_string()));
            drive(plan, m, (run_dir, &run_id), key, old, &mut save, shutdown)?
        };
        set_id(manifest, driven.batch_id)?;
        ends.push((m.name.clone(), driven.end));
    }
    Ok(ends)
}

/// An id the server sent, checked before it goes into a URL path or the manifest.
fn safe_id(id: &str, what: &str) -> Result<String> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    anyhow::ensure!(
        ok,
        "the Batch API sent an unusable {what}: {:?}",
        printable(&id.chars().take(80).collect::<String>())
    );
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_ids_that_could_change_the_url_are_refused() {
        assert_eq!(safe_id("batch_abc-12", "batch id").unwrap(), "batch_abc-12");
        for bad in ["", "../files", "a/b", "x?y", "a b", &"x".repeat(201)] {
            let e = safe_id(bad, "batch id").unwrap_err().to_string();
            assert!(e.contains("unusable batch id"), "{e}");
        }
    }
}
