//! `gpassk exec` and the code sandbox: network, host files, environment, fork bombs, runaway
//! loops and floods of output are all contained; a normal program's output comes back.

use crate::common::{both, gpassk, ok, stderr, stdout};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// True when bwrap can run here; its absence fails the test loudly (CI installs bubblewrap), so a
/// machine without a sandbox never reads as a passing one.
fn sandbox_available() -> bool {
    if let Err(e) = gpassk::search::sandbox::Sandbox::detect() {
        panic!("this test needs the code sandbox (Debian package bubblewrap): {e}");
    }
    true
}

/// `gpassk exec` on `code` written to a temporary file, plus extra arguments.
fn exec(code: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prog.py");
    std::fs::write(&file, code).unwrap();
    gpassk()
        .arg("exec")
        .arg(&file)
        .args(args)
        .output()
        .expect("run gpassk exec")
}

#[test]
fn a_normal_program_prints_and_exits_0() {
    if !sandbox_available() {
        return;
    }
    let o = exec(
        "import os\nprint(sum(range(10)), os.getuid(), os.getcwd())\n",
        &[],
    );
    assert_eq!(ok(&o), "45 65534 /tmp\n");
    assert!(
        stderr(&o).contains("exec: exited with code 0"),
        "{}",
        both(&o)
    );
    let failing = exec("raise SystemExit(3)\n", &[]);
    assert_eq!(failing.status.code(), Some(1), "{}", both(&failing));
    assert!(stderr(&failing).contains("exited with code 3"));
}

#[test]
fn network_is_refused_even_to_host_loopback() {
    if !sandbox_available() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', type(e).__name__)\n"
    );
    let o = exec(&code, &[]);
    assert!(ok(&o).starts_with("refused"), "{}", both(&o));
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "the host listener got a connection"
    );
}

#[test]
fn host_files_are_neither_readable_nor_writable() {
    if !sandbox_available() {
        return;
    }
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, "host secret").unwrap();
    let planted = host.path().join("planted.txt");
    let code = format!(
        r#"import os
for path in [{secret:?}, "/root", "/etc/passwd"]:
    try:
        data = open(path).read() if not os.path.isdir(path) else os.listdir(path)
        print("READ", path, data)
    except OSError:
        print("denied read", path)
for path in [{planted:?}, "/usr/planted", "/planted", "/root/planted"]:
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError:
        print("denied write", path)
open("/tmp/scratch", "w").write("ok")
print("tmp", open("/tmp/scratch").read())
"#,
        secret = secret.display().to_string(),
        planted = planted.display().to_string(),
    );
    let o = exec(&code, &[]);
    let out = ok(&o);
    assert!(!out.contains("READ") && !out.contains("WROTE"), "{out}");
    assert_eq!(out.matches("denied").count(), 7, "{out}");
    assert!(out.ends_with("tmp ok\n"), "{out}");
    assert!(!planted.exists());
    assert!(!Path::new("/planted").exists() && !Path::new("/usr/planted").exists());
}

#[test]
fn the_environment_is_empty_but_for_a_minimal_path() {
    if !sandbox_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("env.py");
    std::fs::write(&file, "import os\nprint(sorted(os.environ))\n").unwrap();
    let o = gpassk()
        .arg("exec")
        .arg(&file)
        .env("GPASSK_TEST_SECRET", "hunter2")
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    let out = ok(&o);
    assert!(!out.contains("SECRET") && !out.contains("OPENAI"), "{out}");
    assert!(!both(&o).contains("hunter2") && !both(&o).contains("sk-test"));
    assert!(out.contains("'PATH'"), "{out}");
}

