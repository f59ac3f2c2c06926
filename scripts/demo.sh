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

# What the demo calls, checked before anything is built or downloaded.
need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "demo: error: $1 is not installed; $2" >&2
    exit 1
}
need cargo "it builds gpassk (https://rustup.rs)"
need curl "scripts/local-model.sh asks the local model's /health with it (apt-get install curl)"
need python3 "the local model runs under Python 3.10+ with venv and pip (apt-get install python3-venv)"

started_at=$SECONDS
say "building gpassk (release: about 6 minutes on 2 idle cores the first time, 12 on a busy machine; seconds afterwards)"
cargo build --release --locked --quiet
built_at=$SECONDS
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
if [ "$CONFIG" = configs/local.toml ]; then
    say "about these numbers: the local model is a tiny base model served by llama.cpp, which batches"
    say "  requests, so two runs give different numbers even with seed = 42; and max_tokens = 32 cuts"
    say "  most answers short (the 'truncated' count in the report): a demo of the harness, not of a model."
fi
say "took $((SECONDS - started_at)) s: build $((built_at - started_at)) s, model and run $((SECONDS - built_at)) s"
say "to call gpassk by name: cargo install --path . --locked   (puts it in ~/.cargo/bin)"
exit "$code"
