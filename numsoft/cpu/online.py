"""Online-normalizer softmax row kernels (Milakov & Gimelshein, arXiv 1805.02867).

One read finds the running maximum m and the sum d of exp(x - m), rescaling d by
exp(m_old - m_new) whenever the maximum grows; a second read writes the output.
Traffic: 2 reads of x, 1 write of y per element.

The (m, d) pair is an associative partial result: ``merge_online`` combines the
statistics of two pieces of a row (threads, Dask chunks) exactly.
"""

from __future__ import annotations

import math

from ._jit import kernel
from .expfast import exp_fast
from .passes import (
    is_regular,
    special_row_logsumexp,
    special_row_write,
    write_exp_scaled,
    write_shifted,
)


@kernel
def online_stats(x, inv_t):
    """Running (max m, Σ exp((x - m)·inv_t)) of a non-empty row in one read."""
    m = x[0]
    d = 1.0  # float64 accumulator (see passes.py)
    for i in range(1, x.size):
        v = x[i]
        if v > m:
            d = d * exp_fast((m - v) * inv_t) + 1.0
            m = v
        else:
            d += exp_fast((v - m) * inv_t)
    return m, d


@kernel
def merge_online(m1, d1, m2, d2, inv_t):
    """Merge two online partials (m, d) into the statistics of their union."""
    if m1 >= m2:
        return m1, d1 + d2 * exp_fast((m2 - m1) * inv_t)
    return m2, d2 + d1 * exp_fast((m1 - m2) * inv_t)


@kernel
def logsumexp_row_online(x, inv_t):
    """t·log Σ exp(x·inv_t), t = 1/inv_t, from the online statistics: 1 read per element."""
    m, d = online_stats(x, inv_t)
    if not is_regular(m, d):
        return special_row_logsumexp(x)
    return m + math.log(d) / inv_t


@kernel
def softmax_row_online(x, y, inv_t, log_output):
    """softmax (or log_softmax) of one row with the online normalizer.

    Pass structure online: 2 reads of x, 1 write of y per element.
    """
    m, d = online_stats(x, inv_t)
    if not is_regular(m, d):
        special_row_write(x, y, log_output)
    elif log_output:
        write_shifted(x, y, m, inv_t, x.dtype.type(math.log(d)))
    else:
        write_exp_scaled(x, y, m, inv_t, x.dtype.type(1.0 / d))
