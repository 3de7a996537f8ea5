"""The ``target=`` hook and the CUDA backend's pieces that need no GPU."""

import os
import subprocess
import sys

import numpy as np
import pytest

import numsoft
from numsoft.cuda import launch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_import_does_not_load_numba_cuda():
    r = _run("import sys, numsoft; print(any(m.startswith('numba.cuda') for m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_target_cuda_without_device_is_a_clear_error():
    pytest.importorskip("numba.cuda")
    code = (
        "import numsoft\n"
        "from numba import cuda\n"
        "if cuda.is_available():\n"
        "    print('GPU')\n"
        "else:\n"
        "    try:\n"
        "        numsoft.softmax([1.0, 2.0], target='cuda')\n"
        "    except RuntimeError as e:\n"
        "        print('RuntimeError:', e)\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("GPU"):
        pytest.skip("a CUDA device is present")
    assert r.stdout.startswith("RuntimeError:")
    assert "no CUDA device is available" in r.stdout


@pytest.mark.parametrize("func", [numsoft.softmax, numsoft.log_softmax, numsoft.logsumexp])
def test_bad_target_names_target(func):
    with pytest.raises(ValueError, match="target"):
        func(np.zeros(3), target="gpu")
    np.testing.assert_array_equal(func(np.zeros(3), target="cpu"), func(np.zeros(3)))


def test_device_arrays_select_cuda(monkeypatch):
    calls = []

    class FakeApi:
        @staticmethod
        def softmax(x, axis, **kw):
            calls.append((x, axis, kw))
            return "on the device"

    class DeviceLike:
        __cuda_array_interface__ = {}

    monkeypatch.setitem(sys.modules, "numsoft.frontdoor.gpu", FakeApi)
    monkeypatch.setattr(numsoft.frontdoor, "gpu", FakeApi, raising=False)
    x = DeviceLike()
    assert numsoft.softmax(x, axis=0, temperature=2.0) == "on the device"
    assert calls[0][0] is x and calls[0][1] == 0 and calls[0][2]["temperature"] == 2.0


@pytest.mark.parametrize(
    ("rows", "n", "inner", "regime"),
    [
        (4096, 128, 1, "warp-whole"),
        (4096, 1024, 1, "warp-whole"),
        (4096, 4096, 1, "block-whole"),
        (64, 1 << 20, 1, "block-split"),
        (4096, 1 << 20, 1, "block-whole"),
        (1024, 100, 1024, "column-whole"),
        (2, 1 << 20, 2, "column-split"),
    ],
)
def test_launch_regimes(rows, n, inner, regime):
    p = launch.plan(rows, n, inner)
    assert p.regime == regime
    assert p.lanes & (p.lanes - 1) == 0 and p.threads <= launch.LAUNCH_BOUND
    assert p.chunks * p.chunk >= n > (p.chunks - 1) * p.chunk


@pytest.mark.parametrize("n", [1, 33, 1024, 1025, 1 << 14, 1 << 24])
@pytest.mark.parametrize("inner", [1, 3])
@pytest.mark.parametrize("split", [True, False])
def test_launch_blocks_stay_within_the_compiled_launch_bound(n, inner, split):
    # Kernels are compiled for at most LAUNCH_BOUND threads per block (cuda/_jit.py).
    assert launch.plan(8, n, inner, split=split).threads <= launch.LAUNCH_BOUND


def test_launch_lanes_cover_short_rows():
    assert launch.plan(10, 7, 1).lanes == 8
    assert launch.plan(10, 1, 1).lanes == 1
    assert launch.plan(10, 4096, 1).lanes == 256


@pytest.mark.parametrize(
    ("n", "lanes"), [(3, 4), (16, 8), (128, 8), (256, 16), (512, 32), (1024, 32)]
)
def test_short_rows_give_each_lane_whole_tiles(n, lanes):
    # About ELEMS_PER_THREAD (16) elements per lane, at least 8 lanes (a 32-byte sector
    # per warp load), no more lanes than elements, at most a warp.
    p = launch.plan(4096, n, 1)
    assert (p.lanes, p.groups) == (lanes, launch.BLOCK_THREADS // lanes)
