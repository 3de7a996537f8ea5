#!/usr/bin/env bash
# Docs CI: build the site in strict mode (warnings are errors), check its links, take
# screenshots of it in headless Chromium (skipped where there is none), then run every
# example in examples/ with its --small flag. Needs the docs extra, which also brings
# what the examples import (SciPy, Dask): pip install -e ".[docs]".
# The docstring examples run as doctests in the main pytest run, not here.
#
# An example exits 0 when it passed, 77 when it skipped itself (it needs a numsoft
# function this checkout does not have yet), anything else when it failed.
set -euo pipefail
cd "$(dirname "$0")/.."

export NO_MKDOCS_2_WARNING=1  # Material's banner about MkDocs 2.0; not a build warning
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

missing="$(python3 - <<'PY'
import importlib.util
needed = ["mkdocs", "material", "mkdocstrings", "latex2mathml", "scipy", "dask.array",
          "dask.distributed"]
print(" ".join(m for m in needed if importlib.util.find_spec(m.split(".")[0]) is None
               or (m.startswith("dask.") and importlib.util.find_spec(m) is None)))
PY
)"
if [ -n "$missing" ]; then
    echo "docs/check.sh: missing $missing: install the docs extra, which brings the site's" \
        "tools and what the examples import: pip install -e \".[docs]\"" >&2
    exit 1
fi

site="${SITE_DIR:-site}"
echo "== mkdocs build --strict"
python3 -m mkdocs build --strict --site-dir "$site"

echo "== links (every internal link and anchor resolves; nothing loads from another host)"
python3 docs/linkcheck.py "$site"

echo "== the site in a browser (headless Chromium, 1400 px and 400 px)"
rc=0
bash docs/screenshots.sh "$site" "${SCREENSHOT_DIR:-${TMPDIR:-/tmp}/numsoft-screenshots}" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"

echo "== examples (--small)"
passed=0 failed=0 skipped=0
for example in examples/*.py; do
    start=$SECONDS
    rc=0
    python3 "$example" --small >"${TMPDIR:-/tmp}/numsoft-example.log" 2>&1 || rc=$?
    case $rc in
        0) passed=$((passed + 1)); verdict=ok ;;
        77) skipped=$((skipped + 1)); verdict=skipped ;;
        *) failed=$((failed + 1)); verdict="FAILED (exit $rc)" ;;
    esac
    echo "-- $example: $verdict in $((SECONDS - start)) s"
    sed 's/^/   /' "${TMPDIR:-/tmp}/numsoft-example.log"
done
echo "examples: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
