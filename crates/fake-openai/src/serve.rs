//! HTTP side of the fake server: hyper connections, routing, faults and the replies around the
//! bodies `completion` and `pooling` render.

use crate::completion::render;
use crate::{Fault, Recorded, Reply, Shared};
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER,
};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Request heads larger than this are refused (431): no real client sends them.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Request bodies larger than this are refused (413) so hostile input cannot exhaust memory.
const MAX_BODY: usize = 64 * 1024 * 1024;

type HttpReply = Response<Either<Full<Bytes>, Events>>;

/// The service error that makes hyper close the connection without writing a response:
/// how [`Fault::Drop`] is expressed without a raw socket path.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by fault injection")]
pub(crate) struct DropConnection;

pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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

async fn serve_conn(stream: TcpStream, shared: Arc<Shared>) {
    // Replies are written in one call; Nagle would only add latency.
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req| handle(shared.clone(), req));
    // Errors (client gone, malformed request already answered by hyper, a dropped fault) only
    // end this connection.
    let _ = hyper::server::conn::http1::Builder::new()
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<HttpReply, DropConnection> {
    shared.hit(req.method().as_str(), req.uri().path());
    let chat = req.method() == Method::POST
        && matches!(
            req.uri().path(),
            "/v1/chat/completions" | "/chat/completions"
        );
    if chat {
        return chat_request(&shared, req).await;
    }
    let pooling =
        req.method() == Method::POST && matches!(req.uri().path(), "/pooling" | "/v1/pooling");
    if pooling {
        return pooling_request(&shared, req).await;
    }
    Ok(match (req.method(), req.uri().path()) {
        (&Method::GET, "/v1/models") => json_response(200, shared.models_body.clone()),
        (&Method::GET, "/health") => json_response(200, r#"{"status":"ok"}"#.into()),
        (&Method::POST, "/v1/files" | "/v1/batches") => batch_post(&shared, req).await,
        (&Method::GET, path)
            if path.starts_with("/v1/batches/") || path.starts_with("/v1/files/") =>
        {
            batch_get(&shared, path)
        }
        _ => error_response(404, "not found"),
    })
}

/// `POST /v1/files` (multipart upload) and `POST /v1/batches` (create).
async fn batch_post(shared: &Shared, req: Request<Incoming>) -> HttpReply {
    let path = req.uri().path().to_string();
    let content_type = header(&req, CONTENT_TYPE);
    let body = match bounded_body(req).await {
        Ok(body) => body,
        Err(resp) => return resp,
    };
    let result = if path == "/v1/files" {
        crate::batch::upload(shared, content_type.as_deref(), &body)
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) => crate::batch::create(shared, &v),
            Err(e) => Err((400, format!("request body is not valid JSON: {e}"))),
        }
    };
    match result {
        Ok(v) => json_response(200, v.to_string()),
        Err((code, message)) => error_response(code, &message),
    }
}

/// `GET /v1/batches/{id}` and `GET /v1/files/{id}/content`.
fn batch_get(shared: &Shared, path: &str) -> HttpReply {
    if let Some(id) = path.strip_prefix("/v1/batches/") {
        return match crate::batch::get(shared, id) {
            Ok(v) => json_response(200, v.to_string()),
            Err((code, message)) => error_response(code, &message),
        };
    }
    let id = path
        .strip_prefix("/v1/files/")
        .and_then(|rest| rest.strip_suffix("/content"));
    match id.and_then(|id| shared.store().file(id).map(<[u8]>::to_vec)) {
        Some(bytes) => {
            let mut resp = Response::new(Either::Left(Full::new(Bytes::from(bytes))));
            resp.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            resp
        }
        None => error_response(404, "no such file"),
    }
}

/// A request header's value, when it is text.
fn header(req: &Request<Incoming>, name: hyper::header::HeaderName) -> Option<String> {
    let value = req.headers().get(name)?.to_str().ok()?;
    Some(value.to_string())
}

/// The whole body, at most `MAX_BODY` bytes; else the 413 to send (the client went away mid-body,
/// or a chunked body went over the limit).
async fn bounded_body(req: Request<Incoming>) -> Result<Bytes, HttpReply> {
    match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(_) => Err(closing(error_response(413, "request body too large"))),
    }
}

/// Reads a JSON body (bounded) and records it; `Err` is the 413 or 400 to send instead.
async fn read_recorded(
    shared: &Shared,
    req: Request<Incoming>,
) -> Result<Arc<Recorded>, HttpReply> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY as u64) {
        return Err(closing(error_response(413, "request body too large")));
    }
    let path = req.uri().path().to_string();
    let authorization = header(&req, AUTHORIZATION);
    let body = bounded_body(req).await?;
    match serde_json::from_slice(&body) {
        Ok(json) => Ok(shared.record(&path, authorization, json)),
        Err(e) => Err(error_response(
            400,
            &format!("request body is not valid JSON: {e}"),
        )),
    }
}

