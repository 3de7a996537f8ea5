"""Write passes and row results shared by every pass structure (mirrors ``numsoft.cpu.passes``).

Each ``write_*`` function handles this thread's elements ``start:stop:step`` of one row
``x3[o, :, j]`` and writes the same elements of ``y3`` (which may be ``x3``: every
element is read before it is written), a register tile at a time
(``tile.load_tile``/``store_tile``). One read and one write per element.
"""

from __future__ import annotations

import math

from numba import cuda

from ..vocabulary import TWO_PASS
from ._jit import device
from .tile import TILE, load_tile, store_tile, tile_len
from .two_pass import logsumexp_extexp, write_extexp


@device
def write_exp_scaled(x3, y3, lane, m, inv_t, scale):
    """y = exp((x - m)·inv_t)·scale (m finite; -inf entries give 0)."""
    o, j, start, stop, step = lane
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, x3.dtype.type(-math.inf))
        for u in range(tile_len(x3)):
            tile[u] = math.exp((tile[u] - m) * inv_t) * scale
        store_tile(y3, o, j, i, step, stop, tile)


@device
def write_shifted(x3, y3, lane, m, inv_t, shift):
    """y = (x - m)·inv_t - shift: the log-domain output."""
    o, j, start, stop, step = lane
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, x3.dtype.type(-math.inf))
        for u in range(tile_len(x3)):
            tile[u] = (tile[u] - m) * inv_t - shift
        store_tile(y3, o, j, i, step, stop, tile)


@device
def is_special(a, n_nan, n_inf):
    """True for a row with NaN, +inf, or no finite entry (SPEC §1 special rows)."""
    return n_nan > 0 or n_inf > 0 or a == -math.inf


@device
def write_special(x3, y3, lane, n_nan, n_inf, log_output):
    """softmax/log_softmax of a special row: NaN anywhere → NaN; k entries at +inf share
    the mass (1/k, log output -log k; 0 / -inf elsewhere); only -inf → NaN (as SciPy)."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    if n_nan > 0 or n_inf == 0:
        for i in range(start, stop, step):
            y3[o, i, j] = T(math.nan)
        return
    if log_output:
        hit = -T(math.log(n_inf))
        miss = T(-math.inf)
    else:
        hit = T(1.0) / n_inf
        miss = T(0.0)
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, miss)
        for u in range(tile_len(x3)):
            tile[u] = hit if tile[u] == math.inf else miss
        store_tile(y3, o, j, i, step, stop, tile)


@device
def write_row(x3, y3, lane, kind, stats, inv_t, log_output):
    """Write softmax (or log_softmax) of this thread's elements from the row's statistics.

    ``kind`` is the structure the statistics come from: two-pass (E, M) or a
    max-anchored (m, d) pair (online and three-pass).
    """
    a, b, n_nan, n_inf = stats[0], stats[1], stats[2], stats[3]
    if is_special(a, n_nan, n_inf):
        write_special(x3, y3, lane, n_nan, n_inf, log_output)
    elif kind == TWO_PASS:
        write_extexp(x3, y3, lane, a, b, inv_t, log_output)
    elif log_output:
        write_shifted(x3, y3, lane, a, inv_t, x3.dtype.type(math.log(b)))
    else:
        write_exp_scaled(x3, y3, lane, a, inv_t, x3.dtype.type(1.0) / b)


@device
def row_logsumexp(kind, stats, inv_t, like):
    """log Σ exp(x·inv_t) of a row from its statistics (NaN, +inf, -inf rules of SPEC §1)."""
    a, b, n_nan, n_inf = stats[0], stats[1], stats[2], stats[3]
    T = like.dtype.type
    if n_nan > 0:
        return T(math.nan)
    if n_inf > 0:
        return T(math.inf)
    if a == -math.inf:
        return T(-math.inf)
    if kind == TWO_PASS:
        return logsumexp_extexp(a, b, like)
    return a * inv_t + T(math.log(b))
