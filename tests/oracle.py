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
    """Elementwise relative error of probabilities, ignoring results below tiny."""
    rtol = RTOL[np.dtype(dtype)]
    tiny = np.finfo(dtype).tiny
    np.testing.assert_allclose(y.astype(np.longdouble), ref, rtol=rtol, atol=tiny)


def assert_close_log(y, ref, dtype):
    """Absolute error of log outputs, relative beyond magnitude 1."""
    rtol = RTOL[np.dtype(dtype)]
    np.testing.assert_allclose(y.astype(np.longdouble), ref, rtol=rtol, atol=rtol)
