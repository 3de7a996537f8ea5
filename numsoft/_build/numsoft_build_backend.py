"""numsoft's PEP 517 build backend: setuptools', with compiled kernels in the wheel.

``build_wheel`` first compiles the default warmup set (``numsoft._build.kernels``, each
level in its own process) into ``numsoft/_kernels/``: for the highest x86-64 level this
CPU runs (a source install, ``pip install .``: what this machine needs), or for every
level with the config setting ``levels=all`` (a release wheel: ``python -m build -C
levels=all``; ``NUMSOFT_BUILD_LEVELS=all`` does the same). It then lets setuptools build
the wheel, which carries machine code for one Python: it is tagged for this
interpreter and platform (``cp311-cp311-manylinux_2_17_x86_64``, as Numba's own wheels
are); ``.ci/build_wheels.sh`` builds one per supported Python. Elsewhere (not Linux or Windows on
x86-64), with ``NUMSOFT_BUILD_KERNELS=0`` or with the config setting ``kernels=no``
(``pip wheel -C kernels=no``, as asv's history builds do), it builds the pure wheel,
which compiles on first use. sdists and editable installs never carry kernels.
"""

from __future__ import annotations

import os
import pathlib
import platform
import shutil
import subprocess
import sys
import sysconfig

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the hooks this module does not change)

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNELS = ROOT / "numsoft" / "_kernels"
#: Platforms whose wheels carry kernels: setuptools' platform name → the wheel's tag.
PLATFORM_TAGS = {"linux-x86_64": "manylinux_2_17_x86_64", "win-amd64": "win_amd64"}


def _platform_tag(config_settings) -> str | None:
    if os.environ.get("NUMSOFT_BUILD_KERNELS", "1") == "0":
        return None
    if (config_settings or {}).get("kernels") == "no":
        return None
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    return PLATFORM_TAGS.get(sysconfig.get_platform())


def _retag(wheel: pathlib.Path, platform_tag: str) -> str:
    """Tag ``wheel`` for this interpreter and ``platform_tag`` (it holds machine code and
    cache files named for this Python); returns the new file name."""
    python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    tagged = subprocess.run(
        [sys.executable, "-m", "wheel", "tags", "--remove", "--python-tag", python,
         "--abi-tag", python, "--platform-tag", platform_tag, str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return tagged.stdout.strip()  # the new file's name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    platform_tag = _platform_tag(config_settings)
    shutil.rmtree(KERNELS, ignore_errors=True)
    # setuptools copies the package into build/lib and never removes what a build before
    # left there: kernels of another build (pip builds a source tree in place) would
    # ship in this wheel, with NUMSOFT_BUILD_KERNELS=0 too
    for lib in ROOT.glob("build/lib*"):
        shutil.rmtree(lib / "numsoft", ignore_errors=True)
    if platform_tag is not None:
        levels = (config_settings or {}).get("levels") or os.environ.get(
            "NUMSOFT_BUILD_LEVELS", "host"
        )
        compile_levels = [sys.executable, "-m", "numsoft._build.kernels", str(KERNELS)]
        subprocess.run([*compile_levels, *levels.split(",")], cwd=ROOT, check=True)
    try:
        shipped = any(KERNELS.glob("*/manifest.json"))
        name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        shutil.rmtree(KERNELS, ignore_errors=True)
    return _retag(pathlib.Path(wheel_directory) / name, platform_tag) if shipped else name
