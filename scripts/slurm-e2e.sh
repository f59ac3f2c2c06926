#!/usr/bin/env bash
# deploy/slurm under a real Slurm (CI): a one-node cluster on this machine (munged, slurmctld and
# slurmd from Debian's slurm-wlm, installed when missing), the shard array (4 tasks) and the
# dependent merge job of deploy/slurm/submit.sh against a slow fake OpenAI server. Two tasks are
# stopped mid-run once their checkpoints have lines: one by `scontrol requeue` (SIGTERM, as for
# preemption), one by USR1 to its batch shell (what `--signal=B:USR1@300` sends before the time
# limit; the script then requeues itself). Both must resume their own run, keeping its lines. A
# third task fails: the merge job must be cancelled, and the README's rerun of that shard with a
# new merge job must give a merged run that scores byte for byte like one unsharded run.
# Everything lives in a temporary folder and is stopped and removed on exit, whatever happens
# (SLURM_E2E_KEEP=1 keeps the folder: logs, runs, slurm.conf).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SHARDS=4
PROBLEMS=24 # shards of 7, 6, 5 and 6 problems (5 units each): every shard runs >= 10 s
DELAY_MS=400
START=$SECONDS

say() { echo "slurm-e2e: $*"; }
fail() {
    echo "slurm-e2e: FAILED: $*" >&2
    exit 1
}

# ---------------------------------------------------------------- install and build
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
    ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    say "installing slurm-wlm and munge"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
cargo build --release --locked --quiet --bin gpassk
cargo build --release --locked --quiet -p fake-openai
GPASSK_BIN=$TARGET/release/gpassk
FAKE=$TARGET/release/fake-openai

