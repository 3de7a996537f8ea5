"""Kernels and drivers: every row of an ``(outer, n, inner)`` device view, normalized.

A row is ``x3[o, :, j]``; row number ``r = o·inner + j``. One kernel family serves every
regime of ``launch.plan`` (warp per row, block per row, thread per column): a block of
``(lanes, groups)`` threads handles ``groups`` rows, ``lanes`` threads per row, each
thread a strided slice of its row (coalesced for contiguous rows). ``algo`` (a code of
``auto``) is a kernel argument, so one compiled kernel serves all pass structures.

Whole rows (one chunk): ``softmax_kernel`` / ``logsumexp_kernel`` compute the row
statistics (``row_stats``) and write, in one launch. Split rows: ``partials_kernel``
writes one partial per (row, chunk) and ``softmax_from_partials_kernel`` /
``logsumexp_from_partials_kernel`` merge a row's partials and write; for three-pass the
partials kernel runs twice (max, then sum). Global traffic per element: online and
two-pass 2 reads + 1 write, three-pass 3 reads + 1 write (softmax); one read fewer and
no write for logsumexp.
"""

from __future__ import annotations

import math

from numba import cuda, types

from ..vocabulary import ONLINE, THREE_PASS_RELOAD, TWO_PASS
from . import launch
from ._jit import array2, array3, device, kernel
from .online import lane_online
from .passes import row_logsumexp, write_row
from .reduce import (
    MERGE_EXTEXP,
    MERGE_MAXSUM,
    MERGE_ONLINE,
    SLOTS,
    group_reduce,
    merge_chunks,
)
from .three_pass import lane_max, lane_sum_exp
from .two_pass import lane_extexp


@device
def this_row(x3):
    """(o, j, active) of the row of this thread's group (inactive groups get row 0)."""
    r = cuda.blockIdx.x * cuda.blockDim.y + cuda.threadIdx.y
    inner = x3.shape[2]
    active = r < x3.shape[0] * inner
    if not active:
        r = 0
    o = r // inner
    return o, r - o * inner, active


@device
def whole_row_lane(x3, row):
    """This thread's elements of its group's whole row ``row = (o, j, active)``:
    ``(o, j, start, stop, step)``, i.e. ``x3[o, start:stop:step, j]`` (none when the
    group has no row)."""
    o, j, active = row
    return o, j, cuda.threadIdx.x, x3.shape[1] if active else 0, cuda.blockDim.x


@device
def chunk_lane(x3, row, chunk):
    """This thread's elements of chunk ``blockIdx.y`` (``chunk`` elements each) of its
    group's row ``row = (o, j, active)``, as ``whole_row_lane``."""
    o, j, active = row
    c = cuda.blockIdx.y
    stop = min(x3.shape[1], (c + 1) * chunk) if active else 0
    return o, j, c * chunk + cuda.threadIdx.x, stop, cuda.blockDim.x


@device
def merge_kind(algo):
    """The partial-merge rule of pass structure ``algo``."""
    if algo == TWO_PASS:
        return MERGE_EXTEXP
    if algo == THREE_PASS_RELOAD:
        return MERGE_MAXSUM
    return MERGE_ONLINE


@device
def lane_partial(x3, lane, algo, inv_t, bound):
    """This thread's partial for ``algo`` (three-pass: the max pass)."""
    if algo == TWO_PASS:
        return lane_extexp(x3, lane, inv_t, bound)
    if algo == THREE_PASS_RELOAD:
        return lane_max(x3, lane)
    return lane_online(x3, lane, inv_t)


@device
def group_sum_exp(buf, x3, lane, m, inv_t):
    """Σ exp((x - m)·inv_t) over the row group's elements (the three-pass sum pass)."""
    zero = x3.dtype.type(0.0)
    s = lane_sum_exp(x3, lane, m, inv_t)
    return group_reduce(buf, MERGE_MAXSUM, (m, s, zero, zero, zero), inv_t)[1]


