#!/usr/bin/env bash
# End-to-end check against the real local model (CI): 2 problems, n = 4, then verify the outputs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

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
PY
