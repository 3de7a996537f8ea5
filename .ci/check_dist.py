"""Check the built wheel and sdist in a folder: metadata (``twine check``), and a wheel
that holds ``numsoft/py.typed`` and the package only (no tests, benchmarks or docs);
where this machine builds kernels (Linux x86-64), the wheel carries them for each level
with a manifest and is tagged for this Python and platform. Prints the wheel's weight
per level."""

from __future__ import annotations

import glob
import os
import platform
import subprocess
import sys
import zipfile


def main(folder: str) -> int:
    wheels = glob.glob(f"{folder}/numsoft-*.whl")
    sdists = glob.glob(f"{folder}/numsoft-*.tar.gz")
    if len(wheels) != 1 or len(sdists) != 1:
        sys.exit(f"expected one wheel and one sdist in {folder}, found {wheels + sdists}")
    subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *wheels, *sdists],
                   check=True)  # fmt: skip
    wheel = zipfile.ZipFile(wheels[0])
    names = wheel.namelist()
    stray = [n for n in names if not n.startswith(("numsoft/", "numsoft-"))]
    problems = [f"not the package: {stray}"] if stray else []
    if "numsoft/py.typed" not in names:
        problems.append("numsoft/py.typed is missing")
    levels = sorted({n.split("/")[2] for n in names if n.startswith("numsoft/_kernels/")})
    if sys.platform == "linux" and platform.machine() == "x86_64":
        if not levels or any(f"numsoft/_kernels/{lv}/manifest.json" not in names for lv in levels):
            problems.append(f"no shipped kernels with manifests: {levels}")
        if not wheels[0].endswith("_x86_64.whl") or "-none-any" in wheels[0]:
            problems.append(f"a wheel with kernels must be a platform wheel: {wheels[0]}")
    for level in levels:
        infos = [i for i in wheel.infolist() if i.filename.startswith(f"numsoft/_kernels/{level}/")]
        mib = 1 << 20
        print(f"kernels {level}: {sum(i.filename.endswith('.nbc') for i in infos)} paths, "
              f"{sum(i.file_size for i in infos) / mib:.1f} MiB, "
              f"{sum(i.compress_size for i in infos) / mib:.1f} MiB compressed")  # fmt: skip
    print(f"wheel: {os.path.basename(wheels[0])}, {os.path.getsize(wheels[0]) / (1 << 20):.1f} MiB")
    for problem in problems:
        print("FAILED:", problem)
    print(f"wheel: {len(names)} files, py.typed {'numsoft/py.typed' in names}, "
          f"nothing outside the package: {not stray}")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
