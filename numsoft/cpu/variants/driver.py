"""The variants' drivers: one rows driver and one column driver, specialized per variant.

``variant_row`` selects the variant by the path constant ``VARIANT`` (a code of
``numsoft.vocabulary``'s variant table; ``numsoft.cpu.paths``), the way
``numsoft.cpu.rows.softmax_row`` selects the pass structure by ``ALGORITHM``:
``paths.specialize`` binds it per call, so each compiled driver holds one variant
(and, for the variants that end in a softmax, one pass structure). Parameters travel
in a small float64 array. The drivers mirror ``numsoft.cpu.rows``: rows in parallel
with ``prange`` (``.serial`` for small inputs); a middle axis by tiles of columns
(``numsoft.cpu.tiles``), each row kernel then working in place.

Each row also receives the counter index of its first element and the distance between
its elements, ``(o·n + k)·inner + j`` for element k of row (o, j) of the
``(outer, n, inner)`` view, which is what the Gumbel noise is a function of.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ...vocabulary import (
    ADAPTIVE,
    ENTMAX,
    ENTMAX15,
    GUMBEL,
    LOG_STABLEMAX,
    MULTIMAX,
    ROWMAX_POT,
    SA_SOFTMAX,
    SIGMOID_ATTENTION,
    SOFTMAX,
    SOFTPICK,
    SOFTPLUS_L1,
    SPARSEMAX,
    SSMAX,
    STABLEMAX,
    TOPK,
)
from .._jit import kernel, parallel_kernel
from ..paths import VARIANT
from ..rows import softmax_row
from ..simd import borrowed_row
from ..tiles import load_tile, store_tile, tile_count, tile_origin
from .elementwise import sigmoid_attention_row, softplus_l1_row
from .sampling import gumbel_softmax_row
from .scaled import (
    adaptive_softmax_row,
    multimax_row,
    rowmax_pot_row,
    sa_softmax_row,
    ssmax_row,
)
from .sparse import (
    entmax15_backward_row,
    entmax15_row,
    entmax_bisect_row,
    sparsemax_backward_row,
    sparsemax_row,
)
from .stable import softpick_row, stablemax_backward_row, stablemax_row
from .topk import topk_softmax_row


@kernel(inline="always")  # a switch that pruning reduces to one call
def variant_row(x, y, params, inv_t, seed, base, stride):
    """Variant ``VARIANT`` of one non-empty row (``y`` may be ``x``)."""
    if VARIANT == SOFTMAX:
        softmax_row(x, y, inv_t)
    elif VARIANT == ADAPTIVE:
        adaptive_softmax_row(x, y, inv_t)
    elif VARIANT == SSMAX:
        ssmax_row(x, y, inv_t, params[0])
    elif VARIANT == SPARSEMAX:
        sparsemax_row(x, y, inv_t)
    elif VARIANT == ENTMAX15:
        entmax15_row(x, y, inv_t)
    elif VARIANT == ENTMAX:
        entmax_bisect_row(x, y, inv_t, params[0], int(params[1]))
    elif VARIANT == STABLEMAX:
        stablemax_row(x, y, inv_t, False)
    elif VARIANT == LOG_STABLEMAX:
        stablemax_row(x, y, inv_t, True)
    elif VARIANT == SOFTPLUS_L1:
        softplus_l1_row(x, y, inv_t)
    elif VARIANT == SOFTPICK:
        softpick_row(x, y, inv_t, params[0])
    elif VARIANT == SA_SOFTMAX:
        sa_softmax_row(x, y, inv_t, params[0] != 0.0)
    elif VARIANT == MULTIMAX:
        multimax_row(x, y, inv_t, params)
    elif VARIANT == SIGMOID_ATTENTION:
        sigmoid_attention_row(x, y, inv_t, params[0] != 0.0, params[1])
    elif VARIANT == GUMBEL:
        gumbel_softmax_row(x, y, inv_t, params[0], params[1] != 0.0, seed, base, stride)
    elif VARIANT == TOPK:
        topk_softmax_row(x, y, inv_t, int(params[0]))
    elif VARIANT == ROWMAX_POT:
        rowmax_pot_row(x, y, inv_t)


@parallel_kernel
def variant_rows(x2, y2, params, inv_t, seed):
    """Row driver: y2[i] = variant(x2[i]) for every row, rows in parallel."""
    n = x2.shape[1]
    for i in prange(x2.shape[0]):
        variant_row(borrowed_row(x2, i), borrowed_row(y2, i), params, inv_t, seed, i * n, 1)


@parallel_kernel
def variant_columns(x3, y3, params, inv_t, seed):
    """Column driver: apply the variant to x3[o, :, j] for every (o, j), by column tiles."""
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = np.empty((width, n), dtype=x3.dtype)
        load_tile(x3, o, j0, tile)
        for j in range(width):
            variant_row(tile[j], tile[j], params, inv_t, seed, o * n * inner + j0 + j, inner)
        store_tile(tile, y3, o, j0)


@kernel(inline="always")  # as variant_row
def variant_backward_row(a, dy, dx):
    """Backward pass of variant ``VARIANT`` for one row; ``a`` is y, or x for stablemax."""
    if VARIANT == SPARSEMAX:
        sparsemax_backward_row(a, dy, dx)
    elif VARIANT == ENTMAX15:
        entmax15_backward_row(a, dy, dx)
    elif VARIANT == STABLEMAX:
        stablemax_backward_row(a, dy, dx)


@parallel_kernel
def variant_backward_rows(a2, dy2, dx2):
    """Row driver of the backward passes, rows in parallel."""
    for i in prange(a2.shape[0]):
        variant_backward_row(a2[i], dy2[i], dx2[i])


@parallel_kernel
def variant_backward_columns(a3, dy3, dx3):
    """Column driver of the backward passes (normalized axis in the middle), by tiles."""
    outer, n, inner = a3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        a_tile = np.empty((width, n), dtype=a3.dtype)
        dy_tile = np.empty((width, n), dtype=a3.dtype)
        load_tile(a3, o, j0, a_tile)
        load_tile(dy3, o, j0, dy_tile)
        for j in range(width):
            variant_backward_row(a_tile[j], dy_tile[j], dy_tile[j])
        store_tile(dy_tile, dx3, o, j0)
