"""Online-normalizer statistics on the device (Milakov & Gimelshein, arXiv 1805.02867).

Each thread reads its elements of a row once, a register tile at a time
(``tile.load_tile``), keeping the running maximum ``m`` of the finite entries and
``d = Σ exp((x - m)·inv_t)``, rescaled once per tile when the tile raises ``m`` (so
the tile's exps are independent of each other); the threads' ``(m, d)`` partials merge
with ``reduce.MERGE_ONLINE``. With the write pass (``passes.write_row``) the traffic is
2 reads of x and 1 write of y per element, and the second read of a row usually hits L2.
"""

from __future__ import annotations

import math

from numba import cuda

from ._jit import device
from .tile import TILE, load_tile, tile_len


@device
def lane_online(x3, lane, inv_t):
    """Online partial ``(m, d, n_nan, n_posinf, 0)`` of ``x3[o, start:stop:step, j]``."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    m = T(-math.inf)
    d = T(0.0)
    n_nan = T(0.0)
    n_inf = T(0.0)
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, T(-math.inf))
        tile_max = m
        for u in range(tile_len(x3)):
            v = tile[u]
            if v > tile_max and v < math.inf:
                tile_max = v
        if tile_max > m:  # m = -inf: d is 0 and stays 0
            d *= math.exp((m - tile_max) * inv_t)
            m = tile_max
        for u in range(tile_len(x3)):
            v = tile[u]
            if v > -math.inf and v < math.inf:
                d += math.exp((v - m) * inv_t)
            elif v == math.inf:
                n_inf += T(1.0)
            elif v != v:
                n_nan += T(1.0)
    return m, d, n_nan, n_inf, T(0.0)
