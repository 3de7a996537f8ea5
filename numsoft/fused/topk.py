"""Fused softmax + top-k: the k largest probabilities of each row in one read.

Milakov & Gimelshein (arXiv 1805.02867, §5) fuse the online normalizer with a running
top-k: while the row is read once, the running ``(max m, Σ exp(x - m))`` is updated and
the k largest logits seen so far are kept in a small sorted buffer. Since softmax is
monotone, the k largest probabilities sit at the k largest logits, so at the end only
the k buffered logits are turned into probabilities, ``exp(x_i - m) / d``.

Pass structure: one read of x per element (by L1-resident blocks, see
``_online_blocks``), k writes per row; the full softmax is never written.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import prange
from numpy.typing import ArrayLike

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.expfast import exp_nonpositive
from ..cpu.passes import _count_nan_posinf, is_finite, is_regular
from ..cpu.threads import serial_or_parallel
from ..cpu.tiles import load_tile, tile_count, tile_origin
from ..frontdoor.arguments import Request, as_input_array
from ..frontdoor.layout import Layout
from ..frontdoor.prepare import prepare
from ..route import follows_input_type
from ._online_blocks import BLOCK, block_partial, fold_partial

__all__ = ["softmax_topk"]


# ---------------------------------------------------------------- kernels


@kernel
def ranks_above(v, b):
    """True when ``v`` ranks strictly above ``b``: larger, or NaN over a number.

    NaN ranks above every number (as in ``torch.topk``); equal values never rank above
    each other, so an earlier index keeps its place (ties by lowest index).
    """
    return v > b or (v != v and b == b)


@kernel
def topk_scan(block, offset, vals, idx, count):
    """Feed ``block`` (indices ``offset + t``) into the descending buffer (vals, idx).

    ``vals[:count]`` holds the best values seen so far, sorted descending; returns the
    new count (at most ``k = vals.size``). One read per element; an element enters
    the buffer only if it beats the current k-th value, by insertion (O(k) moves), so
    the cost is O(n) plus O(k) per insertion: made for k ≪ n.
    """
    k = vals.size
    last = vals[k - 1] if count == k else vals.dtype.type(0.0)
    for t in range(block.size):
        v = block[t]
        if count == k and not ranks_above(v, last):
            continue
        pos = count if count < k else k - 1
        while pos > 0 and ranks_above(v, vals[pos - 1]):
            vals[pos] = vals[pos - 1]
            idx[pos] = idx[pos - 1]
            pos -= 1
        vals[pos] = v
        idx[pos] = offset + t
        if count < k:
            count += 1
        last = vals[k - 1]
    return count


@kernel
def special_topk_probabilities(x, vals):
    """Turn buffered logits into probabilities for a row with NaN, +inf or only -inf.

    SPEC §1: NaN anywhere → all NaN; k entries at +inf share the mass (1/k each, 0
    elsewhere); a row of only -inf → NaN (like SciPy). One extra read of the row.
    """
    has_nan, n_inf = _count_nan_posinf(x)
    if has_nan or n_inf == 0:
        for r in range(vals.size):
            vals[r] = math.nan
        return
    hit = vals.dtype.type(1.0 / n_inf)
    for r in range(vals.size):
        vals[r] = hit if vals[r] == math.inf else vals.dtype.type(0.0)


@kernel
def softmax_topk_row(x, vals, idx):
    """Top-k probabilities of one row into (vals, idx), sorted descending.

    One read of x per element: per L1 block, the block's (max, Σ exp) folded into the
    online normalizer, then ``topk_scan`` (running top-k) unless the block's max shows
    it cannot enter the buffer; then k exps. ``k = vals.size``, 1 ≤ k ≤ x.size.
    """
    n = x.size
    one = x.dtype.type(1.0)
    m = x.dtype.type(-math.inf)
    d = 0.0
    count = 0
    k = vals.size
    for b0 in range(0, n, BLOCK):
        block = x[b0 : min(b0 + BLOCK, n)]
        mb, db = block_partial(block, one)
        m, d = fold_partial(m, d, mb, db, one)
        # Once the buffer is full, a block whose maximum does not beat the k-th value
        # and that holds no NaN (finite Σ exp) cannot change it: skip its scan.
        if count < k or mb > vals[k - 1] or not is_finite(db):
            count = topk_scan(block, b0, vals, idx, count)
    if not is_regular(m, d):
        special_topk_probabilities(x, vals)
        return
    inv_d = vals.dtype.type(1.0 / d)
    for r in range(vals.size):
        vals[r] = exp_nonpositive(vals[r] - m) * inv_d


@parallel_kernel
def softmax_topk_rows(x2, vals2, idx2):
    """Row driver: top-k of every row of ``x2``, rows in parallel."""
    for i in prange(x2.shape[0]):
        softmax_topk_row(x2[i], vals2[i], idx2[i])


@parallel_kernel
def softmax_topk_columns(x3, vals3, idx3):
    """Column driver: top-k along the middle axis of ``x3``, by tiles of columns.

    Each task gathers a tile of columns into a contiguous buffer (``cpu.tiles``) and
    writes its k results per column straight into ``vals3[o, :, j]``.
    """
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = np.empty((width, n), dtype=x3.dtype)
        load_tile(x3, o, j0, tile)
        for j in range(width):
            softmax_topk_row(tile[j], vals3[o, :, j0 + j], idx3[o, :, j0 + j])


# ---------------------------------------------------------------- public function


def check_k(k, n: int) -> int:
    """Validate ``k`` (an int with 1 ≤ k ≤ n)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= {n} (the length of axis), got k={k}")
    return int(k)


