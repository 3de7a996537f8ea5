"""The threading layer as users install numsoft (issue 38): TBB made loadable from the
installed wheel's own files, a layer without TBB left alone, and ``python -m numsoft
info`` saying which layer runs and why."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_reliability import _has_tbb

from numsoft.cpu import layers

ROOT = Path(__file__).resolve().parents[1]


def _info(**env_extra) -> dict:
    drop = ("NUMBA_", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env |= {"PYTHONPATH": str(ROOT), **env_extra}
    proc = subprocess.run([sys.executable, "-m", "numsoft", "info"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return {
        k.strip(): v.strip() for k, v in (line.split(":", 1) for line in proc.stdout.splitlines())
    }


@pytest.mark.skipif(not _has_tbb(), reason="the tbb package is not installed")
def test_the_installed_tbb_wheel_is_loaded_from_its_own_files():
    path = layers._installed_tbb_library()
    assert path is not None and os.path.isfile(path)
    # numsoft was imported above: its status names the file, and on Linux the process
    # maps that very file (the venv's own, not one the loader found elsewhere)
    assert layers.tbb_status == f"loaded {path}"
    if Path("/proc/self/maps").exists():
        mapped = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                  if "libtbb.so" in line}  # fmt: skip
        assert os.path.realpath(path) in {os.path.realpath(m) for m in mapped}


def test_info_names_the_layer_and_why():
    info = _info()
    for key in ("numsoft", "numba", "numpy", "llvmlite", "threads", "cpu", "caches",
                "kernel cache", "cuda"):  # fmt: skip
        assert info[key], key
    layer, why = info["threading layer"], info["why"]
    assert "requested: default" in why
    if _has_tbb():
        assert layer == "tbb" and "TBB: loaded " in why, info


@pytest.mark.parametrize("layer", ["omp", "workqueue"])
def test_a_layer_the_user_chose_is_kept(layer):
    info = _info(NUMBA_THREADING_LAYER=layer)
    assert info["threading layer"] == layer
    why = info["why"]
    assert f"TBB: not loaded: NUMBA_THREADING_LAYER={layer}" in why
    assert ("not thread-safe" in why) == (layer == "workqueue")
