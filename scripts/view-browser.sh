#!/usr/bin/env bash
# `gpassk view` in headless Chromium: serves the weekly runs with six models and hostile model
# output (tests/it/view.rs, `write_view_fixture`), then checks what a user would see: the problem
# page shows every stored sample of every model, the hostile payloads are inert text (no element
# of theirs in the DOM), and no page scrolls sideways at 1400 or 420 px. Screenshots of every
# page at both widths go to target/view-browser/ (git-ignored); look at them. Installs Debian's
# chromium when it is missing. Exit 1 when a check fails.
#
# Usage: scripts/view-browser.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/view-browser}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# chromium (installed when missing), its throwaway profile and `chrome`.
source scripts/lib/chromium.sh

rm -rf "$out/runs"
GPASSK_VIEW_DIR="$out/runs" cargo test --quiet --test it -- --ignored --exact \
    view::write_view_fixture >/dev/null
cargo build --quiet
gpassk="${CARGO_TARGET_DIR:-target}/debug/gpassk"
"$gpassk" view "$out/runs" --port 0 >"$out/serve.txt" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; chromium_cleanup' EXIT
for _ in $(seq 100); do grep -q http "$out/serve.txt" && break; sleep 0.1; done
url="$(grep -o 'http://[^ ]*' "$out/serve.txt")"
url="${url%/}"
echo "serving at $url"


status=0
fail() { echo "FAIL: $*" >&2; status=1; }
a=2026-11-23 b=2026-11-30
pages=("runs /" "run /run/$b" "problems /run/$b/problems" "problem /run/$b/problem?id=p0"
    "compare /compare?a=$a&b=$b")

# The problem page's DOM after the script ran: every stored sample of every model as a card,
# nothing of the payloads turned into elements.
curl -sf "$url/api/run/$b/problem?id=p0" >"$out/problem.json"
chrome --dump-dom --virtual-time-budget=3000 --window-size=1400,900 \
    "$url/run/$b/problem?id=p0" >"$out/problem-dom.html"
python3 - "$out/problem-dom.html" "$out/problem.json" <<'PY' || fail "problem page DOM"
import json, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
api = json.load(open(sys.argv[2], encoding="utf-8"))
sections = dom.split('<section class="model">')[1:]
ok = len(sections) == len(api["models"]) == 6
for sec, m in zip(sections, api["models"]):
    cards = sec.count('<article class="sample')
    want = len(m["samples"])
    print(f"  {m['model']}: {cards} sample cards of {want} stored, n = {m['n']}")
    ok &= cards == want and (want == 0 or want == m["n"] + 1)
ok &= sum(len(m["samples"]) for m in api["models"]) == 5 * 17
scripts = re.findall(r"<script[^>]*>", dom)
injected = {
    "script": scripts != ['<script src="/static/view.js" defer="">'],
    "img": "<img" in dom,
    "javascript: link": re.search(r"<a[^>]+href=\"javascript", dom) is not None,
    "b": "<b>bold" in dom,
    "escaped text missing": "&lt;script&gt;alert('x')&lt;/script&gt;" not in dom,
}
for what, bad in injected.items():
    if bad: print(f"  injected: {what}"); ok = False
sys.exit(0 if ok else 1)
PY

# No sideways page scroll, and a screenshot, of every page at both widths (below 500 px
# Chromium's window stays 500 wide: the page is laid out 420 wide inside it).
for entry in "${pages[@]}"; do
    name="${entry%% *}" path="${entry#* }"
    for width in 1400 420; do
        window="$(( width < 500 ? 500 : width ))"
        result="$(chrome --dump-dom --virtual-time-budget=3000 --window-size="$window,900" \
            "$url$path#measure=$width" | sed -n 's|.*<pre id="measure">\(.*\)</pre>.*|\1|p')"
        echo "$name, $width px: $result"
        python3 -c 'import html, json, sys
r = json.loads(html.unescape(sys.argv[1]))
sys.exit(0 if r["page"] <= r["frame"] else 1)' "$result" || fail "$name scrolls sideways at $width px"
        chrome --screenshot="$out/$name-$width.png" --window-size="$window,900" \
            "$url$path#measure=$width" >/dev/null
        echo "  $out/$name-$width.png"
    done
done
exit "$status"
