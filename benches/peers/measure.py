#!/usr/bin/env python3
"""Run one command and report its wall time and peak RSS as JSON (stdlib only).

    measure.py OUT.json [--stdout FILE] -- CMD ARGS...

Also records the command's CPU time (user + system). Peak RSS comes from GNU time (`/usr/bin/time -f %M`, Debian package `time`) when it is installed, else
from polling the command's /proc/PID/status VmHWM every 10 ms. (Python's own getrusage(RUSAGE_CHILDREN)
is not used: it counts the forked Python before exec, about 14 MB, into every command.)
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

GNU_TIME = "/usr/bin/time"


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    out = opts[0]
    stdout = None
    if "--stdout" in opts:
        stdout = open(opts[opts.index("--stdout") + 1], "wb")
    use_time = os.access(GNU_TIME, os.X_OK)
    rss_file = tempfile.NamedTemporaryFile(prefix="rss.", delete=False).name
    full = [GNU_TIME, "-f", "%M %U %S", "-o", rss_file, *cmd] if use_time else cmd
    start = time.perf_counter()
    proc = subprocess.Popen(full, stdout=stdout)
    polled = 0
    while proc.poll() is None:
        if not use_time:
            polled = max(polled, vm_hwm_kb(proc.pid))
        time.sleep(0.01)
    wall = time.perf_counter() - start
    rss_kb, how = polled, "/proc VmHWM polled every 10 ms"
    cpu = None
    if use_time:
        try:
            with open(rss_file) as f:
                fields = f.read().split()[-3:]
            rss_kb, how = int(fields[0]), "GNU time %M"
            cpu = float(fields[1]) + float(fields[2])
        except (OSError, ValueError, IndexError):
            pass
    else:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru.ru_utime + ru.ru_stime
    os.unlink(rss_file)
    with open(out, "w") as f:
        json.dump({"cmd": cmd, "exit": proc.returncode, "wall_s": wall, "peak_rss_mb": rss_kb / 1024,
                   "cpu_s": cpu, "rss_from": how}, f)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