@device
def row_stats(buf, x3, lane, algo, inv_t, bound):
    """(structure, statistics) of a whole row, merged over its row group.

    Every thread of the block must call it. Two-pass falls back to online for the whole
    block when any of its rows has an entry outside the extended-exponent bound.
    """
    if algo == TWO_PASS:
        stats = group_reduce(buf, MERGE_EXTEXP, lane_extexp(x3, lane, inv_t, bound), inv_t)
        if cuda.syncthreads_or(int(stats[4] > 0)) == 0:
            return algo, stats
        algo = ONLINE
    if algo == THREE_PASS_RELOAD:
        mx = group_reduce(buf, MERGE_MAXSUM, lane_max(x3, lane), inv_t)
        s = group_sum_exp(buf, x3, lane, mx[0], inv_t)
        return algo, (mx[0], s, mx[2], mx[3], mx[4])
    stats = group_reduce(buf, MERGE_ONLINE, lane_online(x3, lane, inv_t), inv_t)
    return ONLINE, stats


@kernel(lambda ft: (array3(ft), array3(ft), types.int64, ft, types.boolean, ft))
def softmax_kernel(x3, y3, algo, inv_t, log_output, bound):
    """y3 = softmax (or log_softmax) of every whole row of x3; ``y3`` may be ``x3``."""
    buf = cuda.shared.array(0, x3.dtype)
    lane = whole_row_lane(x3, this_row(x3))
    kind, stats = row_stats(buf, x3, lane, algo, inv_t, bound)
    write_row(x3, y3, lane, kind, stats, inv_t, log_output)


@kernel(lambda ft: (array3(ft), array2(ft), types.int64, ft, ft, ft))
def logsumexp_kernel(x3, out2, algo, inv_t, t, bound):
    """out2[o, j] = t·log Σ exp(x3[o, :, j]·inv_t) for every whole row."""
    buf = cuda.shared.array(0, x3.dtype)
    row = this_row(x3)
    kind, stats = row_stats(buf, x3, whole_row_lane(x3, row), algo, inv_t, bound)
    o, j, active = row
    if active and cuda.threadIdx.x == 0:
        out2[o, j] = row_logsumexp(kind, stats, inv_t, x3) * t


@kernel(lambda ft: (array3(ft), array3(ft), types.int64, types.int64, types.int64, ft, ft))
def partials_kernel(x3, part, chunk, algo, stage, inv_t, bound):
    """part[r, c] = partial of chunk ``c = blockIdx.y`` of row r (``chunk`` elements each).

    Stage 0: the structure's one-read partial (three-pass: the max). Stage 1 (three-pass
    only, after stage 0): the chunk's Σ exp((x - m)·inv_t), m the row's merged max, into
    slot 1.
    """
    buf = cuda.shared.array(0, x3.dtype)
    row = this_row(x3)
    o, j, active = row
    r = o * x3.shape[2] + j
    c = cuda.blockIdx.y
    lane = chunk_lane(x3, row, chunk)
    if stage == 1:
        m = part[r, 0, 0]
        for k in range(1, part.shape[1]):
            m = max(m, part[r, k, 0])
        s = group_sum_exp(buf, x3, lane, m, inv_t)
        if active and cuda.threadIdx.x == 0:
            part[r, c, 1] = s
        return
    p = lane_partial(x3, lane, algo, inv_t, bound)
    stats = group_reduce(buf, merge_kind(algo), p, inv_t)
    if active and cuda.threadIdx.x == 0:
        for k in range(SLOTS):
            part[r, c, k] = stats[k]


@device
def merged_row_stats(buf, x3, part, row, algo, inv_t, bound):
    """(structure, statistics) of a split row ``row = (o, j, active)`` from its chunk
    partials.

    A two-pass row with an out-of-range entry is recomputed whole with the online
    statistics by this block (x3 must not have been overwritten yet).
    """
    o, j, active = row
    stats = merge_chunks(part, o * x3.shape[2] + j, merge_kind(algo), inv_t)
    if algo == TWO_PASS and cuda.syncthreads_or(int(active and stats[4] > 0)) != 0:
        return row_stats(buf, x3, whole_row_lane(x3, row), ONLINE, inv_t, bound)
    return algo, stats


@kernel(
    lambda ft: (array3(ft), array3(ft), array3(ft), types.int64, types.int64, ft, types.boolean, ft)
)
def softmax_from_partials_kernel(x3, y3, part, chunk, algo, inv_t, log_output, bound):
    """Write chunk ``blockIdx.y`` of every split row from the row's merged partials."""
    buf = cuda.shared.array(0, x3.dtype)
    row = this_row(x3)
    kind, stats = merged_row_stats(buf, x3, part, row, algo, inv_t, bound)
    write_row(x3, y3, chunk_lane(x3, row, chunk), kind, stats, inv_t, log_output)


