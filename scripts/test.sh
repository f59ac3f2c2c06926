#!/usr/bin/env bash
# The test command: installs the system packages the test suite needs when they are missing (as root,
# from Debian's archive, saying what it installs), then runs the whole suite. Without root it stops
# before the build, naming the packages and the command that installs them.
#
#   scripts/test.sh                  # every test (cargo test --locked)
#   scripts/test.sh --look           # also the look checks: reports and viewer in headless Chromium
#   scripts/test.sh -- grade_cases   # anything after -- goes to cargo test
#
# What the tests need beyond cargo:
#   bubblewrap  the sandbox of `gpassk exec` and test-time search (bwrap)
#   postgresql  the results-database tests start a throwaway cluster (initdb, pg_ctl)
#   openssl     the database TLS tests make their certificates with it
#   chromium    only with --look (scripts/html-screenshots.sh, scripts/view-browser.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

look=0
cargo_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --look) look=1 ;;
    --) shift; cargo_args=("$@"); break ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { printf 'test.sh: %s\n' "$*"; }

# Each needed package and the check that says it is here.
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ "$look" = 1 ] && ! command -v chromium >/dev/null 2>&1 && missing+=(chromium)

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "test.sh: the tests need these Debian packages, which are not installed: ${missing[*]}" >&2
        echo "test.sh: install them as root, then run this again:" >&2
        echo "    sudo apt-get install -y ${missing[*]}" >&2
        exit 2
    fi
    command -v apt-get >/dev/null 2>&1 || {
        echo "test.sh: missing ${missing[*]}, and there is no apt-get to install them with" >&2
        exit 2
    }
    say "installing ${missing[*]} (apt-get, about 1-2 minutes on a fresh machine)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    say "installed ${missing[*]}"
fi

say "cargo test --locked ${cargo_args[*]:-}"
cargo test --locked "${cargo_args[@]}"

if [ "$look" = 1 ]; then
    say "look checks: reports and the viewer in headless Chromium"
    bash scripts/html-screenshots.sh
    bash scripts/view-browser.sh
fi
