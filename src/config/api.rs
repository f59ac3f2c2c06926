//! `[api]` resolved: `ApiSettings` (where and how a model is called), the base URL rule, and the
//! default reply size and stream deadline derived from a request's size.

use crate::client::MAX_RESPONSE_BYTES;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiSettings {
    pub base_url: String,
    /// Name of the environment variable holding the key; None sends no Authorization header.
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    pub max_retries: u32,
    pub concurrency: usize,
    pub rpm: Option<f64>,
    pub tpm: Option<f64>,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// How long in-flight requests may still finish after Ctrl-C or SIGTERM; then they are dropped.
    pub shutdown_grace: Duration,
    /// The most of a server's Retry-After honoured per retry.
    pub retry_after_max: Duration,
    /// Replies larger than this are dropped unread (an error, retried).
    pub max_response_bytes: u64,
    /// Read the reply as server-sent events; `timeout` then bounds each silence, `stream_deadline`
    /// the whole reply.
    pub stream: bool,
    /// `stream_deadline`: what a whole streamed request (headers and body) may take, however
    /// steadily the server keeps it alive; default `default_stream_deadline`.
    pub stream_deadline: Duration,
    /// `[api] batch = true`: send the run's requests through the Batch API, polling it at this
    /// interval (`batch_poll_interval`); None sends them live.
    pub batch: Option<Duration>,
}

/// The default reply size limit: 64 bytes per token the request allows (JSON escapes included)
/// plus 64 KiB of envelope, never above [`MAX_RESPONSE_BYTES`]; the hard cap without max_tokens.
pub(super) fn default_body_limit(max_tokens: Option<u32>, choices: u32) -> u64 {
    max_tokens.map_or(MAX_RESPONSE_BYTES, |t| {
        (64 * 1024 + 64 * u64::from(t) * u64::from(choices.max(1))).min(MAX_RESPONSE_BYTES)
    })
}

/// Generation speed the default stream deadline assumes, in tokens per second: below what served
/// models reach even under load, so only a server that stalls on purpose reaches the deadline.
const DEADLINE_TOKENS_PER_S: f64 = 5.0;
/// The most generation time the default deadline allows (2 h); also the allowance without max_tokens.
const DEADLINE_GENERATION_MAX: f64 = 7200.0;

/// The default `stream_deadline`: `timeout` plus `max_tokens` at [`DEADLINE_TOKENS_PER_S`], the
/// second part at most [`DEADLINE_GENERATION_MAX`] seconds (and that much without max_tokens).
/// Choices of one request are generated side by side, so their count does not multiply it.
pub(super) fn default_stream_deadline(timeout: Duration, max_tokens: Option<u32>) -> Duration {
    let generation = max_tokens.map_or(DEADLINE_GENERATION_MAX, |t| {
        (f64::from(t) / DEADLINE_TOKENS_PER_S).min(DEADLINE_GENERATION_MAX)
    });
    timeout.saturating_add(Duration::from_secs_f64(generation))
}

/// A base URL must be http(s) and carry no `user:password@`: a password there would replace the
/// Bearer key and be written to the manifest. The URL is never echoed when it holds credentials.
pub(super) fn check_base_url(url: &str) -> Result<(), String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err("holds credentials (user:password@…): remove them and put the key in the environment variable named by `api_key_env`".into());
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("{url:?} must start with http:// or https://"));
    }
    // The endpoint path is appended to the base: after a query or fragment it would be lost.
    if let Some(c) = url.chars().find(|c| matches!(c, '?' | '#')) {
        let what = if c == '?' { "a query" } else { "a fragment" };
        return Err(format!(
            "{:?} holds {what} ('{c}…'): give the base URL only, e.g. https://host/v1",
            crate::util::printable(url)
        ));
    }
    Ok(())
}

impl ApiSettings {
    /// The URL rule: `{base}/v1/chat/completions`, or `{base}/chat/completions` when base ends in `/v1`.
    pub fn chat_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/chat/completions")
        } else {
            format!("{base}/v1/chat/completions")
        }
    }

    /// The stream deadline when replies are streamed; None for plain requests, which reqwest
    /// bounds by `timeout` as a whole.
    pub fn streaming(&self) -> Option<Duration> {
        self.stream.then_some(self.stream_deadline)
    }

    /// The chat client these settings ask for (the one place a client is built from an `[api]`
    /// table: timeouts, pool size, reply limit, streaming).
    pub fn chat_client(
        &self,
        key: Option<crate::client::ApiKey>,
    ) -> Result<crate::client::Client, crate::client::ApiError> {
        self.client_at(self.chat_url(), key, self.streaming())
    }

    /// A client of these settings for another endpoint of the same server (a reward model).
    pub fn client_at(
        &self,
        url: String,
        key: Option<crate::client::ApiKey>,
        stream_deadline: Option<Duration>,
    ) -> Result<crate::client::Client, crate::client::ApiError> {
        let (timeout, pool, max_body) = (self.timeout, self.concurrency, self.max_response_bytes);
        crate::client::Client::with_stream(url, key, timeout, pool, max_body, stream_deadline)
    }

    /// The retry policy these settings ask for.
    pub fn retry_policy(&self) -> crate::client::retry::RetryPolicy {
        crate::client::retry::RetryPolicy {
            max_retries: self.max_retries,
            base: self.backoff_base,
            max: self.backoff_max,
            retry_after_max: self.retry_after_max,
        }
    }
}
