#!/usr/bin/env bash
# Look at the built site in a real browser: headless Chromium screenshots of the home,
# API, performance, pass-structure (math) and examples pages, at a desktop width
# (1400 px) and a phone width (400 px). The site is served on 127.0.0.1 only.
#
#   bash docs/screenshots.sh [SITE_DIR] [OUT_DIR]     (defaults: site, docs/screenshots)
#
# Needs Chromium (Debian: apt-get install chromium). Exits 77 (skipped) without it.
set -euo pipefail
cd "$(dirname "$0")/.."
site="${1:-site}"
out="${2:-docs/screenshots}"

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
    echo "screenshots: no Chromium on this machine, skipped"
    exit 77
fi
mkdir -p "$out"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$site" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break
    sleep 0.1
done

pages="index api performance pass-structures examples"
for page in $pages; do
    path="$page/"
    [ "$page" = index ] && path=""
    for width in 1400 400; do
        png="$out/$page-$width.png"
        # The flags keep a headless Chromium from reaching for Google's services (this
        # machine's network is closed) and from needing a sandbox when run as root.
        "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --hide-scrollbars --user-data-dir="$(mktemp -d)" \
            --window-size="$width,1600" --screenshot="$png" \
            "http://127.0.0.1:$port/$path" >/dev/null 2>&1
        [ -s "$png" ] || { echo "screenshots: $png was not written"; exit 1; }
        echo "screenshots: $png"
    done
done
