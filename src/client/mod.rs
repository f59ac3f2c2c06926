//! One OpenAI-compatible chat-completion request: URL, auth, timeout, stream deadline, and error
//! classification.
//!
//! [`retry`] holds the one retry policy and loop; scheduling and pacing live in the runner.

pub mod retry;
mod stream;
mod wire;

pub use stream::{assemble_pieces, StreamStats};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::{Duration, Instant, SystemTime};

/// An API key (or another secret from the environment: a database password); never printed.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> ApiKey {
        ApiKey(key)
    }

    /// Adds the key as a bearer token to a request (the Batch API calls).
    pub fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        req.bearer_auth(&self.0)
    }

    /// The secret itself, for a driver that takes it as is (the results database's password).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every occurrence of the key in `text` (servers sometimes echo it in errors).
    pub fn redact(&self, text: &str) -> String {
        if self.appears_in(text) {
            text.replace(&self.0, "[REDACTED]")
        } else {
            text.to_string()
        }
    }

    /// [`ApiKey::redact`] of an owned text: the text itself, uncopied, when the key is not in it.
    pub fn redact_owned(&self, text: String) -> String {
        if self.appears_in(&text) {
            text.replace(&self.0, "[REDACTED]")
        } else {
            text
        }
    }

    fn appears_in(&self, text: &str) -> bool {
        self.0.len() >= 4 && text.contains(&self.0)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    RateLimited,
    Server,
    Timeout,
    Connection,
    MalformedJson,
    EmptyChoices,
    Auth,
    NotFound,
    BadRequest,
    /// The reply body went over the size limit; it was dropped unread.
    TooLarge,
    /// Every choice had `content: null` (or no text part): nothing to grade.
    NoContent,
}

impl ErrorClass {
    /// Auth, unknown model and other 4xx are the caller's to fix: retrying cannot help.
    pub fn retryable(self) -> bool {
        !matches!(
            self,
            ErrorClass::Auth | ErrorClass::NotFound | ErrorClass::BadRequest
        )
    }

    /// Every class, in declaration order.
    pub const ALL: [ErrorClass; 11] = [
        ErrorClass::RateLimited,
        ErrorClass::Server,
        ErrorClass::Timeout,
        ErrorClass::Connection,
        ErrorClass::MalformedJson,
        ErrorClass::EmptyChoices,
        ErrorClass::Auth,
        ErrorClass::NotFound,
        ErrorClass::BadRequest,
        ErrorClass::TooLarge,
        ErrorClass::NoContent,
    ];

    /// The class [`ErrorClass::as_str`] names.
    pub fn from_name(name: &str) -> Option<ErrorClass> {
        ErrorClass::ALL.into_iter().find(|c| c.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Server => "server",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connection => "connection",
            ErrorClass::MalformedJson => "malformed_json",
            ErrorClass::EmptyChoices => "empty_choices",
            ErrorClass::Auth => "auth",
            ErrorClass::NotFound => "not_found",
            ErrorClass::BadRequest => "bad_request",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::NoContent => "no_content",
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {message}", class.as_str(), status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct ApiError {
    pub class: ErrorClass,
    pub status: Option<u16>,
    /// The server's error text or the transport error, with the key redacted.
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// Whether the server may have billed the request: only a reply with an error status (4xx,
    /// 5xx) or a connection that was never made is known to cost nothing. A timeout, a cut
    /// stream or an unreadable 2xx reply may have been generated and billed in full.
    pub fn may_be_billed(&self) -> bool {
        let refused_status = self.status.is_some_and(|s| !(200..300).contains(&s));
        !(refused_status || self.never_connected())
    }

    /// Whether the request never reached the server: no connection could be made (refused,
    /// unresolvable, or a connect timeout).
    pub fn never_connected(&self) -> bool {
        matches!(self.class, ErrorClass::Connection | ErrorClass::Timeout)
            && self.status.is_none()
            && self.message.starts_with(CANNOT_CONNECT)
    }
}

/// How a transport error that never reached the server starts (see [`ApiError::may_be_billed`]).
const CANNOT_CONNECT: &str = "cannot connect";

/// Token counts as the server reported them; a count it left out or wrote oddly is unknown (None).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(
        default,
        deserialize_with = "lenient_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_tokens: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub completion_tokens: Option<u64>,
    /// `cached_tokens`: the part of the prompt served from the provider's cache.
    #[serde(
        default,
        deserialize_with = "lenient_details",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_tokens_details: Option<TokenDetails>,
    /// `reasoning_tokens`: the part of the completion spent thinking (included in `completion_tokens`).
    #[serde(
        default,
        deserialize_with = "lenient_details",
        skip_serializing_if = "Option::is_none"
    )]
    pub completion_tokens_details: Option<TokenDetails>,
}

