#!/usr/bin/env bash
# Side-by-side benchmarks of gpassk against the tools users would pick instead, on this machine, back to back.
#
#   scripts/bench-peers.sh            # full mode: installs the peers, 4-7 minutes on 2 cores
#   scripts/bench-peers.sh --quick    # smoke mode for CI: small sizes, skips peers that are not installed
#
# 1. runner:     fake-openai (instant OpenAI-compatible server, crates/fake-openai) driven at one concurrency by
#                wrk/oha (ceiling), the OpenAI Python SDK (AsyncOpenAI + semaphore) and `gpassk run`. The ratio
#                to wrk/oha is the median of 3 rounds, each wrk/oha for 10 s then `gpassk run` over 200,000
#                fresh units (about as long), back to back: a burst of load from another job on shared cores
#                then moves one round, not the figure. A 1,000,000-unit run gives the req/s and peak RSS targets.
# 2. grading:    Math-Verify parse+verify vs `gpassk grade --cases` on the Math-Verify test cases (median of 3 runs)
# 3. metrics:    SciPy hypergeom.sf per problem and threshold vs gpassk's exact values, 100,000 problems
# 4. re-scoring: a stored run of 1,000,000 samples graded and scored again (median of 3 runs)
# 5. import:     the same 1,000,000 samples as another harness's JSONL, imported (`gpassk import jsonl`,
#                which also grades, scores and writes every report)
#
# Prints one table, writes results/bench/<timestamp>.json and, in full mode, the latest-run section of
# BENCHMARKS.md. Environment: GPASSK_BENCH_CACHE (venv and tools; default ~/.cache/gpassk-bench),
# CARGO_TARGET_DIR, BENCH_CONCURRENCY, BENCH_ROUNDS (runner ratio rounds), BENCH_KEEP=1 (keep the work dir).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

MODE=full
for arg in "$@"; do
    case $arg in
        --quick) MODE=quick ;;
        -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "error: unknown argument $arg (use --quick)" >&2; exit 2 ;;
    esac
done

if [[ $MODE == quick ]]; then
    CONC=${BENCH_CONCURRENCY:-32}; LOAD_SECS=2; PY_REQUESTS=300; ROUNDS=${BENCH_ROUNDS:-1}; ROUND_PROBLEMS=40
    RUN_PROBLEMS=100; RUN_N=50; GRADE_REPEAT=20; MV_LIMIT=20; METRIC_PROBLEMS=2000
else
    CONC=${BENCH_CONCURRENCY:-64}; LOAD_SECS=10; PY_REQUESTS=3000; ROUNDS=${BENCH_ROUNDS:-3}; ROUND_PROBLEMS=4000
    RUN_PROBLEMS=20000; RUN_N=50; GRADE_REPEAT=400; MV_LIMIT=0; METRIC_PROBLEMS=100000
fi

CACHE=${GPASSK_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpassk-bench}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET/release/gpassk
FAKE=$TARGET/release/fake-openai
HELP=$ROOT/benches/peers
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpassk-bench.XXXXXX")
PARTS=$WORK/parts
mkdir -p "$PARTS"
SERVER_PID=
PY=python3
command -v python3 >/dev/null || { echo "error: python3 is needed for the helpers" >&2; exit 1; }

