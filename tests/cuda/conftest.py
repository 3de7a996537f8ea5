"""CUDA backend tests: only under the simulator or with a CUDA device.

Run them in a separate process: ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda -q``
(the simulator is chosen when numba.cuda is first imported). On a GPU:
``NUMSOFT_TEST_CUDA=1 python -m pytest tests/cuda -q``.

Every test runs with tiny launch constants (a few threads per row and per block,
splitting rows from 16 elements on), so that tiny shapes exercise every launch regime
and the simulator, which runs each thread as a Python thread, stays fast. Tests marked
``default_launch`` keep the production constants (GPU only: far too slow simulated).
"""

import os

import pytest

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _cuda_available() -> bool:
    try:
        from numba import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:
        return False


if not _cuda_available():
    collect_ignore_glob = ["test_*.py"]

#: Launch constants that make the regimes of ``numsoft.cuda.launch`` reachable with rows
#: of a few elements: warp per row up to n = 8 (4 lanes), block per row (8 lanes) above,
#: split rows from n = 16 when fewer than 8 blocks.
TINY_LAUNCH = {
    "WARP": 4,
    "ROW_WARP_MAX": 8,
    "BLOCK_THREADS": 8,
    "MAX_ROW_THREADS": 8,
    "ELEMS_PER_THREAD": 2,
    "MIN_ROW_LANES": 2,
    "COLUMN_THREADS": 4,
    "SPLIT_MIN_N": 16,
    "TARGET_BLOCKS": 8,
}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "default_launch: keep numsoft.cuda.launch's production constants"
    )


@pytest.fixture(autouse=True)
def tiny_launch(request, monkeypatch):
    if request.node.get_closest_marker("default_launch"):
        if SIMULATOR:
            pytest.skip("production launch sizes are too slow under the CUDA simulator")
        return
    from numsoft.cuda import launch

    for name, value in TINY_LAUNCH.items():
        monkeypatch.setattr(launch, name, value)
