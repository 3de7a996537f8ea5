#!/usr/bin/env bash
# Publish the results under results/ as the static dashboard in html/, make it work
# offline (vendor_js.py) and, with --serve, serve it on 127.0.0.1 only. Run by
# dashboard.sh after its benchmark run; ASV_CONFIG names another asv config (dashboard.sh's
# for a tree without git history).
#
#   bash asv_bench/publish.sh [--serve]
set -euo pipefail
cd "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
asv publish ${ASV_CONFIG:+--config "$ASV_CONFIG"}
python vendor_js.py
echo "dashboard: $PWD/html/index.html (serve it: asv's pages load their data with XHR)"
if [ "${1:-}" = "--serve" ]; then
    echo "serving on http://127.0.0.1:8080/ (Ctrl-C stops)"
    exec python -m http.server 8080 --bind 127.0.0.1 --directory html
fi
