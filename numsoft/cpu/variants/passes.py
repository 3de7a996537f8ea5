"""Single passes over one row that the variants need beyond ``numsoft.cpu.passes``.

Like the shared passes, each reads (and possibly writes) a 1-D row once, keeps the
row's dtype (constants via ``x.dtype.type``) and treats ``-inf`` entries as excluded:
that is how the front door delivers masked entries.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from ..dtype_constants import per_dtype
from ..expfast import exp_fast, exp_nonpositive
from ..passes import (
    _count_nan_posinf,
    is_finite,
    row_max,
    row_sum,
    scale_inplace,
    special_row_write,
)


@kernel
def count_included(x):
    """Number of entries that are not ``-inf`` (NaN and ``+inf`` count). One read."""
    n = 0
    for i in range(x.size):
        if x[i] != -math.inf:
            n += 1
    return n


@kernel
def row_min_included(x):
    """Minimum over the entries that are not ``-inf`` (``+inf`` if none; NaN-blind). One read."""
    m = x.dtype.type(math.inf)
    for i in range(x.size):
        v = x[i]
        if v < m and v != -math.inf:
            m = v
    return m


@kernel
def sum_exp_and_weighted(x, m, inv_t):
    """(Σ e^d, Σ d·e^d) with d = (x - m)·inv_t, in one read.

    The second sum is what the entropy of softmax needs: H = log Σ e^d - Σ d·e^d / Σ e^d.
    An excluded (-inf) entry has e^d = 0 and contributes 0 to both sums (not 0·-inf).
    """
    zero = x.dtype.type(0.0)
    s = zero
    w = zero
    for i in range(x.size):
        d = (x[i] - m) * inv_t
        e = exp_nonpositive(d)
        s += e
        w += e * d if e > zero else zero
    return s, w


@kernel
def l1_normalize_stored(y, s, log_output):
    """y ← y / s, or log(y) - log(s), for a row y ≥ 0 of stored weights with s = Σ y.

    The shared tail of every "positive weights, then L1-normalize" variant (stablemax,
    softplus_l1, topk_softmax, rowmax_pot): one read and one write of y. The stored
    weights keep the input's special values (NaN → NaN, +inf → +inf, -inf → 0), so a
    non-finite ``s`` is resolved on y itself with the softmax rules of SPEC §1; a sum
    that overflowed although every weight is finite is recomputed after scaling by the
    largest weight. A row of zeros (only -inf) gives NaN, like softmax.
    """
    if not is_finite(s):
        has_nan, n_inf = _count_nan_posinf(y)
        if has_nan or n_inf > 0:
            special_row_write(y, y, log_output)
            return
        scale_inplace(y, y.dtype.type(1.0) / row_max(y))
        s = row_sum(y)
    if log_output:
        shift = y.dtype.type(math.log(s))  # log(0) = -inf: a row of zeros gives NaN
        for i in range(y.size):
            y[i] = math.log(y[i]) - shift
    else:
        scale_inplace(y, y.dtype.type(1.0) / s)


# ---------------------------------------------------------------- expm1

#: (Taylor coefficients of expm1(r)/r, highest degree first, and the bound ln2/2 below
#: which they are used): degree 7 in float32 (truncation 1.5e-8 relative), 13 in float64
#: (1.2e-17 relative). The last coefficient is 1, which ``expm1_fast`` also uses as "one".
_EXPM1_F32 = (
    tuple(np.float32(1.0 / math.factorial(k)) for k in range(8, 0, -1)),
    np.float32(math.log(2.0) / 2.0),
)
_EXPM1_F64 = (
    tuple(np.float64(1.0 / math.factorial(k)) for k in range(14, 0, -1)),
    np.float64(math.log(2.0) / 2.0),
)


#: ``_expm1_consts(x)``: the constants above in the dtype of ``x`` (jit-only).
_expm1_consts = per_dtype(_EXPM1_F32, _EXPM1_F64)


@kernel
def expm1_fast(x):
    """``e**x - 1``, accurate near 0 (relative error), same dtype out; vectorizes in loops.

    |x| < ln2/2: ``x·P(x)`` with the Taylor polynomial P of expm1(x)/x, so nothing
    cancels; elsewhere ``exp_fast(x) - 1`` (within ~4 ulp there, since e**x - 1 ≥
    0.29·e**x). Branch-free (both evaluated, one selected): -inf → -1, +inf → inf,
    NaN → NaN. Cost: ``exp_fast`` plus 7 (f32) / 13 (f64) multiply-adds.
    """
    coeffs, small = _expm1_consts(x)
    p = coeffs[0]
    for i in range(1, len(coeffs)):  # constant trip count: unrolled
        p = p * x + coeffs[i]
    one = coeffs[len(coeffs) - 1]
    return x * p if abs(x) < small else exp_fast(x) - one
