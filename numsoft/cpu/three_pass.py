"""Three-pass softmax row kernels (Dukhan & Ablavatski, arXiv 2001.04438, §3).

Both variants first find the row maximum m so that every exponent is ≤ 0 and nothing
overflows. They differ in what the third pass reads:

- ``reload`` recomputes exp in the output pass: 3 reads of x, 1 write of y.
- ``store`` writes exp(x - m) in the second pass and rescales it in the third:
  2 reads of x, 1 read and 2 writes of y (3 reads, 2 writes). For an ``out=`` beyond
  the cache it stores into a scratch row instead and streams y from it
  (``softmax_row_three_pass_store_via``): 2 reads of x, 1 write of y from memory.

``y`` may be ``x`` (in place). Rows must be non-empty; the front door handles empty
rows. Temperature enters as ``inv_t``: the kernels compute softmax((x - m)·inv_t),
which equals softmax(x / t) without ever forming x / t (no overflow for tiny t).
The path constant ``LOG_OUTPUT`` (``paths``) selects log_softmax.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .logfast import log_fast
from .passes import (
    exp_to_block,
    is_finite,
    is_regular,
    row_max,
    row_sum_exp,
    scale_from_block,
    scale_inplace,
    shift_from_block,
    shift_inplace,
    shifted_row,
    shifted_to_block,
    short_row_sum_exp,
    special_row_logsumexp,
    special_row_write,
    store_exp_and_sum,
    store_shifted_and_sum_exp,
    write_exp_scaled,
    write_shifted,
)
from .paths import LOG_OUTPUT, SHORT_ROWS
from .simd import LANES, block_array, borrowed_row, lane_array, opaque_count


@kernel
def logsumexp_row_three_pass(x, inv_t):
    """t·log Σ exp(x·inv_t), t = 1/inv_t, by a max pass and a sum pass: 2 reads per element.

    Returned in the units of x (the smooth maximum), so a tiny temperature cannot
    overflow it.
    """
    m = row_max(x)
    s = row_sum_exp(x, m, inv_t)
    if not is_regular(m, s):
        return special_row_logsumexp(x)
    return m + math.log(s) / inv_t


@kernel
def softmax_row_three_pass_reload(x, y, inv_t):
    """softmax (or log_softmax) of one row: max; Σ exp; y = exp(x - m)/Σ.

    Pass structure three-pass-reload: 3 reads of x, 1 write of y per element.
    """
    m = row_max(x)
    s = row_sum_exp(x, m, inv_t)
    if not is_regular(m, s):
        special_row_write(x, y, LOG_OUTPUT)
    elif LOG_OUTPUT:
        write_shifted(x, y, m, inv_t, x.dtype.type(math.log(s)))
    else:
        write_exp_scaled(x, y, m, inv_t, x.dtype.type(1.0 / s))


# Inlined into softmax_row_three_pass_store, and for log_softmax rows of at most
# INLINE_ROW_BYTES bytes that do not go by the group (LOG_GROUPS) into the drivers' row
# loop (``rows.softmax_row``).
@kernel(inline="always")
def softmax_short_row_three_pass_store(x, y, inv_t):
    """three-pass-store of a row of at most ``SUM_BLOCK`` elements, storing in a stack
    block instead of y: max; b = exp(x - m) with Σ; y = b/Σ.

    2 reads of x, 1 write of y per element (b stays in L1). Same values as the long-row
    form (the same blocked sum of the same stored values), with two fewer passes over
    y and no aliasing between the passes. At 128 float32 per row it took 159 ns
    against 186 for the long form, and 102 ns once its passes were inlined and its
    rows reference-free.
    """
    m = row_max(x)
    if not is_finite(m):
        special_row_write(x, y, LOG_OUTPUT)
        return
    b = block_array(x.dtype.type(0.0))[: x.size]
    if LOG_OUTPUT:
        s = np.float64(shifted_to_block(x, b, m, inv_t))
    else:
        s = np.float64(exp_to_block(x, b, m, inv_t))
    if not is_finite(s):
        special_row_write(x, y, LOG_OUTPUT)  # x is intact: y is not written yet
    elif LOG_OUTPUT:
        # The log in the row's dtype: s is a sum in that dtype, and a float32 row's
        # logf took 5-8 % less time per row of 32-128 than float32(log(s)) (within an
        # ulp of it; the short rows' only scalar transcendental).
        shift_from_block(b, y, math.log(x.dtype.type(s)))
    else:
        scale_from_block(b, y, x.dtype.type(1.0 / s))


@kernel  # called once per span of rows (rows.py)
def softmax_inline_rows_three_pass_store(x2, y2, lo, hi, inv_t):
    """softmax (not log: ``log_softmax_short_rows_three_pass``) of rows lo…hi-1, each
    of at most ``rows.INLINE_ROW_BYTES`` bytes, as ``softmax_short_row_three_pass_store``
    but software-pipelined across rows: the step for row r takes row r+1's max, row r's
    exponentials and sum (into one of two stack blocks) and writes row r-1 (from the
    other).

    A short row's passes are one dependent chain (max, its horizontal reduction, exp,
    the sum's reduction, 1/Σ, the output pass) longer than the out-of-order window
    covers; interleaved this way each step's passes depend only on the step before.
    Same values as the row-at-a-time form, same traffic (2 reads of x, 1 write of y
    per element). One thread, ns per row: float32 rows of 32 23.5 → 21.8, of 64
    35.3 → 29.0; float64 rows of 32 40.4 → 34.5.

    In place is safe: row r+1 is read before it is written, row r-1 written after its
    last read.
    """
    n = x2.shape[1]
    halves = block_array(x2.dtype.type(0.0))  # two rows of at most INLINE_ROW_BYTES
    m, m_next, s = x2.dtype.type(0.0), x2.dtype.type(0.0), math.nan
    pending, pending_scale = False, x2.dtype.type(1.0)
    # step r: row r+1's max, row r's exponentials and sum, row r-1's output; the steps
    # before the first row and after the last keep one inlined copy of each pass
    for r in range(lo - 1, hi + 1):
        m = m_next
        if r + 1 < hi:
            m_next = row_max(borrowed_row(x2, r + 1))
        half = (r - lo) % 2 * n
        regular = False
        if lo <= r < hi:
            x = borrowed_row(x2, r)
            s = (
                np.float64(exp_to_block(x, halves[half : half + n], m, inv_t))
                if is_finite(m)
                else math.nan
            )
            regular = is_finite(s)
            if not regular:
                special_row_write(x, borrowed_row(y2, r), False)
        if pending:
            other = n - half
            scale_from_block(halves[other : other + n], borrowed_row(y2, r - 1), pending_scale)
        pending, pending_scale = regular, x2.dtype.type(1.0 / s)


@kernel(inline="always")  # inlined into the two group kernels below
def short_rows_log_sums(x2, g, count, inv_t, shifts, logs):
    """Rows g…g+count-1 (count ≤ ``LANES``) of at most ``SUM_BLOCK`` elements:
    shifts[k] = the row's max m and logs[k] = log Σ exp((x - m)·inv_t). A special row
    (NaN, +inf, or only -inf) gets a NaN shift and log 0: its caller's special-value
    path takes it from there.

    Each row's max is taken before the previous row's sum, software-pipelined as in
    ``softmax_inline_rows_three_pass_store``, and the group's logs are taken together
    after its sums. A libm ``log`` inside the row loop cost 8-9 ns of a 33 ns row of 32
    float32 (its call spills the loop's vector registers). The group's logs are
    ``logfast.log_fast`` over the lanes, in vectors (``simd.opaque_count``: with the
    constant trip count LLVM unrolled the loop into scalar code, and then libm's ``log``
    was as fast): float32 log_softmax rows of 128, 0.87-0.89 → 0.81-0.82 ms per 2^21
    elements with the degree-5 exponential (one thread). 2 reads per element.
    """
    sums = lane_array(0.0)
    for k in range(LANES):
        sums[k] = 1.0  # lanes past count take a log too: of 1
    m, m_next = x2.dtype.type(0.0), x2.dtype.type(0.0)
    for k in range(-1, count):  # step k: row k+1's max, row k's sum
        m = m_next
        if k + 1 < count:  # one inlined copy of the max pass, not two
            m_next = row_max(borrowed_row(x2, g + k + 1))
        if k < 0:
            continue
        x = borrowed_row(x2, g + k)
        s = short_row_sum_exp(x, m, inv_t)
        if is_regular(m, s):
            shifts[k] = m
            sums[k] = s
        else:
            shifts[k] = math.nan
    for k in range(opaque_count(LANES)):  # vectors of logs; lanes past count: log 1 = 0
        logs[k] = log_fast(sums[k])


@kernel  # called once per span of rows (rows.py)
def logsumexp_short_rows_three_pass(x2, out, lo, hi, inv_t):
    """out[i] = t·log Σ exp(x2[i]·inv_t) for rows lo…hi-1 of at most ``SUM_BLOCK``
    elements, ``LANES`` rows at a time (``short_rows_log_sums``). 2 reads per element,
    as ``logsumexp_row_three_pass``."""
    shifts = lane_array(0.0)
    logs = lane_array(0.0)
    for g in range(lo, hi, LANES):
        count = min(LANES, hi - g)
        short_rows_log_sums(x2, g, count, inv_t, shifts, logs)
        for k in range(count):
            if is_finite(shifts[k]):
                out[g + k] = shifts[k] + logs[k] / inv_t
            else:
                out[g + k] = special_row_logsumexp(borrowed_row(x2, g + k))


@kernel  # called once per span of rows (rows.py)
def log_softmax_short_rows_three_pass(x2, y2, lo, hi, inv_t):
    """log_softmax of rows lo…hi-1 of at most ``SUM_BLOCK`` elements, ``LANES`` rows at
    a time: the group's maxima and log-sums (``short_rows_log_sums``), then each row
    y = (x - m)·inv_t - log Σ. Pass structure three-pass: 3 reads of x (the group's
    rows stay in L1/L2), 1 write of y per element, nothing stored in between: the
    value three-pass-store would keep, (x - m)·inv_t, is one subtraction and one
    multiply to recompute. In place is safe: a row is written after its last read.
    """
    shifts = lane_array(0.0)
    logs = lane_array(0.0)
    for g in range(lo, hi, LANES):
        count = min(LANES, hi - g)
        short_rows_log_sums(x2, g, count, inv_t, shifts, logs)
        for k in range(count):
            x, y = borrowed_row(x2, g + k), borrowed_row(y2, g + k)
            m = x.dtype.type(shifts[k])
            if is_finite(m):
                shifted_row(x, y, m, inv_t, x.dtype.type(logs[k]))
            else:
                special_row_write(x, y, True)


@kernel(inline="always")  # Numba-IR inlining: module docstring
def _stored_total(x, y, tmp, inv_t, ahead):
    """The first two passes of three-pass-store: max; tmp = exp((x - m)·inv_t) (log
    output: (x - m)·inv_t) with Σ exp, prefetching ``ahead`` (or None). Returns (Σ,
    True), or (Σ, False) for a special row, whose y is then written already."""
    m = row_max(x)
    if not is_finite(m):
        special_row_write(x, y, LOG_OUTPUT)
        return 0.0, False
    if LOG_OUTPUT:
        s = store_shifted_and_sum_exp(x, tmp, m, inv_t, ahead)
    else:
        s = store_exp_and_sum(x, tmp, m, inv_t, ahead)
    if not is_finite(s):
        # y may alias x and has been overwritten: only NaN can make s non-finite when
        # m is finite, and a NaN row's output is all NaN whatever x held.
        y[:] = math.nan
        return s, False
    return s, True


@kernel
def softmax_row_three_pass_store(x, y, inv_t):
    """softmax (or log_softmax) of one row: max; y = exp(x - m) with Σ; y *= 1/Σ.

    Pass structure three-pass-store: 2 reads of x, 1 read and 2 writes of y per element
    (with the path constant ``SHORT_ROWS``, for rows of at most ``SUM_BLOCK`` elements,
    it stores in a stack block instead: ``softmax_short_row_three_pass_store``). For
    log output the stored value is (x - m)·inv_t and the last pass subtracts log Σ.
    """
    if SHORT_ROWS:
        softmax_short_row_three_pass_store(x, y, inv_t)
        return
    s, regular = _stored_total(x, y, y, inv_t, None)
    if not regular:
        return
    if LOG_OUTPUT:
        shift_inplace(y, x.dtype.type(math.log(s)))
    else:
        scale_inplace(y, x.dtype.type(1.0 / s))


@kernel
def softmax_row_three_pass_store_via(x, y, tmp, inv_t, ahead):
    """three-pass-store with the stored values in the scratch row ``tmp`` (x's size, not
    y): max; tmp = exp(x - m) with Σ; y = tmp·(1/Σ) (log output: tmp = (x - m)·inv_t,
    y = tmp - log Σ), prefetching the row ``ahead`` during the exponentials.

    For ``out=`` beyond the cache (``STREAM_OUTPUT``): ``tmp`` stays in L2 from row to
    row, and y is written once, by streaming stores (``passes.write_shifted``: y = (tmp -
    0)·(1/Σ) - 0, or (tmp - 0)·1 - log Σ, the same values as the in-place scale or
    shift), instead of twice through the cache, with a read of each line from memory
    first: 2 reads of x (the second from L2) and 1 write of y per element from memory.
    """
    s, regular = _stored_total(x, y, tmp, inv_t, ahead)
    if not regular:
        return
    zero = x.dtype.type(0.0)
    if LOG_OUTPUT:
        write_shifted(tmp, y, zero, x.dtype.type(1.0), x.dtype.type(math.log(s)))
    else:
        write_shifted(tmp, y, zero, x.dtype.type(1.0 / s), zero)
