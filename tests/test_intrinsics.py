"""``simd.borrowed_row``: the reference-free row view the row drivers pass to kernels."""

import numba
import numpy as np
import pytest

from numsoft.cpu.simd import borrowed_row


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
