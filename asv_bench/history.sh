#!/usr/bin/env bash
# The dashboard in one command: benchmark the last N commits of main (each built into
# asv's virtualenv), publish the static site, make it work offline (vendor_js.py), and
# serve it on 127.0.0.1 only.
#
#   bash asv_bench/history.sh [N] [--serve]        N defaults to 5
#
# BENCH (a regular expression, default: the tracked ratios and bandwidths) selects the
# benchmarks; BENCH=. runs the whole suite (about 7 minutes per commit on 2 cores).
# Commits already measured on this machine are skipped. Open the printed address, or
# serve html/ later with: python -m http.server 8080 --bind 127.0.0.1 --directory html
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
n="${1:-5}"
bench="${BENCH:-TrackBandwidth|TrackCompareBandwidth|TrackSmallCall|TrackBesideBlas}"

asv machine --yes >/dev/null
# asv measures commits of main (asv.conf.json "branches"): main~N..main is N commits.
asv run --skip-existing-commits --show-stderr -b "$bench" "main~$n..main"
exec bash publish.sh "${2:-}"
