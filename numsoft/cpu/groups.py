"""Drivers over groups of any length (segments): each group is a row of its own length.

A group ``g`` is ``offsets[g]:offsets[g + 1]`` along the middle axis of a 3-D view
``(outer, n, inner)``. With ``inner == 1`` (the grouped axis last, or a 1-D input) a
group is a contiguous row and runs the row kernels (``rows.softmax_row``,
``rows.logsumexp_row``); otherwise it is an ``(length, inner)`` block whose columns
are independent rows, run by the column-block kernels (``columns``). The pass
structure is the path constant ``ALGORITHM``, so each group has §1's numerics exactly
as a row of the same values would.

Threads take spans of groups with about equal numbers of elements (``balanced_spans``),
not equal numbers of groups: a power-law graph has one group of a million edges and a
million groups of one.

Group ids not in group order are read as they come (``max_by_ids``, ``sum_exp_by_ids``,
``softmax_by_ids``: three passes over x with per-task partial (max, sum) arrays, merged
by the caller), and ``counting_order`` sorts them stably for the groups whose numerics
need the row kernels. ``id_range_and_order`` and ``ascending_offsets`` read the ids
once each to check them and to find the groups of ascending ids.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import kernel, parallel_kernel
from .backward import softmax_backward_row
from .columns import COLUMN_BLOCK, block_count, logsumexp_column_block, softmax_column_block
from .expfast import exp_fast
from .paths import LOG_OUTPUT
from .rows import logsumexp_row, softmax_row, span


def balanced_spans(offsets: np.ndarray, tasks: int) -> np.ndarray:
    """``tasks + 1`` group indices: span k is groups ``[spans[k], spans[k + 1])``,
    each with about ``n / tasks`` elements (a group is never split)."""
    total = offsets[-1]
    targets = (total * np.arange(1, tasks, dtype=np.int64)) // tasks
    inner = np.searchsorted(offsets, targets, side="left")
    return np.concatenate(([0], np.minimum(inner, offsets.size - 1), [offsets.size - 1])).astype(
        np.int64
    )


@parallel_kernel
def softmax_groups_rows(x2, y2, offsets, spans, inv_t):
    """softmax of each group of each row of the 2-D ``x2`` (groups along axis 1)."""
    tasks = spans.size - 1
    for task in prange(x2.shape[0] * tasks):
        o, k = task // tasks, task % tasks
        for g in range(spans[k], spans[k + 1]):
            a, b = offsets[g], offsets[g + 1]
            if b > a:
                softmax_row(x2[o, a:b], y2[o, a:b], inv_t)


@parallel_kernel
def softmax_groups_columns(x3, y3, offsets, spans, inv_t):
    """softmax of each group along axis 1 of ``x3``, every column independent."""
    tasks = spans.size - 1
    per_outer = block_count(x3.shape[2])
    for task in prange(x3.shape[0] * tasks * per_outer):
        o, rest = task // (tasks * per_outer), task % (tasks * per_outer)
        k, j0 = rest // per_outer, (rest % per_outer) * COLUMN_BLOCK
        for g in range(spans[k], spans[k + 1]):
            a, b = offsets[g], offsets[g + 1]
            if b > a:
                softmax_column_block(
                    x3[o, a:b, j0 : j0 + COLUMN_BLOCK], y3[o, a:b, j0 : j0 + COLUMN_BLOCK], inv_t
                )


@parallel_kernel
def logsumexp_groups_rows(x2, out2, offsets, spans, inv_t):
    """out2[o, g] = t·log Σ exp over group g of row o of ``x2`` (-inf for an empty group)."""
    tasks = spans.size - 1
    for task in prange(x2.shape[0] * tasks):
        o, k = task // tasks, task % tasks
        for g in range(spans[k], spans[k + 1]):
            a, b = offsets[g], offsets[g + 1]
            out2[o, g] = logsumexp_row(x2[o, a:b], inv_t) if b > a else -np.inf


@parallel_kernel
def logsumexp_groups_columns(x3, out3, offsets, spans, inv_t):
    """out3[o, g, j] = logsumexp over group g of column j of ``x3[o]``."""
    tasks = spans.size - 1
    per_outer = block_count(x3.shape[2])
    for task in prange(x3.shape[0] * tasks * per_outer):
        o, rest = task // (tasks * per_outer), task % (tasks * per_outer)
        k, j0 = rest // per_outer, (rest % per_outer) * COLUMN_BLOCK
        for g in range(spans[k], spans[k + 1]):
            a, b = offsets[g], offsets[g + 1]
            if b > a:
                logsumexp_column_block(
                    x3[o, a:b, j0 : j0 + COLUMN_BLOCK], out3[o, g, j0 : j0 + COLUMN_BLOCK], inv_t
                )
            else:
                out3[o, g, j0 : j0 + COLUMN_BLOCK] = -np.inf


@parallel_kernel
def backward_groups_rows(y2, dy2, dx2, offsets, spans):
    """dx = y·(dy − Σ_group y·dy) for each group of each row (softmax's backward pass)."""
    tasks = spans.size - 1
    for task in prange(y2.shape[0] * tasks):
        o, k = task // tasks, task % tasks
        for g in range(spans[k], spans[k + 1]):
            a, b = offsets[g], offsets[g + 1]
            softmax_backward_row(y2[o, a:b], dy2[o, a:b], dx2[o, a:b])


@parallel_kernel
def backward_groups_columns(y3, dy3, dx3, offsets, spans):
    """The same along axis 1 of 3-D arrays, every column independent."""
    tasks = spans.size - 1
    for task in prange(y3.shape[0] * tasks):
        o, k = task // tasks, task % tasks
        for g in range(spans[k], spans[k + 1]):
            a, b = offsets[g], offsets[g + 1]
            for j in range(y3.shape[2]):
                softmax_backward_row(y3[o, a:b, j], dy3[o, a:b, j], dx3[o, a:b, j])


# ---------------------------------------------------------------- group ids


@kernel
def id_range_and_order(ids):
    """(smallest id, largest id, whether the ids never decrease) in one read of ``ids``
    (non-empty)."""
    low = high = ids[0]
    ascending = True
    for i in range(1, ids.size):
        v = ids[i]
        ascending &= v >= ids[i - 1]
        low = min(low, v)
        high = max(high, v)
    return low, high, ascending


@kernel
def ascending_offsets(ids, count):
    """The ``count + 1`` offsets of ascending ids in ``[0, count)``: group g starts at
    the first entry whose id is g or more. One read of ``ids``, no counting array."""
    offsets = np.empty(count + 1, np.int64)
    offsets[0] = 0
    g = 0
    for i in range(ids.size):
        while g < ids[i]:
            g += 1
            offsets[g] = i
    while g < count:
        g += 1
        offsets[g] = ids.size
    return offsets


@kernel
def counting_order(ids, offsets):
    """The entries in group order (a stable counting sort): ``order[offsets[g]:offsets[g
    + 1]]`` are the positions of id g, ascending. One read of ``ids``, one write."""
    next_slot = offsets[:-1].copy()
    order = np.empty(ids.size, np.int64)
    for i in range(ids.size):
        g = ids[i]
        order[next_slot[g]] = i
        next_slot[g] += 1
    return order


# ---------------------------------------------------------------- unsorted ids, in place


@parallel_kernel
def max_by_ids(x3, ids, count, tasks):
    """(tasks, outer, count, inner) partial maxima of each group, each task reading a
    contiguous span of the entries in their own order (no reordering); -inf where a task
    saw none of a group. NaN is not propagated: a row holding NaN is found by its sum."""
    outer, n, inner = x3.shape
    part = np.full((tasks, outer, count, inner), -np.inf, x3.dtype)
    for task in prange(tasks):
        lo, hi = span(task, tasks, n)
        for o in range(outer):
            for i in range(lo, hi):
                g = ids[i]
                for j in range(inner):
                    part[task, o, g, j] = max(part[task, o, g, j], x3[o, i, j])
    return part


@parallel_kernel
def sum_exp_by_ids(x3, ids, m, inv_t, tasks):
    """(tasks, outer, count, inner) partial Σ exp((x − m[group])·inv_t), in float64."""
    outer, n, inner = x3.shape
    part = np.zeros((tasks, outer, m.shape[1], inner))
    for task in prange(tasks):
        lo, hi = span(task, tasks, n)
        for o in range(outer):
            for i in range(lo, hi):
                g = ids[i]
                for j in range(inner):
                    part[task, o, g, j] += exp_fast((x3[o, i, j] - m[o, g, j]) * inv_t)
    return part


@parallel_kernel
def softmax_by_ids(x3, y3, ids, m, scale, inv_t, tasks):
    """y = exp((x − m)·inv_t)·scale of each entry's group (softmax, scale = 1/Σ), or
    with ``LOG_OUTPUT`` (x − m)·inv_t − scale (scale = log Σ)."""
    outer, n, inner = x3.shape
    for task in prange(tasks):
        lo, hi = span(task, tasks, n)
        for o in range(outer):
            for i in range(lo, hi):
                g = ids[i]
                for j in range(inner):
                    z = (x3[o, i, j] - m[o, g, j]) * inv_t
                    y3[o, i, j] = z - scale[o, g, j] if LOG_OUTPUT else exp_fast(z) * scale[o, g, j]
