//! `[api] batch = true`: drives the OpenAI Batch API for a model's missing units — upload,
//! create, poll, download — and records the output through the batch file import.

use crate::client::retry::Next;
use crate::client::{ApiError, ApiKey, ErrorClass};
use crate::config::ModelSettings;
use crate::plan::Plan;
use crate::rundir::{OpenRun, RunDir};
use crate::sampling::ModelEnd;
use crate::util::{printable, Notes, Shutdown};
use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// The poll interval when a model is driven without `batch` set (not reached via `drive_all`).
const DEFAULT_POLL: Duration = Duration::from_secs(30);

/// The most of a Batch API status or upload reply read into memory (output files stream to disk).
const MAX_REPLY: u64 = 1024 * 1024;

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
    notes: &'a Notes,
}

/// What the command gives a batch while it runs: how to stop it and where its poll lines go.
#[derive(Clone, Copy)]
pub struct Control<'a> {
    pub shutdown: &'a Shutdown,
    pub notes: &'a Notes,
}

/// How one model's batch ended, for the run to record.
pub struct Driven {
    pub end: ModelEnd,
    /// The batch still to poll (kept in the manifest), or None once it is imported or gone.
    pub batch_id: Option<String>,
}

/// How waiting for a batch ended.
enum Waited {
    Final(BatchView),
    /// The server no longer knows the batch (404 or 410): its units are to be sent anew.
    Gone(u16),
    /// The server's reply names another batch or unusable files: why, for the manifest.
    Unusable(String),
    Stopped,
}

