//! Streamed chat completions: server-sent events assembled into one [`ChatResponse`].
//!
//! Deltas are joined per choice index (content and `reasoning_content` apart). `[DONE]` ends the
//! read at once; a choice still without `finish_reason` at `[DONE]` or at the end of the stream is an
//! error, so a half answer is never returned. Lines end in LF, CRLF or CR; a leading BOM is skipped.

use super::{content_of, text_of, ChatResponse, Choice, ErrorClass, Usage};
use std::collections::BTreeMap;
use std::time::Instant;

/// Timing of a streamed reply, for the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamStats {
    /// Milliseconds from sending the request to the first text delta.
    pub ttft_ms: u64,
    /// Completion tokens per second from the first text to the end; None without usage.
    pub tokens_per_s: Option<f64>,
}

#[derive(Default)]
struct Partial {
    content: Option<String>,
    reasoning: Option<String>,
    finish: Option<String>,
}

/// The state of one stream being read.
pub(super) struct Assembly {
    sent: Instant,
    first_text: Option<Instant>,
    choices: BTreeMap<u64, Partial>,
    model: Option<serde_json::Value>,
    fingerprint: Option<serde_json::Value>,
    usage: Option<serde_json::Value>,
    done: bool,
    /// Bytes of an event line not yet ended by a newline.
    line: Vec<u8>,
    /// The last byte was a CR: an LF right after it ends no second line.
    after_cr: bool,
    /// No line has ended yet: the first one may open with a byte-order mark.
    first_line: bool,
    received: u64,
}

/// Why a stream could not be assembled.
pub(super) enum StreamError {
    TooLarge,
    Bad(ErrorClass, String),
}

impl Assembly {
    pub(super) fn new(sent: Instant) -> Assembly {
        Assembly {
            sent,
            first_text: None,
            choices: BTreeMap::new(),
            model: None,
            fingerprint: None,
            usage: None,
            done: false,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            received: 0,
        }
    }

    /// Feeds bytes as they arrive; the whole stream is bounded by `limit` bytes. Bytes after
    /// `[DONE]` are ignored: see [`Assembly::done`].
    pub(super) fn feed(&mut self, bytes: &[u8], limit: u64) -> Result<(), StreamError> {
        self.received += bytes.len() as u64;
        if self.received > limit {
            return Err(StreamError::TooLarge);
        }
        for &b in bytes {
            if self.done {
                break;
            }
            let cr_lf = b == b'\n' && self.after_cr;
            self.after_cr = b == b'\r';
            match b {
                _ if cr_lf => {}
                b'\n' | b'\r' => {
                    let line = std::mem::take(&mut self.line);
                    self.event_line(&line)?;
                }
                _ => self.line.push(b),
            }
        }
        Ok(())
    }