/// The token breakdowns servers report inside `usage`; other keys in them are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenDetails {
    #[serde(
        default,
        deserialize_with = "lenient_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_tokens: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// A JSON reply's `usage` (a `/pooling` reply's), when it has one that reads as usage.
    pub fn of_reply(reply: &serde_json::Value) -> Option<Usage> {
        serde_json::from_value(reply.get("usage")?.clone()).ok()
    }

    /// Prompt plus completion tokens, unknown counts as 0.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.unwrap_or(0) + self.completion_tokens.unwrap_or(0)
    }

    /// Cached prompt tokens, when the server said.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.as_ref()?.cached_tokens
    }

    /// Reasoning tokens, when the server said.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.completion_tokens_details.as_ref()?.reasoning_tokens
    }
}

/// A details object; anything that is not an object (null, a string, …) is unknown.
fn lenient_details<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<TokenDetails>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(v.is_object()
        .then(|| serde_json::from_value(v).ok())
        .flatten())
}

/// Any JSON value a server may put in a token count.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireCount {
    Int(u64),
    Float(f64),
    Text(String),
    Other(serde::de::IgnoredAny),
}

/// A token count as `5`, `5.0` or `"5"`; null, negative, fractional or other values are unknown.
fn lenient_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let whole =
        |x: f64| (x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 9e15).then_some(x as u64);
    Ok(match WireCount::deserialize(d)? {
        WireCount::Int(n) => Some(n),
        WireCount::Float(x) => whole(x),
        WireCount::Text(t) => t
            .trim()
            .parse::<u64>()
            .ok()
            .or_else(|| t.trim().parse().ok().and_then(whole)),
        WireCount::Other(_) => None,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub content: String,
    pub reasoning_content: Option<String>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub served_model: Option<String>,
    pub system_fingerprint: Option<String>,
    pub choices: Vec<Choice>,
    pub usage: Option<Usage>,
    /// Timing, when the reply was streamed.
    pub stream: Option<StreamStats>,
}

// Reply shapes: unknown fields are ignored on purpose (servers add their own). Fields that are
// only informative (`model`, `usage`, …) are read leniently: an odd value there never costs a sample.
// The lenient fields are read as `serde_json::Value` would be, without building one (see `wire`).
#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    model: wire::Text,
    #[serde(default)]
    system_fingerprint: wire::Text,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: wire::LenientUsage,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: wire::Text,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: wire::Content,
    #[serde(default)]
    reasoning_content: wire::Content,
}

/// A string field, or None when absent, null or not a string.
fn text_of(v: Option<serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    }
}

/// Message content as text, read as everywhere else ([`crate::util::chat::content_text`]).
fn content_of(v: Option<serde_json::Value>) -> Option<String> {
    crate::util::chat::content_text(&v?)
}

