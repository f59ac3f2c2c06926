#!/usr/bin/env bash
# The quick start: install what is missing, serve the bundled local model, run gpassk on it, show the
# table and where the results are, and stop the model again (only if this script started it).
#
#   scripts/demo.sh                 # configs/local.toml: 10 arithmetic problems, n = 8, 4-shot
#   scripts/demo.sh --limit 3       # any extra flags go to `gpassk run`
#   GPASSK_CONFIG=my.toml scripts/demo.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CONFIG="${GPASSK_CONFIG:-configs/local.toml}"

say() { printf 'demo: %s\n' "$*"; }

if ! command -v cargo >/dev/null 2>&1; then
    echo "demo: error: cargo is not installed (https://rustup.rs); it builds gpassk" >&2
    exit 1
fi

say "building gpassk (release)"
cargo build --release --quiet
GPASSK="${CARGO_TARGET_DIR:-$ROOT/target}/release/gpassk"

started_here=0
if scripts/local-model.sh status >/dev/null 2>&1; then
    say "local model already running; leaving it running afterwards"
else
    scripts/local-model.sh start
    started_here=1
fi
cleanup() {
    if [ "$started_here" = 1 ]; then
        scripts/local-model.sh stop || true
    fi
}
trap cleanup EXIT

say "running: gpassk run --config $CONFIG $*"
set +e
"$GPASSK" run --config "$CONFIG" "$@"
code=$?
set -e
if [ "$code" -eq 0 ]; then
    say "done. Files: manifest.json, checkpoints/*.jsonl, metrics.csv, per_problem.csv, metrics.json, report.md, report.html in the run directory above"
else
    say "gpassk exited with code $code (1: some units failed, resumable; 2: bad input; 130: interrupted)"
fi
exit "$code"
