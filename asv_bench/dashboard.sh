#!/usr/bin/env bash
# A browsable dashboard of the current checkout in one command: a short real run of the
# tracked benchmarks in the current Python environment (no build), saved under the
# current commit, then the static site published, made to work offline (vendor_js.py)
# and, with --serve, served on 127.0.0.1 only.
#
#   bash asv_bench/dashboard.sh [--serve]
#
# About 6 minutes on a clean clone on 2 cores (numsoft's kernels compile on the first
# benchmark that needs them). BENCH (a regular expression) selects other benchmarks.
# The results are those of the working tree, filed under `git rev-parse HEAD`: commit
# first. For the history of main, see history.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$here"
bench="${BENCH:-TrackBandwidth|TrackCompareBandwidth|TrackSmallCall|TrackBesideBlas}"
start=$SECONDS

asv machine --yes >/dev/null
# asv drops PYTHONPATH from benchmark processes and uses ASV_PYTHONPATH instead.
ASV_PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" asv run --python=same \
    --set-commit-hash "$(git rev-parse HEAD)" -a repeat=3 -a rounds=1 \
    --show-stderr -b "$bench"
echo "benchmarks of $(git rev-parse --short HEAD) ran in $((SECONDS - start)) s"
exec bash publish.sh "$@"
