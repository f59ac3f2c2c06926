# Sourced by the scripts that look at pages in headless Chromium (scripts/view-browser.sh,
# scripts/html-screenshots.sh): installs Debian's chromium when it is missing, makes a throwaway
# profile (removed by `chromium_cleanup`) and defines `chrome ARGS…`, Chromium with the flags a
# closed, headless machine needs (no GPU, no sandbox as root, no background network).

if ! command -v chromium >/dev/null; then
    sudo_=""
    [ "$(id -u)" -ne 0 ] && sudo_="sudo"
    $sudo_ apt-get update -qq
    $sudo_ apt-get install -y -qq chromium
fi

profile="$(mktemp -d)"

chromium_cleanup() { rm -rf "$profile"; }

chrome() {
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --no-first-run --hide-scrollbars \
        --user-data-dir="$profile" "$@" 2>/dev/null
}
