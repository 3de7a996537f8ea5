#!/usr/bin/env bash
# Release wheels: one per supported CPython (3.10-3.13), each with its kernels compiled
# for every x86-64 level this CPU runs (-C levels=all; NUMSOFT_BUILD_LEVELS=host builds
# this CPU's level only; NUMSOFT_BUILD_KERNELS=0 none, as CI does for its second
# Python), into OUT (default dist/).
#
#   bash .ci/build_wheels.sh [OUT] [VERSION ...]     # e.g. bash .ci/build_wheels.sh dist 3.12
#
# Each Python builds in a venv of its own (python -m build, whose isolated build env
# brings that Python's Numba; the wheel is built from the sdist); about 5-6 minutes per
# Python on 2 cores, most of it compiling the two levels. A Python not found (pythonX.Y on PATH, or pyenv's) is
# skipped with a line saying so; the script fails if none was built.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/python_of.sh
out="$(realpath -m "${1:-dist}")"
shift || true
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.11 3.12 3.13)
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
built=0
for v in "${versions[@]}"; do
    py="$(python_of "$v")"
    if [ -z "$py" ]; then
        echo "== Python $v: not found, skipped"
        continue
    fi
    echo "== Python $v ($py)"
    "$py" -m venv "$work/venv$v"
    "$work/venv$v/bin/python" -m pip install --quiet --upgrade pip build
    start=$SECONDS
    # the sdist first, then the wheel from it (in a folder of build's): the checkout
    # itself is never written
    "$work/venv$v/bin/python" -m build -C levels="${NUMSOFT_BUILD_LEVELS:-all}" \
        --outdir "$work/out$v" . 2>&1 | grep -E "^numsoft kernels|Successfully built" || true
    # this Python's wheel: tagged cpXY with kernels, py3-none-any without
    cp "$work/out$v"/numsoft-*.whl "$out"/
    echo "== Python $v: built in $((SECONDS - start)) s"
    built=$((built + 1))
done
ls -l "$out"/numsoft-*.whl
[ "$built" -gt 0 ]