/// The largest reply body accepted when no smaller limit is configured.
pub const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// A client for one model endpoint.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
    /// `url` parsed once (None when it does not parse: each request then fails as reqwest says).
    parsed_url: Option<reqwest::Url>,
    key: Option<ApiKey>,
    /// The key's `Authorization` value, built once (marked sensitive, so never printed); None
    /// without a key or when the key is no valid header value (each request then fails as reqwest says).
    bearer: Option<reqwest::header::HeaderValue>,
    max_body: u64,
    /// Ask for and read server-sent events, the whole request ending after this long.
    stream_deadline: Option<Duration>,
}

impl Client {
    /// A client whose replies may be at most `max_body` bytes (anything larger is
    /// [`ErrorClass::TooLarge`]). With `stream_deadline`, replies are read as server-sent events,
    /// `timeout` bounds each silence (a long answer streams for minutes) and the deadline bounds
    /// the whole request, so a server that trickles keep-alives cannot hold it forever.
    pub fn with_stream(
        url: String,
        key: Option<ApiKey>,
        timeout: Duration,
        pool: usize,
        max_body: u64,
        stream_deadline: Option<Duration>,
    ) -> Result<Client, ApiError> {
        let builder = reqwest::Client::builder();
        let builder = if stream_deadline.is_some() {
            builder.connect_timeout(timeout).read_timeout(timeout)
        } else {
            builder.timeout(timeout)
        };
        let http = builder
            .pool_max_idle_per_host(pool)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ApiError {
                class: ErrorClass::Connection,
                status: None,
                message: format!("cannot build HTTP client: {e}"),
                retry_after: None,
            })?;
        let bearer = key.as_ref().and_then(|k| {
            let mut v = reqwest::header::HeaderValue::try_from(format!("Bearer {}", k.0)).ok()?;
            v.set_sensitive(true);
            Some(v)
        });
        Ok(Client {
            http,
            parsed_url: reqwest::Url::parse(&url).ok(),
            url,
            key,
            bearer,
            max_body,
            stream_deadline,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL as messages may show it: no query or fragment, the key redacted.
    pub fn shown_url(&self) -> String {
        let bare = self.url.split(['?', '#']).next().unwrap_or_default();
        self.redact(bare)
    }

    /// Whether replies are read as server-sent events.
    pub fn streams(&self) -> bool {
        self.stream_deadline.is_some()
    }

    /// Runs one whole exchange (headers and body) within the stream deadline, if there is one;
    /// clients without it have reqwest's whole-request `timeout` instead.
    async fn within_deadline<T>(
        &self,
        exchange: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let Some(deadline) = self.stream_deadline else {
            return exchange.await;
        };
        tokio::time::timeout(deadline, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(ApiError {
                    class: ErrorClass::Timeout,
                    status: None,
                    message: format!(
                        "request deadline passed: no whole reply within {:.1} s (stream_deadline)",
                        deadline.as_secs_f64()
                    ),
                    retry_after: None,
                })
            })
    }

    fn redact(&self, s: &str) -> String {
        match &self.key {
            Some(k) => k.redact(s),
            None => s.to_string(),
        }
    }

    /// [`Client::redact`] of an owned text, which is returned as it is when there is nothing to
    /// redact.
    fn redact_owned(&self, s: String) -> String {
        match &self.key {
            Some(k) => k.redact_owned(s),
            None => s,
        }
    }

    /// Sends one chat-completion body and classifies the outcome.
    pub async fn chat(&self, body: &serde_json::Value) -> Result<ChatResponse, ApiError> {
        self.chat_bytes(serde_json::to_vec(body).unwrap_or_default())
            .await
    }

    /// Sends a body that is already JSON.
    pub async fn chat_bytes(&self, payload: Vec<u8>) -> Result<ChatResponse, ApiError> {
        self.within_deadline(async {
            let sent = Instant::now();
            let (resp, status, retry_after) = self.send(payload).await?;
            if self.streams() && (200..300).contains(&status) && is_event_stream(&resp) {
                return self.read_stream(resp, status, sent).await;
            }
            // Plain JSON to a stream request (a server that ignores `stream`) is under the deadline too.
            let bytes = self.read_body(resp, status).await?;
            decode_reply(status, &bytes, retry_after, |m| self.redact_owned(m))
        })
        .await
    }

    /// Posts `payload` (JSON) with the key: the response, its status and its `Retry-After`.
    async fn send(
        &self,
        payload: Vec<u8>,
    ) -> Result<(reqwest::Response, u16, Option<Duration>), ApiError> {
        // The same URL reqwest would parse from `url` on every request, parsed once.
        let req = match &self.parsed_url {
            Some(u) => self.http.post(u.clone()),
            None => self.http.post(&self.url),
        };
        // Header values that need no parsing or copying per request.
        let json = reqwest::header::HeaderValue::from_static("application/json");
        let mut req = req
            .header(reqwest::header::CONTENT_TYPE, json)
            .body(payload);
        match (&self.bearer, &self.key) {
            (Some(v), _) => req = req.header(reqwest::header::AUTHORIZATION, v.clone()),
            (None, Some(k)) => req = req.bearer_auth(&k.0),
            (None, None) => {}
        }
        let resp = req
            .send()
            .await
            .map_err(|e| self.transport_error(&e, None))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        Ok((resp, status, retry_after))
    }

    /// A whole (non-streamed) reply body, at most `max_body` bytes.
    async fn read_body(&self, resp: reqwest::Response, status: u16) -> Result<Vec<u8>, ApiError> {
        read_limited(resp, self.max_body)
            .await
            .map_err(|e| match e {
                BodyError::TooLarge => ApiError {
                    class: ErrorClass::TooLarge,
                    status: Some(status),
                    message: format!("reply body is larger than {} bytes; dropped", self.max_body),
                    retry_after: None,
                },
                BodyError::Transport(e) => self.transport_error(&e, Some(status)),
            })
    }

    /// A timeout or connection error, its text redacted.
    fn transport_error(&self, e: &reqwest::Error, status: Option<u16>) -> ApiError {
        let class = if e.is_timeout() {
            ErrorClass::Timeout
        } else {
            ErrorClass::Connection
        };
        ApiError {
            class,
            status,
            message: self.redact(&transport_message(e)),
            retry_after: None,
        }
    }
}

/// A chat reply's status and body as the runner sees it: a response with usable choices, or the
/// classified error; every server-sent text passes through `clean` (key redaction). Batch import
/// decodes its output lines with it too.
pub fn decode_reply(
    status: u16,
    bytes: &[u8],
    retry_after: Option<Duration>,
    clean: impl Fn(String) -> String,
) -> Result<ChatResponse, ApiError> {
    let err = |class, status: Option<u16>, message: String, retry_after| ApiError {
        class,
        status,
        message: clean(message),
        retry_after,
    };
    if !(200..300).contains(&status) {
        return Err(status_error(status, bytes, retry_after, &clean));
    }
    // Checked as UTF-8 once, the reply's strings are not checked one by one; a reply that is not
    // UTF-8 is decoded from bytes, so its error reads as it always has.
    let wire: Result<WireResponse, _> = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    };
    let wire = wire.map_err(|e| {
        err(
            ErrorClass::MalformedJson,
            Some(status),
            format!("reply is not a chat completion: {e}"),
            None,
        )
    })?;
    let any_choice = !wire.choices.is_empty();
    let resp = parse_reply(wire, &clean);
    if resp.choices.is_empty() {
        let (class, message) = if any_choice {
            (ErrorClass::NoContent, "every choice has null content")
        } else {
            (ErrorClass::EmptyChoices, "reply has no choices")
        };
        return Err(err(class, Some(status), message.into(), None));
    }
    Ok(resp)
}

