//! Fake OpenAI-compatible HTTP/1.1 server for integration tests and throughput benchmarks.
//!
//! It records every chat request, answers through a pluggable responder and injects faults
//! chosen by a fault policy. Hand-rolled on tokio (no hyper) to stay small and fast:
//! keep-alive, `Content-Length` bodies, one request at a time per connection. Malformed
//! input gets a 400, never a panic.
//!
//! A plain `#[test]` uses [`FakeServer::start_blocking`], which runs the server on its own
//! background runtime, so the test thread is free to run the `gpassk` binary against
//! [`FakeServer::base_url`] and then inspect [`FakeServer::requests`].

use serde_json::{json, Value};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// Content of every choice from [`default_responder`].
pub const DEFAULT_ANSWER: &str = "The answer is \\boxed{42}.";

/// Request heads larger than this are refused: no real client sends them.
const MAX_HEAD: usize = 64 * 1024;
/// Request bodies larger than this are refused so hostile input cannot exhaust memory.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// Upper bound on `n` honoured by the default responder, for the same reason.
const MAX_N: u64 = 4096;

/// One chat request as the server saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// Global sequence number over all chat requests, from 0.
    pub seq: u64,
    /// How many times an identical body was seen before this one, from 0.
    pub attempt: u32,
    /// Request path without the query string.
    pub path: String,
    /// The `Authorization` header value, if any.
    pub authorization: Option<String>,
    /// The parsed JSON body.
    pub body: Value,
}

impl Recorded {
    /// The request's `model` field.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// The request's `n` field, 1 when absent or not a number.
    pub fn n(&self) -> u64 {
        self.body.get("n").and_then(Value::as_u64).unwrap_or(1)
    }

    /// Text content of the last `user` message, if any.
    pub fn user_text(&self) -> Option<&str> {
        self.body
            .get("messages")?
            .as_array()?
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?
            .get("content")?
            .as_str()
    }
}

/// One choice of a normal reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceReply {
    pub content: String,
    pub reasoning_content: Option<String>,
    pub finish_reason: String,
}

impl ChoiceReply {
    /// A choice with `finish_reason: "stop"` and no reasoning.
    pub fn stop(content: impl Into<String>) -> Self {
        ChoiceReply {
            content: content.into(),
            reasoning_content: None,
            finish_reason: "stop".to_string(),
        }
    }
}

/// The normal reply to a chat request, decided by the responder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    pub choices: Vec<ChoiceReply>,
    /// Model named in the response; `None` echoes the request's model.
    pub served_model: Option<String>,
    pub system_fingerprint: Option<String>,
    /// (prompt, completion) tokens; `None` estimates them from text lengths.
    pub usage: Option<(u64, u64)>,
}

impl Reply {
    /// A reply with these choices and defaults for everything else.
    pub fn with_choices(choices: Vec<ChoiceReply>) -> Self {
        Reply {
            choices,
            ..Reply::default()
        }
    }

    /// `n` identical `stop` choices with this content.
    pub fn repeated(n: u64, content: &str) -> Self {
        Reply::with_choices((0..n).map(|_| ChoiceReply::stop(content)).collect())
    }
}

/// A fault injected instead of (or before) the normal reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status and body; `retry_after` becomes the `Retry-After` header
    /// (seconds or an HTTP date).
    Status {
        code: u16,
        body: String,
        retry_after: Option<String>,
    },
    /// Sleep, then answer normally: lets client timeouts fire.
    Hang(Duration),
    /// Close the connection without any response.
    Drop,
    /// 200 with a body that is not JSON.
    MalformedJson,
    /// 200 with `"choices": []`.
    EmptyChoices,
}

impl Fault {
    fn openai_error(code: u16, message: &str, kind: &str, err_code: Option<&str>) -> Fault {
        let body =
            json!({"error": {"message": message, "type": kind, "param": null, "code": err_code}});
        Fault::Status {
            code,
            body: body.to_string(),
            retry_after: None,
        }
    }

    /// 401 with OpenAI's invalid-key body.
    pub fn unauthorized() -> Fault {
        Fault::openai_error(
            401,
            "Incorrect API key provided",
            "invalid_request_error",
            Some("invalid_api_key"),
        )
    }

    /// 404 with OpenAI's `model_not_found` body.
    pub fn unknown_model(name: &str) -> Fault {
        let message = format!("The model `{name}` does not exist or you do not have access to it.");
        Fault::openai_error(
            404,
            &message,
            "invalid_request_error",
            Some("model_not_found"),
        )
    }

