//! `fake_openai`: a fake OpenAI-compatible HTTP/1.1 server for gpassk's tests and benchmarks.
//!
//! It records every chat and pooling request, answers through a pluggable responder and injects faults
//! chosen by a fault policy (statuses with `Retry-After`, hangs, dropped connections,
//! malformed JSON, empty choices, raw or oversized bodies, streams cut mid-way or with a bad event,
//! endless keep-alives, slow bodies, streams held open after `[DONE]`, unfinished or BOM-led streams).
//! The Batch API (`/v1/files`, `/v1/batches`) answers uploaded request lines with the same
//! responder once a batch has been polled as often as its [`BatchPlan`] says.
//! `"stream": true` requests get the same replies as server-sent events. vLLM's pooling API
//! (`POST /pooling`) answers process-reward rows from a [`PoolingResponder`], under the same faults. HTTP framing is hyper's; malformed input gets a 4xx,
//! never a panic. The `fake-openai` binary serves it in the foreground for load generators.
//!
//! A plain `#[test]` uses [`FakeServer::start_blocking`], which runs the server on its own
//! background runtime, so the test thread is free to run the `gpassk` binary against
//! [`FakeServer::base_url`] and then inspect [`FakeServer::requests`].

mod batch;
mod completion;
mod pooling;
mod serve;
mod sse;
#[cfg(test)]
mod tests;

pub use batch::BatchPlan;
pub use pooling::{default_pooling_responder, PoolingResponder, DEFAULT_STEP_PAIR, STEP_TAG};
use serde_json::{json, Value};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Content of every choice from [`default_responder`].
pub const DEFAULT_ANSWER: &str = "The answer is \\boxed{42}.";

/// Upper bound on `n` honoured by the default responder (and the binary): bounds memory.
pub const MAX_N: u64 = 4096;

