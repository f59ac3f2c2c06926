//! The viewer's HTTP side: binding, the accept loop until shutdown with its bounds (connections,
//! head size and time, connection lifetime, answers built at once), the Host names it answers to
//! (loopback and its own `--host`: a DNS-rebound page is refused), routing (each path segment
//! decoded once and refused when it could name another place), and the headers every reply
//! carries (a content security policy that allows only the viewer's own files).

use super::data::{compare_view, problem_view, problems_view, run_view, tree_text};
use super::{page, ViewError, Viewer};
use crate::util::Shutdown;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, CACHE_CONTROL, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, TRANSFER_ENCODING,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("the server's runtime: {0}")]
    Runtime(std::io::Error),
}

const CSS: &str = include_str!("assets/view.css");
const JS: &str = include_str!("assets/view.js");
/// The pages' policy: nothing but the viewer's own script, style and images, no inline script.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
                   frame-ancestors 'none'";
/// The stored report: its own inline style, no script at all.
const REPORT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                          base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/// Longest request target read.
const MAX_TARGET: usize = 8 << 10;

/// Binds `host:port` (port 0: any free port).
pub fn bind(host: &str, port: u16) -> Result<std::net::TcpListener, ServeError> {
    let addr = format!("{host}:{port}");
    let bind = |source| ServeError::Bind {
        addr: addr.clone(),
        source,
    };
    let listener = std::net::TcpListener::bind(&addr).map_err(bind)?;
    listener.set_nonblocking(true).map_err(bind)?;
    Ok(listener)
}

/// Whether every address `host` names is a loopback one (127.0.0.0/8, ::1): the pages stay on
/// this machine. A name that does not resolve is not.
pub fn is_loopback(host: &str) -> bool {
    use std::net::ToSocketAddrs;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match (host, 0).to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<_> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// How long a client may take to send a request's head, or leave a kept-alive connection idle.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a connection lives, whatever it does (a client that never reads its answer).
const LIFETIME: Duration = Duration::from_secs(120);
/// Threads building answers at once: pages of a big run take memory while they are built, so a
/// burst of requests waits here instead of building hundreds at once.
const WORKERS: usize = 4;
/// The largest request head read (the target is at most [`MAX_TARGET`]).
const MAX_HEAD: usize = 64 << 10;
/// Descriptors kept free of connections for the files a request reads.
const SPARE_FILES: usize = 64;
/// Connections open at once at most (fewer when the descriptor limit is low).
const MAX_CONNECTIONS: usize = 512;

/// The connections open at once: below the process's descriptor limit, so a flood of them
/// never leaves none for the files an answer reads.
fn max_connections() -> usize {
    // "Max open files  1024  1048576  files": the soft limit is the fourth word.
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        })
        .unwrap_or(1024);
    soft.saturating_sub(SPARE_FILES).clamp(4, MAX_CONNECTIONS)
}

/// What the server checks of every request: the names it answers to.
pub struct Served {
    /// The `--host` given, as a Host header names it (lowercase, IPv6 without brackets).
    pub host: String,
}

impl Served {
    pub fn new(host: &str) -> Served {
        Served {
            host: host_name(host),
        }
    }

    /// Whether a request's Host header names this viewer: a loopback name (`localhost`,
    /// 127.0.0.0/8, `::1`) or the host it was started with. A page on another site that had its
    /// name resolve here (DNS rebinding) sends its own name, and is refused.
    pub fn accepts(&self, header: &str) -> bool {
        let name = host_name(header);
        let loopback = name == "localhost"
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        loopback || (!name.is_empty() && name == self.host)
    }
}

/// The host part of a Host header or `--host` (`name`, `name:port`, `[v6]`, `[v6]:port`),
/// lowercase, without brackets or port.
fn host_name(text: &str) -> String {
    let text = text.trim();
    let name = if let Some(rest) = text.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else if text.matches(':').count() == 1 {
        text.split(':').next().unwrap_or_default()
    } else {
        text // a bare IPv6 address (`--host ::1`) or a name
    };
    name.to_ascii_lowercase()
}