    /// 429 with `Retry-After: <retry_after_secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Fault {
        match Fault::openai_error(
            429,
            "Rate limit reached for requests",
            "requests",
            Some("rate_limit_exceeded"),
        ) {
            Fault::Status { code, body, .. } => Fault::Status {
                code,
                body,
                retry_after: Some(retry_after_secs.to_string()),
            },
            other => other,
        }
    }

    /// 500 with OpenAI's generic server-error body.
    pub fn server_error() -> Fault {
        Fault::openai_error(
            500,
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )
    }
}

/// Decides the normal reply to a chat request.
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;
/// Decides whether a chat request gets a fault; runs before the responder.
pub type FaultPolicy = Arc<dyn Fn(&Recorded) -> Option<Fault> + Send + Sync>;

/// Answers `n` choices of [`DEFAULT_ANSWER`] with `finish_reason: "stop"`.
pub fn default_responder() -> Responder {
    Arc::new(|r: &Recorded| Reply::repeated(r.n().clamp(1, MAX_N), DEFAULT_ANSWER))
}

/// A fault policy that injects `make()` on the first `k` attempts of every distinct body
/// and lets later attempts through: the usual shape of a retry test.
pub fn fail_first_attempts(
    k: u32,
    make: impl Fn() -> Fault + Send + Sync + 'static,
) -> impl Fn(&Recorded) -> Option<Fault> + Send + Sync + 'static {
    move |r: &Recorded| (r.attempt < k).then(&make)
}

/// Configures a [`FakeServer`] before it starts.
pub struct FakeServerBuilder {
    responder: Responder,
    faults: FaultPolicy,
    models: Vec<String>,
    keep_requests: bool,
}

impl FakeServerBuilder {
    /// Replaces the default responder.
    pub fn responder(mut self, f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        self.responder = Arc::new(f);
        self
    }

    /// Sets the fault policy (default: never fault).
    pub fn faults(
        mut self,
        f: impl Fn(&Recorded) -> Option<Fault> + Send + Sync + 'static,
    ) -> Self {
        self.faults = Arc::new(f);
        self
    }

    /// Model ids listed by `GET /v1/models` (default `["fake-model"]`).
    pub fn models(mut self, models: Vec<String>) -> Self {
        self.models = models;
        self
    }

    /// Whether to keep every [`Recorded`] for [`FakeServer::requests`] (default true).
    /// Benchmarks turn it off so memory stays flat; counts and attempts still work.
    pub fn keep_requests(mut self, keep: bool) -> Self {
        self.keep_requests = keep;
        self
    }