    /// Whether `[DONE]` arrived: nothing after it is read (servers may hold the connection open).
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// One SSE line: `data:` lines carry chunks; comments, `event:`, `id:` and blanks are skipped.
    fn event_line(&mut self, line: &[u8]) -> Result<(), StreamError> {
        // The SSE spec strips one BOM at the stream's start; it may have straddled chunks.
        let line = if std::mem::take(&mut self.first_line) {
            line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
        } else {
            line
        };
        let Some(data) = line.strip_prefix(b"data:") else {
            return Ok(());
        };
        let data = data.trim_ascii();
        if self.done || data.is_empty() {
            return Ok(());
        }
        if data == b"[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: serde_json::Value = serde_json::from_slice(data).map_err(|e| {
            StreamError::Bad(
                ErrorClass::MalformedJson,
                format!("stream chunk is not JSON: {e}"),
            )
        })?;
        self.chunk(chunk)
    }

    fn chunk(&mut self, mut chunk: serde_json::Value) -> Result<(), StreamError> {
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            let text = super::server_error_text(err.to_string().as_bytes());
            return Err(StreamError::Bad(
                ErrorClass::Server,
                format!("error event mid-stream: {text}"),
            ));
        }
        for (key, slot) in [
            ("model", &mut self.model),
            ("system_fingerprint", &mut self.fingerprint),
        ] {
            if let Some(v) = chunk.get_mut(key).map(serde_json::Value::take) {
                if v.is_string() {
                    *slot = Some(v);
                }
            }
        }
        if let Some(u) = chunk.get_mut("usage").map(serde_json::Value::take) {
            if u.is_object() {
                self.usage = Some(u);
            }
        }
        let choices = match chunk.get_mut("choices").map(serde_json::Value::take) {
            Some(serde_json::Value::Array(c)) => c,
            _ => Vec::new(),
        };
        for (i, mut c) in choices.into_iter().enumerate() {
            let index = c.get("index").and_then(serde_json::Value::as_u64);
            let p = self.choices.entry(index.unwrap_or(i as u64)).or_default();
            let mut delta = c.get_mut("delta").map(serde_json::Value::take);
            let mut part = |key: &str| {
                let d = delta.as_mut()?.get_mut(key)?.take();
                content_of(Some(d))
            };
            let (content, reasoning) = (part("content"), part("reasoning_content"));
            let texty = [&content, &reasoning]
                .iter()
                .any(|t| t.as_deref().is_some_and(|s| !s.is_empty()));
            if texty && self.first_text.is_none() {
                self.first_text = Some(Instant::now());
            }
            for (text, into) in [(content, &mut p.content), (reasoning, &mut p.reasoning)] {
                if let Some(t) = text {
                    into.get_or_insert_with(String::new).push_str(&t);
                }
            }
            if let Some(f) = text_of(c.get_mut("finish_reason").map(serde_json::Value::take)) {
                p.finish = Some(f);
            }
        }
        Ok(())
    }

    /// Why the stream is not a whole reply, if it is not: a choice still unfinished at `[DONE]`
    /// (real servers send `finish_reason` on each choice's last delta) or at the end of the bytes.
    fn unfinished(&self) -> Option<String> {
        let open = self.choices.iter().find(|(_, p)| p.finish.is_none());
        match (open, self.done) {
            (None, true) => None,
            (None, false) if !self.choices.is_empty() => None,
            (Some((i, _)), true) => Some(format!(
                "stream sent [DONE] with choice {i} unfinished (no finish_reason): a half answer, cut mid-way"
            )),
            _ => Some("stream ended before [DONE] with a choice unfinished (cut mid-way)".into()),
        }
    }

    /// The assembled reply, every server-sent text passed through `clean`; an error when cut short.
    pub(super) fn finish(
        mut self,
        clean: impl Fn(String) -> String,
    ) -> Result<(ChatResponse, usize), StreamError> {
        let tail = std::mem::take(&mut self.line);
        self.event_line(&tail)?;
        if let Some(why) = self.unfinished() {
            return Err(StreamError::Bad(ErrorClass::Connection, why));
        }
        let end = Instant::now();
        let usage = self
            .usage
            .take()
            .and_then(|u| serde_json::from_value::<Usage>(u).ok());
        let stats = self.first_text.map(|first| {
            let gen = end.duration_since(first).as_secs_f64();
            StreamStats {
                ttft_ms: first.duration_since(self.sent).as_millis() as u64,
                tokens_per_s: usage
                    .as_ref()
                    .and_then(|u| u.completion_tokens)
                    .filter(|_| gen > 0.0)
                    .map(|t| t as f64 / gen),
            }
        });
        let any_choice = self.choices.len();
        let choices = std::mem::take(&mut self.choices)
            .into_values()
            .filter_map(|p| {
                Some(Choice {
                    content: clean(p.content?),
                    reasoning_content: p.reasoning.map(&clean),
                    finish_reason: p.finish.map(&clean),
                })
            })
            .collect();
        let name = |v: Option<serde_json::Value>| {
            text_of(v).map(|s| crate::util::printable(&clean(s)).into_owned())
        };
        let resp = ChatResponse {
            served_model: name(self.model.take()),
            system_fingerprint: name(self.fingerprint.take()),
            choices,
            usage,
            stream: stats,
        };
        Ok((resp, any_choice))
    }
}