async fn chat_request(
    shared: &Shared,
    req: Request<Incoming>,
) -> Result<HttpReply, DropConnection> {
    let rec = match read_recorded(shared, req).await {
        Ok(rec) => rec,
        Err(resp) => return Ok(resp),
    };
    let full = || render(&rec, &(shared.responder)(&rec));
    let normal = || {
        if rec.streamed() {
            sse_response(crate::sse::events(&full(), include_usage(&rec)), false)
        } else {
            json_response(200, full().to_string())
        }
    };
    let fault = (shared.faults)(&rec);
    if rec.streamed() {
        if let Some(reply) = stream_fault(fault.as_ref(), full, include_usage(&rec)) {
            return Ok(reply);
        }
    }
    let torn = format!(
        r#"{{"id":"chatcmpl-{}","object":"chat.completion","choices":[{{"index":0,"#,
        rec.seq
    );
    let empty = || json_response(200, render(&rec, &Reply::default()).to_string());
    faulted(fault, normal, || full().to_string(), torn, empty).await
}

/// The reply to a streamed request under a fault only streams have; None for other faults.
/// `full` renders the normal reply, and only for these faults (responders may count calls).
fn stream_fault(
    fault: Option<&Fault>,
    full: impl Fn() -> Value,
    include_usage: bool,
) -> Option<HttpReply> {
    let events = |parts: Vec<String>| parts.into_iter().map(Bytes::from).collect();
    let body = match fault? {
        Fault::StreamCut => Events::cut(events(crate::sse::cut(&full()))),
        Fault::MalformedChunk => Events::of(events(crate::sse::malformed(&full()))),
        Fault::HoldAfterDone => Events::held(events(crate::sse::events(&full(), include_usage))),
        Fault::DoneUnfinished => Events::of(events(crate::sse::unfinished(&full()))),
        Fault::LeadingBom => Events::of(
            crate::sse::bom_led(&full(), include_usage)
                .into_iter()
                .map(Bytes::from)
                .collect(),
        ),
        _ => return None,
    };
    Some(body_response(body, "text/event-stream"))
}

/// The reply `fault` asks for, chat and pooling alike: `normal` is the reply without a fault,
/// `plain` its body as JSON, `torn` a body cut mid-JSON, `empty` a reply without items.
async fn faulted(
    fault: Option<Fault>,
    normal: impl Fn() -> HttpReply,
    plain: impl FnOnce() -> String,
    torn: String,
    empty: impl FnOnce() -> HttpReply,
) -> Result<HttpReply, DropConnection> {
    Ok(match fault {
        None | Some(Fault::HoldAfterDone | Fault::DoneUnfinished | Fault::LeadingBom) => normal(),
        Some(Fault::Status {
            code,
            body,
            retry_after,
        }) => status_reply(code, body, retry_after),
        Some(Fault::Hang(d)) => {
            tokio::time::sleep(d).await;
            normal()
        }
        Some(Fault::Drop | Fault::StreamCut) => return Err(DropConnection),
        Some(Fault::MalformedJson | Fault::MalformedChunk) => json_response(200, torn),
        Some(Fault::EmptyChoices) => empty(),
        Some(Fault::Trickle(every)) => body_response(Events::trickle(every), "text/event-stream"),
        Some(Fault::TrickleJson(every)) => body_response(
            Events::paced(Bytes::from(plain()), every),
            "application/json",
        ),
    })
}

/// `POST /pooling` (and `/v1/pooling`): the fault policy first, then the body's check and the
/// pooling responder's rows. Stream faults drop (cut) or truncate (bad chunk) the reply.
async fn pooling_request(
    shared: &Shared,
    req: Request<Incoming>,
) -> Result<HttpReply, DropConnection> {
    let rec = match read_recorded(shared, req).await {
        Ok(rec) => rec,
        Err(resp) => return Ok(resp),
    };
    let normal = |rec: &Recorded| match crate::pooling::check(&rec.body) {
        Ok(()) => {
            let rows = (shared.pooling)(rec);
            json_response(200, crate::pooling::render(rec, rows).to_string())
        }
        Err(message) => error_response(400, &message),
    };
    let plain = || crate::pooling::render(&rec, (shared.pooling)(&rec)).to_string();
    let torn = format!(
        r#"{{"id":"pool-{}","object":"list","data":[{{"index":0,"#,
        rec.seq
    );
    // The pooling analogue of no choices: a list without any item.
    let empty = || {
        let mut full = crate::pooling::render(&rec, Value::Array(Vec::new()));
        full["data"] = Value::Array(Vec::new());
        json_response(200, full.to_string())
    };
    faulted((shared.faults)(&rec), || normal(&rec), plain, torn, empty).await
}

