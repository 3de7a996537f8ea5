"""Drivers: apply a row kernel to every row of a 2-D view, or every column of a 3-D view.

The front door (``numsoft._frontend``) reduces every call to one of two shapes:

- ``(rows, n)``: the normalized axis is the last one; rows run in parallel (``prange``
  over contiguous spans of rows), or, when there are fewer rows than threads and they
  are long, each row is split across the threads (``split``).
- ``(outer, n, inner)`` with ``inner > 1``: the normalized axis is in the middle, as
  for ``axis=0`` on C-ordered data. Nothing is transposed: each task normalizes a
  block of adjacent columns in place, vectorized across the columns (``columns``).

Small inputs run serially: every driver has one serial kernel over a span of its work
(``*_span``) that both the one-thread path and each task of the parallel path call, and
``plan_rows`` picks the path from the size and ``numba.get_num_threads()``.

``algo`` is an integer code (``auto.ALGORITHM_NAMES``) resolved once per call outside the
loops, so one compiled driver serves all pass structures.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import kernel, parallel_kernel
from .auto import ONLINE, THREE_PASS_STORE, TWO_PASS
from .columns import (
    COLUMN_BLOCK,
    block_count,
    block_view,
    logsumexp_column_block,
    softmax_column_block,
)
from .online import logsumexp_row_online, softmax_row_online
from .simd import borrowed_row
from .split import logsumexp_row_split, softmax_row_split
from .three_pass import (
    logsumexp_row_three_pass,
    softmax_row_three_pass_reload,
    softmax_row_three_pass_store,
)
from .two_pass import logsumexp_row_two_pass, softmax_row_two_pass


@intrinsic
def _thread_count(typingctx):
    """``numba.get_num_threads()`` inside jitted code, as a call to the runtime's symbol.

    Numba's own jitted ``get_num_threads`` goes through a ctypes pointer, which makes
    every function that calls it uncacheable. The symbol exists once the thread pool has
    started: ``_jit`` starts it before any kernel is compiled or loaded.
    """

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(cgutils.intp_t, [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "get_num_threads")
        return builder.call(fn, [])

    return types.intp(), codegen


#: How a driver runs (``plan_rows``): one thread, rows in parallel, or each row split.
SERIAL, PARALLEL, SPLIT = range(3)

#: At most this many elements in all run on one thread: below it, waking the thread
#: pool (~2 µs here) costs more than splitting the work saves. Measured with
#: ``asv_bench/crossovers.py``, 2 threads, rows of 256 float32: parallel/serial time is
#: 1.21 at 1024 elements, 0.83 at 2048, 0.62 at 4096, 0.34 from 2^17 on.
SERIAL_MAX_ELEMENTS = 1 << 11

#: Rows at least this long are split across threads when there are fewer rows than
#: threads (below it the per-pass parallel launches cost more than they save).
#: Measured (same script), one float32 row, split/serial time: two-pass 1.54 at 8192,
#: 0.80 at 16384, 0.64 at 32768; three-pass-store 2.73, 1.15, 0.83; ~0.5 from 2^17 on.
SPLIT_MIN_ROW = 1 << 15


@kernel
def softmax_row(x, y, algo, inv_t, log_output, bound):
    """softmax or log_softmax of one non-empty row with the chosen pass structure."""
    if algo == TWO_PASS:
        softmax_row_two_pass(x, y, inv_t, log_output, bound)
    elif algo == ONLINE:
        softmax_row_online(x, y, inv_t, log_output)
    elif algo == THREE_PASS_STORE:
        softmax_row_three_pass_store(x, y, inv_t, log_output)
    else:
        softmax_row_three_pass_reload(x, y, inv_t, log_output)


@kernel
def logsumexp_row(x, algo, inv_t, bound):
    """t·log Σ exp(x·inv_t) (t = 1/inv_t) of one non-empty row with the chosen structure."""
    if algo == TWO_PASS:
        return logsumexp_row_two_pass(x, inv_t, bound)
    if algo == ONLINE:
        return logsumexp_row_online(x, inv_t)
    return logsumexp_row_three_pass(x, inv_t)


@kernel
def plan_rows(rows, n):
    """(mode, tasks) for ``rows`` rows of ``n`` elements with the current thread count.

    ``SERIAL`` below ``SERIAL_MAX_ELEMENTS`` elements in all (waking the thread pool
    costs more than the work), ``SPLIT`` (each row across ``tasks`` threads) when there
    are fewer rows than threads and rows of at least ``SPLIT_MIN_ROW`` elements,
    otherwise ``PARALLEL`` over rows in ``tasks`` contiguous spans.
    """
    threads = _thread_count()
    if threads == 1 or rows * n <= SERIAL_MAX_ELEMENTS:
        return SERIAL, 1
    if rows < threads and n >= SPLIT_MIN_ROW:
        return SPLIT, threads
    return PARALLEL, min(threads, rows)


@kernel
def span(task, tasks, count):
    """[lo, hi) of task ``task`` of ``tasks`` near-equal contiguous spans of ``count``."""
    return count * task // tasks, count * (task + 1) // tasks


@kernel
def softmax_rows_span(x2, y2, task, tasks, algo, inv_t, log_output, bound):
    """Serial row loop over one span: the body of both the serial and the parallel path.

    ``task`` is an int64 at every call site (prange's index is unsigned), so the body
    compiles once per array type.
    """
    lo, hi = span(task, tasks, x2.shape[0])
    for i in range(lo, hi):
        softmax_row(borrowed_row(x2, i), borrowed_row(y2, i), algo, inv_t, log_output, bound)


@parallel_kernel
def _softmax_rows_parallel(x2, y2, tasks, algo, inv_t, log_output, bound):
    for task in prange(tasks):
        softmax_rows_span(x2, y2, np.int64(task), tasks, algo, inv_t, log_output, bound)


@kernel
def softmax_rows(x2, y2, algo, inv_t, log_output, bound):
    """Row driver: y2[i] = softmax(x2[i]) for every row (serial, parallel or split rows)."""
    mode, tasks = plan_rows(x2.shape[0], x2.shape[1])
    if mode == SERIAL:
        softmax_rows_span(x2, y2, 0, 1, algo, inv_t, log_output, bound)
    elif mode == SPLIT:
        for i in range(x2.shape[0]):
            softmax_row_split(x2[i], y2[i], algo, inv_t, log_output, bound, tasks)
    else:
        _softmax_rows_parallel(x2, y2, tasks, algo, inv_t, log_output, bound)


@kernel
def logsumexp_rows_span(x2, out, task, tasks, algo, inv_t, bound):
    """Serial loop over one span of rows: out[i] = log Σ exp(x2[i]·inv_t)."""
    lo, hi = span(task, tasks, x2.shape[0])
    for i in range(lo, hi):
        out[i] = logsumexp_row(borrowed_row(x2, i), algo, inv_t, bound)


@parallel_kernel
def _logsumexp_rows_parallel(x2, out, tasks, algo, inv_t, bound):
    for task in prange(tasks):
        logsumexp_rows_span(x2, out, np.int64(task), tasks, algo, inv_t, bound)


@kernel
def logsumexp_rows(x2, out, algo, inv_t, bound):
    """Row driver: out[i] = log Σ exp(x2[i]·inv_t) (serial, parallel or split rows)."""
    mode, tasks = plan_rows(x2.shape[0], x2.shape[1])
    if mode == SERIAL:
        logsumexp_rows_span(x2, out, 0, 1, algo, inv_t, bound)
    elif mode == SPLIT:
        for i in range(x2.shape[0]):
            out[i] = logsumexp_row_split(x2[i], algo, inv_t, bound, tasks)
    else:
        _logsumexp_rows_parallel(x2, out, tasks, algo, inv_t, bound)


@kernel
def softmax_blocks_span(x3, y3, task, tasks, algo, inv_t, log_output, bound):
    """Serial loop over one span of column blocks (see ``columns``)."""
    per_outer = block_count(x3.shape[2])
    lo, hi = span(task, tasks, x3.shape[0] * per_outer)
    for t in range(lo, hi):
        o, j0, xb = block_view(x3, t, per_outer)
        yb = y3[o, :, j0 : j0 + COLUMN_BLOCK]
        softmax_column_block(xb, yb, algo, inv_t, log_output, bound)


@parallel_kernel
def _softmax_blocks_parallel(x3, y3, tasks, algo, inv_t, log_output, bound):
    for task in prange(tasks):
        softmax_blocks_span(x3, y3, np.int64(task), tasks, algo, inv_t, log_output, bound)


@kernel
def softmax_columns(x3, y3, algo, inv_t, log_output, bound):
    """Column driver: normalize x3[o, :, j] for every (o, j), by blocks of columns."""
    outer, n, inner = x3.shape
    blocks = outer * block_count(inner)
    mode, tasks = plan_rows(blocks, n * min(inner, COLUMN_BLOCK))
    if mode == SERIAL:
        softmax_blocks_span(x3, y3, 0, 1, algo, inv_t, log_output, bound)
    else:
        _softmax_blocks_parallel(x3, y3, min(tasks, blocks), algo, inv_t, log_output, bound)


@kernel
def logsumexp_blocks_span(x3, out2, task, tasks, algo, inv_t, bound):
    """Serial loop over one span of column blocks: out2[o, j] = log Σ exp(x3[o, :, j]·inv_t)."""
    per_outer = block_count(x3.shape[2])
    lo, hi = span(task, tasks, x3.shape[0] * per_outer)
    for t in range(lo, hi):
        o, j0, xb = block_view(x3, t, per_outer)
        logsumexp_column_block(xb, out2[o, j0 : j0 + COLUMN_BLOCK], algo, inv_t, bound)


@parallel_kernel
def _logsumexp_blocks_parallel(x3, out2, tasks, algo, inv_t, bound):
    for task in prange(tasks):
        logsumexp_blocks_span(x3, out2, np.int64(task), tasks, algo, inv_t, bound)


@kernel
def logsumexp_columns(x3, out2, algo, inv_t, bound):
    """Column driver: out2[o, j] = log Σ exp(x3[o, :, j]·inv_t), by blocks of columns."""
    outer, n, inner = x3.shape
    blocks = outer * block_count(inner)
    mode, tasks = plan_rows(blocks, n * min(inner, COLUMN_BLOCK))
    if mode == SERIAL:
        logsumexp_blocks_span(x3, out2, 0, 1, algo, inv_t, bound)
    else:
        _logsumexp_blocks_parallel(x3, out2, min(tasks, blocks), algo, inv_t, bound)
