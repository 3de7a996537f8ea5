"""Check the built wheel and sdist in a folder: metadata (``twine check``), and a wheel
that holds ``numsoft/py.typed`` and the package only (no tests, benchmarks or docs)."""

from __future__ import annotations

import glob
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
    names = zipfile.ZipFile(wheels[0]).namelist()
    stray = [n for n in names if not n.startswith(("numsoft/", "numsoft-"))]
    problems = [f"not the package: {stray}"] if stray else []
    if "numsoft/py.typed" not in names:
        problems.append("numsoft/py.typed is missing")
    for problem in problems:
        print("FAILED:", problem)
    print(f"wheel: {len(names)} files, py.typed {'numsoft/py.typed' in names}, "
          f"nothing outside the package: {not stray}")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
