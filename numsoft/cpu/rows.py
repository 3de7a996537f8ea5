"""Drivers: apply a row kernel to every row of a 2-D view, or every column of a 3-D view.

The front door (``numsoft._frontend``) reduces every call to one of two shapes:

- ``(rows, n)``: the normalized axis is the last one; rows run in parallel (``prange``).
- ``(outer, n, inner)`` with ``inner > 1``: the normalized axis is in the middle, as
  for ``axis=0`` on C-ordered data. Rather than transposing the whole array, each
  task copies a tile of columns into a small contiguous buffer (``tiles``), runs the
  row kernel there in place, and copies the tile back.

``algo`` is an integer code (``auto.ALGORITHM_NAMES``) resolved once per call outside the
loops, so one compiled driver serves all pass structures.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import kernel, parallel_kernel
from .auto import ONLINE, THREE_PASS_STORE, TWO_PASS
from .online import logsumexp_row_online, softmax_row_online
from .three_pass import (
    logsumexp_row_three_pass,
    softmax_row_three_pass_reload,
    softmax_row_three_pass_store,
)
from .tiles import load_tile, store_tile, tile_count, tile_origin
from .two_pass import logsumexp_row_two_pass, softmax_row_two_pass


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


@parallel_kernel
def softmax_rows(x2, y2, algo, inv_t, log_output, bound):
    """Row driver: y2[i] = softmax(x2[i]) for every row, rows in parallel."""
    for i in prange(x2.shape[0]):
        softmax_row(x2[i], y2[i], algo, inv_t, log_output, bound)


@parallel_kernel
def softmax_columns(x3, y3, algo, inv_t, log_output, bound):
    """Column driver: normalize x3[o, :, j] for every (o, j), by tiles of columns."""
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = np.empty((width, n), dtype=x3.dtype)
        load_tile(x3, o, j0, tile)
        for j in range(width):
            softmax_row(tile[j], tile[j], algo, inv_t, log_output, bound)
        store_tile(tile, y3, o, j0)


@parallel_kernel
def logsumexp_rows(x2, out, algo, inv_t, bound):
    """Row driver: out[i] = log Σ exp(x2[i]·inv_t), rows in parallel."""
    for i in prange(x2.shape[0]):
        out[i] = logsumexp_row(x2[i], algo, inv_t, bound)


@parallel_kernel
def logsumexp_columns(x3, out2, algo, inv_t, bound):
    """Column driver: out2[o, j] = log Σ exp(x3[o, :, j]·inv_t), by tiles of columns."""
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = np.empty((width, n), dtype=x3.dtype)
        load_tile(x3, o, j0, tile)
        for j in range(width):
            out2[o, j0 + j] = logsumexp_row(tile[j], algo, inv_t, bound)
