"""Softmax along a middle axis out of cache: full-width chunks of rows, online partials.

The column-block kernels (``columns``) stream a block of ``COLUMN_BLOCK`` adjacent
columns down all its rows; every row of a block is one contiguous run of 2 KiB, and the
next run is ``inner`` elements on. Out of cache that pattern reads memory at half the
speed of a contiguous stream: on 4096×4096 float32 (Zen 4, one thread) the column max
pass over 512-column blocks took 6.8 ms, over full rows 2.5 ms (``x.sum()``: 2.6 ms),
and 1024- and 2048-column blocks 5.6 and 5.3 ms.

Here each task takes a chunk of whole rows of one ``(n, inner)`` slab, a contiguous
piece of memory, and summarizes every column of it as an online partial (m, d) by the
column-block pass ``columns.column_online`` (blocks of ``ROW_BLOCK`` rows: their column
max, a rescale of the running sums, their Σ exp; one read per element, the block in L1
or L2 for its second loop). The partials merge serially into each column's (M, D), and a
second parallel pass writes every chunk: 2 reads and 1 write per element, all of them
contiguous, the traffic of ``online``. It writes a chunk from its last rows back, in
pieces (``passes.last_piece``), so that its first reads find what the partials pass
read last still in the cache. ``logsumexp`` stops after the merge (1 read).

The chunk count depends on the slab's shape only (``chunk_count``), never on the thread
count, so that the result does not either. A slab with a NaN, +inf or only -inf in any
column is left to the column-block kernels, whose special-value path handles it, before
anything is written (so in-place calls are safe).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._jit import kernel, parallel_kernel
from .columns import (
    column_online,
    exp_scaled_by_column,
    shifted_by_column,
    write_exp_scaled_columns,
    write_shifted_columns,
)
from .online import _rescale
from .passes import LAST_READ_FIRST_BYTES, is_regular, last_piece, write_elementwise
from .paths import LOG_OUTPUT, STREAM_OUTPUT, specialize
from .simd import STREAM_BLOCK, store_fence
from .threads import serial_or_parallel

#: Rows per chunk (at 4096 float32 columns, 8 MiB: a chunk streams in long runs), and
#: the most chunks a slab is cut into (their partials take 20 bytes per column each).
CHUNK_ROWS = 512
MAX_CHUNKS = 64


def chunk_count(n: int) -> int:
    """Chunks of rows for a slab of ``n`` rows: a function of the shape only."""
    return max(1, min(MAX_CHUNKS, -(-n // CHUNK_ROWS)))


@kernel(inline="always")  # inlined into both drivers: one compiled function each
def chunk_rows(c, chunks, n):
    """[lo, hi) of chunk ``c`` of ``chunks`` near-equal pieces of ``n`` rows."""
    return n * c // chunks, n * (c + 1) // chunks


@parallel_kernel
def column_chunk_partials(x2, inv_t, m, d, bm, part):
    """m[c, j], d[c, j]: the online partial of column j over chunk c of the (n, inner)
    slab ``x2``, chunks in parallel. One read per element."""
    chunks = m.shape[0]
    for c in prange(chunks):
        lo, hi = chunk_rows(c, chunks, x2.shape[0])
        column_online(x2[lo:hi], inv_t, m[c], d[c], bm[c], part[c])


@kernel(inline="always")
def _merged_column(m, d, j, inv_t):
    """(M, D) of column j from the chunks' partials: M the largest m, D = Σ_c d[c, j]·
    exp((m[c, j] - M)·inv_t) in float64 (a chunk of only -inf, d = 0, adds nothing)."""
    cm = m[0, j]
    for c in range(1, m.shape[0]):
        cm = max(cm, m[c, j])
    s = 0.0
    for c in range(m.shape[0]):
        if d[c, j] != 0.0:
            s += d[c, j] * _rescale(m[c, j], cm, inv_t)
    return cm, s


@kernel
def merge_column_partials(m, d, inv_t, cm, a):
    """cm[j] = M; a[j] = 1/D (softmax) or log D (log output) of every column
    (``_merged_column``). False when a column is not regular (NaN, +inf, only -inf):
    nothing is written then."""
    for j in range(m.shape[1]):
        cm[j], s = _merged_column(m, d, j, inv_t)
        if not is_regular(cm[j], s):
            return False
        a[j] = a.dtype.type(math.log(s)) if LOG_OUTPUT else a.dtype.type(1.0 / s)
    return True


@kernel
def logsumexp_of_partials(m, d, inv_t, out):
    """out[j] = M + t·log D of every column (``_merged_column``), in float64. False when a
    column is not regular: out is then incomplete."""
    for j in range(m.shape[1]):
        cm, s = _merged_column(m, d, j, inv_t)
        if not is_regular(cm, s):
            return False
        out[j] = cm + math.log(s) / inv_t
    return True


@parallel_kernel
def write_column_chunks(x2, y2, chunks, piece, cm, inv_t, a):
    """y2 = exp((x2 - cm)·inv_t)·a (softmax) or (x2 - cm)·inv_t - a (log output), chunks
    of rows in parallel. Each chunk goes in pieces of ``piece`` rows, the last piece
    first (``passes.last_piece``); under ``STREAM_OUTPUT`` instead forwards, row by row
    with streaming stores (``passes.write_elementwise``), where the output pass is bound
    by its arithmetic (as in ``split._write_chunks``). One read, one write per element;
    y2 may be x2."""
    for c in prange(chunks):
        lo, hi = chunk_rows(c, chunks, x2.shape[0])
        step = max(hi - lo, 1) if STREAM_OUTPUT else piece
        for p in range(last_piece(lo, hi, step), lo - 1, -step):
            q = min(p + step, hi)
            if STREAM_OUTPUT:
                for k in range(p, q):
                    if LOG_OUTPUT:
                        write_elementwise(shifted_by_column, x2[k], y2[k], cm, inv_t, a)
                    else:
                        write_elementwise(exp_scaled_by_column, x2[k], y2[k], cm, inv_t, a)
            elif LOG_OUTPUT:
                write_shifted_columns(x2[p:q], y2[p:q], cm, inv_t, a)
            else:
                write_exp_scaled_columns(x2[p:q], y2[p:q], cm, inv_t, a)
        if STREAM_OUTPUT:
            store_fence()  # the chunk's streaming stores (passes.streamed)


def piece_rows(x2) -> int:
    """Rows per piece of the write pass (``passes.LAST_READ_FIRST_BYTES``, at least 1)."""
    return max(1, LAST_READ_FIRST_BYTES // (x2.shape[1] * x2.itemsize))


def _partials(x2, inv_t):
    """The chunks' online partials (m, d) of every column of the slab ``x2``."""
    chunks = chunk_count(x2.shape[0])
    shape = (chunks, x2.shape[1])
    m, bm, part = (np.empty(shape, x2.dtype) for _ in range(3))
    d = np.empty(shape)
    serial_or_parallel(column_chunk_partials, x2.size)(x2, inv_t, m, d, bm, part)
    return m, d


