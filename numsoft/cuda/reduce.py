"""Combining partial row statistics: across the threads of a row group, and across chunks.

Every pass structure summarizes a piece of a row as the same five numbers of the
compute dtype, a *partial*::

    (a, b, n_nan, n_posinf, n_out_of_range)

- online (arXiv 1805.02867): ``a`` = max of the finite entries, ``b`` = Σ exp((x - a)·inv_t);
- two-pass (arXiv 2001.04438): ``a`` = exponent E, ``b`` = mantissa M, Σ exp(z) = M·2**E;
- three-pass: ``a`` = max, ``b`` = Σ exp((x - m)·inv_t) for the row's final max m.

``n_nan`` and ``n_posinf`` count the NaN and ``+inf`` entries, which are kept out of
``(a, b)`` and decide the special-value rules (SPEC §1) at the end; ``n_out_of_range``
counts two-pass entries outside the extended-exponent bound (the row then falls back to
the online statistics). ``-inf`` entries (and masked ones) contribute nothing. Counts
are exact in float32 up to 2**24 per thread, and only their sign or 1/count is used.

The merges are associative, so a row can be split across lanes, warps, blocks or
kernel launches and combined in any grouping.
"""

from __future__ import annotations

import math

from numba import cuda

from ._jit import device
from .expdev import scale_pow2

#: How ``(a, b)`` of two partials combine (see the module docstring).
MERGE_ONLINE, MERGE_EXTEXP, MERGE_MAXSUM = range(3)

#: Numbers per partial, and so shared-memory slots per thread.
SLOTS = 5


@device
def merge_ab(kind, a1, b1, a2, b2, inv_t):
    """Combine the ``(a, b)`` of two partials with rule ``kind``."""
    if kind == MERGE_MAXSUM:
        return max(a1, a2), b1 + b2
    if a2 == -math.inf:  # an empty partial (written so that no inf - inf occurs)
        return a1, b1
    if a1 == -math.inf:
        return a2, b2
    if a1 < a2:
        a1, b1, a2, b2 = a2, b2, a1, b1
    if kind == MERGE_ONLINE:
        return a1, b1 + b2 * math.exp((a2 - a1) * inv_t)
    return a1, b1 + scale_pow2(b2, a2 - a1)


@device
def merge_partials(kind, p, q, inv_t):
    """The partial of the union of two pieces of a row."""
    a, b = merge_ab(kind, p[0], p[1], q[0], q[1], inv_t)
    return a, b, p[2] + q[2], p[3] + q[3], p[4] + q[4]


@device
def slots_at(buf, total, i):
    """The partial stored at position ``i`` of ``buf`` (slot k at ``k * total + i``)."""
    return (buf[i], buf[total + i], buf[2 * total + i], buf[3 * total + i], buf[4 * total + i])


@device
def group_reduce(buf, kind, part, inv_t):
    """Merge ``part`` over the lanes of this thread's row group; every lane gets the result.

    A block is ``(lanes, groups)`` threads: ``threadIdx.x`` is the lane within a row
    group, ``threadIdx.y`` the group, and ``lanes`` is a power of two. ``buf`` is the
    block's shared memory, ``SLOTS * lanes * groups`` elements. A tree of log2(lanes)
    steps in shared memory; it synchronizes the whole block, so every thread of the
    block must call it (uniform control flow), active or not.
    """
    lanes = cuda.blockDim.x
    total = lanes * cuda.blockDim.y
    lane = cuda.threadIdx.x
    first = cuda.threadIdx.y * lanes
    me = first + lane
    cuda.syncthreads()  # the previous reduction's result has been read by every lane
    for k in range(SLOTS):
        buf[k * total + me] = part[k]
    step = lanes // 2
    while step > 0:
        cuda.syncthreads()
        if lane < step:
            other = me + step
            mine = slots_at(buf, total, me)
            theirs = slots_at(buf, total, other)
            merged = merge_partials(kind, mine, theirs, inv_t)
            for k in range(SLOTS):
                buf[k * total + me] = merged[k]
        step //= 2
    cuda.syncthreads()
    return slots_at(buf, total, first)


@device
def merge_chunks(part, row, kind, inv_t):
    """Merge the per-chunk partials ``part[row, :, :]`` (serially: chunks are few)."""
    acc = (part[row, 0, 0], part[row, 0, 1], part[row, 0, 2], part[row, 0, 3], part[row, 0, 4])
    for c in range(1, part.shape[1]):
        nxt = (part[row, c, 0], part[row, c, 1], part[row, c, 2], part[row, c, 3], part[row, c, 4])
        acc = merge_partials(kind, acc, nxt, inv_t)
    return acc
