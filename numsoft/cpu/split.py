"""One long row across threads: each pass runs on contiguous chunks in parallel, and the
per-chunk statistics are combined with the structures' associative merges.

A row of 2^24 elements is one task for the row driver; with fewer rows than threads it
would leave cores idle. Here each pass of a pass structure becomes one parallel loop over
``chunks`` pieces of the row (``stats_chunks``, ``write_chunks``), and between passes the
per-chunk partials are merged serially: maxima by ``max``, sums by ``+``, online (m, d) pairs by
``merge_online``, two-pass (M, E) pairs by ``merge_extexp``. The memory traffic of every
structure is unchanged (e.g. two-pass: 2 reads, 1 write per element); only the few
partials per pass are extra.

The compositions mirror the serial row kernels (``three_pass``, ``online``, ``two_pass``)
pass for pass, including their special-value paths and the two-pass domain fallback;
the single passes themselves are the shared ones from ``passes`` and ``two_pass``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._jit import kernel, parallel_kernel
from .auto import ONLINE, THREE_PASS_RELOAD, THREE_PASS_STORE, TWO_PASS
from .online import merge_online, online_stats
from .passes import (
    is_finite,
    is_regular,
    row_max,
    row_sum_exp,
    scale_inplace,
    shift_inplace,
    special_row_logsumexp,
    special_row_write,
    store_exp_and_sum,
    store_shifted_and_sum_exp,
    write_exp_scaled,
    write_shifted,
)
from .two_pass import _in_domain, extexp_stats, merge_extexp, write_two_pass

# Single passes ``stats_chunks``, ``write_chunks`` can run (its ``op`` argument).
MAX, SUM_EXP, ONLINE_STATS, EXTEXP_STATS = 0, 1, 2, 3
WRITE_EXP, WRITE_SHIFTED, STORE_EXP, STORE_SHIFTED, SCALE, SHIFT, WRITE_TWO_PASS = range(4, 11)

#: Chunk boundaries are multiples of this many elements (a 64-byte line of float32), so
#: two threads never write the same cache line.
_CHUNK_ALIGN = 16


@kernel
def chunk_bounds(c, chunks, n):
    """[lo, hi) of chunk ``c`` of ``chunks`` near-equal, aligned pieces of ``n`` elements."""
    lo = (n * c // chunks) // _CHUNK_ALIGN * _CHUNK_ALIGN
    hi = n if c == chunks - 1 else (n * (c + 1) // chunks) // _CHUNK_ALIGN * _CHUNK_ALIGN
    return lo, hi


@parallel_kernel
def stats_chunks(op, x, chunks, inv_t, bound, m, part1, part2):
    """Statistics pass ``op`` on every chunk of the row ``x``, chunks in parallel.

    Chunk ``c``'s partial goes to ``part1[c]`` (and ``part2[c]``); ``m`` is the row
    maximum for ``SUM_EXP``.
    """
    for c in prange(chunks):
        lo, hi = chunk_bounds(c, chunks, x.size)
        xc = x[lo:hi]
        if op == MAX:
            part1[c] = row_max(xc)
        elif op == SUM_EXP:
            part1[c] = row_sum_exp(xc, m, inv_t)
        elif op == ONLINE_STATS:
            part1[c], part2[c] = online_stats(xc, inv_t)
        else:  # EXTEXP_STATS
            part1[c], part2[c] = extexp_stats(xc, inv_t, bound)


@parallel_kernel
def write_chunks(op, x, y, chunks, inv_t, bound, m, s, mant, e, part):
    """Output pass ``op`` on every chunk of the row ``x`` → ``y``, chunks in parallel.

    Uses the row statistics ``m``, ``s`` (row dtype) or ``mant``, ``e``; the store
    passes also leave their chunk sums in ``part``.
    """
    for c in prange(chunks):
        lo, hi = chunk_bounds(c, chunks, x.size)
        xc, yc = x[lo:hi], y[lo:hi]
        if op == WRITE_EXP:
            write_exp_scaled(xc, yc, m, inv_t, s)
        elif op == WRITE_SHIFTED:
            write_shifted(xc, yc, m, inv_t, s)
        elif op == STORE_EXP:
            part[c] = store_exp_and_sum(xc, yc, m, inv_t)
        elif op == STORE_SHIFTED:
            part[c] = store_shifted_and_sum_exp(xc, yc, m, inv_t)
        elif op == SCALE:
            scale_inplace(yc, s)
        elif op == SHIFT:
            shift_inplace(yc, s)
        else:  # WRITE_TWO_PASS (softmax output; its log output is WRITE_SHIFTED)
            write_two_pass(xc, yc, inv_t, bound, mant, e, False)


@kernel
def _pass(op, x, y, chunks, inv_t, bound, m, s, mant, e):
    """Run one output pass over all chunks; return the chunk sums (store passes)."""
    part = np.empty(chunks)
    write_chunks(op, x, y, chunks, inv_t, bound, m, s, mant, e, part)
    return part


@kernel
def _stats(op, x, chunks, inv_t, bound, m):
    """The per-chunk partials of a statistics pass."""
    part1 = np.empty(chunks)
    part2 = np.empty(chunks)
    stats_chunks(op, x, chunks, inv_t, bound, m, part1, part2)
    return part1, part2


@kernel
def _merged_max(x, chunks, inv_t, bound):
    part, _ = _stats(MAX, x, chunks, inv_t, bound, x[0])
    m = part[0]
    for c in range(1, chunks):
        m = max(m, part[c])  # NaN, if any, is caught through the sum
    return x.dtype.type(m)


@kernel
def _merged_online(x, chunks, inv_t, bound):
    part_m, part_d = _stats(ONLINE_STATS, x, chunks, inv_t, bound, x[0])
    m, d = x.dtype.type(part_m[0]), part_d[0]
    for c in range(1, chunks):
        m, d = merge_online(m, d, x.dtype.type(part_m[c]), part_d[c], inv_t)
    return m, d


@kernel
def _merged_extexp(x, chunks, inv_t, bound):
    part_m, part_e = _stats(EXTEXP_STATS, x, chunks, inv_t, bound, x[0])
    mant, e = part_m[0], part_e[0]
    for c in range(1, chunks):
        mant, e = merge_extexp(mant, e, part_m[c], part_e[c])
    return mant, e


@kernel
def _sum(part):
    s = 0.0
    for c in range(part.size):
        s += part[c]
    return s


@kernel
def _row_stats(x, algo, inv_t, bound, chunks):
    """(m, d) with Σ exp((x - m)·inv_t) = d, for the reload and online structures."""
    if algo == ONLINE:
        return _merged_online(x, chunks, inv_t, bound)
    m = _merged_max(x, chunks, inv_t, bound)
    part, _ = _stats(SUM_EXP, x, chunks, inv_t, bound, m)
    return m, _sum(part)


@kernel
def logsumexp_row_split(x, algo, inv_t, bound, chunks):
    """``logsumexp_row`` of one long row, each pass split into ``chunks`` parallel pieces."""
    if algo == TWO_PASS:
        mant, e = _merged_extexp(x, chunks, inv_t, bound)
        if _in_domain(mant, e, bound):
            return (math.log(mant) + e * math.log(2.0)) / inv_t
        algo = ONLINE  # the fallback of logsumexp_row_two_pass
    elif algo == THREE_PASS_STORE:
        algo = THREE_PASS_RELOAD  # logsumexp has no output pass: max and sum as reload
    m, d = _row_stats(x, algo, inv_t, bound, chunks)
    if not is_regular(m, d):
        return special_row_logsumexp(x)
    return m + math.log(d) / inv_t


@kernel
def _softmax_store_split(x, y, inv_t, log_output, bound, chunks):
    """three-pass-store, split: max; y = exp(x - m) (or x - m) with Σ; y *= 1/Σ (or -= log Σ)."""
    m = _merged_max(x, chunks, inv_t, bound)
    if not is_finite(m):
        special_row_write(x, y, log_output)
        return
    part = _pass(STORE_SHIFTED if log_output else STORE_EXP, x, y, chunks, inv_t, bound,
                    m, m, 0.0, 0.0)  # fmt: skip
    s = _sum(part)
    if not is_finite(s):
        special_row_write(y, y, log_output)  # as in softmax_row_three_pass_store
    elif log_output:
        _pass(SHIFT, x, y, chunks, inv_t, bound, m, x.dtype.type(math.log(s)), 0.0, 0.0)
    else:
        _pass(SCALE, x, y, chunks, inv_t, bound, m, x.dtype.type(1.0 / s), 0.0, 0.0)


@kernel
def softmax_row_split(x, y, algo, inv_t, log_output, bound, chunks):
    """``softmax_row`` of one long row, each pass split into ``chunks`` parallel pieces.

    Same pass structures, traffic, special values and two-pass fallback as the serial
    row kernels; ``y`` may be ``x``.
    """
    if algo == THREE_PASS_STORE:
        _softmax_store_split(x, y, inv_t, log_output, bound, chunks)
        return
    if algo == TWO_PASS:
        mant, e = _merged_extexp(x, chunks, inv_t, bound)
        if _in_domain(mant, e, bound):
            if log_output:
                shift = x.dtype.type(math.log(mant) + e * math.log(2.0))
                _pass(WRITE_SHIFTED, x, y, chunks, inv_t, bound, x.dtype.type(0.0), shift,
                      mant, e)  # fmt: skip
            else:
                _pass(WRITE_TWO_PASS, x, y, chunks, inv_t, bound, x[0], x[0], mant, e)
            return
        algo = ONLINE  # the fallback of softmax_row_two_pass
    m, d = _row_stats(x, algo, inv_t, bound, chunks)
    if not is_regular(m, d):
        special_row_write(x, y, log_output)
    elif log_output:
        _pass(WRITE_SHIFTED, x, y, chunks, inv_t, bound, m, x.dtype.type(math.log(d)), 0.0, 0.0)
    else:
        _pass(WRITE_EXP, x, y, chunks, inv_t, bound, m, x.dtype.type(1.0 / d), 0.0, 0.0)
