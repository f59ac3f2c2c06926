#!/bin/sh
# Regenerates the GPassK sources shipped under datasets/published/ (datasets/PROVENANCE.md) from a
# clone of https://github.com/open-compass/GPassK, reading the files at the recorded commit with
# the readers `gpassk audit` uses (examples/published_csv.rs):
#   README.md         -> gpassk_readme_2025-08-05.csv       (the README's result tables)
#   docs/results.json -> gpassk_leaderboard_2025-03-18.csv  (the leaderboard; last changed 2025-03-18)
# The repository has no licence, so its files are not copied; only the numbers are shipped.
# Usage: scripts/published-gpassk.sh CLONE [--check]   (--check: exit 1 if the shipped files differ)
set -eu
CLONE=${1:?usage: scripts/published-gpassk.sh PATH-TO-GPassK-CLONE [--check]}
COMMIT=20a02a1479c2db19d9b8a8676c809c4696f9e889
SHORT=$(printf %.7s "$COMMIT")
OUT=$(cd "$(dirname "$0")/.." && pwd)/datasets/published
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
git -C "$CLONE" show "$COMMIT:README.md" >"$TMP/README.md"
git -C "$CLONE" show "$COMMIT:docs/results.json" >"$TMP/results.json"
gen() { cargo run --quiet --locked --example published_csv -- "$1" "$2" >"$TMP/$3"; }
gen "GPassK@$SHORT:README.md" "$TMP/README.md" gpassk_readme_2025-08-05.csv
gen "GPassK@$SHORT:docs/results.json" "$TMP/results.json" gpassk_leaderboard_2025-03-18.csv
for f in gpassk_readme_2025-08-05.csv gpassk_leaderboard_2025-03-18.csv; do
    if [ "${2:-}" = --check ]; then
        cmp -s "$TMP/$f" "$OUT/$f" || { echo "$f is not what $COMMIT says; rerun without --check" >&2; exit 1; }
    else
        cp "$TMP/$f" "$OUT/$f"
    fi
done