cleanup() {
    if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*" >&2; }
note() { echo "$*" >>"$PARTS/notes.txt"; echo "note: $*" >&2; }
measure() { local out=$1; shift; "$PY" "$HELP/measure.py" "$PARTS/$out.json" "$@"; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

# ---------------------------------------------------------------- installs
say "peers ($MODE mode)"
VENV=$CACHE/venv
PEER_PY=
if [[ -x $VENV/bin/python ]] && "$VENV/bin/python" -c 'import openai, math_verify, scipy' 2>/dev/null; then
    PEER_PY=$VENV/bin/python
elif [[ $MODE == full ]]; then
    echo "installing openai, math-verify and scipy into $VENV" >&2
    if python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet --upgrade pip \
        && "$VENV/bin/pip" install --quiet openai math-verify scipy; then
        PEER_PY=$VENV/bin/python
    else
        note "pip install of openai/math-verify/scipy failed: the Python peers are skipped"
    fi
else
    note "quick mode: no venv with openai, math-verify and scipy at $VENV (a full run installs it): Python peers skipped"
fi
[[ -n $PEER_PY ]] && note "peers: $("$PEER_PY" -c 'import importlib.metadata as m, sys; print("Python", sys.version.split()[0], *[p + " " + m.version(p) for p in ("openai", "math-verify", "scipy")])')"

LOADGEN=
if command -v wrk >/dev/null; then LOADGEN=wrk
elif command -v oha >/dev/null; then LOADGEN=oha
elif [[ -x $CACHE/bin/oha ]]; then LOADGEN=$CACHE/bin/oha
elif [[ $MODE == full ]]; then
    if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]] \
        && { apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq wrk >/dev/null 2>&1; }; }; then
        LOADGEN=wrk
    elif cargo install --quiet --locked --root "$CACHE" oha; then
        LOADGEN=$CACHE/bin/oha
    else
        note "neither wrk (apt) nor oha (cargo install) could be installed: no load-generator ceiling"
    fi
else
    note "quick mode: neither wrk nor oha is installed (a full run installs one): load-generator ceiling skipped"
fi

# ---------------------------------------------------------------- build
say "release build"
cargo build --release --quiet
cargo build --release --quiet -p fake-openai
cargo bench --bench peer_metrics --no-run --quiet 2>/dev/null || cargo bench --bench peer_metrics --no-run

CASES=$ROOT/tests/fixtures/grading/mathverify_0.9.0_cases.jsonl
[[ -f $CASES ]] || CASES=$ROOT/../shared/grading/mathverify_0.9.0_cases.jsonl
[[ -f $CASES ]] || { echo "error: no mathverify_0.9.0_cases.jsonl in tests/fixtures/grading/ or ../shared/grading/" >&2; exit 1; }

# ---------------------------------------------------------------- 1. runner
say "1. runner throughput at concurrency $CONC"
"$FAKE" --port 0 >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/server.out" 2>/dev/null && break; sleep 0.05; done
BASE=$(sed -n 's/^listening on //p' "$WORK/server.out")
[[ -n $BASE ]] || { echo "error: fake-openai did not start: $(cat "$WORK/server.err")" >&2; exit 1; }
PORT=${BASE##*:}
URL=$BASE/v1/chat/completions

# loadgen NAME: one load-generator run, into $PARTS/NAME.json ({tool, req_per_s, requests}) and NAME_measure.json.
loadgen() {
    local name=$1
    if [[ $LOADGEN == wrk ]]; then
        measure "${name}_measure" --stdout "$WORK/loadgen.out" -- \
            wrk -t1 -c"$CONC" -d"${LOAD_SECS}s" -s "$WORK/post.lua" "$URL"
        "$PY" - "$WORK/loadgen.out" "$PARTS/$name.json" "$LOAD_SECS" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
n = int(re.search(r"(\d+) requests in", text).group(1))
json.dump({"tool": "wrk", "req_per_s": rps, "requests": n, "secs": int(sys.argv[3])}, open(sys.argv[2], "w"))
print(f"wrk: {rps:.0f} req/s")
EOF
    else
        local body='{"model":"fake-model","messages":[{"role":"user","content":"Problem 7: what is 7 + 7?"}],"temperature":0.7,"top_p":0.95,"seed":1234,"max_tokens":64}'
        local args=(-z "${LOAD_SECS}s" -c "$CONC" -m POST -H 'Content-Type: application/json' -d "$body" --no-tui)
        # oha >= 1.5 spells JSON output --output-format json; older releases -j.
        measure "${name}_measure" --stdout "$WORK/loadgen.out" -- "$LOADGEN" "${args[@]}" --output-format json "$URL" \
            || measure "${name}_measure" --stdout "$WORK/loadgen.out" -- "$LOADGEN" "${args[@]}" -j "$URL"
        "$PY" - "$WORK/loadgen.out" "$PARTS/$name.json" "$LOAD_SECS" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
rps = s["requestsPerSec"]
json.dump({"tool": "oha", "req_per_s": rps, "requests": round(rps * s["total"]), "secs": int(sys.argv[3])},
          open(sys.argv[2], "w"))
print(f"oha: {rps:.0f} req/s")
EOF
    fi
}

# gpassk_run NAME DATASET [measure]: `gpassk run` into a fresh run directory, printed on stdout; the checkpoint's
# sampling span goes to $PARTS/NAME_span.json (with `measure`, the whole run's wall, CPU and RSS to NAME_measure.json).
gpassk_run() {
    local name=$1 dataset=$2 out=$WORK/runs-$1 dir
    "$PY" "$HELP/gen.py" config "$WORK/$name.toml" --port "$PORT" --concurrency "$CONC" --n "$RUN_N" \
        --dataset "$dataset" --output-dir "$out"
    if [[ ${3:-} == measure ]]; then
        measure "${name}_measure" --stdout "$WORK/$name.out" -- "$BIN" run --config "$WORK/$name.toml" --quiet || true
    else
        "$BIN" run --config "$WORK/$name.toml" --quiet >"$WORK/$name.out" || true
    fi
    dir=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -1)
    [[ -n $dir && -f $dir/checkpoints/fake.jsonl ]] || { echo "error: gpassk run ($name) wrote no checkpoint" >&2; exit 1; }
    "$PY" "$HELP/gen.py" span "$dir/checkpoints/fake.jsonl" >"$PARTS/${name}_span.json"
    echo "$dir"
}

