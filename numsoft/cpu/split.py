"""One long row across threads: each pass runs on contiguous chunks in parallel, and the
per-chunk statistics are combined with the structures' associative merges.

A row of 2^24 elements is one task for the row driver; with fewer rows than threads it
would leave cores idle. Here each pass of a pass structure becomes one parallel loop over
``chunks`` pieces of the row (``_stats_chunks``, ``_write_chunks``: one kernel per
pass), and between passes the per-chunk partials are merged serially: maxima by
``max``, sums by ``+``, online (m, d) pairs by ``merge_online``, two-pass (M, E) pairs
by ``merge_extexp``. The memory traffic of every structure is unchanged (e.g. two-pass:
2 reads, 1 write per element); only the few partials per pass are extra.

The compositions mirror the serial row kernels (``three_pass``, ``online``, ``two_pass``)
pass for pass, including their special-value paths and the two-pass domain fallback;
the single passes themselves are the shared ones from ``passes`` and ``two_pass``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ..vocabulary import ONLINE, THREE_PASS_STORE, TWO_PASS
from ._jit import kernel, parallel_kernel
from .online import merge_online, online_stats
from .passes import (
    LAST_READ_FIRST_BYTES,
    is_finite,
    is_regular,
    last_piece,
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
from .paths import ALGORITHM, CHUNK_PASS, LOG_OUTPUT, STREAM_OUTPUT, specialize
from .simd import store_fence
from .two_pass import _in_domain, extexp_stats, merge_extexp, write_two_pass

# The single passes a chunked loop can run (its path constant ``CHUNK_PASS``).
MAX, SUM_EXP, ONLINE_STATS, EXTEXP_STATS = range(4)
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
def _stats_chunks(x, chunks, inv_t, m, part1, part2):
    """Statistics pass ``CHUNK_PASS`` on every chunk of the row ``x``, chunks in parallel.

    Chunk ``c``'s partial goes to ``part1[c]`` (and ``part2[c]``); ``m`` is the row
    maximum for ``SUM_EXP``.
    """
    for c in prange(chunks):
        lo, hi = chunk_bounds(c, chunks, x.size)
        xc = x[lo:hi]
        if CHUNK_PASS == MAX:
            part1[c] = row_max(xc)
        elif CHUNK_PASS == SUM_EXP:
            part1[c] = row_sum_exp(xc, m, inv_t)
        elif CHUNK_PASS == ONLINE_STATS:
            part1[c], part2[c] = online_stats(xc, inv_t)
        else:  # EXTEXP_STATS
            part1[c], part2[c] = extexp_stats(xc, inv_t)


@parallel_kernel
def _write_chunks(x, y, chunks, inv_t, stats, part):
    """Output pass ``CHUNK_PASS`` on every chunk of the row ``x`` → ``y``, chunks in parallel.

    Uses the row statistics ``stats = (m, s, mant, e)``: ``m``, ``s`` (row dtype) or
    ``mant``, ``e`` (scalars); the store passes also leave their chunk sums in ``part``.
    The passes that re-read what the pass before them read walk each chunk last piece
    first (``passes.last_piece``).
    """
    m, s, mant, e = stats
    for c in prange(chunks):
        lo, hi = chunk_bounds(c, chunks, x.size)
        if CHUNK_PASS == STORE_EXP:
            part[c] = store_exp_and_sum(x[lo:hi], y[lo:hi], m, inv_t)
        elif CHUNK_PASS == STORE_SHIFTED:
            part[c] = store_shifted_and_sum_exp(x[lo:hi], y[lo:hi], m, inv_t)
        else:
            # Last read first (passes.last_piece), except under streaming stores, where
            # the pieces measured 2-3 % slower than one forward run: the output pass is
            # then bound by its arithmetic, not by the reads the cache saves.
            step = max(hi - lo, 1) if STREAM_OUTPUT else LAST_READ_FIRST_BYTES // x.itemsize
            for p in range(last_piece(lo, hi, step), lo - 1, -step):
                xc, yc = x[p : min(p + step, hi)], y[p : min(p + step, hi)]
                if CHUNK_PASS == WRITE_EXP:
                    write_exp_scaled(xc, yc, m, inv_t, s)
                elif CHUNK_PASS == WRITE_SHIFTED:
                    write_shifted(xc, yc, m, inv_t, s)
                elif CHUNK_PASS == SCALE:
                    scale_inplace(yc, s)
                elif CHUNK_PASS == SHIFT:
                    shift_inplace(yc, s)
                else:  # WRITE_TWO_PASS (softmax output; its log output is WRITE_SHIFTED)
                    write_two_pass(xc, yc, inv_t, mant, e, False)
        if STREAM_OUTPUT:
            store_fence()  # the chunk's streaming stores (passes.streamed)


@kernel
def _pass(x, y, chunks, inv_t, m, s, mant, e):
    """Run output pass ``CHUNK_PASS`` over all chunks; return the chunk sums (store passes)."""
    part = np.empty(chunks)
    _write_chunks(x, y, chunks, inv_t, (m, s, mant, e), part)
    return part


@kernel
def _stats(x, chunks, inv_t, m):
    """The per-chunk partials of statistics pass ``CHUNK_PASS``."""
    part1 = np.empty(chunks)
    part2 = np.empty(chunks)
    _stats_chunks(x, chunks, inv_t, m, part1, part2)
    return part1, part2


# One kernel per single pass, each compiled the first time a path runs it.
_max_stats, _sum_exp_stats, _online_stats, _extexp_stats = (
    specialize(_stats, CHUNK_PASS=op) for op in (MAX, SUM_EXP, ONLINE_STATS, EXTEXP_STATS)
)
_write_exp, _write_shifted, _store_exp, _store_shifted, _scale, _shift, _write_two_pass = (
    specialize(_pass, CHUNK_PASS=op)
    for op in (WRITE_EXP, WRITE_SHIFTED, STORE_EXP, STORE_SHIFTED, SCALE, SHIFT, WRITE_TWO_PASS)
)


@kernel
def _merged_max(x, chunks, inv_t):
    part, _ = _max_stats(x, chunks, inv_t, x[0])
    m = part[0]
    for c in range(1, chunks):
        m = max(m, part[c])  # NaN, if any, is caught through the sum
    return x.dtype.type(m)


@kernel
def _merged_online(x, chunks, inv_t):
    part_m, part_d = _online_stats(x, chunks, inv_t, x[0])
    m, d = x.dtype.type(part_m[0]), part_d[0]
    for c in range(1, chunks):
        m, d = merge_online(m, d, x.dtype.type(part_m[c]), part_d[c], inv_t)
    return m, d


@kernel
def _merged_extexp(x, chunks, inv_t):
    part_m, part_e = _extexp_stats(x, chunks, inv_t, x[0])
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
def _max_and_sum(x, chunks, inv_t):
    """(m, d) with Σ exp((x - m)·inv_t) = d, by a max pass and a sum pass."""
    m = _merged_max(x, chunks, inv_t)
    part, _ = _sum_exp_stats(x, chunks, inv_t, m)
    return m, _sum(part)


# The row kernels below are templates: ``paths.specialize`` binds ALGORITHM (and
# LOG_OUTPUT), and each path compiles only its own passes.


@kernel
def logsumexp_row_split(x, inv_t, chunks):
    """``logsumexp_row`` of one long row, each pass split into ``chunks`` parallel pieces."""
    if ALGORITHM == TWO_PASS:
        mant, e = _merged_extexp(x, chunks, inv_t)
        if _in_domain(mant, e, x):
            return (math.log(mant) + e * math.log(2.0)) / inv_t
        m, d = _merged_online(x, chunks, inv_t)  # the fallback of logsumexp_row_two_pass
    elif ALGORITHM == ONLINE:
        m, d = _merged_online(x, chunks, inv_t)
    else:  # both three-pass forms: logsumexp has no output pass
        m, d = _max_and_sum(x, chunks, inv_t)
    if not is_regular(m, d):
        return special_row_logsumexp(x)
    return m + math.log(d) / inv_t


@kernel
def _softmax_store_split(x, y, inv_t, chunks):
    """three-pass-store, split: max; y = exp(x - m) (or x - m) with Σ; y *= 1/Σ (or -= log Σ)."""
    m = _merged_max(x, chunks, inv_t)
    if not is_finite(m):
        special_row_write(x, y, LOG_OUTPUT)
        return
    if LOG_OUTPUT:
        part = _store_shifted(x, y, chunks, inv_t, m, m, 0.0, 0.0)
    else:
        part = _store_exp(x, y, chunks, inv_t, m, m, 0.0, 0.0)
    s = _sum(part)
    if not is_finite(s):
        y[:] = math.nan  # only NaN makes s non-finite, as in softmax_row_three_pass_store
    elif LOG_OUTPUT:
        _shift(x, y, chunks, inv_t, m, x.dtype.type(math.log(s)), 0.0, 0.0)
    else:
        _scale(x, y, chunks, inv_t, m, x.dtype.type(1.0 / s), 0.0, 0.0)


@kernel
def _softmax_write_split(x, y, inv_t, chunks, m, d):
    """The output pass from the row's (m, d), split; special rows as the row kernels."""
    if not is_regular(m, d):
        special_row_write(x, y, LOG_OUTPUT)
    elif LOG_OUTPUT:
        _write_shifted(x, y, chunks, inv_t, m, x.dtype.type(math.log(d)), 0.0, 0.0)
    else:
        _write_exp(x, y, chunks, inv_t, m, x.dtype.type(1.0 / d), 0.0, 0.0)


