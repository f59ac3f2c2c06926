//! `gpassk view` as something on a developer's laptop that web pages and other local programs can
//! reach: only loopback Host names (and its own `--host`) answered, a non-loopback address only
//! with `--allow-remote` and a warning, caches that no request can grow past their bounds,
//! half-sent and idle connections dropped, a slowloris that cannot lock real requests out even
//! when descriptors run short, and a burst of requests built by a few threads.

use crate::common::{gpassk, stderr};
use crate::report_html::two_weeks;
use crate::view::serve;
use gpassk::view::{data, ViewError, Viewer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Sends `request` as written and reads the reply to its end: status and body.
fn raw(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let text = String::from_utf8_lossy(&reply).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok());
    (status.unwrap_or(0), text)
}

fn get_with_host(addr: &str, host: &str) -> (u16, String) {
    raw(
        addr,
        &format!("GET /api/runs HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
}

fn name(run: &Path) -> String {
    run.file_name().unwrap().to_str().unwrap().to_string()
}

#[test]
fn only_loopback_host_names_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    two_weeks(dir.path());
    let s = serve(dir.path());
    let port = s.addr.rsplit(':').next().unwrap().to_string();
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "LOCALHOST".to_string(),
        "127.0.0.2".to_string(),
    ] {
        let (status, reply) = get_with_host(&s.addr, &host);
        assert_eq!(status, 200, "{host}: {reply}");
    }
    // A page on another site whose name was made to resolve here (DNS rebinding) sends its own.
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("0.0.0.0:{port}"),
    ] {
        let (status, reply) = get_with_host(&s.addr, &host);
        assert_eq!(status, 403, "{host}: {reply}");
        assert!(reply.contains("is not this viewer"), "{host}: {reply}");
        assert!(!reply.contains("Llama"), "{host}: no run data: {reply}");
    }
    let (status, _) = raw(&s.addr, "GET /api/runs HTTP/1.0\r\n\r\n");
    assert_eq!(status, 403, "no Host at all");
    let (status, reply) = raw(
        &s.addr,
        &format!(
            "POST /api/runs HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Length: 3\r\n\r\nabc"
        ),
    );
    assert_eq!(status, 400, "a body: {reply}");
}

/// Runs `command` to its end; a command still running after 30 s (serving) is killed, and the
/// test fails.
fn exited(command: &mut std::process::Command) -> std::process::Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} is still running: it serves");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_non_loopback_address_needs_allow_remote_and_a_warning_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    two_weeks(dir.path());
    let folder = dir.path().to_str().unwrap();
    for host in ["0.0.0.0", "192.0.2.1", "::"] {
        let out = exited(gpassk().args(["view", folder, "--port", "0", "--host", host]));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{host}: {err}");
        assert!(err.contains("not a loopback address"), "{host}: {err}");
        assert!(err.contains("--allow-remote"), "{host}: {err}");
        assert!(out.stdout.is_empty(), "{host}: nothing served");
    }
    // 192.0.2.1 (TEST-NET-1) is on no interface here: the warning is said, then the bind fails,
    // so this test never listens beyond loopback.
    let out = exited(
        gpassk()
            .args(["view", folder, "--port", "0", "--host", "192.0.2.1"])
            .arg("--allow-remote"),
    );
    let err = stderr(&out);
    assert!(
        err.contains("warning: --allow-remote: serving") && err.contains("without a password"),
        "{err}"
    );
    let warned = err.find("warning:").unwrap();
    let failed = err.find("cannot listen").expect("the bind fails here");
    assert!(warned < failed, "{err}");
    let out = gpassk()
        .args(["view", folder, "--port", "0", "--host", "localhost"])
        .arg("--help")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--allow-remote"));
}

#[test]
fn a_new_model_name_per_request_adds_nothing_to_the_caches() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    let viewer = Viewer::new(dir.path()).unwrap();
    let run = name(&b);
    data::problem_view(&viewer, &run, "p0").unwrap();
    let before = viewer.cached();
    assert!(before.indexes >= 6, "{before:?}");
    for i in 0..3000 {
        let model = format!("m{i}-{}", "x".repeat(200));
        let tree = data::tree_text(&viewer, &run, (&model, "p0", "0"));
        assert!(matches!(tree, Err(ViewError::NotFound(_))), "{tree:?}");
        let samples = data::problem_view(&viewer, &run, "p1").unwrap();
        assert!(!samples.models.is_empty());
    }
    assert_eq!(viewer.cached(), before);
}