# The ratio to the load generator: rounds of the load generator then `gpassk run` over about as many requests,
# back to back; report.py takes the median of the rounds' ratios.
if [[ $LOADGEN == wrk ]]; then "$PY" "$HELP/gen.py" wrk-lua "$WORK/post.lua"; fi
"$PY" "$HELP/gen.py" dataset "$WORK/round_problems.jsonl" --problems "$ROUND_PROBLEMS" --cases "$CASES"
echo "$ROUNDS rounds: ${LOADGEN:-no load generator} for $LOAD_SECS s, then gpassk run over $ROUND_PROBLEMS problems × n = $RUN_N" >&2
for round in $(seq "$ROUNDS"); do
    if [[ -n $LOADGEN ]]; then loadgen "runner_round${round}_loadgen"; fi
    ROUND_DIR=$(gpassk_run "runner_round$round" "$WORK/round_problems.jsonl")
    rm -rf "$ROUND_DIR"
done

if [[ -n $PEER_PY ]]; then
    measure runner_openai_measure -- "$PEER_PY" "$HELP/openai_client.py" --base-url "$BASE/v1" \
        --requests "$PY_REQUESTS" --concurrency "$CONC" --out "$PARTS/runner_openai.json"
fi

"$PY" "$HELP/gen.py" dataset "$WORK/problems.jsonl" --problems "$RUN_PROBLEMS" --cases "$CASES"
echo "gpassk run: $RUN_PROBLEMS problems × n = $RUN_N = $((RUN_PROBLEMS * RUN_N)) units" >&2
RUN_DIR=$(gpassk_run runner_gpassk "$WORK/problems.jsonl" measure)


kill "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=

# ---------------------------------------------------------------- 2. grading
say "2. grading"
"$PY" - "$CASES" "$WORK/cases_rep.jsonl" "$GRADE_REPEAT" <<'EOF'
import json, sys
src, dst, rep = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(l) for l in open(src, encoding="utf-8") if l.strip()]
with open(dst, "w", encoding="utf-8") as f:
    for _ in range(rep):
        for c in lines:
            f.write(json.dumps({"gold": c["gold"], "pred": c["pred"]}) + "\n")
EOF
# Three runs of about a second each; report.py takes the median, so one burst of load on the shared cores
# moves one run, not the figure.
for rep in 1 2 3; do
    measure "grade_gpassk_measure_$rep" --stdout /dev/null -- "$BIN" grade --cases "$WORK/cases_rep.jsonl"