/// Adds the request fields that ask for server-sent events with a final usage chunk.
pub fn ask_to_stream(body: &mut serde_json::Value) {
    body["stream"] = true.into();
    body["stream_options"] = serde_json::json!({"include_usage": true});
}

/// The error of a reply whose status is not 2xx, classified by status.
fn status_error(
    status: u16,
    bytes: &[u8],
    retry_after: Option<Duration>,
    clean: impl Fn(String) -> String,
) -> ApiError {
    let class = match status {
        429 => ErrorClass::RateLimited,
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::NotFound,
        408 => ErrorClass::Timeout,
        s if s >= 500 => ErrorClass::Server,
        _ => ErrorClass::BadRequest,
    };
    ApiError {
        class,
        status: Some(status),
        message: clean(server_error_text(bytes)),
        retry_after,
    }
}

impl Client {
    /// Posts a JSON body to the client's URL and reads a JSON reply of any shape (vLLM's
    /// `/pooling`); errors are classified as for chat replies.
    pub async fn post_json(&self, payload: Vec<u8>) -> Result<serde_json::Value, ApiError> {
        let exchange = async {
            let (resp, status, retry_after) = self.send(payload).await?;
            Ok((status, retry_after, self.read_body(resp, status).await?))
        };
        let (status, retry_after, bytes) = self.within_deadline(exchange).await?;
        if !(200..300).contains(&status) {
            return Err(status_error(status, &bytes, retry_after, |m| {
                self.redact_owned(m)
            }));
        }
        // Redacted before parsing: a server that echoes the key must not get it into a file.
        let text = self.redact(&String::from_utf8_lossy(&bytes));
        serde_json::from_str(&text).map_err(|e| ApiError {
            class: ErrorClass::MalformedJson,
            status: Some(status),
            message: self.redact(&format!("reply is not JSON: {e}")),
            retry_after: None,
        })
    }

