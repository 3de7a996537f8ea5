#!/usr/bin/env bash
# Look at the built site in a real browser: headless Chromium screenshots of the home,
# API, performance, pass-structure (math) and examples pages, at a desktop width
# (1400 px) and a phone width (400 px); then, at both widths, every display formula
# must stay inside the text column (scrolling inside its own box where it is wider).
# The site is served on 127.0.0.1 only.
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

# Display formulas: a copy of each page that has one measures, once loaded, how far
# each formula's box reaches past the text column (0 when it stays inside).
probe='<script>addEventListener("load", () => { const col = document.querySelector(".md-content__inner").getBoundingClientRect(); document.body.dataset.past = JSON.stringify([...document.querySelectorAll(".math-display")].map(e => Math.max(0, Math.round(e.getBoundingClientRect().right - col.right)))); });</script>'
for html in $(grep -l 'class="math-display"' "$site"/*/index.html); do
    page="$(basename "$(dirname "$html")")"
    sed "s|</body>|$probe</body>|" "$html" >"$site/$page/probe.html"
    for width in 1400 400; do
        past="$("$browser" --headless --no-sandbox --disable-gpu --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --user-data-dir="$(mktemp -d)" --virtual-time-budget=3000 \
            --window-size="$width,1600" --dump-dom "http://127.0.0.1:$port/$page/probe.html" \
            2>/dev/null | grep -o 'data-past="[^"]*"' || true)"
        echo "formulas: $page at $width px, px past the column: ${past:-not measured}"
        case "$past" in
            'data-past="['*']"') echo "$past" | grep -qE '[1-9]' && { rm -f "$site/$page/probe.html"; exit 1; } ;;
            *) rm -f "$site/$page/probe.html"; exit 1 ;;
        esac
    done
    rm -f "$site/$page/probe.html"
done
