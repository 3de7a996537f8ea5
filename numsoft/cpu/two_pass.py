"""Two-pass softmax row kernels (Dukhan & Ablavatski, arXiv 2001.04438, §4).

The sum Σ exp(z) is accumulated in an extended-exponent form: each term is split as
exp(z) = p·2^n (``exp_reduce``) and the running total is kept as a (mantissa M,
exponent E) pair, so no max pass is needed and nothing overflows. The output pass
recomputes p·2^(n - E)/M. Traffic: 2 reads of x, 1 write of y per element.

Vectorized as in the paper (XNNPACK ``f32-raddextexp``): ``CHAIN_LANES`` (64 on AVX-512)
independent (M, E) pairs, one per vector lane of four vectors, updated branch-free per
element, E' = max(E, n), M' = M·2^(E - E') + p·2^(n - E'). The update is a chain of
dependent operations (max, subtract, two scalings, add), so one vector of pairs
leaves the pass waiting on it; four vectors keep four chains in flight (2^26 float32,
one thread, Zen 4: 28 → 22–24 ms, ``asv_bench/pass_costs.py``). The
lanes live on the stack (``simd.chain_lane_array``) so they stay in registers.
Accuracy: the lane pairs are kept in the row's dtype over a block of ``EXTEXP_BLOCK``
elements (each lane then adds 16 terms, relative error ≤ 15 ulp of the dtype, i.e.
< 1e-6 in float32), and each block's lanes are folded into float64 lane pairs, so the
row total is a float64 (M, E); the float64 lanes are merged at the end. Lanes in
float64 throughout would halve the vector width of the per-element update.

The split is accurate only for |z| below a per-dtype bound (``extexp_bound``): a row
that leaves it, or holds NaN/inf, or lies so low that the -inf clamp below could
matter, is handed to the online kernel, which handles every finite row and the
special values. Masked (-inf) entries are clamped to -bound: their 2^n then vanishes
against the row's largest exponent, so they contribute exact zeros. The test uses the
row's largest exponent E: |z - n·ln 2| ≤ ln 2/2, so z_max lies within half a binade of
E·ln 2.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .dtype_constants import per_dtype
from .expfast import _mul_pow2, exp_reduce, extexp_bound, ldexp_fast, ldexp_nonpositive
from .online import logsumexp_row_online, softmax_row_online
from .passes import is_finite, write_elementwise, write_shifted
from .paths import LOG_OUTPUT
from .simd import CHAIN_LANES, chain_lane_array, fmax

#: Rows whose largest z lies within this distance of -bound take the online path, so
#: a clamped -inf entry (at -bound) is at least this far below the row maximum and
#: its weight exp(-margin) underflows to zero in float64 (and float32).
_CLAMP_MARGIN = 800.0

#: Elements per block whose lane pairs are kept in the row's dtype (16 per lane).
EXTEXP_BLOCK = 16 * CHAIN_LANES

#: Exponent of an empty lane: far below any n (|n| ≤ 2^25), and exact in float32.
_EMPTY_EXPONENT = -(2.0**26)

_LOG2E = 1.0 / math.log(2.0)


@kernel
def _clamped(v):
    """max(v, -bound) for the split's bound in v's dtype; NaN passes through unchanged."""
    bound = extexp_bound(v)
    return -bound if v < -bound else v


@kernel
def _scale_down(p, k):
    """p·2^k for integer-valued k ≤ 0 (one multiply by a power of two built from bits).

    k below the smallest normal exponent (or NaN) is raised to it: the term is then
    < 2^-125 of a lane sum that is ≥ 0.7 and rounds away, as it would exactly.
    """
    kmin = _min_exponent(p)
    return _mul_pow2(p, k if k > kmin else kmin)


_min_exponent = per_dtype(
    np.float32(-126.0),
    np.float64(-1022.0),
    """Smallest normal binary exponent of ``p``'s float type, as that type (jit-only).""",
)


@kernel
def _lane_update(mant, expo, j, z):
    """Add exp(z) = p·2^n to lane j of the (mant, expo) pairs."""
    p, n = exp_reduce(_clamped(z))
    e_old = expo[j]
    e = n if n > e_old else e_old
    mant[j] = _scale_down(mant[j], e_old - e) + _scale_down(p, n - e)
    expo[j] = e


@kernel
def _block_lanes(xb, inv_t, mant, expo):
    """Set the lane pairs (in xb's dtype) to Σ exp(xb·inv_t) over one block."""
    dt = xb.dtype.type
    for j in range(CHAIN_LANES):
        mant[j] = dt(0.0)
        expo[j] = dt(_EMPTY_EXPONENT)
    groups = xb.size // CHAIN_LANES
    for g in range(groups):
        for j in range(CHAIN_LANES):
            _lane_update(mant, expo, j, xb[g * CHAIN_LANES + j] * inv_t)
    for j in range(xb.size - groups * CHAIN_LANES):
        _lane_update(mant, expo, j, xb[groups * CHAIN_LANES + j] * inv_t)