@kernel
def softmax_row_split(x, y, inv_t, chunks):
    """``softmax_row`` of one long row, each pass split into ``chunks`` parallel pieces.

    Same pass structures, traffic, special values and two-pass fallback as the serial
    row kernels; ``y`` may be ``x``.
    """
    if ALGORITHM == THREE_PASS_STORE:
        _softmax_store_split(x, y, inv_t, chunks)
    elif ALGORITHM == TWO_PASS:
        mant, e = _merged_extexp(x, chunks, inv_t)
        if not _in_domain(mant, e, x):  # the fallback of softmax_row_two_pass
            m, d = _merged_online(x, chunks, inv_t)
            _softmax_write_split(x, y, inv_t, chunks, m, d)
        elif LOG_OUTPUT:
            shift = x.dtype.type(math.log(mant) + e * math.log(2.0))
            _write_shifted(x, y, chunks, inv_t, x.dtype.type(0.0), shift, mant, e)
        else:
            _write_two_pass(x, y, chunks, inv_t, x[0], x[0], mant, e)
    elif ALGORITHM == ONLINE:
        m, d = _merged_online(x, chunks, inv_t)
        _softmax_write_split(x, y, inv_t, chunks, m, d)
    else:
        m, d = _max_and_sum(x, chunks, inv_t)
        _softmax_write_split(x, y, inv_t, chunks, m, d)