/// A status fault's reply, with its `Retry-After` when it has one.
fn status_reply(code: u16, body: String, retry_after: Option<String>) -> HttpReply {
    let mut resp = json_response(code, body);
    if let Some(v) = retry_after.and_then(|v| HeaderValue::try_from(v).ok()) {
        resp.headers_mut().insert(RETRY_AFTER, v);
    }
    resp
}

/// `stream_options.include_usage` of a streamed request.
fn include_usage(rec: &Recorded) -> bool {
    rec.body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
}

/// A 200 `text/event-stream` reply of these events; with `cut`, the connection drops after them.
fn sse_response(events: Vec<String>, cut: bool) -> HttpReply {
    let parts = events.into_iter().map(Bytes::from).collect();
    let body = if cut {
        Events::cut(parts)
    } else {
        Events::of(parts)
    };
    body_response(body, "text/event-stream")
}

/// A 200 reply of this content type whose body is sent step by step.
fn body_response(body: Events, content_type: &'static str) -> HttpReply {
    let mut resp = Response::new(Either::Right(body));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// One step of a body sent over time.
enum Step {
    Data(Bytes),
    Pause(Duration),
    /// End in an error: hyper drops the connection without the closing chunk (a cut).
    Fail,
}

/// How long a held connection stays open: longer than any test waits.
const HOLD: Duration = Duration::from_secs(3600);

/// A chunked body sent step by step: events, pauses, a cut; `repeat` is sent once per interval
/// after the steps, forever.
pub(crate) struct Events {
    steps: std::collections::VecDeque<Step>,
    repeat: Option<(Bytes, Duration)>,
    sleeping: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Events {
    /// These parts, then the end of the body.
    fn of(parts: Vec<Bytes>) -> Events {
        Events {
            steps: parts.into_iter().map(Step::Data).collect(),
            repeat: None,
            sleeping: None,
        }
    }

    /// These parts, then a cut; it waits a moment so the parts are flushed to the client first.
    fn cut(parts: Vec<Bytes>) -> Events {
        let mut body = Events::of(parts);
        body.steps.push_back(Step::Pause(Duration::from_millis(20)));
        body.steps.push_back(Step::Fail);
        body
    }

    /// These parts, then the connection stays open without the body ending (for [`HOLD`]).
    fn held(parts: Vec<Bytes>) -> Events {
        let mut body = Events::of(parts);
        body.steps.push_back(Step::Pause(HOLD));
        body
    }

    /// A `:` keep-alive comment per interval, forever.
    fn trickle(every: Duration) -> Events {
        let mut body = Events::of(Vec::new());
        body.repeat = Some((Bytes::from_static(b":\n"), every));
        body
    }

    /// `bytes` one byte per interval.
    fn paced(bytes: Bytes, every: Duration) -> Events {
        let steps = (0..bytes.len())
            .flat_map(|i| [Step::Pause(every), Step::Data(bytes.slice(i..i + 1))])
            .collect();
        Events {
            steps,
            repeat: None,
            sleeping: None,
        }
    }
}

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = DropConnection;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, DropConnection>>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if let Some(sleep) = this.sleeping.as_mut() {
                std::task::ready!(sleep.as_mut().poll(cx));
                this.sleeping = None;
            }
            if let (true, Some((part, every))) = (this.steps.is_empty(), &this.repeat) {
                this.steps.push_back(Step::Pause(*every));
                this.steps.push_back(Step::Data(part.clone()));
            }
            match this.steps.pop_front() {
                None => return Poll::Ready(None),
                Some(Step::Data(b)) => return Poll::Ready(Some(Ok(hyper::body::Frame::data(b)))),
                Some(Step::Pause(d)) => this.sleeping = Some(Box::pin(tokio::time::sleep(d))),
                Some(Step::Fail) => return Poll::Ready(Some(Err(DropConnection))),
            }
        }
    }
}

fn json_response(status: u16, body: String) -> HttpReply {
    let mut resp = Response::new(Either::Left(Full::new(Bytes::from(body))));
    // Fault codes come from test code; an impossible one is a 500 rather than a panic.
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn error_response(status: u16, message: &str) -> HttpReply {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    json_response(status, body.to_string())
}

/// Marks a reply as the connection's last: the request body may be left unread.
fn closing(mut resp: HttpReply) -> HttpReply {
    resp.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    resp
}