    /// Reads a server-sent event stream into one reply; a cut stream is an error, never a half
    /// answer. `[DONE]` ends the read: a server may hold the connection open after it.
    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        status: u16,
        sent: Instant,
    ) -> Result<ChatResponse, ApiError> {
        let err = |class, message: String| ApiError {
            class,
            status: Some(status),
            message: self.redact(&message),
            retry_after: None,
        };
        let stream_err = |e| match e {
            stream::StreamError::TooLarge => err(
                ErrorClass::TooLarge,
                format!(
                    "reply stream is larger than {} bytes; dropped",
                    self.max_body
                ),
            ),
            stream::StreamError::Bad(class, message) => err(class, message),
        };
        let mut asm = stream::Assembly::new(sent);
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    asm.feed(&chunk, self.max_body).map_err(stream_err)?;
                    if asm.done() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let class = if e.is_timeout() {
                        ErrorClass::Timeout
                    } else {
                        ErrorClass::Connection
                    };
                    let msg = format!("stream cut mid-way: {}", transport_message(&e));
                    return Err(err(class, msg));
                }
            }
        }
        let (resp, any_choice) = asm.finish(|s| self.redact_owned(s)).map_err(stream_err)?;
        if resp.choices.is_empty() {
            return Err(if any_choice > 0 {
                err(
                    ErrorClass::NoContent,
                    "every choice has null content".into(),
                )
            } else {
                err(ErrorClass::EmptyChoices, "reply has no choices".into())
            });
        }
        Ok(resp)
    }
}

/// Whether a reply is server-sent events; a server that ignores `stream` answers plain JSON.
fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Why a body was not read whole.
enum BodyError {
    TooLarge,
    Transport(reqwest::Error),
}

