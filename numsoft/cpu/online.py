"""Online-normalizer softmax row kernels (Milakov & Gimelshein, arXiv 1805.02867).

One read finds the running maximum m and the sum d of exp(x - m), rescaling d by
exp(m_old - m_new) whenever the maximum grows; a second read writes the output.
Traffic: 2 reads of x, 1 write of y per element.

The running update is blocked so that it vectorizes: each block of ``ONLINE_BLOCK``
elements (8 KiB of float32, in L1 after its first touch) gets its maximum (vector
``row_max``), the running (m, d) is rescaled once if that maximum is larger, and the
block's Σ exp(x - m) is added (vector ``row_sum_exp``: float32 block partials added in
float64). Main memory still sees one read of x for the statistics; the per-element
textbook recurrence (a branch and a possible exp per element) does not vectorize and
ran ~5× slower.

The (m, d) pair is an associative partial result: ``merge_online`` combines the
statistics of two pieces of a row (threads, Dask chunks) exactly.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .expfast import exp_nonpositive
from .passes import (
    is_regular,
    row_max,
    row_sum_exp,
    special_row_logsumexp,
    special_row_write,
    write_exp_scaled,
    write_shifted,
)
from .paths import LOG_OUTPUT

#: Elements per block of the blocked online update (measured: 1024–4096 are within
#: noise of each other; smaller blocks pay the per-block rescale more often).
ONLINE_BLOCK = 2048


@kernel
def _rescale(m_old, m_new, inv_t):
    """exp((m_old - m_new)·inv_t) in float64: a sum kept relative to m_old, moved to m_new.

    float64 because a row's sum may be rescaled once per block (ascending rows), and a
    float32 factor would add ~1 ulp of float32 each time.
    """
    return exp_nonpositive((np.float64(m_old) - np.float64(m_new)) * np.float64(inv_t))


@kernel
def online_stats(x, inv_t):
    """Running (max m, Σ exp((x - m)·inv_t)) of a row in one read; d is a float64.

    Blocked (see the module docstring). A block of only -inf entries adds nothing, so a
    row of only -inf gives (-inf, 0); NaN makes d NaN; a +inf entry makes m = +inf and
    d NaN. Callers test ``is_regular(m, d)`` and take the special-value path otherwise.
    An empty row gives (-inf, 0).
    """
    m = x.dtype.type(-math.inf)
    d = 0.0
    for lo in range(0, x.size, ONLINE_BLOCK):
        block = x[lo : lo + ONLINE_BLOCK]
        mb = row_max(block)
        if mb > m:
            d *= _rescale(m, mb, inv_t)
            m = mb
        if mb != -math.inf:  # NaN passes: its sum poisons d
            d += row_sum_exp(block, m, inv_t)
    return m, d


@kernel
def merge_online(m1, d1, m2, d2, inv_t):
    """Merge two online partials (m, d) into the statistics of their union.

    A part of only -inf entries, (-inf, 0), leaves the other unchanged (also when both
    are such parts); NaN in either propagates to d.
    """
    if m2 > m1:
        m1, d1, m2, d2 = m2, d2, m1, d1
    if m2 == -math.inf:
        return m1, d1 + d2
    return m1, d1 + d2 * _rescale(m2, m1, inv_t)


@kernel
def logsumexp_row_online(x, inv_t):
    """t·log Σ exp(x·inv_t), t = 1/inv_t, from the online statistics: 1 read per element."""
    m, d = online_stats(x, inv_t)
    if not is_regular(m, d):
        return special_row_logsumexp(x)
    return m + math.log(d) / inv_t


@kernel
def softmax_row_online(x, y, inv_t):
    """softmax (or log_softmax) of one row with the online normalizer.

    Pass structure online: 2 reads of x, 1 write of y per element.
    """
    m, d = online_stats(x, inv_t)
    if not is_regular(m, d):
        special_row_write(x, y, LOG_OUTPUT)
    elif LOG_OUTPUT:
        write_shifted(x, y, m, inv_t, x.dtype.type(math.log(d)))
    else:
        write_exp_scaled(x, y, m, inv_t, x.dtype.type(1.0 / d))
