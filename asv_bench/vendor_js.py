"""Make the published dashboard work without internet access: serve asv's JS locally.

``asv publish`` writes ``html/index.html`` with ``<script>``/``<link>`` tags that load
jQuery, flot, bootstrap, stupidtable and blueimp-md5 from public CDNs; where the
browser cannot reach them (these machines, an offline laptop) the page only says
"Can not determine continental origin of swallow". This script fetches the same
libraries from the npm registry with ``npm pack`` (cached in ``env/js-vendor/``, which
is git-ignored), copies them to ``html/vendor/`` and points the tags there.

Usage, after ``asv publish`` and from ``asv_bench/``: ``python vendor_js.py``
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

HERE = pathlib.Path(__file__).resolve().parent
CACHE = HERE / "env" / "js-vendor"
HTML = HERE / "html"

#: CDN file name in asv's index.html → (npm package@version, path inside the package).
#: Versions are the CDN's; stupidtable 1.0.1 is not on npm, 1.1.3 has the same API.
FILES = {
    "jquery-3.3.1.min.js": ("jquery@3.3.1", "dist/jquery.min.js"),
    "jquery.flot.min.js": ("flot@0.8.3", "jquery.flot.js"),
    "jquery.flot.time.min.js": ("flot@0.8.3", "jquery.flot.time.js"),
    "jquery.flot.selection.min.js": ("flot@0.8.3", "jquery.flot.selection.js"),
    "jquery.flot.categories.min.js": ("flot@0.8.3", "jquery.flot.categories.js"),
    "jquery.flot.orderBars.js": ("flot-orderbars@1.0.0", "js/jquery.flot.orderBars.js"),
    "stupidtable.min.js": ("stupid-table-plugin@1.1.3", "stupidtable.min.js"),
    "md5.min.js": ("blueimp-md5@2.19.0", "js/md5.min.js"),
    "bootstrap.min.js": ("bootstrap@3.1.1", "dist/js/bootstrap.min.js"),
    "bootstrap.min.css": ("bootstrap@3.1.1", "dist/css/bootstrap.min.css"),
}
#: bootstrap.min.css refers to ../fonts/ for its icons.
FONTS = ("bootstrap@3.1.1", "dist/fonts")

#: flot-orderbars 1.0.0 (the version asv loads; there is no later one) measures the x
#: axis from the series' raw x values; on a category axis (asv's view with a string
#: parameter such as ``library`` on the x-axis) those are strings, the width is NaN and
#: every bar is shifted to NaN: the plot was empty. Flot's categories plugin numbers
#: the categories 0, 1, ... in order of appearance, so a string's position is its index.
ORDERBARS_FIX = (
    "vendor/jquery.flot.orderBars.js",
    "var AxeSize = minMaxValues[1] - minMaxValues[0];",
    "var AxeSize = minMaxValues[1] - minMaxValues[0];\n"
    "            if (isNaN(AxeSize)) {  /* numsoft: category axis, categories 0, 1, ... */\n"
    "                AxeSize = plot.getData()[0].data.length - 1;\n"
    "            }",
)
#: asv starts the y axis at 0 for times and sizes only; a ratio's axis started at its
#: smallest value, so on the library view (bars) numsoft's 1.34x-copy bar was a sliver
#: above an axis starting near 1.3. Ratios now start at 0 too ("zoom y axis" still
#: fits the axis to the data).
RATIO_AXIS_FIX = (
    "graphdisplay.js",
    "            if (unit_list !== null) {\n                if (!zoom_y_axis) {",
    "            if (unit_list === null && !zoom_y_axis) {  /* numsoft: ratios from 0 */\n"
    "                options.yaxis.min = 0.0;\n"
    "                options.yaxis.max = max * 1.1;\n"
    "            }\n"
    "            if (unit_list !== null) {\n                if (!zoom_y_axis) {",
)
#: The fixes applied to the published files: (file under html/, text, replacement).
FIXES = (ORDERBARS_FIX, RATIO_AXIS_FIX)

CDN_TAG = re.compile(r"""<(script|link)\b[^>]*?(src|href)="(https://[^"]+)"[^>]*>""")


def package_dir(spec: str) -> pathlib.Path:
    """The unpacked npm package ``spec`` (``name@version``), fetched once."""
    target = CACHE / spec
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "pack", spec, "--pack-destination", str(CACHE)],
            capture_output=True,
            text=True,
            check=True,
        )
        tgz = CACHE / done.stdout.strip().splitlines()[-1]
        with tarfile.open(tgz) as tar:
            _extract(tar, target)
    return target / "package"


def _extract(tar: tarfile.TarFile, target: pathlib.Path) -> None:
    """Unpack ``tar`` into ``target``: regular files and folders only, all inside it
    (``filter="data"`` where Python has it: 3.11.4 and later, 3.12)."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(target, filter="data")
        return
    root = target.resolve()
    for member in tar.getmembers():
        dest = (target / member.name).resolve()
        if not dest.is_relative_to(root) or not (member.isfile() or member.isdir()):
            raise ValueError(f"vendor_js: refusing {member.name!r} in {tar.name}")
    tar.extractall(target)


def local_tag(match: re.Match) -> str:
    """The tag with its CDN address replaced by ``vendor/<file>``, or unchanged."""
    tag, attr, url = match.groups()
    name = url.rsplit("/", 1)[-1]
    if name not in FILES:
        return match.group(0)
    local = f"vendor/css/{name}" if name.endswith(".css") else f"vendor/{name}"
    if tag == "link":
        return f'<link rel="stylesheet" href="{local}">'
    return f'<script src="{local}" onerror="js_load_failure()">'


def main() -> int:
    index = HTML / "index.html"
    if not index.is_file():
        print("no html/index.html: run `asv publish` first", file=sys.stderr)
        return 1
    (HTML / "vendor" / "css").mkdir(parents=True, exist_ok=True)
    for name, (spec, path) in FILES.items():
        dest = HTML / "vendor" / ("css" if name.endswith(".css") else "") / name
        shutil.copyfile(package_dir(spec) / path, dest)
    for name, broken, fixed in FIXES:
        target = HTML / name
        source = target.read_text()
        if fixed in source:  # published before and fixed then
            continue
        if broken not in source:
            print(f"vendor_js: {name} changed; numsoft's fix no longer applies", file=sys.stderr)
            return 1
        target.write_text(source.replace(broken, fixed))
    spec, path = FONTS
    shutil.copytree(package_dir(spec) / path, HTML / "vendor" / "fonts", dirs_exist_ok=True)
    text, n = CDN_TAG.subn(local_tag, index.read_text())
    index.write_text(text)
    left = CDN_TAG.findall(text)
    print(f"vendor_js: {n - len(left)} tags now load from html/vendor/")
    for _, _, url in left:
        print(f"vendor_js: still remote: {url}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
