"""Row pieces: online partials of a row split across chunks, and the write pass that uses them.

When a normalized row is split across Dask chunks (``numsoft.dask``), each chunk holds
a *piece* of the row. The first pass summarizes every piece as an online partial
``(m, d)`` (arXiv 1805.02867): ``m`` is the piece's maximum and ``d = Σ exp((x - m)·inv_t)``.
The partials of a row merge associatively (see ``numsoft.dask``) into the row's own
``(M, D)``, and the second pass writes ``exp((x - M)·inv_t) / D`` into every piece.

Special values travel through the partials in this encoding, so that SPEC §1 holds for
the whole row however it is split:

============================  ===========  ===================
piece holds                   ``m``        ``d``
============================  ===========  ===================
a NaN                         NaN          0
k > 0 entries equal to +inf   +inf         k
only -inf entries, or empty   -inf         0
otherwise                     max (finite) Σ exp((x - m)·inv_t)
============================  ===========  ===================

The drivers are serial: Dask already runs one task per chunk on every core. As in
``rows``, ``*_rows`` take a ``(rows, n)`` view (pass ``x3[:, :, 0]`` from Python, so that
Numba sees contiguous rows and vectorizes) and ``*_columns`` an ``(outer, n, inner)``
view with ``inner > 1`` (a middle axis), through column tiles.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .passes import (
    _count_nan_posinf,
    is_regular,
    row_max,
    row_sum_exp,
    write_exp_scaled,
    write_posinf_share,
    write_shifted,
)
from .tiles import COLUMN_TILE, load_tile, store_tile, tile_count, tile_origin


@kernel
def piece_partial(x, inv_t):
    """Online partial ``(m, d)`` of one piece of a row, in the encoding above.

    Two reads per element (max pass, Σ exp pass); the special-value scan runs only for
    pieces holding NaN, +inf or nothing but -inf.
    """
    if x.size == 0:
        return x.dtype.type(-math.inf), 0.0
    m = row_max(x)
    s = row_sum_exp(x, m, inv_t)
    if is_regular(m, s):
        return m, float(s)
    has_nan, n_inf = _count_nan_posinf(x)
    if has_nan:
        return x.dtype.type(math.nan), 0.0
    if n_inf > 0:
        return x.dtype.type(math.inf), float(n_inf)
    return x.dtype.type(-math.inf), 0.0


@kernel
def write_piece(x, y, m, d, inv_t, log_output):
    """Write one piece of softmax (or log_softmax) given its whole row's partial ``(m, d)``.

    One read, one write per element: y = exp((x - m)·inv_t) / d, or (x - m)·inv_t - log d.
    A row with NaN, or only -inf entries, is all NaN; a row with d entries equal to +inf
    shares the mass among them (SPEC §1).
    """
    if is_regular(m, d):
        if log_output:
            write_shifted(x, y, m, inv_t, x.dtype.type(math.log(d)))
        else:
            write_exp_scaled(x, y, m, inv_t, x.dtype.type(1.0 / d))
    elif m == math.inf:
        write_posinf_share(x, y, d, log_output)
    else:
        y[:] = math.nan


@kernel
def piece_partials_rows(x2, m1, d1, inv_t):
    """m1[i], d1[i] = ``piece_partial(x2[i])`` for every row piece of a 2-D view; serial."""
    for i in range(x2.shape[0]):
        m1[i], d1[i] = piece_partial(x2[i], inv_t)


@kernel
def piece_partials_columns(x3, m2, d2, inv_t):
    """m2[o, j], d2[o, j] = ``piece_partial(x3[o, :, j])``, by tiles of columns; serial."""
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    buf = np.empty((COLUMN_TILE, n), dtype=x3.dtype)
    for task in range(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = buf[:width]
        load_tile(x3, o, j0, tile)
        for j in range(width):
            m2[o, j0 + j], d2[o, j0 + j] = piece_partial(tile[j], inv_t)


@kernel
def write_pieces_rows(x2, y2, m1, d1, inv_t, log_output):
    """y2[i] = ``write_piece(x2[i], m1[i], d1[i])`` for every row piece of a 2-D view; serial."""
    for i in range(x2.shape[0]):
        write_piece(x2[i], y2[i], m1[i], d1[i], inv_t, log_output)


@kernel
def write_pieces_columns(x3, y3, m2, d2, inv_t, log_output):
    """y3[o, :, j] = ``write_piece(x3[o, :, j], m2[o, j], d2[o, j])``, by tiles; serial."""
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    buf = np.empty((COLUMN_TILE, n), dtype=x3.dtype)
    for task in range(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = buf[:width]
        load_tile(x3, o, j0, tile)
        for j in range(width):
            write_piece(tile[j], tile[j], m2[o, j0 + j], d2[o, j0 + j], inv_t, log_output)
        store_tile(tile, y3, o, j0)