    /// Binds `127.0.0.1:0` and starts serving on the current tokio runtime.
    pub async fn try_start(self) -> std::io::Result<FakeServer> {
        self.try_start_on(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
    }

    /// Like [`FakeServerBuilder::try_start`] on a given address (`gpassk serve-fake --port`).
    pub async fn try_start_on(self, addr: SocketAddr) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let models = json!({
            "object": "list",
            "data": self.models.iter().map(|id| json!({
                "id": id, "object": "model", "created": 0, "owned_by": "gpassk-fake"
            })).collect::<Vec<_>>(),
        })
        .to_string();
        let shared = Arc::new(Shared {
            log: Mutex::new(Log::default()),
            responder: self.responder,
            faults: self.faults,
            models_body: models,
            keep_requests: self.keep_requests,
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(FakeServer { addr, shared, task })
    }

    /// [`FakeServer::start_blocking`] for this builder.
    pub fn start_blocking(self) -> BlockingFakeServer {
        FakeServer::start_blocking(self)
    }

    /// Like [`FakeServerBuilder::try_start`]; panics if loopback cannot be bound (test setup).
    pub async fn start(self) -> FakeServer {
        self.try_start()
            .await
            .expect("fake server: bind 127.0.0.1:0")
    }
}

/// A running fake server; dropping it stops the server and closes its connections.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeServer {
    /// A builder with the default responder and no faults.
    pub fn builder() -> FakeServerBuilder {
        FakeServerBuilder {
            responder: default_responder(),
            faults: Arc::new(|_: &Recorded| None),
            models: vec!["fake-model".to_string()],
            keep_requests: true,
        }
    }

    /// Starts `builder` on its own background runtime, for plain `#[test]`s (e.g. ones that
    /// run the `gpassk` binary as a subprocess). The server lives as long as the guard.
    pub fn start_blocking(builder: FakeServerBuilder) -> BlockingFakeServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fake-server")
            .enable_all()
            .build()
            .expect("fake server: build tokio runtime");
        let server = runtime.block_on(builder.start());
        BlockingFakeServer { server, runtime }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash or `/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every chat request recorded so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .log()
            .requests
            .iter()
            .map(|r| Recorded::clone(r))
            .collect()
    }

    /// Number of chat requests received (including faulted ones).
    pub fn request_count(&self) -> usize {
        self.shared.log().seq as usize
    }

    /// Stops accepting and closes every open connection (also done on drop).
    pub fn shutdown(&self) {
        self.task.abort();
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A [`FakeServer`] that owns the runtime it runs on; derefs to the server.
/// Owning both (instead of returning a tuple) means `let (s, _) = ...` cannot kill it early.
pub struct BlockingFakeServer {
    // Field order matters: the server is dropped before its runtime.
    server: FakeServer,
    runtime: tokio::runtime::Runtime,
}

impl BlockingFakeServer {
    /// The runtime the server runs on, e.g. to drive an async client from a plain test.
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
}

impl std::ops::Deref for BlockingFakeServer {
    type Target = FakeServer;

    fn deref(&self) -> &FakeServer {
        &self.server
    }
}

struct Shared {
    log: Mutex<Log>,
    responder: Responder,
    faults: FaultPolicy,
    models_body: String,
    keep_requests: bool,
}

#[derive(Default)]
struct Log {
    seq: u64,
    /// Hash of the canonical body text -> times seen; a hash keeps memory small.
    attempts: HashMap<u64, u32>,
    requests: Vec<Arc<Recorded>>,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        // A panicking user closure never holds this lock, but stay usable regardless.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, path: &str, authorization: Option<String>, body: Value) -> Arc<Recorded> {
        // serde_json's default map is sorted, so equal JSON gives equal text.
        let mut h = DefaultHasher::new();
        body.to_string().hash(&mut h);
        let key = h.finish();
        let mut log = self.log();
        let seq = log.seq;
        log.seq += 1;
        let seen = log.attempts.entry(key).or_insert(0);
        let attempt = *seen;
        *seen += 1;
        let rec = Arc::new(Recorded {
            seq,
            attempt,
            path: path.to_string(),
            authorization,
            body,
        });
        if self.keep_requests {
            log.requests.push(rec.clone());
        }
        rec
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Connections live in this set so aborting this task closes them all.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(serve_conn(stream, shared.clone()));
                }
                // E.g. out of file descriptors: back off instead of spinning or dying.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// What the router decided for one request.
enum Action {
    Respond(Response),
    Delay(Duration, Response),
    Drop,
}

struct Response {
    status: u16,
    body: String,
    retry_after: Option<String>,
    /// Framing is unknown after some errors, so the connection must not be reused.
    close: bool,
}

impl Response {
    fn json(status: u16, body: String) -> Self {
        Response {
            status,
            body,
            retry_after: None,
            close: false,
        }
    }

    fn error(status: u16, message: &str) -> Self {
        let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
        Response::json(status, body.to_string())
    }

    fn fatal(status: u16, message: &str) -> Self {
        Response {
            close: true,
            ..Response::error(status, message)
        }
    }
}

struct Head {
    method: String,
    path: String,
    content_length: usize,
    keep_alive: bool,
    chunked: bool,
    expect_continue: bool,
    authorization: Option<String>,
}

fn parse_head(raw: &[u8]) -> Result<Head, &'static str> {
    let text = std::str::from_utf8(raw).map_err(|_| "request head is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed request line");
    };
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err("unsupported HTTP version"),
    };
    if method.is_empty() || !target.starts_with('/') {
        return Err("malformed request line");
    }
    let path = target.split('?').next().unwrap_or(target);
    let mut head = Head {
        method: method.to_string(),
        path: path.to_string(),
        content_length: 0,
        keep_alive: !http10,
        chunked: false,
        expect_continue: false,
        authorization: None,
    };
    for line in lines {
        let (name, value) = line.split_once(':').ok_or("malformed header line")?;
        let value = value.trim();
        let has_token = |t: &str| value.split(',').any(|v| v.trim().eq_ignore_ascii_case(t));
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                head.content_length = value.parse().map_err(|_| "bad Content-Length")?;
            }
            "connection" if has_token("close") => head.keep_alive = false,
            "connection" if has_token("keep-alive") => head.keep_alive = true,
            "transfer-encoding" => head.chunked = true,
            "expect" if has_token("100-continue") => head.expect_continue = true,
            "authorization" => head.authorization = Some(value.to_string()),
            _ => {}
        }
    }
    Ok(head)
}

async fn serve_conn(mut stream: TcpStream, shared: Arc<Shared>) {
    // Replies are written in one call; Nagle would only add latency.
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(1024);
    loop {
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            if buf.len() > MAX_HEAD {
                let resp = Response::fatal(431, "request head too large");
                return reject(stream, &mut out, &resp).await;
            }
            buf.reserve(8 * 1024);
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let head = match parse_head(&buf[..head_end]) {
            Ok(head) => head,
            Err(msg) => {
                return reject(stream, &mut out, &Response::fatal(400, msg)).await;
            }
        };
        let early = if head.chunked {
            Some(Response::fatal(400, "chunked bodies are not supported"))
        } else if head.content_length > MAX_BODY {
            Some(Response::fatal(413, "request body too large"))
        } else {
            None
        };
        if let Some(resp) = early {
            return reject(stream, &mut out, &resp).await;
        }
        let total = head_end + 4 + head.content_length;
        if head.expect_continue
            && buf.len() < total
            && stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .is_err()
        {
            return;
        }
        while buf.len() < total {
            buf.reserve(total - buf.len());
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let action = route(&shared, &head, &buf[head_end + 4..total]);
        // Leftover bytes (a pipelined request) stay for the next round.
        buf.drain(..total);
        let mut resp = match action {
            Action::Drop => return,
            Action::Respond(resp) => resp,
            Action::Delay(d, resp) => {
                tokio::time::sleep(d).await;
                resp
            }
        };
        resp.close |= !head.keep_alive;
        if write_response(&mut stream, &mut out, &resp).await.is_err() || resp.close {
            return;
        }
    }
}

/// Sends a final error reply, then drains what the client still sends for a moment:
/// closing with unread input makes the kernel send RST, which can destroy the reply.
async fn reject(mut stream: TcpStream, out: &mut Vec<u8>, resp: &Response) {
    if write_response(&mut stream, out, resp).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    let drain = async {
        let mut sink = [0u8; 8 * 1024];
        let mut left = MAX_HEAD * 16;
        while let Ok(n @ 1..) = stream.read(&mut sink).await {
            left = left.saturating_sub(n);
            if left == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

fn route(shared: &Shared, head: &Head, body: &[u8]) -> Action {
    match (head.method.as_str(), head.path.as_str()) {
        ("POST", "/v1/chat/completions" | "/chat/completions") => chat(shared, head, body),
        ("GET", "/v1/models") => Action::Respond(Response::json(200, shared.models_body.clone())),
        ("GET", "/health") => Action::Respond(Response::json(200, r#"{"status":"ok"}"#.into())),
        _ => Action::Respond(Response::error(404, "not found")),
    }
}

fn chat(shared: &Shared, head: &Head, body: &[u8]) -> Action {
    let json: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("request body is not valid JSON: {e}");
            return Action::Respond(Response::error(400, &msg));
        }
    };
    let rec = shared.record(&head.path, head.authorization.clone(), json);
    let normal = |rec: &Recorded| {
        let reply = (shared.responder)(rec);
        Response::json(200, render(rec, &reply).to_string())
    };
    match (shared.faults)(&rec) {
        None => Action::Respond(normal(&rec)),
        Some(Fault::Status {
            code,
            body,
            retry_after,
        }) => Action::Respond(Response {
            retry_after,
            ..Response::json(code, body)
        }),
        Some(Fault::Hang(d)) => Action::Delay(d, normal(&rec)),
        Some(Fault::Drop) => Action::Drop,
        Some(Fault::MalformedJson) => Action::Respond(Response::json(
            200,
            format!(
                r#"{{"id":"chatcmpl-{}","object":"chat.completion","choices":[{{"index":0,"#,
                rec.seq
            ),
        )),
        Some(Fault::EmptyChoices) => {
            let empty = render(&rec, &Reply::default());
            Action::Respond(Response::json(200, empty.to_string()))
        }
    }
}

/// Rough token estimate (~4 characters per token) for usage when the responder gives none.
fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

fn prompt_chars(body: &Value) -> usize {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return 0;
    };
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .map(str::len)
        .sum()
}

fn render(rec: &Recorded, reply: &Reply) -> Value {
    let choices: Vec<Value> = reply
        .choices
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut message = json!({"role": "assistant", "content": c.content});
            if let Some(r) = &c.reasoning_content {
                message["reasoning_content"] = json!(r);
            }
            json!({"index": i, "message": message, "finish_reason": c.finish_reason})
        })
        .collect();
    let (prompt, completion) = reply.usage.unwrap_or_else(|| {
        let completion: u64 = reply
            .choices
            .iter()
            .map(|c| {
                let reasoning = c.reasoning_content.as_deref().map_or(0, str::len);
                estimate_tokens(c.content.len() + reasoning)
            })
            .sum();
        (estimate_tokens(prompt_chars(&rec.body)), completion)
    });
    let model = reply
        .served_model
        .as_deref()
        .or(rec.model())
        .unwrap_or("fake-model");
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    json!({
        "id": format!("chatcmpl-{}", rec.seq),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": reply.system_fingerprint,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

async fn write_response(
    stream: &mut TcpStream,
    out: &mut Vec<u8>,
    resp: &Response,
) -> std::io::Result<()> {
    out.clear();
    // Writes into a Vec cannot fail.
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        resp.status,
        reason_phrase(resp.status),
        resp.body.len()
    );
    if let Some(ra) = &resp.retry_after {
        let _ = write!(out, "Retry-After: {ra}\r\n");
    }
    if resp.close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(resp.body.as_bytes());
    stream.write_all(out).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[derive(Debug)]
    struct Resp {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Resp {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }

        fn json(&self) -> Value {
            serde_json::from_slice(&self.body).expect("response body is JSON")
        }
    }

    fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        req
    }

    fn chat_req(body: &Value) -> String {
        request("POST", "/v1/chat/completions", &[], &body.to_string())
    }

    /// Sends raw bytes and reads one response; `None` when the server closed without a byte.
    async fn roundtrip(s: &mut TcpStream, raw: impl AsRef<[u8]>) -> Option<Resp> {
        s.write_all(raw.as_ref()).await.unwrap();
        read_response(s).await
    }

    async fn read_response(s: &mut TcpStream) -> Option<Resp> {
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let mut chunk = [0u8; 4096];
            let n = s.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                assert!(buf.is_empty(), "connection closed mid-response");
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = std::str::from_utf8(&buf[..head_end]).unwrap().to_string();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.trim().to_string(), v.trim().to_string())
            })
            .collect();
        let mut resp = Resp {
            status: status.parse().unwrap(),
            headers,
            body: Vec::new(),
        };
        let len: usize = resp.header("content-length").unwrap().parse().unwrap();
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < len {
            let mut chunk = [0u8; 4096];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed mid-body");
            body.extend_from_slice(&chunk[..n]);
        }
        resp.body = body;
        Some(resp)
    }

    async fn connect(server: &FakeServer) -> TcpStream {
        TcpStream::connect(server.addr()).await.unwrap()
    }

    async fn one(server: &FakeServer, raw: &str) -> Option<Resp> {
        roundtrip(&mut connect(server).await, raw).await
    }

    async fn assert_eof(s: &mut TcpStream) {
        let mut rest = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
            .await
            .expect("server closes the connection")
            .unwrap_or(0);
        assert_eq!(
            n,
            0,
            "unexpected bytes: {:?}",
            String::from_utf8_lossy(&rest)
        );
    }

    fn body(model: &str, prompt: &str) -> Value {
        json!({"model": model, "messages": [{"role": "user", "content": prompt}]})
    }

    fn server_with_fault(f: Fault) -> FakeServerBuilder {
        FakeServer::builder().faults(move |_| Some(f.clone()))
    }

    #[tokio::test]
    async fn normal_reply_shape_with_n_choices() {
        let server = FakeServer::builder().start().await;
        let mut b = body("m1", "What is 6*7?");
        b["n"] = json!(3);
        let resp = one(&server, &chat_req(&b)).await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let v = resp.json();
        assert_eq!(v["id"], "chatcmpl-0");
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "m1");
        assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
        assert!(v["system_fingerprint"].is_null());
        let choices = v["choices"].as_array().unwrap();
        assert_eq!(choices.len(), 3);
        for (i, c) in choices.iter().enumerate() {
            assert_eq!(c["index"], i);
            assert_eq!(c["message"]["role"], "assistant");
            assert_eq!(c["message"]["content"], DEFAULT_ANSWER);
            assert!(c["message"].get("reasoning_content").is_none());
            assert_eq!(c["finish_reason"], "stop");
        }
        let u = &v["usage"];
        let (p, c) = (u["prompt_tokens"].as_u64(), u["completion_tokens"].as_u64());
        assert!(p.unwrap() >= 1 && c.unwrap() >= 3);
        assert_eq!(u["total_tokens"].as_u64(), Some(p.unwrap() + c.unwrap()));
        // Without `n` there is one choice.
        let v = one(&server, &chat_req(&body("m1", "x")))
            .await
            .unwrap()
            .json();
        assert_eq!(v["choices"].as_array().unwrap().len(), 1);
        assert_eq!(v["id"], "chatcmpl-1");
    }

    #[tokio::test]
    async fn custom_responder_fields_are_rendered() {
        let server = FakeServer::builder()
            .responder(|r| Reply {
                choices: vec![
                    ChoiceReply {
                        content: format!("echo {}", r.user_text().unwrap_or("")),
                        reasoning_content: Some("thinking".into()),
                        finish_reason: "length".into(),
                    },
                    ChoiceReply::stop("second"),
                ],
                served_model: Some("served-x".into()),
                system_fingerprint: Some("fp_1".into()),
                usage: Some((11, 22)),
            })
            .start()
            .await;
        let v = one(&server, &chat_req(&body("asked", "hi")))
            .await
            .unwrap()
            .json();
        assert_eq!(v["model"], "served-x");
        assert_eq!(v["system_fingerprint"], "fp_1");
        assert_eq!(v["choices"][0]["message"]["content"], "echo hi");
        assert_eq!(v["choices"][0]["message"]["reasoning_content"], "thinking");
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert!(v["choices"][1]["message"]
            .get("reasoning_content")
            .is_none());
        assert_eq!(
            v["usage"],
            json!({"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33})
        );
    }

    #[tokio::test]
    async fn keep_alive_serves_two_requests_on_one_connection() {
        let server = FakeServer::builder().start().await;
        let mut s = connect(&server).await;
        for i in 0..2 {
            let resp = roundtrip(&mut s, &chat_req(&body("m", &format!("q{i}"))))
                .await
                .unwrap();
            assert_eq!(resp.status, 200);
            assert!(resp.header("connection").is_none());
        }
        // The other chat path shares the handler.
        let raw = request(
            "POST",
            "/chat/completions",
            &[],
            &body("m", "q").to_string(),
        );
        assert_eq!(roundtrip(&mut s, raw.as_bytes()).await.unwrap().status, 200);
        assert_eq!(server.request_count(), 3);
        let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(
            paths,
            [
                "/v1/chat/completions",
                "/v1/chat/completions",
                "/chat/completions"
            ]
        );
    }

    #[tokio::test]
    async fn connection_close_is_honoured() {
        let server = FakeServer::builder().start().await;
        let mut s = connect(&server).await;
        let raw = request("GET", "/health", &[("Connection", "close")], "");
        let resp = roundtrip(&mut s, &raw).await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.header("connection"), Some("close"));
        assert_eof(&mut s).await;
        // HTTP/1.0 without keep-alive closes too.
        let mut s = connect(&server).await;
        s.write_all(b"GET /health HTTP/1.0\r\n\r\n").await.unwrap();
        assert_eq!(read_response(&mut s).await.unwrap().status, 200);
        assert_eof(&mut s).await;
    }

    #[tokio::test]
    async fn status_faults_carry_body_and_retry_after() {
        let cases = [
            (
                Fault::rate_limited(7),
                429,
                Some("7"),
                "rate_limit_exceeded",
            ),
            (Fault::unauthorized(), 401, None, "invalid_api_key"),
            (Fault::unknown_model("nope"), 404, None, "model_not_found"),
        ];
        for (fault, code, retry_after, err_code) in cases {
            let server = server_with_fault(fault).start().await;
            let resp = one(&server, &chat_req(&body("nope", "x"))).await.unwrap();
            assert_eq!(resp.status, code);
            assert_eq!(resp.header("retry-after"), retry_after);
            assert_eq!(resp.json()["error"]["code"], err_code);
            assert_eq!(server.request_count(), 1, "faulted requests are recorded");
        }
        let unauthorized = server_with_fault(Fault::unauthorized()).start().await;
        let v = one(&unauthorized, &chat_req(&body("m", "x")))
            .await
            .unwrap()
            .json();
        assert_eq!(v["error"]["message"], "Incorrect API key provided");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        let server = server_with_fault(Fault::server_error()).start().await;
        let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
        assert_eq!(resp.status, 500);
        assert_eq!(resp.json()["error"]["type"], "server_error");
        // An HTTP-date Retry-After passes through verbatim; the connection stays usable.
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let server = server_with_fault(Fault::Status {
            code: 503,
            body: "{}".into(),
            retry_after: Some(date.into()),
        })
        .start()
        .await;
        let mut s = connect(&server).await;
        for _ in 0..2 {
            let resp = roundtrip(&mut s, &chat_req(&body("m", "x"))).await.unwrap();
            assert_eq!((resp.status, resp.header("retry-after")), (503, Some(date)));
        }
    }

    #[tokio::test]
    async fn drop_closes_without_bytes() {
        let server = server_with_fault(Fault::Drop).start().await;
        let mut s = connect(&server).await;
        assert!(roundtrip(&mut s, &chat_req(&body("m", "x")))
            .await
            .is_none());
        assert_eq!(server.request_count(), 1);
    }

    #[tokio::test]
    async fn hang_delays_then_answers_normally() {
        let server = server_with_fault(Fault::Hang(Duration::from_millis(300)))
            .start()
            .await;
        let started = Instant::now();
        let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(resp.status, 200);
        assert_eq!(
            resp.json()["choices"][0]["message"]["content"],
            DEFAULT_ANSWER
        );
        // A client timeout fires first.
        let mut s = connect(&server).await;
        let fut = roundtrip(&mut s, chat_req(&body("m", "y")));
        let timed_out = tokio::time::timeout(Duration::from_millis(50), fut).await;
        assert!(timed_out.is_err());
    }

    #[tokio::test]
    async fn malformed_json_and_empty_choices() {
        let server = server_with_fault(Fault::MalformedJson).start().await;
        let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
        assert_eq!(resp.status, 200);
        assert!(serde_json::from_slice::<Value>(&resp.body).is_err());
        let server = server_with_fault(Fault::EmptyChoices).start().await;
        let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
        assert_eq!(resp.status, 200);
        let v = resp.json();
        assert_eq!(v["choices"], json!([]));
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "m");
    }

    #[tokio::test]
    async fn attempts_count_identical_bodies() {
        let server = FakeServer::builder().start().await;
        let mut s = connect(&server).await;
        let a = body("m", "a");
        let b = body("m", "b");
        // Same JSON with keys in another order is the same body.
        let a_reordered = r#"{"messages":[{"content":"a","role":"user"}],"model":"m"}"#;
        for raw in [
            chat_req(&a),
            chat_req(&a),
            chat_req(&b),
            request("POST", "/v1/chat/completions", &[], a_reordered),
        ] {
            assert_eq!(roundtrip(&mut s, raw.as_bytes()).await.unwrap().status, 200);
        }
        let got: Vec<(u64, u32)> = server
            .requests()
            .iter()
            .map(|r| (r.seq, r.attempt))
            .collect();
        assert_eq!(got, [(0, 0), (1, 1), (2, 0), (3, 2)]);
        assert_eq!(server.requests()[2].body, b);
    }

    #[tokio::test]
    async fn fail_first_attempts_then_succeed() {
        let server = FakeServer::builder()
            .faults(fail_first_attempts(2, Fault::server_error))
            .start()
            .await;
        let mut s = connect(&server).await;
        let statuses: Vec<u16> = {
            let mut v = Vec::new();
            for _ in 0..3 {
                v.push(
                    roundtrip(&mut s, &chat_req(&body("m", "x")))
                        .await
                        .unwrap()
                        .status,
                );
            }
            v
        };
        assert_eq!(statuses, [500, 500, 200]);
    }

    #[tokio::test]
    async fn authorization_header_is_recorded() {
        let server = FakeServer::builder().start().await;
        let b = body("m", "x").to_string();
        let with = request(
            "POST",
            "/v1/chat/completions",
            &[("authorization", "Bearer sk-test")],
            &b,
        );
        one(&server, &with).await.unwrap();
        one(&server, &request("POST", "/v1/chat/completions", &[], &b))
            .await
            .unwrap();
        let auth: Vec<Option<String>> = server
            .requests()
            .into_iter()
            .map(|r| r.authorization)
            .collect();
        assert_eq!(auth, [Some("Bearer sk-test".to_string()), None]);
    }

    #[tokio::test]
    async fn non_json_body_is_400_and_connection_survives() {
        let server = FakeServer::builder().start().await;
        let mut s = connect(&server).await;
        let raw = request("POST", "/v1/chat/completions", &[], "not json {");
        let resp = roundtrip(&mut s, &raw).await.unwrap();
        assert_eq!(resp.status, 400);
        assert!(resp.json()["error"]["message"].is_string());
        assert_eq!(server.request_count(), 0);
        let resp = roundtrip(&mut s, &chat_req(&body("m", "x"))).await.unwrap();
        assert_eq!(resp.status, 200);
    }

    #[tokio::test]
    async fn routes_unknown_paths_health_and_models() {
        let server = FakeServer::builder()
            .models(vec!["a".into(), "b".into()])
            .start()
            .await;
        let mut s = connect(&server).await;
        for (method, path, status) in [
            ("GET", "/nope", 404),
            ("POST", "/v1/completions", 404),
            ("GET", "/v1/chat/completions", 404),
            ("GET", "/health", 200),
            ("GET", "/v1/models?x=1", 200),
        ] {
            let resp = roundtrip(&mut s, &request(method, path, &[], ""))
                .await
                .unwrap();
            assert_eq!(resp.status, status, "{method} {path}");
            if path == "/health" {
                assert_eq!(resp.json(), json!({"status": "ok"}));
            }
            if path.starts_with("/v1/models") {
                let v = resp.json();
                assert_eq!(v["data"][1]["id"], "b");
            }
        }
        assert_eq!(server.request_count(), 0);
    }

    #[tokio::test]
    async fn malformed_requests_get_400_and_close() {
        let server = FakeServer::builder().start().await;
        let raws: [&[u8]; 6] = [
            b"garbage\r\n\r\n",
            b"GET /health HTTP/2.0\r\n\r\n",
            b"GET /health HTTP/1.1\r\nno colon here\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"GET /\xff HTTP/1.1\r\n\r\n",
        ];
        for raw in raws {
            let mut s = connect(&server).await;
            let resp = roundtrip(&mut s, raw).await.unwrap();
            assert_eq!(resp.status, 400, "{}", String::from_utf8_lossy(raw));
            assert_eq!(resp.header("connection"), Some("close"));
            assert_eof(&mut s).await;
        }
        // An oversized head is refused rather than buffered forever.
        let mut s = connect(&server).await;
        let huge = format!("GET /health HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD * 2));
        let resp = roundtrip(&mut s, &huge).await.unwrap();
        assert_eq!(resp.status, 431);
        // A body over the limit is refused before it is read.
        let mut s = connect(&server).await;
        let big = "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{";
        let resp = roundtrip(&mut s, big).await.unwrap();
        assert_eq!(resp.status, 413);
        assert_eof(&mut s).await;
        // A client that disconnects mid-body does not disturb the server.
        let mut s = connect(&server).await;
        s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
            .await
            .unwrap();
        drop(s);
        assert_eq!(
            one(&server, &request("GET", "/health", &[], ""))
                .await
                .unwrap()
                .status,
            200
        );
    }

    #[tokio::test]
    async fn shutdown_closes_open_connections() {
        let server = FakeServer::builder().start().await;
        let mut s = connect(&server).await;
        let resp = roundtrip(&mut s, &request("GET", "/health", &[], "")).await;
        assert_eq!(resp.unwrap().status, 200);
        server.shutdown();
        assert_eof(&mut s).await;
    }

    #[tokio::test]
    async fn reqwest_client_works_with_keep_alive() {
        let server = FakeServer::builder().start().await;
        let client = reqwest::Client::new();
        let url = format!("{}/v1/chat/completions", server.base_url());
        for i in 0..3 {
            let resp = client
                .post(&url)
                .header("Authorization", "Bearer k")
                .header("Content-Type", "application/json")
                .body(body("m", &format!("q{i}")).to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let v: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
            assert_eq!(v["choices"][0]["message"]["content"], DEFAULT_ANSWER);
        }
        let resp = client
            .get(format!("{}/v1/models", server.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(server.request_count(), 3);
        assert!(server.base_url().starts_with("http://127.0.0.1:"));
    }

    #[test]
    fn start_blocking_serves_plain_tests() {
        use std::io::{Read, Write};
        let server = FakeServer::start_blocking(FakeServer::builder());
        let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
        let raw = request(
            "POST",
            "/v1/chat/completions",
            &[("Connection", "close")],
            &body("m", "x").to_string(),
        );
        s.write_all(raw.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.contains(r#""finish_reason":"stop""#));
        assert_eq!(server.request_count(), 1);
        // Dropping the guard stops the server and its runtime.
        let addr = server.addr();
        drop(server);
        assert!(std::net::TcpStream::connect(addr).is_err());
    }

    /// Rough throughput check: `cargo test --release --lib fake_server::tests::throughput -- --ignored --nocapture`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore]
    async fn throughput() {
        let server = FakeServer::builder().keep_requests(false).start().await;
        let (conns, per_conn) = (8, 5_000);
        let raw = Arc::new(chat_req(&body("m", "What is 6*7?")));
        let started = Instant::now();
        let mut tasks = JoinSet::new();
        for _ in 0..conns {
            let mut s = connect(&server).await;
            let raw = raw.clone();
            tasks.spawn(async move {
                for _ in 0..per_conn {
                    assert_eq!(roundtrip(&mut s, raw.as_bytes()).await.unwrap().status, 200);
                }
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
        let total = conns * per_conn;
        let rate = total as f64 / started.elapsed().as_secs_f64();
        println!("{total} requests, {rate:.0} req/s");
        assert_eq!(server.request_count(), total);
    }
}