/// Reads a body chunk by chunk, giving up as soon as it passes `limit` bytes.
async fn read_limited(mut resp: reqwest::Response, limit: u64) -> Result<Vec<u8>, BodyError> {
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Transport)? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The usable choices of a reply in index order, every server-sent text passed through `clean`
/// (key redaction). Choices without a message or with null content are left out.
fn parse_reply(wire: WireResponse, clean: impl Fn(String) -> String) -> ChatResponse {
    let mut choices: Vec<(u64, Choice)> = wire
        .choices
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let m = c.message?;
            Some((
                c.index.unwrap_or(i as u64),
                Choice {
                    content: clean(m.content.0?),
                    reasoning_content: m.reasoning_content.0.map(&clean),
                    finish_reason: c.finish_reason.0.map(&clean),
                },
            ))
        })
        .collect();
    choices.sort_by_key(|(i, _)| *i);
    let usage = wire.usage.0;
    // Names are metadata shown in reports: control characters in them are escaped as well.
    let name = |v: wire::Text| v.0.map(|s| crate::util::printable(&clean(s)).into_owned());
    ChatResponse {
        served_model: name(wire.model),
        system_fingerprint: name(wire.system_fingerprint),
        choices: choices.into_iter().map(|(_, c)| c).collect(),
        usage,
        stream: None,
    }
}

fn transport_message(e: &reqwest::Error) -> String {
    // The full chain names the cause (refused, reset, timed out) without the URL's query or headers.
    let mut s = e.without_url_ref().to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        // A connect timeout is a connection never made: named so, it is known to cost nothing.
        let kind = if self.is_connect() {
            CANNOT_CONNECT
        } else if self.is_timeout() {
            "request timed out"
        } else if self.is_body() || self.is_decode() {
            "reply body failed"
        } else {
            "request failed"
        };
        kind.to_string()
    }
}

/// The server's own error message: `error.message` of an OpenAI-style body, else the body's start.
fn server_error_text(bytes: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes) {
        let msg = v
            .pointer("/error/message")
            .or_else(|| v.pointer("/message"))
            .or_else(|| v.pointer("/error"))
            .or_else(|| v.pointer("/detail"));
        if let Some(m) = msg {
            return match m {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
        }
    }
    let text = String::from_utf8_lossy(bytes);
    let t = crate::util::clip_words(text.trim(), 300);
    if t.is_empty() {
        "(empty body)".into()
    } else {
        t.into_owned()
    }
}

/// The longest `Retry-After` ever read (a day); the retry policy caps it far lower.
const RETRY_AFTER_CEILING: Duration = Duration::from_secs(86_400);

