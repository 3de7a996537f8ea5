"""The intrinsics in ``simd``: the reference-free row view the row drivers pass to kernels
(``borrowed_row``), the streaming stores of the output passes (``passes.streamed``) and
the trip count LLVM cannot see (``opaque_count``)."""

import re

import numba
import numpy as np
import pytest

from numsoft.cpu._jit import JIT_OPTIONS
from numsoft.cpu.passes import _exp_scaled, streamed
from numsoft.cpu.simd import STREAM_BLOCK, borrowed_row, opaque_count, store_fence


@numba.njit(cache=False)
def rows_sum_and_write(a, out):
    total = 0.0
    for i in range(a.shape[0]):
        row = borrowed_row(a, np.uint64(i))  # prange hands the drivers unsigned indices
        out[i] = row[row.size - 1]
        for j in range(row.size):
            total += row[j] * (j + 1)
            row[j] = -row[j]
    return total


@pytest.mark.parametrize(
    "make",
    [lambda b: b, lambda b: b[::2, 1::3], lambda b: b[::-1]],
    ids=["C", "strided", "reversed"],
)
def test_borrowed_row_is_the_row_view(make):
    base = np.arange(6 * 9, dtype=np.float64).reshape(6, 9)
    a = make(base.copy())
    want_total = sum(float(np.dot(r, np.arange(1, r.size + 1))) for r in a)
    want_last = a[:, -1].copy()
    want_after = -a
    out = np.empty(a.shape[0])
    assert rows_sum_and_write(a, out) == want_total
    np.testing.assert_array_equal(out, want_last)
    np.testing.assert_array_equal(a, want_after)  # writes go through to a's memory


@numba.njit(cache=False)
def streamed_exp_scaled(x, y, m, scale):
    streamed(_exp_scaled, x, y, m, x.dtype.type(1.0), scale)
    store_fence()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [STREAM_BLOCK - 1, STREAM_BLOCK, 3 * STREAM_BLOCK + 37])
def test_streamed_output_is_the_plain_loop_at_every_alignment(dtype, n):
    """Every element written once with the plain loop's value, whatever the output's
    offset from a 64-byte line (the head before the first aligned element, the whole
    streamed blocks, the tail), and nothing written outside it."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 4).astype(dtype)
    m = x.max()
    scale = dtype(0.37)
    want = (np.exp((x - m).astype(np.float64)) * np.float64(scale)).astype(dtype)
    plain = np.empty_like(x)
    _exp_scaled(x, plain, m, dtype(1.0), scale)  # the loop with ordinary stores
    np.testing.assert_allclose(plain, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    for offset in range(64 // x.itemsize + 1):
        buf = np.full(n + 2 * offset + 32, -7.0, dtype)
        y = buf[offset + 16 : offset + 16 + n]
        streamed_exp_scaled(x, y, m, scale)
        np.testing.assert_array_equal(y, plain)
        assert np.all(buf[: offset + 16] == -7.0) and np.all(buf[offset + 16 + n :] == -7.0)


def test_streamed_output_takes_the_plain_loop_on_a_strided_row():
    x = np.linspace(-3, 0, 2 * STREAM_BLOCK + 8)
    buf = np.zeros(2 * x.size)
    streamed_exp_scaled(x, buf[::2], 0.0, 1.0)
    np.testing.assert_allclose(buf[::2], np.exp(x), rtol=1e-15)
    assert np.all(buf[1::2] == 0.0)


@numba.njit(cache=False, **JIT_OPTIONS)
def _lane_reciprocals(v):
    for j in range(opaque_count(16)):
        v[j] = np.float32(1.0) / v[j]


def test_opaque_count_keeps_a_lane_loop_a_vector_loop():
    # With the constant trip count 16, LLVM unrolls a lane loop into 16 scalar
    # divisions; behind opaque_count the loop stays, and runs in vectors.
    v = np.arange(1, 17, dtype=np.float32)
    w = v.copy()
    _lane_reciprocals(w)
    np.testing.assert_array_equal(w, np.float32(1.0) / v)
    ir = _lane_reciprocals.inspect_llvm(_lane_reciprocals.signatures[0])
    assert re.search(r"fdiv [^\n]*<\d+ x float>", ir)