/// One chat or pooling request as the server saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// Global sequence number over all chat and pooling requests, from 0.
    pub seq: u64,
    /// How many times an identical body was seen before this one, from 0.
    pub attempt: u32,
    /// Request path without the query string: tells chat and pooling requests apart.
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

    /// Whether the request asked for server-sent events (`"stream": true`).
    pub fn streamed(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
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

    /// Whether this is a pooling request (`/pooling` or `/v1/pooling`).
    pub fn is_pooling(&self) -> bool {
        matches!(self.path.as_str(), "/pooling" | "/v1/pooling")
    }

    /// The text a pooling model scores: the last `assistant` message's content, else `input`.
    pub fn pooled_text(&self) -> Option<&str> {
        let assistant = self
            .body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|m| {
                m.iter()
                    .rev()
                    .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            });
        match assistant {
            Some(m) => m.get("content")?.as_str(),
            None => self.body.get("input")?.as_str(),
        }
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
    /// A streamed reply that stops mid-way: the first events, then the connection drops
    /// (no finish_reason, no `[DONE]`). A request that is not streamed is dropped outright.
    StreamCut,
    /// A streamed reply with one event that is not JSON. Not streamed: like [`Fault::MalformedJson`].
    MalformedChunk,
    /// A 200 event stream of `:` keep-alive comments, one per interval, that never ends, whatever
    /// the request asked: a request only a total deadline can end.
    Trickle(Duration),
    /// A 200 `application/json` chat completion sent one byte per interval, whatever the request
    /// asked (a server that ignores `stream`, slowly).
    TrickleJson(Duration),
    /// The whole streamed reply, `[DONE]` included, then the connection stays open and the body
    /// never ends. Not streamed: the normal reply.
    HoldAfterDone,
    /// A streamed reply whose choices never get a `finish_reason`, then `[DONE]` (a gateway that
    /// ends an upstream cut politely). Not streamed: the normal reply.
    DoneUnfinished,
    /// The whole streamed reply led by a UTF-8 byte-order mark split across two writes.
    /// Not streamed: the normal reply.
    LeadingBom,
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

    /// 200 with exactly this body: replies no responder would send (odd `usage`, `content: null`,
    /// content parts, reflected secrets).
    pub fn reply_body(body: impl Into<String>) -> Fault {
        Fault::Status {
            code: 200,
            body: body.into(),
            retry_after: None,
        }
    }

    /// 200 with a well-formed chat completion whose one choice holds `bytes` bytes of text.
    pub fn oversized(bytes: usize) -> Fault {
        let content = "x".repeat(bytes);
        let body = json!({
            "id": "chatcmpl-big", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        });
        Fault::reply_body(body.to_string())
    }

    /// 429 with `Retry-After` set to this raw header text (seconds or an HTTP date).
    pub fn retry_after(header: &str) -> Fault {
        match Fault::rate_limited(0) {
            Fault::Status { code, body, .. } => Fault::Status {
                code,
                body,
                retry_after: Some(header.to_string()),
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
/// Decides whether a chat or pooling request gets a fault; runs before the responder.
pub type FaultPolicy = Arc<dyn Fn(&Recorded) -> Option<Fault> + Send + Sync>;

/// Answers `n` choices of [`DEFAULT_ANSWER`] with `finish_reason: "stop"`.
pub fn default_responder() -> Responder {
    Arc::new(|r: &Recorded| Reply::repeated(r.n().clamp(1, MAX_N), DEFAULT_ANSWER))
}

/// Answers each chat request with one of `answers` (every choice the same), picked by the
/// request's `seed` modulo their number, the first for a request without a seed: replies that
/// vary from sample to sample yet are the same for the same request, whichever run, shard or
/// order sends it. An empty list answers [`DEFAULT_ANSWER`].
pub fn seeded_responder(answers: Vec<String>) -> Responder {
    let answers = if answers.is_empty() {
        vec![DEFAULT_ANSWER.to_string()]
    } else {
        answers
    };
    Arc::new(move |r: &Recorded| {
        let seed = r.body["seed"].as_u64().unwrap_or(0);
        let answer = &answers[(seed % answers.len() as u64) as usize];
        Reply::repeated(r.n().clamp(1, MAX_N), answer)
    })
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
    pooling: PoolingResponder,
    faults: FaultPolicy,
    models: Vec<String>,
    keep_requests: bool,
    batch_plan: BatchPlan,
}

impl FakeServerBuilder {
    /// How batches progress and end (default: one `in_progress` poll, then `completed`).
    pub fn batch_plan(mut self, plan: BatchPlan) -> Self {
        self.batch_plan = plan;
        self
    }

    /// Replaces the default responder.
    pub fn responder(mut self, f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        self.responder = Arc::new(f);
        self
    }

    /// Replaces the default responder with a shared one (e.g. [`seeded_responder`]).
    pub fn shared_responder(mut self, f: Responder) -> Self {
        self.responder = f;
        self
    }

    /// Replaces the pooling responder: it returns the `data[0].data` rows of a `/pooling`
    /// reply (default: [`default_pooling_responder`]).
    pub fn pooling_responder(
        mut self,
        f: impl Fn(&Recorded) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.pooling = Arc::new(f);
        self
    }

    /// Sets the fault policy for chat and pooling requests (default: never fault).
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

    /// Like [`FakeServerBuilder::try_start`] on a given address (`fake-openai --port`).
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
            pooling: self.pooling,
            faults: self.faults,
            models_body: models,
            keep_requests: self.keep_requests,
            store: Mutex::new(batch::Store::default()),
            batch_plan: self.batch_plan,
        });
        let task = tokio::spawn(serve::accept_loop(listener, shared.clone()));
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
            pooling: default_pooling_responder(),
            faults: Arc::new(|_: &Recorded| None),
            models: vec!["fake-model".to_string()],
            keep_requests: true,
            batch_plan: BatchPlan::default(),
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

    /// Every chat and pooling request recorded so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .log()
            .requests
            .iter()
            .map(|r| Recorded::clone(r))
            .collect()
    }

    /// Number of chat and pooling requests received (including faulted ones).
    pub fn request_count(&self) -> usize {
        self.shared.log().seq as usize
    }

    /// How many requests of this method and path (without query) arrived, of any kind.
    pub fn hits(&self, method: &str, path: &str) -> u64 {
        let key = format!("{method} {path}");
        self.shared.log().hits.get(&key).copied().unwrap_or(0)
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
    pooling: PoolingResponder,
    faults: FaultPolicy,
    models_body: String,
    keep_requests: bool,
    store: Mutex<batch::Store>,
    batch_plan: BatchPlan,
}

#[derive(Default)]
struct Log {
    seq: u64,
    /// Hash of the canonical body text -> times seen; a hash keeps memory small.
    attempts: HashMap<u64, u32>,
    requests: Vec<Arc<Recorded>>,
    /// "METHOD path" -> requests seen, for every route.
    hits: HashMap<String, u64>,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        // A panicking user closure never holds this lock, but stay usable regardless.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn store(&self) -> MutexGuard<'_, batch::Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn hit(&self, method: &str, path: &str) {
        *self
            .log()
            .hits
            .entry(format!("{method} {path}"))
            .or_insert(0) += 1;
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
