#!/usr/bin/env bash
# Coverage-guided fuzzing of gpassk's parsers of untrusted text with libFuzzer, on stable rustc
# (docs/fuzzing.md says why and how). The fuzz crate (fuzz/) is built with the coverage flags
# cargo-fuzz passes, minus the nightly-only sanitizer flag; build scripts and proc macros stay
# uninstrumented because --target is given.
#
#   scripts/fuzz.sh build                      build every target
#   scripts/fuzz.sh smoke [SECONDS]            each target SECONDS (default 10) from its seeds
#   scripts/fuzz.sh run TARGET [libFuzzer args] a campaign (corpus kept in target/fuzz/corpus)
#   scripts/fuzz.sh campaign SECONDS           every target at once, niced, in the background
#   scripts/fuzz.sh repro TARGET FILE...       run the given inputs once each
#
# Targets: grade import sse config prm. A crash stops the run with the panic and leaves its input
# in target/fuzz/artifacts/TARGET/; once fixed, keep it as a test where the fault was and copy it
# into fuzz/regressions/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(grade import sse config prm)
triple=$(rustc -vV | sed -n 's/^host: //p')
target_dir=${CARGO_TARGET_DIR:-target}
out=$target_dir/fuzz
# Where a run keeps what it finds; the smoke starts from an empty one, as on a fresh CI machine.
corpus=$out/corpus
bin_dir=$target_dir/$triple/release

# Per target: the largest input (bytes) and a time after which one input counts as a hang (s).
max_len() { case $1 in import|sse) echo 65536 ;; grade) echo 8192 ;; *) echo 4096 ;; esac; }
TIMEOUT=5

build() {
    RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
        cargo build --locked --release --target "$triple" -p gpassk-fuzz "$@"
}

seeds() {
    rm -rf "$out/seeds"
    python3 scripts/fuzz-seeds.py "$out/seeds" >/dev/null
}

# run TARGET ARGS...: the target over its kept corpus, the seeds and the committed inputs of past
# crashes (fuzz/regressions/TARGET/, replayed by every run); new finds go to the corpus.
run() {
    local t=$1
    shift
    mkdir -p "$corpus/$t" "$out/artifacts/$t"
    local kept=()
    [ -d "fuzz/regressions/$t" ] && kept=("fuzz/regressions/$t")
    "$bin_dir/$t" -max_len="$(max_len "$t")" -timeout=$TIMEOUT -rss_limit_mb=2048 \
        -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 "$@" \
        "$corpus/$t" "$out/seeds/$t" "${kept[@]}"
}

case ${1:-} in
build) build ;;
smoke)
    secs=${2:-10}
    build
    seeds
    corpus=$out/smoke-corpus
    rm -rf "$corpus"
    for t in "${TARGETS[@]}"; do
        log=$out/smoke-$t.log
        if ! run "$t" -max_total_time="$secs" >"$log" 2>&1; then
            tail -n 40 "$log" >&2
            echo "fuzz: $t failed (log: $log; input: $out/artifacts/$t/)" >&2
            exit 1
        fi
        echo "fuzz: $t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$') inputs in ${secs}s, no crash"
    done
    ;;
run)
    t=${2:?target}
    shift 2
    [ -d "$out/seeds" ] || seeds
    run "$t" "$@"
    ;;
campaign)
    secs=${2:?seconds}
    seeds
    for t in "${TARGETS[@]}"; do
        # One process a target (libFuzzer's -fork mode re-runs its corpus per job, a loss on a
        # busy machine); a crash ends that target's run with its input in artifacts/.
        nohup nice -n 19 "$0" run "$t" -max_total_time="$secs" >"$out/campaign-$t.log" 2>&1 &
        echo "fuzz: $t: pid $! (log: $out/campaign-$t.log)"
    done
    ;;
repro)
    t=${2:?target}
    shift 2
    "$bin_dir/$t" -runs=1 "$@"
    ;;
*)
    sed -n '2,16p' "$0" >&2
    exit 2
    ;;
esac