/// One open connection: whether it is answering a request, and how it is told to close.
#[derive(Default)]
struct Conn {
    busy: std::sync::atomic::AtomicUsize,
    close: tokio::sync::Notify,
}

/// The open connections by age; a full house closes the oldest one not answering a request (a
/// slow or idle client), so clients that hold connections cannot lock others out.
#[derive(Default)]
struct Open {
    next: u64,
    conns: std::collections::BTreeMap<u64, Arc<Conn>>,
}

impl Open {
    fn add(&mut self) -> (u64, Arc<Conn>) {
        self.next += 1;
        let conn = Arc::new(Conn::default());
        self.conns.insert(self.next, conn.clone());
        (self.next, conn)
    }

    /// Tells the oldest idle connection to close; false when every one is answering.
    fn close_oldest_idle(&mut self) -> bool {
        use std::sync::atomic::Ordering;
        let idle = (self.conns.iter()).find(|(_, c)| c.busy.load(Ordering::SeqCst) == 0);
        let Some((&id, conn)) = idle else {
            return false;
        };
        conn.close.notify_one();
        self.conns.remove(&id);
        true
    }
}

/// Serves `viewer` on `listener` until `shutdown` fires; connections in flight are dropped.
/// Bounded whatever clients do: connections (oldest idle closed first when full), request heads
/// (size and time), connection lifetime, and the answers built at once.
pub fn serve(
    viewer: Viewer,
    served: Served,
    listener: std::net::TcpListener,
    shutdown: &Shutdown,
) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(WORKERS)
        .thread_name("view")
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let ctx = Arc::new((viewer, served));
    let open = Arc::new(std::sync::Mutex::new(Open::default()));
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections()));
    rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Runtime)?;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = shutdown.triggered() => return Ok(()),
            };
            let Ok((stream, _)) = accepted else {
                // Out of descriptors (or a connection reset before it was taken): wait for some
                // to close instead of spinning on the error.
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    () = shutdown.triggered() => return Ok(()),
                }
            };
            let permit = match slots.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => {
                    super::lock(&open).close_oldest_idle();
                    tokio::select! {
                        p = slots.clone().acquire_owned() => p.expect("the semaphore stays open"),
                        () = shutdown.triggered() => return Ok(()),
                    }
                }
            };
            let (id, conn) = super::lock(&open).add();
            let (ctx, open) = (ctx.clone(), open.clone());
            tokio::spawn(async move {
                let _permit = permit;
                connection(ctx, conn, stream).await;
                super::lock(&open).conns.remove(&id);
            });
        }
    })
}

/// Serves one connection until it ends, times out, lives too long or is told to close.
async fn connection(ctx: Arc<(Viewer, Served)>, conn: Arc<Conn>, stream: tokio::net::TcpStream) {
    let state = conn.clone();
    let service = hyper::service::service_fn(move |req| handle(ctx.clone(), state.clone(), req));
    let serving = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = tokio::time::timeout(LIFETIME, serving) => {}
        () = conn.close.notified() => {}
    }
}

/// Counts a connection busy while its request is answered.
struct Busy(Arc<Conn>);