/// A whole event stream delivered in `pieces`, assembled as the client reads one: the reply and
/// how many choices arrived, or the error's class and message. For the fuzz targets outside the
/// crate (`fuzz/`), which check that the network's chunking never changes the reply.
#[doc(hidden)]
pub fn assemble_pieces<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    limit: u64,
) -> Result<(ChatResponse, usize), (ErrorClass, String)> {
    let bad = |e| match e {
        StreamError::TooLarge => (ErrorClass::TooLarge, format!("larger than {limit} bytes")),
        StreamError::Bad(class, message) => (class, message),
    };
    let mut asm = Assembly::new(Instant::now());
    for piece in pieces {
        asm.feed(piece, limit).map_err(bad)?;
        if asm.done() {
            break;
        }
    }
    asm.finish(|s| s).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(text: &str) -> Result<(ChatResponse, usize), StreamError> {
        let mut a = Assembly::new(Instant::now());
        // Split at odd places: events may straddle network chunks.
        for piece in text.as_bytes().chunks(7) {
            a.feed(piece, 1 << 20)?;
        }
        a.finish(|s| s.replace("sk-secret", "[REDACTED]"))
    }

    #[test]
    fn deltas_join_per_choice_with_reasoning_apart() {
        let text = concat!(
            ": keep-alive\n\n",
            "data: {\"model\":\"m\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":1,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think \"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}},{\"index\":1,\"delta\":{\"reasoning_content\":\"more\",\"content\":\"x\"}}]}\r\n\r\n",
            "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b sk-secret\"},\"finish_reason\":\"stop\"},{\"index\":1,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":\"9\"}}\n\n",
            "data: [DONE]\n\n",
        );
        let (r, _) = assemble(text).ok().unwrap();
        assert_eq!(r.served_model.as_deref(), Some("m"));
        assert_eq!(r.system_fingerprint.as_deref(), Some("fp"));
        assert_eq!(r.choices[0].content, "ab [REDACTED]");
        assert_eq!(r.choices[0].reasoning_content, None);
        assert_eq!(r.choices[1].content, "x");
        assert_eq!(
            r.choices[1].reasoning_content.as_deref(),
            Some("think more")
        );
        assert_eq!(r.choices[1].finish_reason.as_deref(), Some("length"));
        let u = r.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(3), Some(9)));
        assert!(r.stream.is_some());
    }

    #[test]
    fn cut_or_malformed_streams_are_errors() {
        let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n";
        assert!(matches!(
            assemble(cut),
            Err(StreamError::Bad(ErrorClass::Connection, _))
        ));
        let bad = "data: {\"choices\":[{\"index\":0,\n\n";
        assert!(matches!(
            assemble(bad),
            Err(StreamError::Bad(ErrorClass::MalformedJson, _))
        ));
        let err = "data: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        assert!(matches!(
            assemble(err),
            Err(StreamError::Bad(ErrorClass::Server, _))
        ));
        let mut a = Assembly::new(Instant::now());
        assert!(matches!(
            a.feed(&[b'x'; 100], 50),
            Err(StreamError::TooLarge)
        ));
        // Finished without [DONE] (some servers omit it) is whole.
        let no_done = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n";
        assert_eq!(assemble(no_done).ok().unwrap().0.choices[0].content, "ok");
    }

    /// Feeds `text` in pieces of `size` bytes and finishes.
    fn assemble_in(text: &[u8], size: usize) -> Result<(ChatResponse, usize), StreamError> {
        let mut a = Assembly::new(Instant::now());
        for piece in text.chunks(size) {
            a.feed(piece, 1 << 20)?;
        }
        a.finish(|s| s)
    }

    const FIRST: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first \"}}]}";
    const LAST: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"last\"},\"finish_reason\":\"stop\"}]}";

    #[test]
    fn done_ends_the_read_and_nothing_after_it_counts() {
        let mut a = Assembly::new(Instant::now());
        let text = format!("{FIRST}\n\n{LAST}\n\ndata: [DONE]\n\ndata: {{not json\n\n");
        a.feed(text.as_bytes(), 1 << 20).ok().unwrap();
        assert!(a.done(), "[DONE] must end the read without waiting for EOF");
        let (r, _) = a.finish(|s| s).ok().unwrap();
        assert_eq!(r.choices[0].content, "first last");
    }

    #[test]
    fn done_after_an_unfinished_choice_is_a_cut_never_a_half_answer() {
        let text = format!("{FIRST}\n\ndata: [DONE]\n\n");
        match assemble(&text) {
            Err(StreamError::Bad(ErrorClass::Connection, m)) => {
                assert!(m.contains("[DONE]") && m.contains("unfinished"), "{m}")
            }
            other => panic!("half answer accepted: {:?}", other.ok()),
        }
        // One choice finished, the other not: still no answer.
        let two = format!("{LAST}\n\ndata: {{\"choices\":[{{\"index\":1,\"delta\":{{\"content\":\"x\"}}}}]}}\n\ndata: [DONE]\n\n");
        assert!(matches!(
            assemble(&two),
            Err(StreamError::Bad(ErrorClass::Connection, _))
        ));
        // A usage-only chunk after the finish (`choices: []`) changes nothing.
        let usage = format!("{LAST}\n\ndata: {{\"choices\":[],\"usage\":{{\"completion_tokens\":2}}}}\n\ndata: [DONE]\n\n");
        let (r, _) = assemble(&usage).ok().unwrap();
        assert_eq!(r.choices[0].finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn a_leading_bom_is_skipped_even_split_across_chunks() {
        let text = format!("\u{feff}{FIRST}\n\n{LAST}\n\ndata: [DONE]\n\n");
        for size in [1, 2, 3, 4, 1024] {
            let (r, _) = assemble_in(text.as_bytes(), size).ok().unwrap();
            assert_eq!(r.choices[0].content, "first last", "pieces of {size}");
        }
        // Only at the stream's start: a BOM later is part of a line (here: not a `data:` line).
        let later = format!("{LAST}\n\n\u{feff}{FIRST}\n\ndata: [DONE]\n\n");
        assert_eq!(assemble(&later).ok().unwrap().0.choices[0].content, "last");
    }

    #[test]
    fn assemble_pieces_reads_a_stream_alike_in_any_pieces() {
        let text = format!("\u{feff}{FIRST}\r\n\r\n{LAST}\r\rdata: [DONE]\n\ndata: {{bad\n");
        let read = |size: usize| {
            assemble_pieces(text.as_bytes().chunks(size), 1 << 20).map(|(mut r, n)| {
                r.stream = None;
                (r, n)
            })
        };
        let whole = read(text.len());
        assert_eq!(whole.as_ref().unwrap().0.choices[0].content, "first last");
        for size in 1..text.len() {
            assert_eq!(read(size), whole, "pieces of {size}");
        }
        let cut = assemble_pieces([FIRST.as_bytes()], 1 << 20);
        assert!(matches!(cut, Err((ErrorClass::Connection, _))));
        let big = assemble_pieces([text.as_bytes()], 10);
        assert!(matches!(big, Err((ErrorClass::TooLarge, _))));
    }

    #[test]
    fn cr_lf_and_crlf_all_end_lines() {
        for eol in ["\r", "\n", "\r\n"] {
            let text = [FIRST, "", LAST, "", "data: [DONE]", ""].join(eol);
            for size in [1, 2, 7] {
                let (r, _) = assemble_in(text.as_bytes(), size).ok().unwrap();
                assert_eq!(
                    r.choices[0].content, "first last",
                    "{eol:?} in pieces of {size}"
                );
            }
        }
    }
}
