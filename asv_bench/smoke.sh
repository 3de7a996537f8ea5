#!/usr/bin/env bash
# CI smoke run of the asv suite against the working tree, in the current Python
# environment (no build): `asv check`, then every benchmark once (`--quick`), nothing
# saved (`--dry-run`). Exits non-zero when a benchmark fails to import, set up or run;
# benchmarks skipped on purpose (a missing function, torch or GPU) do not fail it.
# Usage: bash asv_bench/smoke.sh [extra `asv run` arguments, e.g. -b TimeSoftmax]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$here"
# asv drops PYTHONPATH from benchmark processes and uses ASV_PYTHONPATH instead.
export ASV_PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
# Small arrays (asv_bench/benchmarks/common.py): this checks that every benchmark runs.
export NUMSOFT_ASV_SMOKE=1

start=$SECONDS
asv machine --yes >/dev/null
asv check --python=same
asv run --python=same --quick --dry-run --show-stderr "$@"
echo "asv smoke: every benchmark ran or skipped cleanly in $((SECONDS - start)) s"
