//! One OpenAI-compatible chat-completion request: URL, auth, timeout, and error classification.
//!
//! [`retry`] holds the one retry policy and loop; scheduling and pacing live in the runner.

pub mod retry;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::{Duration, SystemTime};

/// An API key; never printed.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> ApiKey {
        ApiKey(key)
    }

    /// Replaces every occurrence of the key in `text` (servers sometimes echo it in errors).
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() >= 4 && text.contains(&self.0) {
            text.replace(&self.0, "[REDACTED]")
        } else {
            text.to_string()
        }
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
}

impl ErrorClass {
    /// Auth, unknown model and other 4xx are the caller's to fix: retrying cannot help.
    pub fn retryable(self) -> bool {
        !matches!(
            self,
            ErrorClass::Auth | ErrorClass::NotFound | ErrorClass::BadRequest
        )
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

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
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
}

// Reply shapes: unknown fields are ignored on purpose (servers add their own).
#[derive(Deserialize)]
struct WireResponse {
    model: Option<String>,
    system_fingerprint: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
    reasoning_content: Option<String>,
}

/// A client for one model endpoint.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
    key: Option<ApiKey>,
}

impl Client {
    pub fn new(
        url: String,
        key: Option<ApiKey>,
        timeout: Duration,
        pool: usize,
    ) -> Result<Client, ApiError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(pool)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ApiError {
                class: ErrorClass::Connection,
                status: None,
                message: format!("cannot build HTTP client: {e}"),
                retry_after: None,
            })?;
        Ok(Client { http, url, key })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn redact(&self, s: &str) -> String {
        match &self.key {
            Some(k) => k.redact(s),
            None => s.to_string(),
        }
    }

    /// Sends one chat-completion body and classifies the outcome.
    pub async fn chat(&self, body: &serde_json::Value) -> Result<ChatResponse, ApiError> {
        self.chat_bytes(serde_json::to_vec(body).unwrap_or_default())
            .await
    }

    /// Sends a body that is already JSON.
    pub async fn chat_bytes(&self, payload: Vec<u8>) -> Result<ChatResponse, ApiError> {
        let mut req = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(payload);
        if let Some(k) = &self.key {
            req = req.bearer_auth(&k.0);
        }
        let err = |class, status: Option<u16>, message: String, retry_after| ApiError {
            class,
            status,
            message: self.redact(&message),
            retry_after,
        };
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                let class = if e.is_timeout() {
                    ErrorClass::Timeout
                } else {
                    ErrorClass::Connection
                };
                return Err(err(class, None, transport_message(&e), None));
            }
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => {
                let class = if e.is_timeout() {
                    ErrorClass::Timeout
                } else {
                    ErrorClass::Connection
                };
                return Err(err(class, Some(status), transport_message(&e), None));
            }
        };
        if !(200..300).contains(&status) {
            let class = match status {
                429 => ErrorClass::RateLimited,
                401 | 403 => ErrorClass::Auth,
                404 => ErrorClass::NotFound,
                408 => ErrorClass::Timeout,
                s if s >= 500 => ErrorClass::Server,
                _ => ErrorClass::BadRequest,
            };
            return Err(err(
                class,
                Some(status),
                server_error_text(&bytes),
                retry_after,
            ));
        }
        let wire: WireResponse = serde_json::from_slice(&bytes).map_err(|e| {
            err(
                ErrorClass::MalformedJson,
                Some(status),
                format!("reply is not a chat completion: {e}"),
                None,
            )
        })?;
        let mut choices: Vec<(u64, Choice)> = wire
            .choices
            .into_iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let m = c.message?;
                Some((
                    c.index.unwrap_or(i as u64),
                    Choice {
                        content: m.content.unwrap_or_default(),
                        reasoning_content: m.reasoning_content,
                        finish_reason: c.finish_reason,
                    },
                ))
            })
            .collect();
        if choices.is_empty() {
            return Err(err(
                ErrorClass::EmptyChoices,
                Some(status),
                "reply has no choices".into(),
                None,
            ));
        }
        choices.sort_by_key(|(i, _)| *i);
        Ok(ChatResponse {
            served_model: wire.model,
            system_fingerprint: wire.system_fingerprint,
            choices: choices.into_iter().map(|(_, c)| c).collect(),
            usage: wire.usage,
        })
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
        let kind = if self.is_timeout() {
            "request timed out"
        } else if self.is_connect() {
            "cannot connect"
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
    let t: String = text.trim().chars().take(300).collect();
    if t.is_empty() {
        "(empty body)".into()
    } else {
        t
    }
}

/// `Retry-After` as seconds (`"3"`, `"1.5"`) or an HTTP date.
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(3600.0)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(3600)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn classes_that_must_not_be_retried() {
        assert!(!ErrorClass::Auth.retryable());
        assert!(!ErrorClass::NotFound.retryable());
        assert!(!ErrorClass::BadRequest.retryable());
        assert!(ErrorClass::RateLimited.retryable());
        assert!(ErrorClass::MalformedJson.retryable());
        assert!(ErrorClass::EmptyChoices.retryable());
    }
}
