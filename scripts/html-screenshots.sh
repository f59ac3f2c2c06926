#!/usr/bin/env bash
# Renders the six-model HTML report (long model names, one interrupted and one failed model) and
# the history of the weekly job over three weeks (one model weaker, one fingerprint changed, one
# failing) in headless Chromium at 1400 and 420 px wide, as a user would open them, and checks
# what a reader would notice: horizontal page scroll, and text in a plot that overlaps other text
# or leaves the SVG. The same weeks' `compare` and `history` are rendered at 80 columns (no line
# wider, the run paths aside) and as Markdown (no table wider than 8 columns). Installs Debian's
# chromium when it is missing. PNGs and texts go to target/html-screenshots/ (git-ignored); look at them. Exit 1
# when a check fails.
#
# Usage: scripts/html-screenshots.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/html-screenshots}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# chromium (installed when missing), its throwaway profile and `chrome`.
source scripts/lib/chromium.sh

rm -rf "$out/run"
GPASSK_HTML_RUN="$out/run" cargo test --quiet --test it -- --ignored --exact \
    report_html::write_screenshot_run >/dev/null
report="$out/run/six-models/report.html"
rm -rf "$out/weeks"
GPASSK_WEEKS_DIR="$out/weeks" cargo test --quiet --test it -- --ignored --exact \
    report_html::write_two_weeks >/dev/null
cargo build --quiet
gpassk="${CARGO_TARGET_DIR:-target}/debug/gpassk"
"$gpassk" history "$out/weeks" --format html >"$out/history.html"

trap chromium_cleanup EXIT

# A copy of the report that measures itself and posts the result to its parent: the page width
# against its frame, and per plot the text boxes that overlap or leave the SVG (labels turned 45°
# are not compared with each other: their bounding boxes overlap by geometry, the text does not).
cat >"$out/measure.js" <<'JS'
<script>
const res = {page: document.documentElement.scrollWidth, frame: innerWidth, overlaps: [], clipped: []};
const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
for (const svg of document.querySelectorAll("svg.plot")) {
  const box = svg.getBoundingClientRect();
  const ts = [...svg.querySelectorAll(":scope > text")].map(t => [t, t.getBoundingClientRect()]);
  for (const [t, r] of ts)
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
      res.clipped.push(t.textContent);
  for (let i = 0; i < ts.length; i++) for (let j = i + 1; j < ts.length; j++) {
    const turned = ts[i][0].classList.contains("model") && ts[j][0].classList.contains("model");
    if (!turned && meet(ts[i][1], ts[j][1])) res.overlaps.push(ts[i][0].textContent + " / " + ts[j][0].textContent);
  }
}
parent.postMessage(JSON.stringify(res), "*");
</script>
JS
cat "$report" "$out/measure.js" >"$out/measured.html"
cat "$out/history.html" "$out/measure.js" >"$out/measured-history.html"

# Headless Chromium will not make a window narrower than 500 px, so each width is measured in a
# frame of exactly that width inside a wider window.
frame() { # WIDTH PAGE -> a wrapper page showing PAGE in a WIDTH-px frame
    local file="$out/frame-$1-$(basename "$2")"
    printf '%s\n' "<!DOCTYPE html><body style=\"margin:0\"><pre id=\"result\"></pre>" \
        "<iframe src=\"$(basename "$2")\" style=\"border:0;display:block;width:$1px;height:5600px\"></iframe>" \
        "<script>addEventListener('message', e => document.getElementById('result').textContent = e.data)</script>" \
        >"$file"
    echo "$file"
}

status=0
for page in measured.html measured-history.html; do for width in 1400 420; do
    result="$(chrome --dump-dom --virtual-time-budget=3000 --window-size="$(( width < 500 ? 500 : width )),900" \
        "file://$(frame "$width" "$out/$page")" | sed -n 's|.*<pre id="result">\(.*\)</pre>.*|\1|p')"
    echo "$page, $width px: $result"
    python3 - "$result" <<'PY' || { echo "  FAIL at $width px" >&2; status=1; }
import html, json, sys
r = json.loads(html.unescape(sys.argv[1]))
sys.exit(0 if r["page"] <= r["frame"] and not r["overlaps"] and not r["clipped"] else 1)
PY
done; done

# The weekly comparison as a terminal of 80 columns and as Markdown for a PR.
weeks=("$out/weeks/2026-11-23" "$out/weeks/2026-11-30")
COLUMNS=80 "$gpassk" compare "${weeks[@]}" >"$out/compare-80.txt"
"$gpassk" compare "${weeks[@]}" --format md >"$out/compare.md"
COLUMNS=80 "$gpassk" history "$out/weeks" >"$out/history-80.txt"
"$gpassk" history "$out/weeks" --format md >"$out/history.md"
for f in compare-80.txt history-80.txt; do
    # Characters, not bytes (awk counts the box-drawing rules' bytes).
    wide="$(python3 -c 'import sys
for l in open(sys.argv[1], encoding="utf-8"):
    l = l.rstrip("\n")
    if len(l) > 80 and not l.startswith(("A: ", "B: ")): print(l)' "$out/$f" | head -3)"
    if [ -n "$wide" ]; then echo "FAIL: $f has lines over 80 columns:" >&2; echo "$wide" >&2; status=1; fi
done
for f in compare.md history.md; do
    columns="$(grep '^|' "$out/$f" | awk -F'|' '{print NF - 2}' | sort -n | tail -1)"
    if [ "${columns:-0}" -gt 8 ]; then echo "FAIL: $f has a table of $columns columns" >&2; status=1; fi
done
echo "$out/compare-80.txt $out/compare.md $out/history-80.txt $out/history.md"

# Screenshots: frames are not painted in headless screenshots, so below 500 px the copy's root
# element is held to the width instead (the strip right of it stays blank).
for name in report history; do for width in 1400 420; do
    source="$report"
    [ "$name" = history ] && source="$out/history.html"
    page="$out/$name-$width.html"
    sed "s|</head>|<style>html{width:${width}px}</style></head>|" "$source" >"$page"
    chrome --screenshot="$out/$name-$width.png" --window-size="$(( width < 500 ? 500 : width )),5600" \
        "file://$page"
    echo "$out/$name-$width.png"
done; done
exit "$status"
