"""The segment functions of ``numsoft.groups`` on device arrays (SPEC §9, §7): the
device group kernels (``numsoft.cuda.groups``) against the CPU backend on the same
groups, under the tiny launch constants of conftest.py (groups from empty to longer
than a block's lanes). Tolerances: float64 1e-12, float32 2e-6 relative."""

import numpy as np
import pytest
from numba import cuda

import numsoft.groups as G

FUNCS = ("segment_softmax", "segment_log_softmax", "segment_logsumexp")
TOL = {np.float32: dict(rtol=2e-6, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


def _case(dtype, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 12, size=10)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    x = rng.standard_normal((offsets[-1], 3)).astype(dtype)
    x[2, 1] = np.inf
    x[offsets[4] : offsets[5], 0] = -np.inf
    x[offsets[6], 2] = np.nan
    ids = np.repeat(np.arange(sizes.size), sizes)
    return x, offsets, ids


def _agree(got, want, dtype):
    host = got.copy_to_host()
    assert host.dtype == want.dtype
    np.testing.assert_allclose(host, want, equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("func", FUNCS)
def test_groups_on_the_device_equal_the_cpu(func, dtype):
    x, offsets, ids = _case(dtype)
    f = getattr(G, func)
    for axis, xs in ((0, x), (1, np.ascontiguousarray(x.T))):  # heads beside, or rows
        want = f(xs, offsets=offsets, axis=axis, temperature=0.6)
        _agree(f(cuda.to_device(xs), offsets=offsets, axis=axis, temperature=0.6), want, dtype)
        _agree(f(cuda.to_device(xs), ids, axis=axis, temperature=0.6), want, dtype)


@pytest.mark.parametrize("func", FUNCS)
def test_masks_unsorted_ids_and_out(func):
    x, offsets, ids = _case(np.float64, seed=1)
    keep = np.random.default_rng(2).random(x.shape) > 0.4
    f = getattr(G, func)
    _agree(
        f(cuda.to_device(x), offsets=offsets, where=keep),
        f(x, offsets=offsets, where=keep),
        np.float64,
    )
    order = np.random.default_rng(3).permutation(ids.size)  # ids not in group order
    want = f(x[order], ids[order], num_segments=10)
    _agree(f(cuda.to_device(x[order]), ids[order], num_segments=10), want, np.float64)
    out = cuda.device_array(want.shape, dtype=np.float64)
    result = f(cuda.to_device(x), offsets=offsets, out=out)
    assert result is out or result.device_ctypes_pointer.value == out.device_ctypes_pointer.value
    _agree(out, f(x, offsets=offsets), np.float64)
