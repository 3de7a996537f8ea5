"""Single passes over one row, shared by every pass structure and variant.

Each function reads (and possibly writes) one 1-D row once; the docstring states the
traffic per element. Pass structures (``three_pass``, ``two_pass``, ``online``) are
compositions of these passes, and variants reuse them instead of re-deriving loops.

Elementwise arithmetic stays in the row's dtype: constants are made with
``x.dtype.type`` so that float32 rows are not silently promoted to float64 (which
would halve the vector width). Sums are accumulated in float64 whatever the dtype:
a float32 sum over a long row would otherwise lose the 2e-6 relative accuracy the
contract promises (error grows with the row length).
"""

from __future__ import annotations

import math

from ._jit import kernel
from .expfast import exp_fast


@kernel
def row_max(x):
    """Maximum of a non-empty row (NaN-blind). One read per element.

    NaN does not propagate here; callers detect it through the sum pass, where
    ``exp(NaN)`` poisons the sum.
    """
    m = x[0]
    for i in range(1, x.size):
        v = x[i]
        if v > m:
            m = v
    return m


@kernel
def row_sum_exp(x, m, inv_t):
    """Σ exp((x - m)·inv_t). One read per element."""
    s = 0.0
    for i in range(x.size):
        s += exp_fast((x[i] - m) * inv_t)
    return s


@kernel
def write_exp_scaled(x, y, m, inv_t, scale):
    """y = exp((x - m)·inv_t)·scale. One read, one write per element; y may be x."""
    for i in range(x.size):
        y[i] = exp_fast((x[i] - m) * inv_t) * scale


@kernel
def write_shifted(x, y, m, inv_t, shift):
    """y = (x - m)·inv_t - shift (the log-domain output). One read, one write; y may be x."""
    for i in range(x.size):
        y[i] = (x[i] - m) * inv_t - shift


@kernel
def store_exp_and_sum(x, y, m, inv_t):
    """y = exp((x - m)·inv_t), returning Σ y. One read, one write per element."""
    s = 0.0
    for i in range(x.size):
        e = exp_fast((x[i] - m) * inv_t)
        y[i] = e
        s += e
    return s


@kernel
def store_shifted_and_sum_exp(x, y, m, inv_t):
    """y = (x - m)·inv_t, returning Σ exp(y). One read, one write per element."""
    s = 0.0
    for i in range(x.size):
        d = (x[i] - m) * inv_t
        y[i] = d
        s += exp_fast(d)
    return s


@kernel
def scale_inplace(y, scale):
    """y *= scale. One read, one write per element."""
    for i in range(y.size):
        y[i] *= scale


@kernel
def shift_inplace(y, shift):
    """y -= shift. One read, one write per element."""
    for i in range(y.size):
        y[i] -= shift


@kernel
def is_regular(m, s):
    """True when the (max, sum) statistics describe a finite row.

    A row with NaN, a +inf entry, or only -inf entries fails this test and goes to the
    special-value path (``special_row_*``), so the fast passes never need a branch.
    """
    return math.isfinite(m) and math.isfinite(s)


@kernel
def _count_nan_posinf(x):
    """(has NaN, number of +inf entries). One read per element; slow path only."""
    has_nan = False
    n_inf = 0
    for i in range(x.size):
        v = x[i]
        if v != v:
            has_nan = True
        elif v == math.inf:
            n_inf += 1
    return has_nan, n_inf


@kernel
def special_row_logsumexp(x):
    """logsumexp of a row that contains NaN, +inf, or only -inf (SPEC §1)."""
    has_nan, n_inf = _count_nan_posinf(x)
    if has_nan:
        return math.nan
    if n_inf > 0:
        return math.inf
    return -math.inf


@kernel
def special_row_write(x, y, log_output):
    """softmax/log_softmax of a row that contains NaN, +inf, or only -inf (SPEC §1).

    NaN anywhere gives an all-NaN row; k entries equal to +inf share the mass equally
    (the limit as they grow together); a row of only -inf gives NaN, like SciPy.
    """
    has_nan, n_inf = _count_nan_posinf(x)
    if has_nan or n_inf == 0:
        nan = x.dtype.type(math.nan)
        for i in range(x.size):
            y[i] = nan
    else:
        write_posinf_share(x, y, n_inf, log_output)


@kernel
def write_posinf_share(x, y, n_inf, log_output):
    """The limit output of a row with ``n_inf`` entries equal to +inf (SPEC §1).

    y = 1/n_inf (log: -log n_inf) at the +inf entries of x, 0 (log: -inf) elsewhere.
    ``n_inf`` counts the whole row, which may be longer than the piece x (Dask chunks).
    One read, one write per element; y may be x.
    """
    if log_output:
        hit = x.dtype.type(-math.log(n_inf))
        miss = x.dtype.type(-math.inf)
    else:
        hit = x.dtype.type(1.0 / n_inf)
        miss = x.dtype.type(0.0)
    for i in range(x.size):
        y[i] = hit if x[i] == math.inf else miss
