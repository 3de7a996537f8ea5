"""Two-pass softmax row kernels (Dukhan & Ablavatski, arXiv 2001.04438, §4).

The sum Σ exp(z) is accumulated in an extended-exponent form: each term is split as
exp(z) = p·2^n (``exp_reduce``) and the running total is kept as a (mantissa M,
exponent E) pair, so no max pass is needed and nothing overflows. The output pass
recomputes p·2^(n - E)/M. Traffic: 2 reads of x, 1 write of y per element.

The split is accurate only for |z| below a per-dtype bound (``extexp_bound``): a row
that leaves it, or holds NaN/inf, or lies so low that the -inf clamp below could
matter, is handed to the online kernel, which handles every finite row and the
special values. Masked (-inf) entries are clamped to -bound: their 2^n then vanishes
against the row's largest exponent, so they contribute exact zeros.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .expfast import exp_reduce, ldexp_fast
from .online import logsumexp_row_online, softmax_row_online

#: Rows whose largest z lies within this distance of -bound take the online path, so
#: a clamped -inf entry (at -bound) is at least this far below the row maximum and
#: its weight exp(-margin) underflows to zero in float64 (and float32).
_CLAMP_MARGIN = 800.0


@kernel
def _clamped(v, bound):
    # Written so that NaN compares false and passes through unchanged.
    return -bound if v < -bound else v


@kernel
def extexp_stats(x, inv_t, bound):
    """Σ exp(x·inv_t) as (M, E) with value M·2^E, and max z, in one read."""
    p, e = exp_reduce(_clamped(x[0] * inv_t, bound))
    mant = np.float64(p)  # float64 accumulator (see passes.py)
    zmax = x[0] * inv_t
    for i in range(1, x.size):
        z = x[i] * inv_t
        if z > zmax:
            zmax = z
        pi, ni = exp_reduce(_clamped(z, bound))
        if ni > e:
            mant = ldexp_fast(mant, np.float64(e - ni)) + pi
            e = ni
        else:
            mant += ldexp_fast(pi, ni - e)
    return mant, e, zmax


@kernel
def merge_extexp(m1, e1, m2, e2):
    """Merge two (mantissa, exponent) partial sums into one."""
    if e1 >= e2:
        return m1 + ldexp_fast(m2, np.float64(e2 - e1)), e1
    return m2 + ldexp_fast(m1, np.float64(e1 - e2)), e2


@kernel
def _in_domain(mant, zmax, bound):
    return math.isfinite(mant) and zmax <= bound and zmax >= _CLAMP_MARGIN - bound


@kernel
def logsumexp_row_two_pass(x, inv_t, bound):
    """t·log Σ exp(x·inv_t), t = 1/inv_t, from the (M, E) sum: 1 read per element."""
    mant, e, zmax = extexp_stats(x, inv_t, bound)
    if not _in_domain(mant, zmax, bound):
        return logsumexp_row_online(x, inv_t)
    return (math.log(mant) + e * math.log(2.0)) / inv_t


@kernel
def softmax_row_two_pass(x, y, inv_t, log_output, bound):
    """softmax (or log_softmax) of one row with the two-pass (M, E) algorithm.

    Pass structure two-pass: 2 reads of x, 1 write of y per element.
    """
    mant, e, zmax = extexp_stats(x, inv_t, bound)
    if not _in_domain(mant, zmax, bound):
        softmax_row_online(x, y, inv_t, log_output)
        return
    if log_output:
        shift = x.dtype.type(math.log(mant) + e * math.log(2.0))
        for i in range(x.size):
            y[i] = x[i] * inv_t - shift
    else:
        inv_mant = x.dtype.type(1.0 / mant)
        for i in range(x.size):
            p, n = exp_reduce(_clamped(x[i] * inv_t, bound))
            y[i] = ldexp_fast(p, n - e) * inv_mant
