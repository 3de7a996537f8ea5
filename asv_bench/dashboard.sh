#!/usr/bin/env bash
# The benchmark dashboard in one command: the last N commits of main (default 5), each
# built into asv's virtualenv (made once, then reused) and benchmarked, then the static
# site published, made to work offline (vendor_js.py) and, with --serve, served on
# 127.0.0.1 only. Commits measured before on this machine are skipped.
#
#   bash asv_bench/dashboard.sh [N] [--serve]
#
# It says before it starts how many commits it will measure and about how long that
# takes. From a copy without git history (a release tarball, a zip) asv cannot check out
# commits: it says so and measures the current tree alone, in the current Python
# environment. BENCH (a regular expression) selects other benchmarks.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$here"
n=5 serve=""
for arg in "$@"; do
    case "$arg" in
        --serve) serve=--serve ;;
        *) n="$arg" ;;
    esac
done
bench="${BENCH:-TrackBandwidth|TrackCompareBandwidth|TrackSmallCall|TrackBesideBlas}"
#: Minutes per commit on 2 cores with the default BENCH (Numba compiling each commit's
#: kernels is most of it), and for making the virtualenv the first time.
per_commit=3 setup=3
start=$SECONDS
asv machine --yes >/dev/null

if git -C "$root" rev-parse -q --verify main >/dev/null 2>&1; then
    machine="$(python -c 'import platform; print(platform.node())')"  # asv machine --yes's name
    todo=0
    for commit in $(git -C "$root" rev-list "main~$n..main"); do
        compgen -G "results/$machine/${commit:0:8}-*.json" >/dev/null || todo=$((todo + 1))
    done
    [ -d env ] && compgen -G "env/*/bin/python" >/dev/null && setup=0
    echo "dashboard: measuring $todo of the last $n commits of main (the others were measured" \
        "before): about $((todo * per_commit + (todo > 0 ? setup : 0))) minutes on 2 cores"
    asv run --skip-existing-commits --show-stderr -b "$bench" "main~$n..main"
    config=""
else
    echo "dashboard: no git history here (a release tarball or zip?): measuring the" \
        "current tree alone, about $per_commit minutes; a git clone shows the last commits of main"
    # asv needs a repository: a temporary one holding this tree as its one commit.
    tmp="$(mktemp -d)"
    git init -q "$tmp/repo"
    git --git-dir="$tmp/repo/.git" --work-tree="$root" add -A
    git --git-dir="$tmp/repo/.git" -c user.name=dashboard -c user.email=dashboard@localhost \
        commit -q -m "the current tree"
    git -C "$tmp/repo" branch -q -M main
    config="$tmp/asv.conf.json"
    # That repository, and this folder's results, environments and benchmarks by
    # absolute path (a config's relative paths are read from its own folder).
    python - "$config" "$tmp/repo" "$here" <<'PY'
import json, os, sys
from asv.util import load_json
config, repo, here = sys.argv[1:]
conf = load_json(os.path.join(here, "asv.conf.json"), js_comments=True)
conf["repo"] = repo
for key in ("results_dir", "html_dir", "env_dir", "benchmark_dir"):
    conf[key] = os.path.join(here, conf[key])
with open(config, "w") as f:
    json.dump(conf, f, indent=1)
PY
    ASV_PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" asv run --config "$config" --python=same \
        --set-commit-hash "$(git -C "$tmp/repo" rev-parse HEAD)" -a repeat=3 -a rounds=1 \
        --show-stderr -b "$bench"
fi
echo "dashboard: benchmarks ran in $(((SECONDS - start + 30) / 60)) minutes"
ASV_CONFIG="$config" exec bash publish.sh $serve