#[test]
fn the_runs_kept_are_bounded_by_count_and_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_weeks(dir.path());
    let mut runs = vec![name(&a), name(&b)];
    for i in 0..3 {
        let copy = dir.path().join(format!("{}-copy{i}", name(&b)));
        crate::common::copy_dir(&b, &copy);
        runs.push(name(&copy));
    }
    let by_count = Viewer::new(dir.path())
        .unwrap()
        .with_cache_limits(2, u64::MAX);
    for run in &runs {
        data::run_view(&by_count, run).unwrap();
        assert!(by_count.cached().runs <= 2, "{:?}", by_count.cached());
    }
    // The run asked for last is the one kept: pages of it are answered from memory.
    let last = by_count.cached();
    assert!(last.bytes > 0, "{last:?}");
    let by_bytes = Viewer::new(dir.path()).unwrap().with_cache_limits(100, 1);
    for run in &runs {
        data::run_view(&by_bytes, run).unwrap();
        assert_eq!(by_bytes.cached().runs, 1, "{:?}", by_bytes.cached());
    }
}

/// Reads until the server closes `stream`; panics when it is still open after a minute.
fn closed_by_server(mut stream: TcpStream) {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut sink = Vec::new();
    match stream.read_to_end(&mut sink) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server kept the connection open: {e}"),
    }
}

#[test]
fn half_sent_requests_and_idle_connections_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    two_weeks(dir.path());
    let s = serve(dir.path());
    let mut half = TcpStream::connect(&s.addr).unwrap();
    half.write_all(b"GET /api/runs HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .unwrap();
    let mut idle = TcpStream::connect(&s.addr).unwrap();
    idle.write_all(b"GET /static/view.css HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let both = [half, idle].map(|c| std::thread::spawn(move || closed_by_server(c)));
    for t in both {
        t.join().unwrap();
    }
    assert_eq!(
        crate::view::get(&s, "/api/runs").status,
        200,
        "still serving"
    );
}

/// `gpassk view DIR` on a free loopback port (with at most `files` descriptors); its address.
/// The caller kills it.
fn spawn_view(dir: &Path, files: Option<u32>) -> (Child, String) {
    let mut command = std::process::Command::new("/usr/bin/prlimit");
    if let Some(files) = files {
        command.arg(format!("--nofile={files}:{files}"));
    }
    let mut child = command
        .arg("--")
        .arg(gpassk().get_program())
        .args(["view", dir.to_str().unwrap(), "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let at = line.find("http://").unwrap_or_else(|| panic!("{line:?}"));
    let addr = line[at + 7..].split('/').next().unwrap().to_string();
    (child, addr)
}

/// User and system CPU time of process `pid` so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn a_slowloris_on_few_descriptors_neither_stalls_real_requests_nor_spins() {
    let dir = tempfile::tempdir().unwrap();
    two_weeks(dir.path());
    let (mut child, addr) = spawn_view(dir.path(), Some(64));
    // More half-sent requests than the server has descriptors, each holding its connection.
    let to = addr.parse().unwrap();
    let slow: Vec<TcpStream> = (0..150)
        .filter_map(|_| {
            // A server that stopped accepting leaves connects waiting: those are given up.
            let mut c = TcpStream::connect_timeout(&to, Duration::from_secs(1)).ok()?;
            c.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                .ok()?;
            Some(c)
        })
        .collect();
    assert!(slow.len() > 64, "{} held", slow.len());
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(child.id()) - before;
    // 100 ticks a second: a loop retrying accept on every error took about 60 here.
    assert!(spent < 30, "{spent} ticks of CPU in 2 s while idle");
    // A real request is answered at once, well before the slow ones time out (10 s).
    let started = Instant::now();
    let mut real = TcpStream::connect_timeout(&to, Duration::from_secs(8)).unwrap();
    real.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    real.write_all(
        b"GET /static/view.css HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = Vec::new();
    let read = real.read_to_end(&mut reply);
    assert!(
        read.is_ok(),
        "no answer after {:?}: {read:?}",
        started.elapsed()
    );
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );
    drop(slow);
    let _ = child.kill();
    let _ = child.wait();
}

/// The threads of process `pid` now.
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("Threads:"));
    line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_burst_of_requests_is_built_by_a_few_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_weeks(dir.path());
    let (mut child, addr) = spawn_view(dir.path(), None);
    let pid = child.id();
    let target = format!("/run/{}/report", name(&b));
    let request = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(raw(&addr, &request).0, 200);
    let idle = threads(pid);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                most = most.max(threads(pid));
                std::thread::sleep(Duration::from_millis(5));
            }
            most
        })
    };
    let burst: Vec<_> = (0..120)
        .map(|_| {
            let (addr, request) = (addr.clone(), request.clone());
            std::thread::spawn(move || raw(&addr, &request).0)
        })
        .collect();
    for t in burst {
        assert_eq!(t.join().unwrap(), 200);
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let most = watch.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    // Two runtime threads and at most four building: a thread per request would be ~120.
    assert!(most <= idle + 4, "{most} threads at most (idle: {idle})");
}
