"""One numsoft call per row inside a user's @njit loop: the calls by address
(numsoft._linked, numsoft.cpu.by_address) give the Python API's values, special rows
included, raise its errors, and leave numsoft's kernels out of the caller's code."""

import pickle

import numba
import numpy as np
import pytest
import scipy.special as sps

import numsoft
from numsoft._linked import BY_SYMBOL, LinkedKernel


@numba.njit
def _per_row(X, labels, Y, L, lse, ce):
    for i in range(X.shape[0]):
        numsoft.softmax(X[i], out=Y[i])
        L[i] = numsoft.log_softmax(X[i], temperature=0.5)
        lse[i, 0] = numsoft.logsumexp(X[i])
        lse[i, 1] = numsoft.logsumexp(X[i], temperature=3)
        ce[i, 0] = numsoft.cross_entropy(X[i], labels[i])
        ce[i, 1] = numsoft.cross_entropy(X[i], labels[i], reduction="sum", ignore_index=-100)
        ce[i, 2] = numsoft.cross_entropy(X[i], labels[i], label_smoothing=0.1, z_loss=1e-3)
        loss, row_lse = numsoft.cross_entropy(X[i], labels[i], reduction="none", return_lse=True)
        ce[i, 3], ce[i, 4] = loss, row_lse


def _rows(n, dtype):
    x = np.random.default_rng(n).normal(size=(12, n)).astype(dtype)
    x[1, 0] = np.nan
    x[2, 0] = np.inf
    x[3] = -np.inf
    x[4, 0] = -np.inf
    x[5] = np.finfo(dtype).max / 2  # huge logits: the shift must keep them finite
    x[6] *= 1e-30  # tiny differences
    labels = np.arange(12) % n
    labels[7] = -100  # ignored by the default ignore_index: mean over no row is NaN
    return x, labels


def _python_api(x, labels):
    """The same quantities from the Python API, one row at a time."""
    Y = np.stack([numsoft.softmax(r) for r in x])
    L = np.stack([numsoft.log_softmax(r, temperature=0.5) for r in x])
    lse = np.array([[numsoft.logsumexp(r), numsoft.logsumexp(r, temperature=3)] for r in x])
    ce = np.array(
        [
            [
                numsoft.cross_entropy(r, y),
                numsoft.cross_entropy(r, y, reduction="sum", ignore_index=-100),
                numsoft.cross_entropy(r, y, label_smoothing=0.1, z_loss=1e-3),
                *numsoft.cross_entropy(r, y, reduction="none", return_lse=True),
            ]
            for r, y in zip(x, labels, strict=True)
        ]
    )
    return Y, L, lse.astype(x.dtype), ce.astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 4, 17])
def test_per_row_calls_give_the_python_api_values(n, dtype):
    x, labels = _rows(n, dtype)
    Y, L = np.empty_like(x), np.empty_like(x)
    lse, ce = np.empty((12, 2), dtype), np.empty((12, 5), dtype)
    x_before = x.copy()
    with np.errstate(all="ignore"):
        _per_row(x, labels, Y, L, lse, ce)
        want = _python_api(x, labels)
    np.testing.assert_array_equal(x, x_before)
    # The Python API runs rows of up to 10 in row tiles, and sums logsumexp's short rows
    # by the group (docs/njit.md): those agree to a few ulp, the rest to the bit.
    eps = np.finfo(dtype).eps
    for got, exp, bitwise in zip(
        (Y, L, lse, ce), want, (n > 10, n > 10, False, n > 10), strict=True
    ):
        if bitwise:
            np.testing.assert_array_equal(got, exp)
        else:
            np.testing.assert_allclose(got, exp, rtol=4 * eps, atol=4 * eps)
    regular = np.isfinite(x).all(axis=1)
    ref = sps.logsumexp(x[regular].astype(np.float64), axis=1)
    np.testing.assert_allclose(lse[regular, 0], ref, rtol=4 * np.finfo(dtype).eps)
    assert np.isnan(ce[7, 0]) and ce[7, 3] == 0


@numba.njit
def _one_row(x, label, t, eps, out):
    return (
        numsoft.softmax(x, temperature=t, out=out),
        numsoft.logsumexp(x, temperature=t),
        numsoft.cross_entropy(x, label, label_smoothing=eps),
    )


@pytest.mark.parametrize(
    ("label", "t", "eps", "size", "message"),
    [
        (3, 1.0, 0.0, 3, "labels must lie in"),
        (-1, 1.0, 0.0, 3, "labels must lie in"),
        (0, 0.0, 0.0, 3, "temperature must be positive"),
        (0, np.inf, 0.0, 3, "temperature must be positive"),
        (0, 1.0, 1.5, 3, "label_smoothing must lie in"),
        (0, 1.0, 0.0, 2, "out has the wrong shape"),
    ],
)
def test_per_row_calls_reject_bad_values_when_they_run(label, t, eps, size, message):
    x = np.zeros(3)
    out = np.full(size, 7.0)
    with pytest.raises(ValueError, match=message):
        _one_row(x, label, t, eps, out)
    np.testing.assert_array_equal(x, 0.0)


@numba.njit
def _empty_and_single(x0, x1):
    return numsoft.logsumexp(x0), numsoft.softmax(x0), numsoft.logsumexp(x1), numsoft.softmax(x1)


def test_empty_and_length_one_rows():
    lse0, p0, lse1, p1 = _empty_and_single(np.empty(0, np.float32), np.array([3.5], np.float32))
    assert lse0 == -np.inf and p0.shape == (0,)
    assert lse1 == np.float32(3.5) and p1.tolist() == [1.0]


@numba.njit
def _lse_rows(X, out):
    for i in range(X.shape[0]):
        out[i] = numsoft.logsumexp(X[i])


@pytest.mark.skipif(not BY_SYMBOL, reason="this Numba links the kernels into the caller")
def test_a_caller_holds_a_call_not_numsoft_kernels():
    x = np.random.default_rng(0).normal(size=(3, 5))
    out = np.empty(3)
    _lse_rows(x, out)
    np.testing.assert_array_equal(out, numsoft.logsumexp(x, axis=1))
    llvm_ir = _lse_rows.inspect_llvm(_lse_rows.signatures[0])
    assert '"numsoft1.logsumexp_row_at' in llvm_ir  # the call, by symbol
    assert "three_pass" not in llvm_ir  # the row kernel is not compiled in
    (target,) = {
        hook
        for hook in _lse_rows.overloads[_lse_rows.signatures[0]].reload_init
        if isinstance(hook, LinkedKernel)
    }
    assert pickle.loads(pickle.dumps(target)) == target  # stored with a cached caller
    assert target.symbol.startswith("numsoft1.logsumexp_row_at")


def test_a_cached_caller_of_a_removed_kernel_says_what_to_do():
    stale = LinkedKernel("numsoft.cpu.by_address", "no_such_kernel_at", (), ("int64",))
    with pytest.raises(RuntimeError, match="Remove its cache files"):
        stale()