/// Sends `m`'s missing units as one batch (or polls `batch_id` from an earlier run), waits for it
/// and imports its output into `run_dir`. `save_id` is called as soon as a new batch exists.
pub fn drive(
    plan: &Plan,
    m: &ModelSettings,
    ctx: (&RunDir, &str),
    key: Option<&ApiKey>,
    batch_id: Option<String>,
    save_id: &mut dyn FnMut(&str) -> Result<()>,
    ctl: Control,
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
        shutdown: ctl.shutdown,
        notes: ctl.notes,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let input = run_dir.batch_requests(&m.name);
    let mut over_budget = 0;
    let id = match batch_id {
        Some(id) => id,
        None => {
            let n = crate::sampling::batch_file::export_for(plan, run_dir, &input, Some(&m.name))?;
            over_budget = n.over_budget;
            if n.requests == 0 {
                return Ok(Driven {
                    end: budget_end(m, over_budget).unwrap_or(ModelEnd::Complete),
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
    let view = match rt.block_on(api.wait(&id))? {
        Waited::Final(view) => view,
        Waited::Stopped => return Ok(interrupted(Some(id))),
        Waited::Gone(status) => return Ok(gone(&id, status)),
        Waited::Unusable(why) => {
            return Ok(Driven {
                end: ModelEnd::Failed(format!(
                    "batch {}: {why}; nothing was downloaded, its units go into a new batch on --resume",
                    printable(&id)
                )),
                batch_id: None,
            })
        }
    };
    let output = run_dir.batch_download(&m.name, "output");
    let cap = download_cap(m, &input)?;
    match rt.block_on(api.download(&view, &output, cap))? {
        Downloaded::Stopped => return Ok(interrupted(Some(id))),
        Downloaded::TooLarge => {
            let msg = format!(
                "batch {} sent output files larger than {cap} bytes (the request lines' reply limit); nothing was recorded, its units go into a new batch on --resume",
                printable(&id)
            );
            return Ok(Driven {
                end: ModelEnd::Failed(msg),
                batch_id: None,
            });
        }
        Downloaded::Written => {}
    }
    let end = record_output(plan, m, (run_dir, run_id), &output, key, &view, ctl.notes)?;
    Ok(Driven {
        end: budget_end(m, over_budget).unwrap_or(end),
        batch_id: None,
    })
}

/// The model's end when the budget held requests back from the batch.
fn budget_end(m: &ModelSettings, over_budget: u64) -> Option<ModelEnd> {
    (over_budget > 0).then(|| {
        ModelEnd::Failed(format!(
            "model {} ({}) stopped: budget reached: {over_budget} requests were not sent because their worst case would pass max_cost; raise it and resume",
            m.name, m.model_id
        ))
    })
}

/// A batch the server has forgotten: said once, and dropped so `--resume` sends its units anew.
fn gone(id: &str, status: u16) -> Driven {
    Driven {
        end: ModelEnd::Failed(format!(
            "batch {} is no longer known to the server (HTTP {status}); its units were not recorded and go into a new batch on --resume",
            printable(id)
        )),
        batch_id: None,
    }
}

/// The most bytes a batch's output and error files may hold together: one reply at the model's
/// limit (plus a line's envelope) per request line, and as many error lines again.
fn download_cap(m: &ModelSettings, input: &Path) -> Result<u64> {
    let requests = match crate::util::open_regular(input) {
        Ok(f) => std::io::BufRead::lines(std::io::BufReader::new(f)).count() as u64,
        // An earlier run's request file is gone: its count is unknown, so allow the plan's units.
        Err(_) => u64::from(m.sampling.n) + 1,
    };
    let per_line = m
        .api
        .max_response_bytes
        .min(crate::client::MAX_RESPONSE_BYTES)
        + 64 * 1024;
    Ok(requests.max(1).saturating_mul(2).saturating_mul(per_line))
}

/// Imports a downloaded output file; says how the batch ended, naming what is still missing.
fn record_output(
    plan: &Plan,
    m: &ModelSettings,
    (run_dir, run_id): (&RunDir, &str),
    output: &Path,
    key: Option<&ApiKey>,
    view: &BatchView,
    notes: &Notes,
) -> Result<ModelEnd> {
    let keys: Vec<&ApiKey> = key.into_iter().collect();
    let (_, ends) =
        crate::sampling::batch_file::import(plan, run_dir, run_id, output, (&keys, notes))?;
    let end = ends
        .into_iter()
        .find(|(n, _)| n == &m.name)
        .map_or(ModelEnd::Complete, |(_, e)| e);
    if view.status != "completed" {
        return Ok(ModelEnd::Failed(format!(
            "batch {} ended `{}`",
            printable(&view.id),
            printable(&view.status)
        )));
    }
    let done = crate::sampling::load_done(&run_dir.checkpoint(&m.name), &plan.id_index())?;
    let missing: u64 = crate::sampling::missing_work(plan.prepared.len(), &m.sampling, &done)
        .map(|w| w.slots.len() as u64)
        .sum();
    if missing > 0 {
        notes.say(&format!(
            "batch {} (model {}): completed, but its output answers no request for {missing} units; they stay missing and go into a new batch on --resume",
            printable(&view.id),
            printable(&m.name)
        ));
        return Ok(ModelEnd::Incomplete);
    }
    Ok(end)
}

fn interrupted(batch_id: Option<String>) -> Driven {
    Driven {
        end: ModelEnd::Interrupted,
        batch_id,
    }
}

/// How a download ended.
enum Downloaded {
    Written,
    TooLarge,
    Stopped,
}

impl Api<'_> {
    /// Uploads the request file and creates the batch; None when shut down first.
    async fn submit(&self, input: &Path) -> Result<Option<String>> {
        let bytes =
            // The Batch API takes files of at most 200 MB; ours is bounded by the data file limit.
            crate::util::read_bounded(input, crate::util::MAX_DATA_FILE)
                .with_context(|| format!("cannot read {}", input.display()))?;
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
            .text(|| {
                self.http
                    .post(format!("{}/v1/files", self.base))
                    .header(reqwest::header::CONTENT_TYPE, ct.clone())
                    .body(body.clone())
            })
            .await?;
        let Some(file) = file else { return Ok(None) };
        let file: serde_json::Value = parse(&file, "the file upload reply")?;
        let file_id = self.scrub(file["id"].as_str().unwrap_or_default().to_string());
        let file_id = safe_id(&file_id, "file id")?;
        let create = serde_json::json!({
            "input_file_id": file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        });
        let create = create.to_string();
        let Some(batch) = self
            .text(|| {
                self.http
                    .post(format!("{}/v1/batches", self.base))
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(create.clone())
            })
            .await?
        else {
            return Ok(None);
        };
        let view = self.scrub_view(parse(&batch, "the batch creation reply")?);
        Ok(Some(safe_id(&view.id, "batch id")?))
    }

    /// Polls until the batch reaches a final status, the server forgets it, or a shutdown.
    async fn wait(&self, id: &str) -> Result<Waited> {
        loop {
            let url = format!("{}/v1/batches/{id}", self.base);
            let text = match self.send(|| self.http.get(&url), &mut Text(self.key)).await {
                Ok(Some(text)) => text,
                Ok(None) => return Ok(Waited::Stopped),
                Err(e) if e.class == ErrorClass::NotFound => {
                    return Ok(Waited::Gone(e.status.unwrap_or(404)))
                }
                Err(e) => return Err(self.gave_up(&e)),
            };
            let view = self.scrub_view(parse(&text, "the batch status reply")?);
            if let Err(why) = check_view(&view, id) {
                return Ok(Waited::Unusable(why));
            }
            let c = view
                .request_counts
                .as_ref()
                .map_or((0, 0, 0), |c| (c.completed, c.failed, c.total));
            self.notes.say(&format!(
                "batch {} (model {}): {}, {}/{} done, {} failed",
                printable(id),
                printable(&self.model.name),
                printable(&view.status),
                c.0,
                c.2,
                c.1
            ));
            if matches!(
                view.status.as_str(),
                "completed" | "failed" | "expired" | "cancelled"
            ) {
                return Ok(Waited::Final(view));
            }
            tokio::select! {
                _ = tokio::time::sleep(self.poll_interval) => {}
                _ = self.shutdown.triggered() => return Ok(Waited::Stopped),
            }
        }
    }

    /// Streams the output and error files of a finished batch to `path` (through a temporary
    /// file, renamed when whole), each line redacted, `cap` bytes at most in all.
    async fn download(&self, view: &BatchView, path: &Path, cap: u64) -> Result<Downloaded> {
        let part = path.with_extension("jsonl.part");
        let mut sink = LineSink::create(&part, cap, self.key)?;
        for id in [&view.output_file_id, &view.error_file_id]
            .into_iter()
            .flatten()
        {
            let url = format!("{}/v1/files/{id}/content", self.base);
            let got = self.send(|| self.http.get(&url), &mut sink).await;
            match got {
                Ok(Some(())) => {}
                Ok(None) => return Ok(Downloaded::Stopped),
                Err(e) if e.class == ErrorClass::TooLarge => {
                    let _ = std::fs::remove_file(&part);
                    return Ok(Downloaded::TooLarge);
                }
                Err(e) => return Err(self.gave_up(&e)),
            }
            sink.end_file();
        }
        sink.finish(path)?;
        Ok(Downloaded::Written)
    }

    /// A small reply's text, redacted; None when shut down.
    async fn text(&self, req: impl Fn() -> reqwest::RequestBuilder) -> Result<Option<String>> {
        self.send(req, &mut Text(self.key))
            .await
            .map_err(|e| self.gave_up(&e))
    }

    /// One call under the model's retry policy, its body read by `read`; None when shut down,
    /// the last error when it gave up. Every server text is redacted before anything sees it.
    async fn send<R: ReadBody>(
        &self,
        req: impl Fn() -> reqwest::RequestBuilder,
        read: &mut R,
    ) -> Result<Option<R::Out>, ApiError> {
        let policy = self.model.api.retry_policy();
        let mut tries = policy.tries(self.shutdown);
        while tries.start().is_some() {
            let req = match self.key {
                Some(k) => k.authorize(req()),
                None => req(),
            };
            let err = match call(req, read).await {
                Ok(v) => return Ok(Some(v)),
                Err(e) => self.redacted(e),
            };
            if err.class == ErrorClass::TooLarge {
                return Err(err);
            }
            match tries.failed(err).await {
                Next::Retry => {}
                Next::Stopped => return Ok(None),
                Next::GaveUp { err, .. } => return Err(err),
            }
        }
        Ok(None)
    }

    /// The key out of a parsed text too: JSON can spell it with escapes the raw bytes hide.
    fn scrub(&self, s: String) -> String {
        self.key.map_or(s.clone(), |k| k.redact(&s))
    }

    fn scrub_view(&self, v: BatchView) -> BatchView {
        BatchView {
            id: self.scrub(v.id),
            status: self.scrub(v.status),
            output_file_id: v.output_file_id.map(|f| self.scrub(f)),
            error_file_id: v.error_file_id.map(|f| self.scrub(f)),
            request_counts: v.request_counts,
        }
    }

    fn redacted(&self, mut e: ApiError) -> ApiError {
        if let Some(k) = self.key {
            e.message = k.redact(&e.message);
        }
        e
    }

    fn gave_up(&self, err: &ApiError) -> anyhow::Error {
        anyhow::anyhow!(
            "Batch API ({}): {}",
            printable(&self.base),
            printable(&self.redacted(err.clone()).to_string())
        )
    }
}

/// How a reply body is read: whole into memory, or streamed to disk.
trait ReadBody {
    type Out;
    async fn read(&mut self, resp: reqwest::Response) -> Result<Self::Out, ApiError>;
}

/// A small reply, as text with the key redacted before it is parsed.
struct Text<'a>(Option<&'a ApiKey>);

impl ReadBody for Text<'_> {
    type Out = String;
    async fn read(&mut self, resp: reqwest::Response) -> Result<String, ApiError> {
        let text = read_text(resp).await?;
        Ok(self.0.map_or(text.clone(), |k| k.redact(&text)))
    }
}

impl ReadBody for LineSink<'_> {
    type Out = ();
    async fn read(&mut self, resp: reqwest::Response) -> Result<(), ApiError> {
        self.fill(resp).await
    }
}

/// A reply body at most [`MAX_REPLY`] bytes, as text.
async fn read_text(mut resp: reqwest::Response) -> Result<String, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(body_error)? {
        if (body.len() + chunk.len()) as u64 > MAX_REPLY {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

fn body_error(e: reqwest::Error) -> ApiError {
    ApiError {
        class: ErrorClass::Connection,
        status: None,
        message: format!("reply body failed: {e}"),
        retry_after: None,
    }
}

fn too_large() -> ApiError {
    ApiError {
        class: ErrorClass::TooLarge,
        status: None,
        message: "reply too large".into(),
        retry_after: None,
    }
}

/// Output lines on their way to disk: each one redacted as soon as it is whole (a key never
/// spans lines), the total bounded.
struct LineSink<'a> {
    file: std::io::BufWriter<std::fs::File>,
    part: std::path::PathBuf,
    line: Vec<u8>,
    written: u64,
    cap: u64,
    key: Option<&'a ApiKey>,
}

impl<'a> LineSink<'a> {
    fn create(part: &Path, cap: u64, key: Option<&'a ApiKey>) -> Result<LineSink<'a>> {
        let file = std::fs::File::create(part)
            .with_context(|| format!("cannot write {}", part.display()))?;
        Ok(LineSink {
            file: std::io::BufWriter::new(file),
            part: part.to_path_buf(),
            line: Vec::new(),
            written: 0,
            cap,
            key,
        })
    }

    /// Streams one file's body into the sink.
    async fn fill(&mut self, mut resp: reqwest::Response) -> Result<(), ApiError> {
        // A retried download starts the file again.
        self.line.clear();
        while let Some(chunk) = resp.chunk().await.map_err(body_error)? {
            self.feed(&chunk)?;
        }
        Ok(())
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), ApiError> {
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            self.line.extend_from_slice(piece);
            if self.written + self.line.len() as u64 > self.cap {
                return Err(too_large());
            }
            if piece.ends_with(b"\n") {
                self.flush_line()?;
            }
        }
        Ok(())
    }

    fn flush_line(&mut self) -> Result<(), ApiError> {
        use std::io::Write;
        let text = String::from_utf8_lossy(&self.line);
        let text = match self.key {
            Some(k) => k.redact(&text),
            None => text.into_owned(),
        };
        self.line.clear();
        self.written += text.len() as u64;
        self.file.write_all(text.as_bytes()).map_err(|e| ApiError {
            class: ErrorClass::Connection,
            status: None,
            message: format!("disk error: {e}"),
            retry_after: None,
        })
    }

    /// Ends a file: its last line may lack a newline.
    fn end_file(&mut self) {
        if !self.line.is_empty() {
            self.line.push(b'\n');
            let _ = self.flush_line();
        }
    }

    fn finish(mut self, path: &Path) -> Result<()> {
        use std::io::Write;
        self.file
            .flush()
            .and_then(|()| self.file.get_ref().sync_all())
            .and_then(|()| std::fs::rename(&self.part, path))
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

/// Sends one request and reads its body with `read`; a transport error, 429 or 5xx is
/// retryable, 404 and 410 are [`ErrorClass::NotFound`], another status is not retryable.
async fn call<R: ReadBody>(req: reqwest::RequestBuilder, read: &mut R) -> Result<R::Out, ApiError> {
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
    let class = match status {
        200..=299 => return read.read(resp).await,
        429 => ErrorClass::RateLimited,
        401 | 403 => ErrorClass::Auth,
        404 | 410 => ErrorClass::NotFound,
        500..=599 => ErrorClass::Server,
        _ => ErrorClass::BadRequest,
    };
    let text = read_text(resp).await.unwrap_or_default();
    let short: String = text.chars().take(300).collect();
    Err(err(class, Some(status), short))
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).with_context(|| format!("{what} is not what the Batch API sends"))
}

/// A poll reply must name the batch asked for, and file ids that are safe in a URL path.
fn check_view(view: &BatchView, asked: &str) -> Result<(), String> {
    let id = safe_id(&view.id, "batch id").map_err(|e| e.to_string())?;
    if id != asked {
        return Err(format!(
            "the server answered its poll with batch {}",
            printable(&id)
        ));
    }
    for (file, what) in [
        (&view.output_file_id, "output_file_id"),
        (&view.error_file_id, "error_file_id"),
    ] {
        if let Some(f) = file {
            safe_id(f, what).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Drives a batch for every model with `batch = true`, keeping each batch id in the manifest
/// while it is pending; returns those models' ends.
pub fn drive_all(
    plan: &Plan,
    run: &mut OpenRun,
    keys: &std::collections::HashMap<String, Option<ApiKey>>,
    ctl: Control,
) -> Result<Vec<(String, ModelEnd)>> {
    let mut ends = Vec::new();
    for m in plan
        .settings
        .models
        .iter()
        .filter(|m| m.api.batch.is_some())
    {
        if ctl.shutdown.is_triggered() {
            ends.push((m.name.clone(), ModelEnd::Interrupted));
            continue;
        }
        let old = run
            .manifest
            .models
            .get(&m.name)
            .and_then(|e| e.batch_id.clone());
        let (dir, run_id) = (run.dir.clone(), run.manifest.run_id.clone());
        let set_id = |run: &mut OpenRun, id: Option<String>| -> Result<()> {
            if let Some(e) = run.manifest.models.get_mut(&m.name) {
                e.batch_id = id;
            }
            Ok(run.save()?)
        };
        let key = keys.get(&m.name).and_then(Option::as_ref);
        let driven = {
            let mut save = |id: &str| set_id(run, Some(id.to_string()));
            drive(plan, m, (&dir, &run_id), key, old, &mut save, ctl)?
        };
        set_id(run, driven.batch_id)?;
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
