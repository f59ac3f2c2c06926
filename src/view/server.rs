//! The viewer's HTTP side: binding, the accept loop until shutdown, routing (each path segment
//! decoded once and refused when it could name another place), and the headers every reply
//! carries (a content security policy that allows only the viewer's own files).

use super::data::{compare_view, problem_view, problems_view, run_view, tree_text};
use super::{page, ViewError, Viewer};
use crate::util::Shutdown;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::sync::Arc;

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

/// Serves `viewer` on `listener` until `shutdown` fires; connections in flight are dropped.
pub fn serve(
    viewer: Viewer,
    listener: std::net::TcpListener,
    shutdown: &Shutdown,
) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("view")
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let viewer = Arc::new(viewer);
    rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Runtime)?;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = shutdown.triggered() => return Ok(()),
            };
            let Ok((stream, _)) = accepted else { continue };
            let viewer = viewer.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| handle(viewer.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

async fn handle(
    viewer: Arc<Viewer>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (method, target) = (req.method().clone(), req.uri().to_string());
    let reply = tokio::task::spawn_blocking(move || route(&viewer, &method, &target))
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