/// `Retry-After` as seconds (`"3"`, `"1.5"`) or an HTTP date, at most a day: the retry policy's
/// `retry_after_max` decides how much of it is honoured.
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(RETRY_AFTER_CEILING.as_secs_f64())));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO)
            .min(RETRY_AFTER_CEILING),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_decoded_as_text_with_the_errors_of_its_bytes() {
        let decode = |bytes: &[u8]| decode_reply(200, bytes, None, |m| m);
        let ok =
            br#"{"model":"m","choices":[{"message":{"content":"x = 2"},"finish_reason":"stop"}]}"#;
        assert_eq!(decode(ok).unwrap().choices[0].content, "x = 2");
        for bad in [
            &b"{\"choices\": [}"[..],
            b"{\"model\":\"\xff\",\"choices\":[]}",
        ] {
            let Err(from_bytes) = serde_json::from_slice::<WireResponse>(bad) else {
                panic!("{bad:?} decodes")
            };
            let e = decode(bad).unwrap_err();
            assert_eq!(e.class, ErrorClass::MalformedJson);
            assert_eq!(
                e.message,
                format!("reply is not a chat completion: {from_bytes}")
            );
        }
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        let future = SystemTime::now() + Duration::from_secs(30);
        let d = parse_retry_after(&httpdate::fmt_http_date(future)).unwrap();
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&past), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn server_error_text_prefers_openai_message() {
        let body = br#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#;
        assert_eq!(server_error_text(body), "Incorrect API key");
        assert_eq!(server_error_text(b"upstream broke"), "upstream broke");
        assert_eq!(server_error_text(b""), "(empty body)");
    }

    #[test]
    fn key_is_redacted_and_never_debug_printed() {
        let k = ApiKey::new("sk-test-123456".into());
        assert_eq!(
            k.redact("bad key sk-test-123456 given"),
            "bad key [REDACTED] given"
        );
        assert!(!format!("{k:?}").contains("sk-test"));
    }

    fn reply(json: &str) -> ChatResponse {
        parse_reply(serde_json::from_str(json).unwrap(), |s| {
            ApiKey::new("sk-secret".into()).redact(&s)
        })
    }

    #[test]
    fn odd_usage_is_unknown_and_content_parts_are_joined() {
        let r = reply(
            r#"{"model":"m","usage":{"prompt_tokens":"5","completion_tokens":null},
                "choices":[{"message":{"content":[{"type":"text","text":"a"},"b",{"type":"image"}]}}]}"#,
        );
        assert_eq!(r.choices[0].content, "ab");
        let u = r.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(5), None));
        let odd = reply(
            r#"{"usage":{"prompt_tokens":5.0,"completion_tokens":-1},"choices":[{"message":{"content":"x"}}]}"#,
        );
        let u = odd.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(5), None));
        let details = reply(
            r#"{"usage":{"prompt_tokens":9,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},
                "completion_tokens_details":{"reasoning_tokens":"12"}},"choices":[{"message":{"content":"x"}}]}"#,
        );
        let u = details.usage.unwrap();
        assert_eq!(
            (u.cached_tokens(), u.reasoning_tokens()),
            (Some(4), Some(12))
        );
        let odd_details = reply(
            r#"{"usage":{"prompt_tokens":9,"prompt_tokens_details":"n/a","completion_tokens_details":{"reasoning_tokens":-3}},"choices":[{"message":{"content":"x"}}]}"#,
        );
        let u = odd_details.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.cached_tokens(), u.reasoning_tokens()),
            (Some(9), None, None)
        );
        let none = reply(r#"{"usage":"n/a","model":7,"choices":[{"message":{"content":null}}]}"#);
        assert!(none.usage.is_none() && none.served_model.is_none());
        assert!(none.choices.is_empty());
    }

    /// The reply as the fields were read before `wire`: each lenient field as a whole `Value`.
    fn reply_via_values(json: &str) -> Option<ChatResponse> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        let field = |o: &serde_json::Value, k: &str| o.get(k).cloned();
        let mut choices: Vec<(u64, Choice)> = Vec::new();
        for (i, c) in v.get("choices")?.as_array()?.iter().enumerate() {
            let Some(m) = c.get("message").filter(|m| !m.is_null()) else {
                continue;
            };
            let Some(content) = content_of(field(m, "content")) else {
                continue;
            };
            let index = c.get("index").and_then(serde_json::Value::as_u64);
            choices.push((
                index.unwrap_or(i as u64),
                Choice {
                    content,
                    reasoning_content: content_of(field(m, "reasoning_content")),
                    finish_reason: text_of(field(c, "finish_reason")),
                },
            ));
        }
        choices.sort_by_key(|(i, _)| *i);
        let usage = field(&v, "usage")
            .filter(serde_json::Value::is_object)
            .and_then(|u| serde_json::from_value::<Usage>(u).ok());
        let name = |k| text_of(field(&v, k)).map(|s| crate::util::printable(&s).into_owned());
        Some(ChatResponse {
            served_model: name("model"),
            system_fingerprint: name("system_fingerprint"),
            choices: choices.into_iter().map(|(_, c)| c).collect(),
            usage,
            stream: None,
        })
    }

    #[test]
    fn lenient_fields_read_as_whole_values_would() {
        let cases = [
            r#"{"model":"m","usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7},
                "choices":[{"index":0,"finish_reason":"stop","message":{"content":"a"}}]}"#,
            r#"{"model":["m"],"system_fingerprint":{"a":[1,{"b":null}]},"usage":[1,2],
                "choices":[{"finish_reason":7,"message":{"content":{"text":"x"},"reasoning_content":["r",{"text":"s"}]}},
                           {"message":{"content":["p",{"type":"text","text":"q"},{"text":5},3]}}]}"#,
            r#"{"usage":{"prompt_tokens":1,"prompt_tokens":"2","completion_tokens":true,
                "prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":[],
                "completion_tokens_details":{"reasoning_tokens":"4","reasoning_tokens":5},"x":{"y":[]}},
                "choices":[{"message":{"content":"a"}}]}"#,
            r#"{"usage":null,"model":null,"choices":[{"index":2,"message":{"content":"late"}},
                {"index":1,"message":{"content":"early","reasoning_content":false},"finish_reason":null}]}"#,
            r#"{"usage":"n/a","model":1.5,"system_fingerprint":true,"choices":[{"message":null},{"message":{"content":[]}}]}"#,
            r#"{"model":"\u006d\n","usage":{"prompt\u005ftokens":9},"choices":[{"message":{"content":"\ud83d\ude00"}}]}"#,
        ];
        for json in cases {
            let got = reply(json);
            assert_eq!(Some(got), reply_via_values(json), "{json}");
        }
        for bad in [
            r#"{"model":["\ud800"],"choices":[]}"#,
            r#"{"usage":{"a":1e999},"choices":[]}"#,
            r#"{"choices":[{"message":{"content":[1,]}}]}"#,
        ] {
            assert!(serde_json::from_str::<WireResponse>(bad).is_err(), "{bad}");
            assert!(reply_via_values(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn server_text_is_redacted_when_parsed() {
        let r = reply(
            r#"{"model":"sk-secret","system_fingerprint":"fp-sk-secret",
                "choices":[{"message":{"content":"key sk-secret","reasoning_content":"sk-secret"},"finish_reason":"stop"}]}"#,
        );
        let all = format!("{:?}", r);
        assert!(!all.contains("sk-secret"), "{all}");
        let esc = reply(r#"{"model":"m\u001b[2J","choices":[{"message":{"content":"a"}}]}"#);
        assert_eq!(esc.served_model.as_deref(), Some("m\\u{1b}[2J"));
        assert_eq!(r.choices[0].content, "key [REDACTED]");
    }

    #[test]
    fn only_error_statuses_and_unmade_connections_are_known_to_cost_nothing() {
        let e = |class, status, message: &str| ApiError {
            class,
            status,
            message: message.into(),
            retry_after: None,
        };
        let cases = [
            (e(ErrorClass::Server, Some(500), "boom"), false),
            (e(ErrorClass::RateLimited, Some(429), "slow"), false),
            (
                e(ErrorClass::Connection, None, "cannot connect: refused"),
                false,
            ),
            (
                e(ErrorClass::Timeout, None, "cannot connect: timed out"),
                false,
            ),
            (e(ErrorClass::Timeout, None, "request timed out"), true),
            (
                e(ErrorClass::Connection, Some(200), "stream cut mid-way"),
                true,
            ),
            (e(ErrorClass::MalformedJson, Some(200), "not JSON"), true),
            (e(ErrorClass::TooLarge, Some(200), "too large"), true),
            (
                e(ErrorClass::Connection, None, "request failed: reset"),
                true,
            ),
        ];
        for (err, billed) in cases {
            assert_eq!(err.may_be_billed(), billed, "{err}");
        }
    }

    #[test]
    fn classes_that_must_not_be_retried() {
        assert!(!ErrorClass::Auth.retryable());
        assert!(!ErrorClass::NotFound.retryable());
        assert!(!ErrorClass::BadRequest.retryable());
        assert!(ErrorClass::RateLimited.retryable());
        assert!(ErrorClass::MalformedJson.retryable());
        assert!(ErrorClass::EmptyChoices.retryable());
        assert!(ErrorClass::TooLarge.retryable());
        assert!(ErrorClass::NoContent.retryable());
    }
}
