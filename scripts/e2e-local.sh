#!/usr/bin/env bash
# End-to-end check against the real local model (CI): 2 problems, n = 4, then verify the outputs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
started_here=0
cleanup() {
    if [ "$started_here" = 1 ]; then scripts/local-model.sh stop || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
if ! scripts/local-model.sh status >/dev/null 2>&1; then
    scripts/local-model.sh start
    started_here=1
fi

# The demo config with a smaller n and its own output folder.
sed -e 's/^n = 8$/n = 4/' -e "s#^output_dir = .*#output_dir = \"$WORK/results\"#" configs/local.toml > "$WORK/e2e.toml"
grep -q '^n = 4$' "$WORK/e2e.toml" || { echo "e2e: could not set n = 4 in the config copy" >&2; exit 1; }

GPASSK_CONFIG="$WORK/e2e.toml" scripts/demo.sh --limit 2 --quiet

RUN_DIR="$(find "$WORK/results" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
python3 - "$RUN_DIR" <<'PY'
import csv, json, pathlib, sys
run = pathlib.Path(sys.argv[1])
lines = [json.loads(l) for l in (run / "checkpoints" / "gemma-3-270m.jsonl").read_text().splitlines()]
assert len(lines) == 2 * (4 + 1), f"expected 10 units, got {len(lines)}"
assert all(l["outcome"] in ("ok", "truncated") for l in lines), "API errors against the local model"
assert all(len(l["response"].strip()) > 0 for l in lines), "empty completions"
assert len({l["response"] for l in lines}) > 1, "completions are all identical: not real sampling"
manifest = json.loads((run / "manifest.json").read_text())
served = manifest["models"]["gemma-3-270m"]["served_models"]
assert served, "manifest names no served model"
assert manifest["status"] == "complete", manifest["status"]
rows = list(csv.DictReader((run / "metrics.csv").open()))
names = {(r["metric"], r["k"], r["tau"]) for r in rows if r["subset"] == "all"}
for want in [("greedy_acc", "", ""), ("pass@k", "4", ""), ("g_pass@k", "4", "0.5"), ("g_pass@k", "4", "1.0"), ("mg_pass@k", "4", "")]:
    assert want in names, f"metrics.csv lacks {want}: {sorted(names)}"
print(f"e2e: ok: {len(lines)} real completions, served model {sorted(served)}, {len(rows)} metric rows")
# Two of the model's own greedy answers, one per problem, become the solutions to label.
sols = [{"problem_id": l["problem_id"], "solution_id": f"greedy-{l['problem_id']}", "solution": l["response"]}
        for l in lines if l["sample_index"] == "greedy"]
assert len({s["problem_id"] for s in sols}) == 2
(run.parent.parent / "solutions.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sols))
PY

# Process labels with real rollouts: 2 problems, K = 2.
"${CARGO_TARGET_DIR:-target}"/release/gpassk label --config "$WORK/e2e.toml" --solutions "$WORK/solutions.jsonl" --k 2 \
    --max-steps 3 --out "$WORK/label" --quiet
python3 - "$WORK/label" <<'PY'
import csv, json, pathlib, sys
out = pathlib.Path(sys.argv[1])
labels = [json.loads(l) for l in (out / "labels.jsonl").read_text().splitlines()]
assert labels, "no labels"
assert all(l["rollouts"] == 2 for l in labels), "missing rollouts"
assert all(l["he"] in (0, 1) and 0.0 <= l["se"] <= 1.0 for l in labels)
rows = list(csv.DictReader((out / "solutions.csv").open()))
assert len(rows) == 2, rows
print(f"e2e: ok: {len(labels)} labelled steps from real rollouts")
PY

# Tree search beside sampling on the same real model: 2 problems, 2 searches each (2 simulations ×
# 2 candidates, depth 3), every step's code run in the bubblewrap sandbox.
sed -e 's/^n = 4$/n = 2/' -e 's/^limit = 4$/limit = 2/' -e 's/^k = \[1, 4\]$/k = [1, 2]/' \
    -e 's/pass@4/pass@2/g' -e "s#^output_dir = .*#output_dir = \"$WORK/mcts\"#" \
    configs/local-mcts.toml > "$WORK/mcts.toml"
grep -q '^n = 2$' "$WORK/mcts.toml" || { echo "e2e: could not set n = 2 in the mcts config copy" >&2; exit 1; }
"${CARGO_TARGET_DIR:-target}"/release/gpassk run --config "$WORK/mcts.toml" --quiet > "$WORK/mcts.out"
RUN_DIR="$(find "$WORK/mcts" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
python3 - "$RUN_DIR" "$WORK/mcts.out" <<'PY'
import json, pathlib, sys
run, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).read_text()
lines = [json.loads(l) for l in (run / "checkpoints" / "gemma-3-270m+mcts.jsonl").read_text().splitlines()]
assert len(lines) == 2 * 2, f"expected 4 searches, got {len(lines)}"
assert all(l["outcome"] == "ok" for l in lines), "searches ended in API errors"
for l in lines:
    s = l["search"]
    st = s["stats"]
    assert st["policy_calls"] >= 1 and st["steps"] >= 1, st
    tree = json.loads((run / s["tree"]).read_text())
    assert tree["problem_id"] == l["problem_id"] and len(tree["nodes"]) == st["steps"] + 1
    assert st["code_executions"] <= st["steps"]
    assert max(n["depth"] for n in tree["nodes"]) <= 3
ran = sum(l["search"]["stats"]["code_executions"] for l in lines)
assert ran > 0, "no step's code ran in the sandbox"
metrics = json.loads((run / "metrics.json").read_text())
names = [m["model"] for m in metrics["models"]]
assert names == ["gemma-3-270m", "gemma-3-270m+mcts"], names
assert "Search and sampling cost" in out, out
print(f"e2e: ok: {len(lines)} real searches, {ran} sandboxed code runs, sampling and search side by side")
PY