impl Busy {
    fn new(conn: Arc<Conn>) -> Busy {
        conn.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Busy(conn)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0
            .busy
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn handle(
    ctx: Arc<(Viewer, Served)>,
    conn: Arc<Conn>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let _busy = Busy::new(conn);
    let host = req.headers().get(HOST).and_then(|h| h.to_str().ok());
    let host = host.or_else(|| req.uri().authority().map(|a| a.as_str()));
    if !host.is_some_and(|h| ctx.1.accepts(h)) {
        let shown = crate::util::printable(host.unwrap_or("none")).into_owned();
        let message = format!(
            "Host {shown:?} is not this viewer: it answers to localhost, 127.0.0.1 and [::1] \
             (and the --host it was started with)"
        );
        return Ok(Reply::error(403, &message).closing());
    }
    let has_body = req.headers().get(CONTENT_LENGTH).is_some_and(|v| v != "0")
        || req.headers().contains_key(TRANSFER_ENCODING);
    if has_body {
        return Ok(Reply::error(400, "the viewer only reads: a request has no body").closing());
    }
    let (method, target) = (req.method().clone(), req.uri().to_string());
    let reply = tokio::task::spawn_blocking(move || route(&ctx.0, &method, &target))
        .await
        .unwrap_or_else(|_| Reply::error(500, "the request failed"));
    Ok(reply.into_response())
}

/// One answer before it becomes a response.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    csp: &'static str,
}

impl Reply {
    fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: body.into_bytes(),
            csp: CSP,
        }
    }

    fn json<T: serde::Serialize>(value: &T) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: serde_json::to_vec(value).unwrap_or_default(),
            csp: CSP,
        }
    }

    fn error(status: u16, message: &str) -> Reply {
        Reply {
            status,
            ..Reply::html(page::error(status, message))
        }
    }

    /// The response, and the connection closed after it.
    fn closing(self) -> Response<Full<Bytes>> {
        let mut resp = self.into_response();
        resp.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        resp
    }

    fn into_response(self) -> Response<Full<Bytes>> {
        let mut resp = Response::new(Full::new(Bytes::from(self.body)));
        *resp.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let h = resp.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        h.insert(
            "content-security-policy",
            HeaderValue::from_static(self.csp),
        );
        h.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        resp
    }
}

impl From<ViewError> for Reply {
    fn from(e: ViewError) -> Reply {
        let status = match e {
            ViewError::NotFound(_) => 404,
            ViewError::BadRequest(_) => 400,
            ViewError::Run(_) => 500,
        };
        Reply::error(status, &e.to_string())
    }
}

/// `%XX` decoded (and `+` as a space in queries); None when not valid UTF-8 or a bad escape.
fn decode(s: &str, plus: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The path's segments, decoded; a segment that decodes to a separator, `.` or `..` is refused.
fn segments(path: &str) -> Result<Vec<String>, ViewError> {
    let bad = |s: &str| ViewError::BadRequest(format!("path segment {s:?}"));
    let mut out = Vec::new();
    for raw in path.split('/').filter(|s| !s.is_empty()) {
        let s = decode(raw, false).ok_or_else(|| bad(raw))?;
        if s == "." || s == ".." || s.contains(['/', '\\', '\0']) {
            return Err(bad(raw));
        }
        out.push(s);
    }
    Ok(out)
}

fn query(q: &str) -> Result<HashMap<String, String>, ViewError> {
    let mut out = HashMap::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || ViewError::BadRequest(format!("query {pair:?}"));
        out.insert(
            decode(k, true).ok_or_else(bad)?,
            decode(v, true).ok_or_else(bad)?,
        );
    }
    Ok(out)
}

/// Answers one request (a GET of `target`).
pub fn route(viewer: &Viewer, method: &Method, target: &str) -> Reply {
    if method != Method::GET && method != Method::HEAD {
        return Reply::error(405, "the viewer only reads");
    }
    if target.len() > MAX_TARGET {
        return Reply::error(414, "request target too long");
    }
    let (path, q) = target.split_once('?').unwrap_or((target, ""));
    let parsed = segments(path).and_then(|s| Ok((s, query(q)?)));
    match parsed.and_then(|(s, q)| dispatch(viewer, &s, &q)) {
        Ok(reply) => reply,
        Err(e) => e.into(),
    }
}

fn param<'a>(q: &'a HashMap<String, String>, key: &str) -> Result<&'a str, ViewError> {
    q.get(key)
        .map(String::as_str)
        .ok_or_else(|| ViewError::BadRequest(format!("missing ?{key}=")))
}

