"""Two-pass (extended-exponent) statistics on the device (arXiv 2001.04438, §4).

Each term is split as exp(z) = p·2**n (``expdev.exp_reduce``) and a thread's sum is kept
as a (mantissa M, exponent E) pair: no max pass, nothing overflows. Partials merge
with ``reduce.MERGE_EXTEXP``; the write pass recomputes p·2**(n - E)/M. Traffic: 2 reads
of x and 1 write of y per element.

Entries with |z| beyond the bound (``numsoft.frontdoor.arguments.extexp_bound``) are counted as
out of range; a row with any such entry is recomputed with the online statistics.

Every sweep goes a register tile at a time (``tile.load_tile``).
"""

from __future__ import annotations

import math

from numba import cuda

from ._jit import device
from .expdev import exp_reduce, ln2_parts, scale_pow2
from .tile import TILE, load_tile, store_tile, tile_len


@device
def lane_extexp(x3, lane, inv_t, bound):
    """Extended-exponent partial ``(E, M, n_nan, n_posinf, n_out_of_range)``. One read."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    e = T(-math.inf)
    mant = T(0.0)
    n_nan = T(0.0)
    n_inf = T(0.0)
    n_out = T(0.0)
    tile = cuda.local.array(TILE, x3.dtype)
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, T(-math.inf))
        for u in range(tile_len(x3)):
            v = tile[u]
            if v > -math.inf and v < math.inf:
                z = v * inv_t
                if z > bound or z < -bound:
                    n_out += T(1.0)
                else:
                    p, n = exp_reduce(z, x3)
                    if e == -math.inf:
                        mant, e = p, n
                    elif n > e:
                        mant = scale_pow2(mant, e - n) + p
                        e = n
                    else:
                        mant += scale_pow2(p, n - e)
            elif v == math.inf:
                n_inf += T(1.0)
            elif v != v:
                n_nan += T(1.0)
    return e, mant, n_nan, n_inf, n_out


@device
def write_extexp(x3, y3, lane, e, mant, inv_t, log_output):
    """y = exp(z)/(M·2**E), or z - log(M·2**E) for log output. One read, one write.

    The log output subtracts E·ln 2 with fused multiply-adds (E·hi is exact inside the
    fma), so entries near the row maximum keep their precision.
    """
    o, j, start, stop, step = lane
    T = x3.dtype.type
    tile = cuda.local.array(TILE, x3.dtype)
    if log_output:
        hi, lo = ln2_parts(x3)
        log_mant = T(math.log(mant))
        for i in range(start, stop, step * tile_len(x3)):
            load_tile(x3, o, j, i, step, stop, tile, T(-math.inf))
            for u in range(tile_len(x3)):
                tile[u] = cuda.fma(-e, lo, cuda.fma(-e, hi, tile[u] * inv_t)) - log_mant
            store_tile(y3, o, j, i, step, stop, tile)
        return
    inv_mant = T(1.0) / mant
    for i in range(start, stop, step * tile_len(x3)):
        load_tile(x3, o, j, i, step, stop, tile, T(-math.inf))
        for u in range(tile_len(x3)):
            v = tile[u]
            if v > -math.inf:
                p, n = exp_reduce(v * inv_t, x3)
                tile[u] = T(scale_pow2(p, n - e)) * inv_mant
            else:
                tile[u] = T(0.0)
        store_tile(y3, o, j, i, step, stop, tile)


@device
def logsumexp_extexp(e, mant, like):
    """log(M·2**E) in the dtype of ``like``, with E·ln 2 added by fused multiply-adds."""
    hi, lo = ln2_parts(like)
    return cuda.fma(e, hi, cuda.fma(e, lo, like.dtype.type(math.log(mant))))
