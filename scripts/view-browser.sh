#!/usr/bin/env bash
# `gpassk view` and the history page in headless Chromium: serves issue 40's weekly job (six
# models with 49–52-character names, LaTeX questions, one model much weaker in week 2, every
# fingerprint new, hostile model output; tests/it/view.rs, `write_view_fixture`), then checks what
# a user would see once the page's script ran: each model's tab of the problem page shows every
# stored sample of that model, the hostile payloads are inert text (no element of theirs in the
# DOM), the problem page is a few screens tall, not 10,000 px; the grid focused on one metric keeps
# only the problems below full marks on it, least first; and no page scrolls sideways at 1400 or
# 420 px. Screenshots of every page at both widths go to target/view-browser/ (git-ignored), with
# each page's height; look at them. Installs Debian's chromium when it is missing. Exit 1 when a
# check fails.
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
# The weekly job's model names (tests/it/view.rs, LONG), the first with the hostile output.
models=(meta-llama-Llama-3.1-405B-Instruct-Turbo-eval-weekly
    deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-bf16-weekly
    deepseek-ai-DeepSeek-R1-Distill-Llama-70B-fp8-weekly
    Qwen-Qwen2.5-Math-72B-Instruct-vllm-tp4-fp16-weekly
    mistralai-Mistral-Large-Instruct-2411-int4-weekly
    google-gemma-2-27b-it-sglang-tp2-bf16-canary-weekly)
focus="model=${models[1]}&metric=G-Pass%4016_0.5"
pages=("runs /" "run /run/$b" "problems /run/$b/problems" "focus /run/$b/problems?$focus"
    "problem /run/$b/problem?id=p0" "tab /run/$b/problem?id=p0&model=${models[1]}"
    "compare /compare?a=$a&b=$b")

# DOM after the script ran.
dom() { chrome --dump-dom --virtual-time-budget=3000 --window-size=1400,900 "$url$1"; }

# Each model's tab of the problem page: every stored sample of that model as a card (and the
# previous run's beside them), nothing of the payloads turned into elements.
curl -sf "$url/api/run/$b/problem?id=p0" >"$out/problem.json"
for i in "${!models[@]}"; do
    dom "/run/$b/problem?id=p0&model=${models[$i]}" >"$out/tab-$i-dom.html"
done
python3 - "$out" <<'PY' || fail "problem page DOM"
import json, re, sys
out = sys.argv[1]
api = json.load(open(f"{out}/problem.json", encoding="utf-8"))
ok = len(api["models"]) == 6
for i, m in enumerate(api["models"]):
    dom = open(f"{out}/tab-{i}-dom.html", encoding="utf-8").read()
    here = dom.split('<section class="model">')[1].split("</section>")[0]
    cards, want = here.count('<article class="sample'), len(m["samples"])
    print(f"  {m['model']}: {cards} sample cards of {want} stored, n = {m['n']}")
    ok &= cards == want and (want == 0 or want == m["n"] + 1)
    scripts = re.findall(r"<script[^>]*>", dom)
    injected = {
        "script": scripts != ['<script src="/static/view.js" defer="">'],
        "img": "<img" in dom,
        "javascript: link": re.search(r"<a[^>]+href=\"javascript", dom) is not None,
        "b": "<b>bold" in dom,
    }
    if i == 0:
        injected["escaped text missing"] = "&lt;script&gt;alert('x')&lt;/script&gt;" not in dom
    for what, bad in injected.items():
        if bad: print(f"  injected: {what}"); ok = False
ok &= sum(len(m["samples"]) for m in api["models"]) == 5 * 17
sys.exit(0 if ok else 1)
PY

# The grid focused on one model's G-Pass@16_0.5: the script keeps the problems below full marks
# on it and sorts them least first.
dom "/run/$b/problems?$focus" >"$out/focus-dom.html"
python3 - "$out/focus-dom.html" <<'PY' || fail "focused grid"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
body = dom.split("<tbody>")[1].split("</tbody>")[0]
rows = re.findall(r"<tr ([^>]*)>(.*?)</tr>", body)
shown = [(a, r) for a, r in rows if "hidden" not in a]
below = [a for a, _ in rows if 'data-below="1"' in a]
values = [float(re.search(r'<td class="num" data-sort="([^"]*)"', r).group(1)) for _, r in shown]
print(f"  focused grid: {len(shown)} rows shown of {len(rows)}, {len(below)} below full marks")
sys.exit(0 if len(shown) == len(below) > 0 and values == sorted(values) else 1)
PY

# The history page of the same folder, measured by a copy that writes its size into itself.
"$gpassk" history "$out/runs" --format html >"$out/history.html" 2>/dev/null
measure='<script>addEventListener("load",()=>{const p=document.createElement("pre");p.id="measure";
p.textContent=JSON.stringify({page:document.body.scrollWidth,frame:document.body.clientWidth,
height:document.documentElement.scrollHeight});document.body.appendChild(p)})</script>'

# No sideways page scroll, the height, and a screenshot, of every page at both widths (below
# 500 px Chromium's window stays 500 wide: the page is laid out 420 wide inside it).
heights=""
for entry in "${pages[@]}" "history file"; do
    name="${entry%% *}" path="${entry#* }"
    for width in 1400 420; do
        window="$(( width < 500 ? 500 : width ))"
        if [ "$name" = history ]; then
            sed "s|</head>|<style>html{width:${width}px}</style></head>|" "$out/history.html" \
                >"$out/history-$width.html"
            printf '%s\n' "$measure" >>"$out/history-$width.html"
            target="file://$out/history-$width.html"
        else
            target="$url$path#measure=$width"
        fi
        result="$(chrome --dump-dom --virtual-time-budget=3000 --window-size="$window,900" \
            "$target" | sed -n 's|.*<pre id="measure">\(.*\)</pre>.*|\1|p')"
        echo "$name, $width px: $result"
        python3 -c 'import html, json, sys
r = json.loads(html.unescape(sys.argv[1]))
sys.exit(0 if r["page"] <= r["frame"] else 1)' "$result" || fail "$name scrolls sideways at $width px"
        heights+="$name $width $result"$'\n'
        chrome --screenshot="$out/$name-$width.png" --window-size="$window,1400" \
            "$target" >/dev/null
        echo "  $out/$name-$width.png"
    done
done

# Six models' problem page at 1400 px: a few screens, not the 10,400 px of every sample at once.
python3 - "$heights" <<'PY' || fail "the problem page is too tall"
import html, json, sys
sizes = {}
for line in sys.argv[1].splitlines():
    name, width, result = line.split(" ", 2)
    sizes[(name, int(width))] = json.loads(html.unescape(result))["height"]
print(f"  problem page: {sizes[('problem', 1400)]} px at 1400 (a model's tab {sizes[('tab', 1400)]} px)")
sys.exit(0 if sizes[("problem", 1400)] <= 2500 and sizes[("tab", 1400)] <= 4000 else 1)
PY
exit "$status"