# ---------------------------------------------------------------- teardown, always
stop_pid_file() {
    local file=$1 pid
    [[ -f $file ]] || return 0
    pid=$(cat "$file")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
}
cleanup() {
    local status=$?
    set +e
    if [[ -f $WORK/slurmctld.pid ]]; then
        # Our own cluster's jobs (SLURM_CONF points at it).
        scancel --quiet --user=root 2>/dev/null
        for _ in $(seq 150); do
            [[ -z $(squeue -h 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    if ((status != 0)); then
        for f in "$WORK"/log/*.log "$WORK"/jobs/*.out "$WORK/server.err"; do
            [[ -s $f ]] && { echo "---- $f (last lines)"; tail -n 25 "$f"; }
        done
    fi
    stop_pid_file "$WORK/slurmd.pid"
    stop_pid_file "$WORK/slurmctld.pid"
    stop_pid_file "$WORK/munge/munged.pid"
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    if [[ -n ${SLURM_E2E_KEEP:-} ]]; then say "kept $WORK"; else rm -rf "$WORK"; fi
    return "$status"
}
SERVER_PID=
WORK=$(mktemp -d /tmp/gpassk-slurm-e2e.XXXXXX)
trap cleanup EXIT
export SLURM_CONF=$WORK/slurm.conf
# munged refuses a socket folder others cannot enter, and a key others can read.
chmod 755 "$WORK"
mkdir -p "$WORK/munge" "$WORK/munge-key" "$WORK/spool/ctld" "$WORK/spool/d" "$WORK/log" "$WORK/jobs"
chmod 700 "$WORK/munge-key"

# ---------------------------------------------------------------- the cluster
NODE=$(hostname -s)
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
dd if=/dev/urandom of="$WORK/munge-key/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge-key/munge.key"
munged --socket="$WORK/munge/munge.socket" --key-file="$WORK/munge-key/munge.key" \
    --log-file="$WORK/log/munged.log" --pid-file="$WORK/munge/munged.pid" \
    --seed-file="$WORK/munge/munged.seed"

# One node, no cgroups (linuxproc tracks a task's processes), root runs everything, state in
# $WORK, daemons on loopback only (NoInAddrAny, NoCtldInAddrAny: they bind NodeAddr and the
# SlurmctldHost address, not every interface).
cat >"$SLURM_CONF" <<EOF
ClusterName=gpasske2e
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.socket
StateSaveLocation=$WORK/spool/ctld
SlurmdSpoolDir=$WORK/spool/d
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=15
MinJobAge=3600
JobRequeue=1
# 8 CPUs whatever the machine has: the 4 tasks and the merge job run side by side.
SlurmdParameters=config_overrides
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=e2e Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N "$NODE"
for _ in $(seq 100); do
    [[ $(sinfo -h -o %T 2>/dev/null) == idle ]] && break
    sleep 0.3
done
[[ $(sinfo -h -o %T 2>/dev/null) == idle ]] || fail "the node did not come up: $(sinfo 2>&1)"
say "cluster up: $(sinfo -h -o '%P %D %T %C') (slurm $(sinfo -V | cut -d' ' -f2))"

# ---------------------------------------------------------------- the evaluation
"$FAKE" --port 0 --delay-ms "$DELAY_MS" --answer '\boxed{0}' --answer '\boxed{1}' \
    --answer '\boxed{2}' >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
for _ in $(seq 100); do
    grep -q listening "$WORK/server.out" 2>/dev/null && break
    sleep 0.05
done
BASE=$(sed -n 's/^listening on //p' "$WORK/server.out")
[[ -n $BASE ]] || fail "fake-openai did not start: $(cat "$WORK/server.err")"

for i in $(seq 0 $((PROBLEMS - 1))); do
    printf '{"id":"q%d","question":"What is %d modulo 3?","answer":"%d"}\n' "$i" "$i" $((i % 3))
done >"$WORK/data.jsonl"
cat >"$WORK/eval.toml" <<EOF
[api]
base_url = "$BASE"
timeout = 10
max_retries = 2
concurrency = 1

[sampling]
n = 4
temperature = 0.7
seed = 11
greedy = true

[[models]]
name = "fake"
model_id = "fake-model"

[evaluation]
dataset = "$WORK/data.jsonl"
k = [1, 2, 4]
metrics = ["greedy_acc", "pass@4", "g_pass@4_t0.5", "g_pass@4_t1.0", "mg_pass@4"]
output_dir = "$WORK/unused"
EOF

# Shard 3 fails on its first attempt (as on a broken node): the gpassk the jobs run exits 1 for
# it while the marker file exists.
BROKEN_SHARD=3
touch "$WORK/break-shard"
cat >"$WORK/gpassk" <<EOF
#!/bin/bash
if [[ -e $WORK/break-shard && " \$* " == *" --shard $BROKEN_SHARD/$SHARDS "* ]]; then
    echo "broken on purpose" >&2
    exit 1
fi
exec "$GPASSK_BIN" "\$@"
EOF
chmod +x "$WORK/gpassk"
export GPASSK=$WORK/gpassk GPASSK_CONFIG=$WORK/eval.toml GPASSK_SHARDS=$SHARDS
export GPASSK_RESULTS=$WORK/results
RESULTS=$GPASSK_RESULTS
cd "$WORK/jobs"
submitted=$("$ROOT/deploy/slurm/submit.sh")
cd "$ROOT"
echo "$submitted"
ARRAY=$(sed -n 's/^shards job: \([0-9]*\).*/\1/p' <<<"$submitted")
MERGE=$(sed -n 's/^merge job: \([0-9]*\).*/\1/p' <<<"$submitted")
[[ -n $ARRAY && -n $MERGE ]] || fail "submit.sh printed no job ids"

# shard_dir I: the one run directory of shard I in $RESULTS (empty while there is none).
shard_dir() {
    python3 - "$RESULTS" "$1" <<'PY'
import json, pathlib, sys
root, index = pathlib.Path(sys.argv[1]), int(sys.argv[2])
dirs = [m.parent for m in sorted(root.glob("*/manifest.json"))
        if (json.loads(m.read_text()).get("shard") or {}).get("index") == index]
assert len(dirs) <= 1, f"shard {index} has {len(dirs)} run directories: {dirs}"
print(dirs[0] if dirs else "")
PY
}
lines() { if [[ -f $1 ]]; then wc -l <"$1"; else echo 0; fi; }
task_state() { squeue -h -j "$1" -o %T 2>/dev/null | head -n1; }
job_state() { scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n1; }

# wait_lines I: waits (up to 120 s) until shard I's checkpoint holds 3 lines; prints its run dir.
wait_lines() {
    local dir=
    for _ in $(seq 600); do
        dir=$(shard_dir "$1")
        if [[ -n $dir ]] && (($(lines "$dir/checkpoints/fake.jsonl") >= 3)); then
            echo "$dir"
            return
        fi
        sleep 0.2
    done
    fail "shard $1 wrote no 3 checkpoint lines in 120 s (task ${ARRAY}_$1: $(task_state "${ARRAY}_$1"))"
}

# ---------------------------------------------------------------- stop two tasks mid-run
TERM_SHARD=1
USR1_SHARD=2
term_dir=$(wait_lines $TERM_SHARD)
scontrol requeue "${ARRAY}_$TERM_SHARD"
usr1_dir=$(wait_lines $USR1_SHARD)
scancel --batch --signal=USR1 "${ARRAY}_$USR1_SHARD"
say "stopped shard $TERM_SHARD (scontrol requeue) and shard $USR1_SHARD (USR1 to the batch shell) mid-run"
for s in $TERM_SHARD $USR1_SHARD; do
    for _ in $(seq 300); do
        [[ $(task_state "${ARRAY}_$s") == PENDING ]] && break
        sleep 0.2
    done
    [[ $(task_state "${ARRAY}_$s") == PENDING ]] ||
        fail "task ${ARRAY}_$s was not requeued (state: $(task_state "${ARRAY}_$s"))"
done
# The stopped attempts are gone: their checkpoints hold what they saved.
cp "$term_dir/checkpoints/fake.jsonl" "$WORK/term-before.jsonl"
cp "$usr1_dir/checkpoints/fake.jsonl" "$WORK/usr1-before.jsonl"
for s in $TERM_SHARD $USR1_SHARD; do
    # A requeued job waits ~2 minutes before it is eligible again; no need to here.
    scontrol update jobid="${ARRAY}_$s" StartTime=now
done

# wait_job ID: waits (up to 180 s) until the job has ended; prints its state.
wait_job() {
    for _ in $(seq 900); do
        case $(job_state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) break ;; esac
        sleep 0.2
    done
    job_state "$1"
}

# ---------------------------------------------------------------- a shard that fails
# Its failure cancels the merge (afterok, --kill-on-invalid-dep): nothing partial is merged.
# Then deploy/slurm/README.md's recipe: rerun that shard alone, queue the merge after it.
[[ $(wait_job "$MERGE") == CANCELLED ]] ||
    fail "merge job $MERGE was not cancelled by the failed shard: $(job_state "$MERGE")"
[[ $(job_state "${ARRAY}_$BROKEN_SHARD") == FAILED ]] ||
    fail "task ${ARRAY}_$BROKEN_SHARD: $(job_state "${ARRAY}_$BROKEN_SHARD"), not FAILED"
rm "$WORK/break-shard"
cd "$WORK/jobs"
RERUN=$(sbatch --parsable --array=$BROKEN_SHARD --export=ALL "$ROOT/deploy/slurm/gpassk-shards.sbatch")
MERGE=$(sbatch --parsable --dependency="afterany:$ARRAY,afterok:$RERUN" --export=ALL \
    "$ROOT/deploy/slurm/gpassk-merge.sbatch")
cd "$ROOT"
say "shard $BROKEN_SHARD failed and cancelled the merge; rerun as job $RERUN, merge again as job $MERGE"

[[ $(wait_job "$MERGE") == COMPLETED ]] ||
    fail "merge job $MERGE ended $(job_state "$MERGE"), not COMPLETED"
states=$({ scontrol show job "$ARRAY" && scontrol show job "$RERUN"; } | grep -o 'JobState=[A-Z_]*' |
    sort | uniq -c)
awk '{print "slurm-e2e: array tasks: " $1 " " $2}' <<<"$states"
[[ $(awk '{printf "%s %s;", $1, $2}' <<<"$states") == "4 JobState=COMPLETED;1 JobState=FAILED;" ]] ||
    fail "the array tasks should be 4 COMPLETED (one a rerun) and 1 FAILED"

# ---------------------------------------------------------------- the checks
# The requeued tasks resumed their own runs: the lines saved before the stop are still the
# checkpoint's first lines, nothing was sampled twice, and the second attempt said it resumed.
for pair in "$TERM_SHARD:$term_dir:$WORK/term-before.jsonl" "$USR1_SHARD:$usr1_dir:$WORK/usr1-before.jsonl"; do
    IFS=: read -r s dir before <<<"$pair"
    [[ $(shard_dir "$s") == "$dir" ]] || fail "shard $s: its run directory changed"
    log=$WORK/jobs/gpassk-shard-${ARRAY}_$s.out
    grep -q "attempt 2" "$log" || fail "shard $s: no second attempt in $log"
    grep -q "^resuming $dir " "$log" || fail "shard $s: the second attempt did not resume $dir"
    grep -q "^interrupted: checkpoints saved" "$log" || fail "shard $s: gpassk did not save on the stop"
    cmp -s -n "$(stat -c %s "$before")" "$before" "$dir/checkpoints/fake.jsonl" ||
        fail "shard $s: the checkpoint lost or changed lines written before the stop"
    python3 - "$dir" "$before" "$s" <<'PY'
import json, pathlib, sys
run, before, shard = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
saved = before.read_text().splitlines()
final = [json.loads(l) for l in (run / "checkpoints" / "fake.jsonl").read_text().splitlines()]
planned = json.loads((run / "manifest.json").read_text())["models"]["fake"]["units_planned"]
units = {(r["problem_id"], str(r["sample_index"])) for r in final}
assert 3 <= len(saved) < planned, f"shard {shard}: {len(saved)} of {planned} units before the stop"
assert len(final) == len(units) == planned, f"shard {shard}: {len(final)} lines, {len(units)} units, {planned} planned"
print(f"slurm-e2e: shard {shard}: {len(saved)} of {planned} units saved at the stop, resumed to {planned}")
PY
done
grep -q "time limit near" "$WORK/jobs/gpassk-shard-${ARRAY}_$USR1_SHARD.out" ||
    fail "shard $USR1_SHARD: the batch script did not requeue itself on USR1"

# The merged run scores exactly like one unsharded run of the same config.
MERGED=$RESULTS/merged-$MERGE
[[ -f $MERGED/metrics.csv ]] || fail "the merge job wrote no scored run at $MERGED"
"$GPASSK_BIN" run --config "$WORK/eval.toml" --set "evaluation.output_dir=$WORK/reference" \
    --set api.concurrency=8 --quiet >/dev/null
REFERENCE=$(find "$WORK/reference" -mindepth 1 -maxdepth 1 -type d)
for f in metrics.csv per_problem.csv summary.txt; do
    cmp "$MERGED/$f" "$REFERENCE/$f" || fail "$f of the merged run differs from the unsharded run's"
done
python3 - "$MERGED" <<'PY'
import csv, json, pathlib, sys
run = pathlib.Path(sys.argv[1])
m = json.loads((run / "manifest.json").read_text())
assert m["status"] == "complete" and len(m["merged_from"]) == 4 and "shard" not in m, m
rows = list(csv.DictReader((run / "per_problem.csv").open()))
cs = {r["c"] for r in rows}
assert len(cs) > 1, f"every problem has the same count of correct samples {cs}: the check would be weak"
PY
say "ok: merged run = unsharded run (metrics.csv, per_problem.csv, summary.txt); $((SECONDS - START)) s"