fn dispatch(
    viewer: &Viewer,
    s: &[String],
    q: &HashMap<String, String>,
) -> Result<Reply, ViewError> {
    let s: Vec<&str> = s.iter().map(String::as_str).collect();
    Ok(match s.as_slice() {
        [] => Reply::html(page::runs(&viewer.runs_view())),
        ["static", "view.css"] => asset("text/css; charset=utf-8", CSS),
        ["static", "view.js"] => asset("text/javascript; charset=utf-8", JS),
        ["run", name] => Reply::html(page::run(&run_view(viewer, name)?)),
        ["run", name, "problems"] => {
            let focus = page::Focus {
                model: q.get("model").map(String::as_str),
                metric: q.get("metric").map(String::as_str),
            };
            Reply::html(page::problems(&problems_view(viewer, name)?, focus))
        }
        ["run", name, "problem"] => {
            let view = problem_view(viewer, name, param(q, "id")?)?;
            let source = q.get("math").is_some_and(|m| m == "source");
            let model = q.get("model").map(String::as_str);
            Reply::html(page::problem(&view, model, source))
        }
        ["run", name, "report"] => report(viewer, name)?,
        ["run", name, "tree"] => tree(viewer, name, q)?,
        ["compare"] => Reply::html(page::compare(&compare_view(
            viewer,
            param(q, "a")?,
            param(q, "b")?,
        )?)),
        ["api", rest @ ..] => api(viewer, rest, q)?,
        _ => return Err(ViewError::NotFound("no such page".into())),
    })
}

fn api(viewer: &Viewer, s: &[&str], q: &HashMap<String, String>) -> Result<Reply, ViewError> {
    Ok(match s {
        ["runs"] => Reply::json(&*viewer.runs_view()),
        ["run", name] => Reply::json(&run_view(viewer, name)?),
        ["run", name, "problems"] => Reply::json(&problems_view(viewer, name)?),
        ["run", name, "problem"] => Reply::json(&problem_view(viewer, name, param(q, "id")?)?),
        ["compare"] => Reply::json(&compare_view(viewer, param(q, "a")?, param(q, "b")?)?),
        ["stamp"] => Reply::json(&viewer.stamp(q.get("run").map(String::as_str))?),
        _ => return Err(ViewError::NotFound("no such API route".into())),
    })
}

fn asset(content_type: &'static str, text: &'static str) -> Reply {
    Reply {
        content_type,
        ..Reply::html(text.to_string())
    }
}

/// The run's HTML report, rendered now from its current samples.
fn report(viewer: &Viewer, name: &str) -> Result<Reply, ViewError> {
    use crate::report::Exporter;
    let (_, results) = viewer.results(name)?;
    let bytes = crate::report::HtmlReport
        .export(&results)
        .map_err(|e| ViewError::Run(e.to_string()))?;
    Ok(Reply {
        body: bytes,
        csp: REPORT_CSP,
        ..Reply::html(String::new())
    })
}

fn tree(viewer: &Viewer, name: &str, q: &HashMap<String, String>) -> Result<Reply, ViewError> {
    let (model, id, index) = (param(q, "model")?, param(q, "id")?, param(q, "index")?);
    let text = tree_text(viewer, name, (model, id, index))?;
    let what = format!("{model} · problem {id} · search {index}");
    Ok(Reply::html(page::tree(name, &what, &text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_that_could_name_another_place_are_refused() {
        assert_eq!(
            segments("/run/a%20b/problems").unwrap(),
            ["run", "a b", "problems"]
        );
        for bad in [
            "/run/..",
            "/run/%2e%2E",
            "/run/a%2fb",
            "/run/a%5Cb",
            "/x/%00",
            "/%zz",
            "/%c3",
        ] {
            assert!(segments(bad).is_err(), "{bad}");
        }
        let q = query("id=a%2Fb+c&model=m").unwrap();
        assert_eq!(q["id"], "a/b c", "a query value is data, not a path");
    }
}