done
"$BIN" grade --cases "$CASES" --json >"$WORK/grade.jsonl" 2>"$WORK/grade.err"
"$PY" - "$CASES" "$WORK/grade.jsonl" "$GRADE_REPEAT" "$MV_LIMIT" "$PARTS/grade_gpassk_info.json" <<'EOF'
import json, sys
cases = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
verdicts = [json.loads(l)["equivalent"] for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
rep, limit = int(sys.argv[3]), int(sys.argv[4])
labelled = [(v, c["expected"]) for v, c in zip(verdicts, cases) if c.get("expected") is not None]
info = {"cases": len(cases) * rep, "repeat": rep, "labelled": len(labelled),
        "agree_expected": sum(v == e for v, e in labelled), "verdicts": verdicts[:limit] if limit else verdicts}
json.dump(info, open(sys.argv[5], "w"))
EOF
if [[ -n $PEER_PY ]]; then
    "$PEER_PY" "$HELP/mathverify_cases.py" "$CASES" --out "$PARTS/grade_mathverify.json" --limit "$MV_LIMIT"
fi

# ---------------------------------------------------------------- 3. metrics
say "3. metrics over $METRIC_PROBLEMS problems (n = 48, k = 16)"
"$PY" "$HELP/gen.py" counts "$WORK/counts.txt" --problems "$METRIC_PROBLEMS"
cargo bench --quiet --bench peer_metrics -- --counts "$WORK/counts.txt" --out "$PARTS/metrics_gpassk.json" >&2
if [[ -n $PEER_PY ]]; then
    "$PEER_PY" "$HELP/metrics_scipy.py" "$WORK/counts.txt" --gpassk "$PARTS/metrics_gpassk.json" \
        --out "$PARTS/metrics_scipy.json"
fi

# ---------------------------------------------------------------- 4. re-scoring
say "4. re-scoring the stored run"
"$PY" "$HELP/gen.py" vary "$RUN_DIR" --cases "$CASES"
SAMPLES=$(wc -l <"$RUN_DIR/checkpoints/fake.jsonl")
rm -f "$RUN_DIR/metrics.csv" "$RUN_DIR/metrics.json"
if "$BIN" score --help >/dev/null 2>&1; then
    HOW="gpassk score <run dir>"
    # Three runs, each from the same stored samples (score rewrites only the outputs); the median counts.
    for rep in 1 2 3; do
        rm -f "$RUN_DIR/metrics.csv" "$RUN_DIR/metrics.json"
        measure "rescore_measure_$rep" --stdout "$WORK/rescore.out" -- "$BIN" score "$RUN_DIR" || true
    done
else
    HOW="gpassk run --resume <run dir> (all samples present)"
    note "gpassk score does not exist yet: re-scoring measured as gpassk run --resume on a complete run (no request is sent; the server is stopped), which grades and reports"
    measure rescore_measure_1 --stdout "$WORK/rescore.out" -- "$BIN" run --config "$WORK/runner_gpassk.toml" --resume "$RUN_DIR" --quiet || true
fi
[[ -f $RUN_DIR/metrics.json ]] || note "re-scoring wrote no metrics.json (see the exit code)"
"$PY" -c 'import json,sys; json.dump({"how": sys.argv[1], "samples": int(sys.argv[2])}, open(sys.argv[3], "w"))' \
    "$HOW" "$SAMPLES" "$PARTS/rescore_info.json"

# ---------------------------------------------------------------- 5. import
say "5. importing the stored samples as generic JSONL"
"$PY" "$HELP/gen.py" import-jsonl "$RUN_DIR" "$WORK/problems.jsonl" "$WORK/import.jsonl"
measure import_measure --stdout "$WORK/import.out" -- "$BIN" import jsonl "$WORK/import.jsonl" \
    --out "$WORK/imported" --quiet || true
[[ -f $WORK/imported/metrics.json ]] || note "the import wrote no metrics.json (see the exit code)"
"$PY" -c 'import json,sys; json.dump({"samples": sum(1 for _ in open(sys.argv[1])), "bytes": __import__("os").path.getsize(sys.argv[1])}, open(sys.argv[2], "w"))' \
    "$WORK/import.jsonl" "$PARTS/import_info.json"

# ---------------------------------------------------------------- report
note "load average (1, 5, 15 min) at start $LOAD_START, at end $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) on $(nproc) cores: the cores may be shared, so absolute figures vary between runs; each pair runs back to back, so ratios vary less"
mkdir -p "$ROOT/results/bench"
"$PY" "$HELP/report.py" "$PARTS" --mode "$MODE" --out "$ROOT/results/bench/$(date -u +%Y%m%dT%H%M%SZ).json" \
    --benchmarks-md "$ROOT/BENCHMARKS.md"