@kernel
def _fold_lanes(mant, expo, mant64, expo64):
    """mant64/expo64 lane pairs (float64) += the block's lane pairs (row dtype)."""
    for j in range(CHAIN_LANES):
        e_blk = np.float64(expo[j])
        e_old = expo64[j]
        e = e_blk if e_blk > e_old else e_old
        mant64[j] = _scale_down(mant64[j], e_old - e) + _scale_down(np.float64(mant[j]), e_blk - e)
        expo64[j] = e


@kernel
def extexp_stats(x, inv_t):
    """Σ exp(x·inv_t) as a float64 pair (M, E) with value M·2^E, in one read.

    E is the largest n = rint(z·log2 e) of the row (as a float64), M ≥ 0.7 for a
    non-empty finite row; NaN or +inf in the row make M NaN. See the module docstring
    for the lane structure and its accuracy.
    """
    dt = x.dtype.type
    mant, expo = chain_lane_array(dt(0.0)), chain_lane_array(dt(0.0))
    mant64, expo64 = chain_lane_array(0.0), chain_lane_array(0.0)
    for j in range(CHAIN_LANES):
        mant64[j] = 0.0
        expo64[j] = _EMPTY_EXPONENT
    for lo in range(0, x.size, EXTEXP_BLOCK):
        _block_lanes(x[lo : lo + EXTEXP_BLOCK], inv_t, mant, expo)
        _fold_lanes(mant, expo, mant64, expo64)
    e = expo64[0]
    for j in range(1, CHAIN_LANES):
        e = fmax(e, expo64[j])
    total = 0.0
    for j in range(CHAIN_LANES):
        total += _scale_down(mant64[j], expo64[j] - e)
    return total, e


@kernel
def merge_extexp(m1, e1, m2, e2):
    """Merge two (mantissa, exponent) partial sums into one."""
    if e1 >= e2:
        return m1 + ldexp_fast(m2, np.float64(e2 - e1)), e1
    return m2 + ldexp_fast(m1, np.float64(e1 - e2)), e2


@kernel
def _in_domain(mant, e, x):
    """True when the (M, E) sum is finite and the row maximum z_max is inside the split's
    range: z_max ≤ (E + 1/2)·ln 2 ≤ bound and z_max ≥ (E - 1/2)·ln 2 ≥ margin - bound
    (|z - n·ln 2| ≤ 0.347 for every term); ``bound`` is that of ``x``'s dtype."""
    lim = np.float64(extexp_bound(x)) * _LOG2E - 1.0  # 1 > 1/2 + the reduction's slack
    return is_finite(mant) and e <= lim and e >= (_CLAMP_MARGIN * _LOG2E + 1.0) - lim


@kernel
def logsumexp_row_two_pass(x, inv_t):
    """t·log Σ exp(x·inv_t), t = 1/inv_t, from the (M, E) sum: 1 read per element."""
    mant, e = extexp_stats(x, inv_t)
    if not _in_domain(mant, e, x):
        return logsumexp_row_online(x, inv_t)
    return (math.log(mant) + e * math.log(2.0)) / inv_t


@kernel(inline="always")  # Numba-IR inlining: see in_place
def _extexp_scaled(x, y, inv_t, mant, e):
    inv_mant = x.dtype.type(1.0 / mant)
    e_dt = x.dtype.type(e)
    for i in range(y.size):  # as passes._exp_scaled
        p, n = exp_reduce(_clamped(x[i] * inv_t))
        y[i] = ldexp_nonpositive(p, n - e_dt) * inv_mant


@kernel
def write_two_pass(x, y, inv_t, mant, e, log_output):
    """The output pass from the row's (M, E): y = p·2^(n - E)/M, or z - log(M·2^E).

    One read, one write per element; y may be x. With ``STREAM_OUTPUT``, y (when not
    x) is written by streaming stores.
    """
    if log_output:
        shift = x.dtype.type(math.log(mant) + e * math.log(2.0))
        write_shifted(x, y, x.dtype.type(0.0), inv_t, shift)
    else:
        write_elementwise(_extexp_scaled, x, y, inv_t, mant, e)


@kernel
def softmax_row_two_pass(x, y, inv_t):
    """softmax (or log_softmax) of one row with the two-pass (M, E) algorithm.

    Pass structure two-pass: 2 reads of x, 1 write of y per element.
    """
    mant, e = extexp_stats(x, inv_t)
    if not _in_domain(mant, e, x):
        softmax_row_online(x, y, inv_t)
        return
    write_two_pass(x, y, inv_t, mant, e, LOG_OUTPUT)
