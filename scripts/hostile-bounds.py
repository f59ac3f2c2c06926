#!/usr/bin/env python3
"""Measures what hostile clients and inputs cost gpassk, side by side for each binary given.

- model flood: 60,000 requests of the viewer's tree route, each with a model= value of its own
  (200 characters): the viewer's RSS before and after.
- burst: 500 concurrent requests of a run's HTML report: the viewer's peak RSS and its RSS 5 s
  after the burst, and its most threads.
- slowloris: the viewer under `prlimit --nofile=64`, 200 half-sent requests held open: its CPU
  over 3 s (a loop spinning on accept errors shows here), how long a real request then takes, and
  and, apart, how long a half-sent request is kept.
- import batch: `gpassk run --import-batch` of a 2 GiB file of NUL bytes (sparse): peak RSS
  before the refusal (GNU time).

The viewer serves a run written here: PROBLEMS problems x 16 samples x 2 models, built from
tests/fixtures/report_run's manifest and records.

Usage: scripts/hostile-bounds.py [--problems 2000] [--quick] GPASSK_BINARY...
(build a before binary with `git stash; cargo build; cp target/debug/gpassk /tmp/before`).
"""
import argparse, hashlib, http.client, json, os, re, shutil, socket, subprocess, sys, tempfile
import threading, time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(REPO, "tests/fixtures/report_run")
N = 16
MODELS = ["alpha", "beta"]


def write_run(root, problems):
    """A results folder holding one run, `big-run`; returns the folder."""
    data = os.path.join(root, "big.jsonl")
    with open(data, "w") as f:
        for i in range(problems):
            f.write(json.dumps({"id": f"p{i}", "question": f"What is {i}+1?", "answer": str(i + 1)}) + "\n")
    sha = hashlib.sha256(open(data, "rb").read()).hexdigest()
    results = os.path.join(root, "results")
    run = os.path.join(results, "big-run")
    os.makedirs(os.path.join(run, "checkpoints"))
    m = json.load(open(os.path.join(FIXTURE, "manifest.json")))
    m["dataset"] = {"name": data, "files": [data], "sha256": sha, "problems": problems, "limit": None}
    ev = m["config"]["evaluation"]
    ev["dataset"] = data
    ev["fields"] = {"id": "id"}
    ev.pop("metrics", None)
    m["config"]["sampling"]["n"] = N
    m["config"]["sampling"]["greedy"] = False
    m["config"]["models"] = [{"name": n, "model_id": n} for n in MODELS]
    template = m["models"]["alpha"]
    m["models"] = {}
    record = json.loads(open(os.path.join(FIXTURE, "checkpoints/alpha.jsonl")).readline())
    for name in MODELS:
        e = json.loads(json.dumps(template))
        e["model_id"] = name
        e["sampling"]["n"] = N
        m["models"][name] = e
        with open(os.path.join(run, f"checkpoints/{name}.jsonl"), "w") as f:
            for i in range(problems):
                for s in range(N):
                    r = dict(record, model=name, problem_id=f"p{i}", sample_index=s)
                    answer = i + 1 if (i + s) % 3 == 0 else i
                    r["response"] = f"Adding one gives {answer}. The final answer is $\\boxed{{{answer}}}$."
                    f.write(json.dumps(r) + "\n")
    json.dump(m, open(os.path.join(run, "manifest.json"), "w"))
    return results


def status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def mb(kb):
    return f"{kb / 1024:.0f} MB"


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class Viewer:
    def __init__(self, binary, folder, files=None):
        cmd = [binary, "view", folder, "--port", "0"]
        if files:
            cmd = ["prlimit", f"--nofile={files}:{files}", "--"] + cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        self.host, port = re.search(r"http://([^/]+)/", line).group(1).rsplit(":", 1)
        self.port = int(port)

    def get(self, path, conn=None, timeout=120):
        c = conn or http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        c.request("GET", path, headers={"Host": f"localhost:{self.port}"})
        r = c.getresponse()
        body = r.read()
        if conn is None:
            c.close()
        return r.status, body

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def model_flood(binary, folder, requests):
    v = Viewer(binary, folder)
    v.get("/run/big-run/problem?id=p0")
    before = status(v.proc.pid, "VmRSS")
    per = requests // 8
    pad = "x" * 200

    def worker(t):
        c = http.client.HTTPConnection(v.host, v.port, timeout=120)
        for i in range(per):
            try:
                v.get(f"/run/big-run/tree?model=m{t}-{i}-{pad}&id=p0&index=0", conn=c)
            except (http.client.HTTPException, OSError):
                c = http.client.HTTPConnection(v.host, v.port, timeout=120)
    start = time.time()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - start
    after, peak = status(v.proc.pid, "VmRSS"), status(v.proc.pid, "VmHWM")
    v.stop()
    return f"RSS {mb(before)} -> {mb(after)} (peak {mb(peak)}) over {per * 8} requests in {took:.0f} s"


