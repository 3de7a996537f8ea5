"""Independent reference implementations in extended precision (np.longdouble).

Only finite inputs are passed here; the special-value rules are tested separately.
"""

from __future__ import annotations

import numpy as np

ALGORITHMS = ("three-pass-reload", "three-pass-store", "two-pass", "online")

#: Relative tolerance per compute dtype for softmax outputs (SPEC §1), and absolute
#: tolerance for log outputs of magnitude ≤ 1 (scaled by magnitude beyond that).
RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}


def _prep(x, axis, temperature):
    xl = np.asarray(x).astype(np.longdouble) / np.longdouble(temperature)
    if axis is None:
        axis = tuple(range(xl.ndim))
    m = np.max(xl, axis=axis, keepdims=True)
    return xl, axis, m


def softmax(x, axis=-1, temperature=1.0):
    xl, axis, m = _prep(x, axis, temperature)
    e = np.exp(xl - m)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1, temperature=1.0):
    xl, axis, m = _prep(x, axis, temperature)
    d = xl - m
    return d - np.log(np.exp(d).sum(axis=axis, keepdims=True))


def logsumexp(x, axis=-1, temperature=1.0, keepdims=False):
    xl, axis, m = _prep(x, axis, temperature)
    r = m + np.log(np.exp(xl - m).sum(axis=axis, keepdims=True))
    r = r * np.longdouble(temperature)
    return r if keepdims else np.squeeze(r, axis=axis)


def assert_close_prob(y, ref, dtype):
    """Elementwise relative error of probabilities (SPEC §1), results below tiny aside.

    The contract's bound is RTOL for probabilities whose scaled logit gap
    d = (x - max)/t is at most 16 in magnitude; beyond that, rounding x - max to the
    working precision costs up to |d|·eps/2 more (documented in docs/numerics.md, and
    the same in SciPy and PyTorch), so the bound grows with -log(p) ≈ |d|.
    """
    dtype = np.dtype(dtype)
    eps = np.finfo(dtype).eps
    ref = np.asarray(ref, dtype=np.longdouble)
    with np.errstate(divide="ignore"):
        gap = np.where(ref > 0, -np.log(np.where(ref > 0, ref, 1)), 0)
    rtol = RTOL[dtype] + np.maximum(gap - 16, 0) * eps / 2
    err = np.abs(y.astype(np.longdouble) - ref)
    bad = err > rtol * np.abs(ref) + np.finfo(dtype).tiny
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} outside tolerance; worst relative error "
        f"{float(np.max(err / np.maximum(np.abs(ref), np.finfo(dtype).tiny))):.3g}"
    )


def assert_close_log(y, ref, dtype):
    """Absolute error of log outputs, relative beyond magnitude 1."""
    rtol = RTOL[np.dtype(dtype)]
    np.testing.assert_allclose(y.astype(np.longdouble), ref, rtol=rtol, atol=rtol)
