"""Column tiles: how the backward drivers handle a middle axis without transposing.

(The forward softmax/logsumexp drivers use the faster column-block kernels of
``columns``: gathering tiles with scalar loops ran at 20–40× the copy time there.)

For an ``(outer, n, inner)`` view with ``inner > 1`` (``axis=0`` on C-ordered data),
each task gathers ``COLUMN_TILE`` adjacent columns into a small contiguous ``(width, n)``
buffer, runs the ordinary row kernel on its rows (in cache), and scatters the result
back. Extra traffic is in cache only; main memory still sees one read and one write.
"""

from __future__ import annotations

from ._jit import kernel

#: Columns per tile: 16 float32 columns are one 64-byte line of each input row, and a
#: tile of n ≤ 8192 elements per column stays within L2.
COLUMN_TILE = 16


@kernel
def tile_count(inner):
    """Number of column tiles per outer index."""
    return (inner + COLUMN_TILE - 1) // COLUMN_TILE


@kernel
def tile_origin(task, tiles, inner):
    """(outer index, first column, width) of tile number ``task``."""
    o = task // tiles
    j0 = (task % tiles) * COLUMN_TILE
    return o, j0, min(COLUMN_TILE, inner - j0)


@kernel
def load_tile(x3, o, j0, tile):
    """tile[j, k] = x3[o, k, j0 + j]: gather columns into contiguous rows."""
    for k in range(x3.shape[1]):
        for j in range(tile.shape[0]):
            tile[j, k] = x3[o, k, j0 + j]


@kernel
def store_tile(tile, y3, o, j0):
    """y3[o, k, j0 + j] = tile[j, k]: scatter rows back into columns."""
    for k in range(y3.shape[1]):
        for j in range(tile.shape[0]):
            y3[o, k, j0 + j] = tile[j, k]
