"""Every CUDA kernel compiles to PTX for a real device (sm_90) without a GPU.

``numba.cuda.compile_ptx`` needs no GPU once numba-cuda's NVVM is installed
(``numba-cuda[cu13]``), but compiling a kernel that calls device functions asks the
current device for its compute capability; the test answers (9, 0) in its place.
Skipped when numba-cuda or NVVM is missing, and under the simulator.
"""

import os
import re
import types

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    pytest.skip("compile_ptx is not available under the CUDA simulator", allow_module_level=True)

cuda = pytest.importorskip("numba.cuda")
dispatcher = pytest.importorskip("numba.cuda.dispatcher")
from numba import float32, float64  # noqa: E402

from numsoft.cuda import api  # noqa: E402,F401  (imports every kernel module)
from numsoft.cuda._jit import KERNELS  # noqa: E402

CC = (9, 0)


@pytest.fixture
def offline_device(monkeypatch):
    if not hasattr(dispatcher, "get_current_device"):
        pytest.skip("this numba-cuda version compiles device functions differently")
    monkeypatch.setattr(
        dispatcher, "get_current_device", lambda: types.SimpleNamespace(compute_capability=CC)
    )
    try:
        cuda.compile_ptx(lambda a: None, (float32[:],), cc=CC)
    except Exception as exc:  # NVVM / libdevice missing
        pytest.skip(f"CUDA toolkit pieces for compile_ptx are missing: {exc}")


@pytest.mark.parametrize("ft", [float32, float64], ids=str)
@pytest.mark.parametrize("entry", KERNELS, ids=lambda e: e[0].__name__)
def test_kernel_compiles_to_ptx(offline_device, entry, ft):
    fn, argtypes = entry
    ptx, _ = cuda.compile_ptx(fn, argtypes(ft), cc=CC)
    assert ".target sm_90" in ptx
    assert ".entry" in ptx
    if ft == float32:
        # float32 kernels keep float32 arithmetic: no double-precision instruction.
        assert not re.search(r"\.f64\b", ptx), "float64 arithmetic in a float32 kernel"