@kernel(lambda ft: (array3(ft), array3(ft), array2(ft), types.int64, ft, ft, ft))
def logsumexp_from_partials_kernel(x3, part, out2, algo, inv_t, t, bound):
    """out2[o, j] = t·logsumexp of every split row from its merged partials."""
    buf = cuda.shared.array(0, x3.dtype)
    row = this_row(x3)
    kind, stats = merged_row_stats(buf, x3, part, row, algo, inv_t, bound)
    o, j, active = row
    if active and cuda.threadIdx.x == 0:
        out2[o, j] = row_logsumexp(kind, stats, inv_t, x3) * t


# ---------------------------------------------------------------- host drivers


def _geometry(x3):
    outer, n, inner = x3.shape
    rows = outer * inner
    p = launch.plan(rows, n, inner)
    config = (p.grid(rows), (p.lanes, p.groups), 0, p.shared_bytes(SLOTS, x3.dtype.itemsize))
    return p, rows, config


def _partials(x3, p, rows, config, algo, inv_t, bound):
    part = cuda.device_array((rows, p.chunks, SLOTS), dtype=x3.dtype)
    partials_kernel[config](x3, part, p.chunk, algo, 0, inv_t, bound)
    if algo == THREE_PASS_RELOAD:
        partials_kernel[config](x3, part, p.chunk, algo, 1, inv_t, bound)
    return part


def softmax_rows(x3, y3, algo, inv_t, log_output, bound, in_place=False):
    """Driver: y3 = softmax (or log_softmax) of every row of the device view x3.

    ``x3``, ``y3``: 3-D device arrays of the compute dtype, non-empty; ``y3`` may be
    ``x3`` (``in_place``). Scalars are of the compute dtype.
    """
    p, rows, config = _geometry(x3)
    if p.chunks == 1:
        softmax_kernel[config](x3, y3, algo, inv_t, log_output, bound)
        return
    if algo == TWO_PASS and in_place:
        algo = ONLINE  # its out-of-range fallback re-reads rows other blocks overwrite
    part = _partials(x3, p, rows, config, algo, inv_t, bound)
    softmax_from_partials_kernel[config](x3, y3, part, p.chunk, algo, inv_t, log_output, bound)


def logsumexp_rows(x3, out2, algo, inv_t, t, bound):
    """Driver: out2[o, j] = t·log Σ exp(x3[o, :, j]·inv_t) for every row (n > 0)."""
    p, rows, config = _geometry(x3)
    if p.chunks == 1:
        logsumexp_kernel[config](x3, out2, algo, inv_t, t, bound)
        return
    part = _partials(x3, p, rows, config, algo, inv_t, bound)
    grid, block, stream, shared = config
    logsumexp_from_partials_kernel[(grid[0], 1), block, stream, shared](
        x3, part, out2, algo, inv_t, t, bound
    )


# ---------------------------------------------------------------- masks


@kernel(lambda ft: (types.Array(ft, 1, "C"), types.Array(types.boolean, 1, "C")))
def mask_to_neg_inf(x, keep):
    """x[i] = -inf where keep[i] is False (the where= mask, applied before the rows)."""
    i = cuda.grid(1)
    if i < x.size and not keep[i]:
        x[i] = -math.inf


@kernel(lambda ft: (array3(ft), types.Array(types.boolean, 2, "A"), ft))
def fill_rows(y3, empty2, value):
    """y3[o, :, j] = value for every row with empty2[o, j] (fully masked rows)."""
    i = cuda.grid(1)
    outer, n, inner = y3.shape
    if i < outer * n * inner:
        o = i // (n * inner)
        rest = i - o * n * inner
        k = rest // inner
        j = rest - k * inner
        if empty2[o, j]:
            y3[o, k, j] = value


def _elementwise_config(size):
    threads = launch.BLOCK_THREADS
    return (-(-size // threads), threads)


def apply_mask(flat, keep):
    """Driver: set the masked entries of a contiguous 1-D device array to -inf."""
    mask_to_neg_inf[_elementwise_config(flat.size)](flat, keep)


def fill_empty_rows(y3, empty2, value):
    """Driver: fill the rows flagged in ``empty2`` (device, ``(outer, inner)``) of y3."""
    fill_rows[_elementwise_config(y3.size)](y3, empty2, value)