def burst(binary, folder, clients):
    v = Viewer(binary, folder)
    assert v.get("/run/big-run/report")[0] == 200
    idle = status(v.proc.pid, "VmRSS")
    most = [0]
    done = threading.Event()

    def watch():
        while not done.is_set():
            most[0] = max(most[0], status(v.proc.pid, "Threads"))
            time.sleep(0.01)
    w = threading.Thread(target=watch)
    w.start()
    codes = []

    def one():
        try:
            codes.append(v.get("/run/big-run/report", timeout=600)[0])
        except (http.client.HTTPException, OSError) as e:
            codes.append(str(e))
    start = time.time()
    threads = [threading.Thread(target=one) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - start
    done.set()
    w.join()
    peak = status(v.proc.pid, "VmHWM")
    time.sleep(5)
    settled = status(v.proc.pid, "VmRSS")
    v.stop()
    ok = sum(1 for c in codes if c == 200)
    return (f"RSS idle {mb(idle)}, peak {mb(peak)}, 5 s after {mb(settled)}; "
            f"{most[0]} threads at most; {ok}/{clients} answered in {took:.0f} s")


def slowloris(binary, folder, held):
    v = Viewer(binary, folder, files=64)
    slow = []
    for _ in range(held):
        s = socket.socket()
        s.settimeout(1)
        try:
            s.connect((v.host, v.port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        except OSError:
            pass
        slow.append(s)
    time.sleep(1)
    before = cpu_ticks(v.proc.pid)
    time.sleep(3)
    cpu = (cpu_ticks(v.proc.pid) - before) / os.sysconf("SC_CLK_TCK") / 3
    start = time.time()
    try:
        code = v.get("/static/view.css", timeout=30)[0]
        real = f"{time.time() - start:.2f} s (status {code})"
    except (OSError, http.client.HTTPException) as e:
        real = f"no answer after {time.time() - start:.0f} s ({type(e).__name__})"
    for s in slow:
        s.close()
    v.stop()
    return f"server CPU {cpu:.0%} of a core while held; real request {real}"


def half_sent(binary, folder):
    """How long the viewer keeps a request whose head never ends."""
    v = Viewer(binary, folder)
    probe = socket.create_connection((v.host, v.port), timeout=5)
    probe.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
    probe.settimeout(45)
    start = time.time()
    try:
        kept = "closed after %.1f s" % (time.time() - start) if probe.recv(1) == b"" else "answered"
    except socket.timeout:
        kept = "still open after 45 s"
    except OSError:
        kept = "closed after %.1f s" % (time.time() - start)
    probe.close()
    v.stop()
    return kept


def import_batch(binary, root):
    work = tempfile.mkdtemp(dir=root)
    data = os.path.join(work, "data.jsonl")
    open(data, "w").write('{"id":"p0","question":"What is 2+1?","answer":"3"}\n')
    cfg = os.path.join(work, "config.toml")
    open(cfg, "w").write(
        f'[api]\nbase_url = "http://127.0.0.1:9"\napi_key_env = "GPASSK_TEST_KEY"\n[sampling]\nn = 2\n'
        f'[[models]]\nname = "m1"\nmodel_id = "m"\n[evaluation]\ndataset = "{data}"\n'
        f'output_dir = "{work}/results"\n')
    exported = subprocess.run([binary, "run", "--config", cfg, "--export-batch", f"{work}/req.jsonl"],
                              capture_output=True, text=True)
    run_dir = re.search(r"run directory: (\S+)", exported.stdout + exported.stderr).group(1)
    zeros = os.path.join(work, "zeros.jsonl")
    with open(zeros, "wb") as f:
        f.truncate(2 << 30)
    out = subprocess.run(["/usr/bin/time", "-f", "%M", binary, "run", "--config", cfg, "--import-batch",
                          zeros, "--resume", run_dir], capture_output=True, text=True)
    peak = int(out.stderr.strip().splitlines()[-1])
    said = [l for l in out.stderr.splitlines() if l.startswith("error:")]
    return f"peak RSS {mb(peak)} before: {said[0] if said else out.stderr.strip()[:100]}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binaries", nargs="+")
    p.add_argument("--problems", type=int, default=2000)
    p.add_argument("--quick", action="store_true", help="6,000 requests and a burst of 100")
    a = p.parse_args()
    root = tempfile.mkdtemp(prefix="hostile-bounds-")
    try:
        folder = write_run(root, a.problems)
        requests, clients = (6000, 100) if a.quick else (60000, 500)
        print(f"run: {a.problems} problems x {N} samples x {len(MODELS)} models")
        for name, f in [
            ("model flood", lambda b: model_flood(b, folder, requests)),
            ("burst", lambda b: burst(b, folder, clients)),
            ("slowloris", lambda b: slowloris(b, folder, 200)),
            ("half-sent", lambda b: half_sent(b, folder)),
            ("import batch", lambda b: import_batch(b, root)),
        ]:
            for b in a.binaries:
                print(f"{name:13} {b}: {f(b)}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
