//! Fake OpenAI-compatible HTTP/1.1 server for integration tests and throughput benchmarks: records chat requests, answers through a pluggable responder and injects faults.
//!
//! Hand-rolled on tokio (no hyper) so it stays small and fast: keep-alive, `Content-Length`
//! bodies, one request at a time per connection. Malformed input gets a 400, never a panic.

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
) -> FaultPolicy {
    Arc::new(move |r: &Recorded| (r.attempt < k).then(&make))
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
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
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

    /// Starts `builder` on a new background multi-thread runtime, for plain `#[test]`s
    /// (e.g. ones that run the `gpassk` binary as a subprocess). Keep the returned runtime
    /// alive as long as the server is needed; dropping it stops everything.
    pub fn start_blocking(builder: FakeServerBuilder) -> (FakeServer, tokio::runtime::Runtime) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fake-server")
            .enable_all()
            .build()
            .expect("fake server: build tokio runtime");
        let server = rt.block_on(builder.start());
        (server, rt)
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
                let _ = write_response(&mut stream, &mut out, &resp).await;
                return;
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
                let _ = write_response(&mut stream, &mut out, &Response::fatal(400, msg)).await;
                return;
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
            let _ = write_response(&mut stream, &mut out, &resp).await;
            return;
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
