"""Three-pass softmax row kernels (Dukhan & Ablavatski, arXiv 2001.04438, §3).

Both variants first find the row maximum m so that every exponent is ≤ 0 and nothing
overflows. They differ in what the third pass reads:

- ``reload`` recomputes exp in the output pass: 3 reads of x, 1 write of y.
- ``store`` writes exp(x - m) in the second pass and rescales it in the third:
  2 reads of x, 1 read and 2 writes of y (3 reads, 2 writes).

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
from .simd import LANES, block_array, borrowed_row, lane_array


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


# Inlined into softmax_row_three_pass_store, and for rows of at most INLINE_ROW_BYTES
# bytes into the drivers' row loop (``rows.softmax_row``).
@kernel(inline="always")
def softmax_short_row_three_pass_store(x, y, inv_t):
    """three-pass-store of a row of at most ``SUM_BLOCK`` elements, storing in a stack
    block instead of y: max; b = exp(x - m) with Σ; y = b/Σ.

    2 reads of x, 1 write of y per element (b stays in L1). Same values as the long-row
    form (the same blocked sum of the same stored values), with two fewer passes over
    y and no aliasing between the passes. At 128 float32 per row it took 159 ns
    against 186 for the long form, and 102 ns once its passes were inlined and its
    rows reference-free (``docs/performance.md``, "Why short rows trail torch").
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
        # ulp of it; the short rows' only scalar transcendental, docs/performance.md).
        shift_from_block(b, y, math.log(x.dtype.type(s)))
    else:
        scale_from_block(b, y, x.dtype.type(1.0 / s))


@kernel(inline="always")  # inlined into the drivers' span loop (rows.py)
def logsumexp_short_rows_three_pass(x2, out, lo, hi, inv_t):
    """out[i] = t·log Σ exp(x2[i]·inv_t) for rows lo…hi-1 of at most ``SUM_BLOCK``
    elements, ``LANES`` rows at a time: each row's max and one-block sum, then the
    group's logs in one vectorized loop (``logfast.log_fast``; a libm ``log`` per row
    cost 8-9 ns of a 33 ns row of 32 float32). 2 reads per element, as
    ``logsumexp_row_three_pass``. A special row enters as its value with a sum of 1,
    whose log is exactly 0."""
    shifts = lane_array(0.0)
    sums = lane_array(0.0)
    logs = lane_array(0.0)
    for k in range(LANES):
        sums[k] = 1.0
    for g in range(lo, hi, LANES):
        count = min(LANES, hi - g)
        for k in range(count):
            x = borrowed_row(x2, g + k)
            m = row_max(x)
            s = short_row_sum_exp(x, m, inv_t)
            if is_regular(m, s):
                shifts[k] = m
                sums[k] = s
            else:
                shifts[k] = special_row_logsumexp(x)
                sums[k] = 1.0
        for k in range(LANES):  # all lanes: a fixed trip count vectorizes whole
            logs[k] = log_fast(sums[k])
        for k in range(count):
            out[g + k] = shifts[k] + logs[k] / inv_t


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
    m = row_max(x)
    if not is_finite(m):
        special_row_write(x, y, LOG_OUTPUT)
        return
    if LOG_OUTPUT:
        s = store_shifted_and_sum_exp(x, y, m, inv_t)
    else:
        s = store_exp_and_sum(x, y, m, inv_t)
    if not is_finite(s):
        # y may alias x and has been overwritten: only NaN can make s non-finite when
        # m is finite, and a NaN row's output is all NaN whatever x held.
        y[:] = math.nan
    elif LOG_OUTPUT:
        shift_inplace(y, x.dtype.type(math.log(s)))
    else:
        scale_inplace(y, x.dtype.type(1.0 / s))
