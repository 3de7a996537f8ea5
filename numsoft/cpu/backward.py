"""Backward (vector–Jacobian product) row kernels for softmax and log_softmax.

For y = softmax(x): dx = y·(dy − Σ y·dy). For y = log_softmax(x):
dx = dy − exp(y)·Σ dy. Each row takes one reduction pass and one output pass:
2 reads of each input, 1 write of dx per element. ``dx`` may alias ``dy``.
The drivers are templates over the path constant ``LOG_OUTPUT`` (the backward pass of
log_softmax), bound by ``paths.specialize``.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import kernel, parallel_kernel
from .expfast import exp_fast
from .paths import LOG_OUTPUT
from .tiles import load_tile, store_tile, tile_count, tile_origin


@kernel
def softmax_backward_row(y, dy, dx):
    """dx = y·(dy − Σ y·dy) for one row."""
    acc = 0.0  # float64 accumulator, as in passes.py
    for i in range(y.size):
        acc += y[i] * dy[i]
    dot = y.dtype.type(acc)
    for i in range(y.size):
        dx[i] = y[i] * (dy[i] - dot)


@kernel
def log_softmax_backward_row(y_log, dy, dx):
    """dx = dy − exp(y_log)·Σ dy for one row."""
    acc = 0.0
    for i in range(dy.size):
        acc += dy[i]
    total = dy.dtype.type(acc)
    for i in range(dy.size):
        dx[i] = dy[i] - exp_fast(y_log[i]) * total


@kernel
def backward_row(y, dy, dx):
    """One row of the backward kernel of softmax, or of log_softmax (``LOG_OUTPUT``)."""
    if LOG_OUTPUT:
        log_softmax_backward_row(y, dy, dx)
    else:
        softmax_backward_row(y, dy, dx)


@parallel_kernel
def backward_rows(y2, dy2, dx2):
    """Row driver, rows in parallel."""
    for i in prange(y2.shape[0]):
        backward_row(y2[i], dy2[i], dx2[i])


@parallel_kernel
def backward_columns(y3, dy3, dx3):
    """Column driver (normalized axis in the middle), by tiles of columns."""
    outer, n, inner = y3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        y_tile = np.empty((width, n), dtype=y3.dtype)
        dy_tile = np.empty((width, n), dtype=y3.dtype)
        load_tile(y3, o, j0, y_tile)
        load_tile(dy3, o, j0, dy_tile)
        for j in range(width):
            backward_row(y_tile[j], dy_tile[j], dy_tile[j])
        store_tile(dy_tile, dx3, o, j0)
