#!/usr/bin/env bash
# Renders the six-model HTML report (long model names, one interrupted and one failed model) in
# headless Chromium at 1400 and 420 px wide, as a user would open it. Installs Debian's chromium
# when it is missing. PNGs go to target/html-screenshots/ (git-ignored); look at them.
#
# Usage: scripts/html-screenshots.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/html-screenshots}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if ! command -v chromium >/dev/null; then
    sudo_=""
    [ "$(id -u)" -ne 0 ] && sudo_="sudo"
    $sudo_ apt-get update -qq
    $sudo_ apt-get install -y -qq chromium
fi

rm -rf "$out/run"
GPASSK_HTML_RUN="$out/run" cargo test --quiet --test it -- --ignored --exact \
    report_html::write_screenshot_run >/dev/null
report="$out/run/six-models/report.html"

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
for width in 1400 420; do
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --no-first-run --hide-scrollbars \
        --user-data-dir="$profile" --screenshot="$out/report-$width.png" \
        --window-size="$width,5200" "file://$report" 2>/dev/null
    echo "$out/report-$width.png"
done