def logsumexp_slab(x2, out, inv_t) -> bool:
    """out[j] = t·log Σ_k exp(x2[k, j]·inv_t) of the C-contiguous (n, inner) slab
    ``x2``; False for a slab the column-block kernels must take (as ``softmax_slab``)."""
    m, d = _partials(x2, inv_t)
    return logsumexp_of_partials(m, d, inv_t, out)


def softmax_slab(x2, y2, inv_t, log_output: bool, stream: bool = False) -> bool:
    """softmax (or log_softmax) along axis 0 of the C-contiguous (n, inner) slab ``x2``
    into ``y2``, with streaming stores if ``stream`` (``auto.streams_output``); False,
    with nothing written, for a slab the column-block kernels must take (a special
    value in some column)."""
    m, d = _partials(x2, inv_t)
    cm, a = np.empty(x2.shape[1], x2.dtype), np.empty(x2.shape[1], x2.dtype)
    if not specialize(merge_column_partials, LOG_OUTPUT=log_output)(m, d, inv_t, cm, a):
        return False
    # rows shorter than a streaming block would take the plain loop, one call per row
    stream = stream and x2.shape[1] >= STREAM_BLOCK
    write = specialize(write_column_chunks, LOG_OUTPUT=log_output, STREAM_OUTPUT=stream)
    serial_or_parallel(write, x2.size)(x2, y2, m.shape[0], piece_rows(x2), cm, inv_t, a)
    return True