#[test]
fn a_fork_bomb_is_bounded_and_returns() {
    if !sandbox_available() {
        return;
    }
    let counted = "import os, time\nn = 0\ntry:\n    while n < 5000:\n        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('forks', n, type(e).__name__)\n";
    let o = exec(counted, &[]);
    let out = ok(&o);
    let forks: u64 = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(out.starts_with("forks") && forks < 32, "{out}");
    // The classic bomb: ends at the timeout, sleeping children and all.
    let start = Instant::now();
    let bomb = exec(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        &["--timeout", "1"],
    );
    assert_eq!(bomb.status.code(), Some(1), "{}", both(&bomb));
    assert!(stderr(&bomb).contains("timed out"), "{}", both(&bomb));
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn an_infinite_loop_is_killed_at_the_timeout() {
    if !sandbox_available() {
        return;
    }
    let o = exec(
        "print('started', flush=True)\nwhile True:\n    pass\n",
        &["--timeout", "0.5"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert_eq!(stdout(&o), "started\n");
    assert!(
        stderr(&o).contains("exec: timed out after 0.5 s"),
        "{}",
        both(&o)
    );
}

#[test]
fn huge_output_is_capped() {
    if !sandbox_available() {
        return;
    }
    let o = exec("while True:\n    print('y' * 1000)\n", &["--timeout", "30"]);
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(stdout(&o).len() <= 64 * 1024 + 100, "{}", stdout(&o).len());
    assert!(
        stderr(&o).contains("output passed 64 KiB"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let missing = gpassk().args(["exec", "no-such-file.py"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no-such-file.py"),
        "{}",
        both(&missing)
    );
    let timeout = exec("print(1)\n", &["--timeout", "-3"]);
    assert_eq!(timeout.status.code(), Some(2));
    assert!(
        stderr(&timeout).starts_with("error: --timeout:"),
        "{}",
        both(&timeout)
    );
    let no_bwrap = gpassk()
        .args(["exec", "Cargo.toml"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(no_bwrap.status.code(), Some(2), "{}", both(&no_bwrap));
    assert!(stderr(&no_bwrap).contains("bwrap"), "{}", both(&no_bwrap));
}

/// Four forked writers fill /tmp and /dev/shm until the kernel refuses; each stops by itself after
/// 40 MiB per place, so an unbounded sandbox costs the host a few hundred MiB, not gigabytes.
const FILL: &str = r#"
import errno, os
CHUNK = b"x" * (1 << 20)
def shmem():
    for line in open("/proc/meminfo"):
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * 1024
def fill(place, me):
    written, n, why = 0, 0, "cap"
    while written < (40 << 20) and why == "cap":
        try:
            fd = os.open(os.path.join(place, "w%d-%d" % (me, n)), os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError as e:
            why = errno.errorcode.get(e.errno, str(e.errno))
            break
        n += 1
        try:
            for _ in range(4):
                written += os.write(fd, CHUNK)
        except OSError as e:
            if e.errno != errno.EFBIG:
                why = errno.errorcode.get(e.errno, str(e.errno))
        os.close(fd)
    return written, why
before = shmem()
kids = []
for me in range(4):
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        out = ["%s %d %s" % ((place,) + fill(place, me)) for place in ("/tmp", "/dev/shm", "/dev")]
        os.write(w, ("\n".join(out) + "\n").encode())
        os._exit(0)
    os.close(w)
    kids.append(r)
for r in kids:
    data = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        data += b
    print(data.decode(), end="")
print("shmem-growth", shmem() - before)
for _ in kids:
    os.wait()
"#;

#[test]
fn tmp_and_dev_shm_are_bounded_tmpfs_even_for_forked_writers() {
    if !sandbox_available() {
        return;
    }
    let o = exec(FILL, &["--timeout", "60"]);
    let out = ok(&o);
    let (mut total, mut ends) = (0u64, Vec::new());
    for line in out.lines().filter(|l| !l.starts_with("shmem-growth")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "{out}");
        total += f[1].parse::<u64>().unwrap();
        ends.push((f[0].to_string(), f[2].to_string()));
    }
    assert_eq!(ends.len(), 12, "{out}");
    // 64 MiB of tmpfs in all: /tmp and /dev/shm fill up, /dev itself takes nothing.
    assert!(total <= 64 << 20, "wrote {total} bytes: {out}");
    // Four writers ask 160 MiB of each place, so each tmpfs must refuse someone; a writer the
    // scheduler ran first may reach its own 40 MiB cap before the place is full.
    for place in ["/tmp", "/dev/shm"] {
        let whys: Vec<&str> = ends
            .iter()
            .filter(|(p, _)| p == place)
            .map(|(_, w)| w.as_str())
            .collect();
        assert!(
            whys.iter().all(|w| *w == "ENOSPC" || *w == "cap"),
            "{place}: {out}"
        );
        assert!(whys.contains(&"ENOSPC"), "{place} never filled up: {out}");
    }
    let dev = ends.iter().filter(|(p, _)| p == "/dev");
    assert!(
        dev.clone().count() == 4 && dev.into_iter().all(|(_, w)| w == "EROFS"),
        "{out}"
    );
}