@follows_input_type
def softmax_topk(x: ArrayLike, k: int, axis: int | None = -1) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest softmax probabilities along ``axis`` and their indices.

    Computes ``p = softmax(x)`` along ``axis`` and returns its ``k`` largest entries,
    fused into one read of ``x`` (online normalizer + running top-k): ``p`` itself is
    never formed. With ``m`` the running maximum and ``d = Σ_j exp(x_j - m)``, the
    selected values are ``exp(x_i - m) / d`` for the ``k`` largest ``x_i``.

    Parameters
    ----------
    x : array_like
        Logits. float16/float32 input is computed and returned in float32; integer,
        bool and float64 input in float64.
    k : int
        Number of entries to keep, ``1 <= k <= x.shape[axis]``.
    axis : int or None, optional
        The normalized axis (default ``-1``). ``None`` flattens ``x`` first (C order)
        and returns flat indices.

    Returns
    -------
    values : ndarray
        Shape of ``x`` with ``axis`` of length ``k``: the probabilities, sorted
        descending along ``axis``.
    indices : ndarray of int64
        Positions along ``axis`` of ``values``. Equal logits keep index order (the
        lowest index first).

    Raises
    ------
    ValueError
        If ``k`` is outside ``[1, x.shape[axis]]``.
    TypeError
        If ``k`` is not an integer, or ``x`` is complex or not numeric.

    Notes
    -----
    Special values follow SPEC §1: a row with NaN gives NaN values (NaN logits rank
    above all numbers when choosing indices, as in ``torch.topk``); ``m`` entries at
    ``+inf`` have probability ``1/m`` each and every other entry ``0``; a row of only
    ``-inf`` gives NaN. Cost: O(n) per row plus O(k) per buffer insertion, meant for
    ``k ≪ n``; the worst case (ascending input, large k) is O(n·k).

    See Also
    --------
    numsoft.softmax

    References
    ----------
    1. M. Milakov, N. Gimelshein, "Online normalizer calculation for softmax",
       arXiv:1805.02867 (2018), §5 (softmax + top-k fusion).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> values, indices = numsoft.softmax_topk(np.array([1.0, 3.0, 2.0, 3.0]), 3)
    >>> values
    array([0.3994863, 0.3994863, 0.1469628])
    >>> indices
    array([1, 3, 2])
    >>> numsoft.softmax_topk(np.array([[0.0, 1.0], [2.0, 0.0]]), 1, axis=0)[1]
    array([[1, 0]])
    """
    a = as_input_array(x)
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    elif isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an int or None, got {axis!r}")
    p = prepare(a, Request(axis, algorithm="online"))
    layout = p.layout
    outer, n, inner = layout.shape3
    k = check_k(k, n)
    (ax,) = layout.axes
    out_shape = a.shape[:ax] + (k,) + a.shape[ax + 1 :]
    out_layout = Layout(out_shape, layout.axes, layout.perm, (outer, k, inner))
    vals3, values = out_layout.empty3(p.compute)
    idx3, indices = out_layout.empty3(np.int64)
    if vals3.size:
        if inner == 1:
            rows = serial_or_parallel(softmax_topk_rows, p.src3.size)
            rows(p.src3[:, :, 0], vals3[:, :, 0], idx3[:, :, 0])
        else:
            serial_or_parallel(softmax_topk_columns, p.src3.size)(p.src3, vals3, idx3)
    return values, indices
