"""Three-pass-reload statistics on the device (Dukhan & Ablavatski, arXiv 2001.04438, §3).

A max pass, a sum pass Σ exp((x - m)·inv_t) with the row's merged max m, and the write
pass that recomputes exp: 3 reads of x and 1 write of y per element, each pass a
register tile at a time (``tile.load_tile``). The partials of both passes merge with
``reduce.MERGE_MAXSUM``. (The CPU's three-pass-store has no advantage on a GPU, where
exp is cheap and a write is not: it runs as reload here.)
"""

from __future__ import annotations

import math

from numba import cuda

from ._jit import device
from .tile import TILE, load_tile, tile_len


@device
def lane_max(x3, lane):
    """Max partial ``(max of finite entries, 0, n_nan, n_posinf, 0)``. One read."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    m = T(-math.inf)
    n_nan = T(0.0)
    n_inf = T(0.0)
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, T(-math.inf))
        for u in range(tile_len(x3)):
            v = tile[u]
            if v > m:
                if v == math.inf:
                    n_inf += T(1.0)
                else:
                    m = v
            elif v != v:
                n_nan += T(1.0)
    return m, T(0.0), n_nan, n_inf, T(0.0)


@device
def lane_sum_exp(x3, lane, m, inv_t):
    """Σ exp((x - m)·inv_t) over the finite entries (m: the row's max). One read."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    s = T(0.0)
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, T(-math.inf))
        for u in range(tile_len(x3)):
            v = tile[u]
            if v > -math.inf and v < math.inf:
                s += math.exp((v - m) * inv_t)
    return s
