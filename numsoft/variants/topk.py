"""Top-k softmax: softmax over the k largest entries of each row, 0 elsewhere."""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..cpu._jit import kernel
from ..cpu.expfast import exp_fast
from ..cpu.passes import row_max, special_row_write
from ._codes import TOPK
from ._passes import l1_normalize_stored
from ._run import dispatch_variant, doc, int_arg
from ._select import kth_largest

__all__ = ["topk_softmax"]


@kernel
def store_topk_exp_and_sum(x, y, v, ties, m, inv_t):
    """y = exp((x - m)·inv_t) on the selection, 0 elsewhere, returning Σ y.

    Selected: every x > v, and the first ``ties`` entries equal to v (lowest index
    first). An entry equal to the maximum m gets weight exactly 1, which also gives
    the +inf entries of a row with m = +inf an equal share. 1 read, 1 write.
    """
    zero = x.dtype.type(0.0)
    one = x.dtype.type(1.0)
    s = zero
    for i in range(x.size):
        xi = x[i]
        take = xi > v
        if not take and xi == v and ties > 0:
            take = True
            ties -= 1
        e = (one if xi == m else exp_fast((xi - m) * inv_t)) if take else zero
        y[i] = e
        s += e
    return s


@kernel
def topk_softmax_row(x, y, inv_t, k):
    """softmax over the k largest entries of one row (selection by value of x).

    Max pass, streaming selection of the k-th largest value v (1 read, k-element
    heap), store pass over the selection, normalize pass: 3 reads, 2 writes. Rows with
    at most k non-excluded entries are plain softmax over them.
    """
    m = row_max(x)
    v, above, count, has_nan = kth_largest(x, k, np.empty(k, dtype=x.dtype))
    if has_nan or count == 0:
        special_row_write(x, y, False)
        return
    l1_normalize_stored(y, store_topk_exp_and_sum(x, y, v, k - above, m, inv_t), False)


@register_jitable
def topk_params(k, n):
    if k < 1 or k > n:
        raise ValueError("topk_softmax: k must satisfy 1 <= k <= the length of the axis")
    return np.array([float(k)])


@doc(
    """
    k : int
        Number of entries kept per row, ``1 ≤ k ≤`` the length of the normalized axes.""",
    target=True,
)
def topk_softmax(
    x: ArrayLike,
    k: int,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """Top-k softmax: softmax over the k largest entries of each row, 0 elsewhere.

    Parameters
    ----------
    x : array_like
        Input logits.
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row with at most k non-zero entries.

    Notes
    -----
    Ties at the k-th largest value are resolved by lowest index first: the C index order
    over the normalized axes, whatever the memory layout of ``x``. Masked entries
    are never selected; a row with fewer than k unmasked entries is the softmax of
    those. The fused top-k of Milakov & Gimelshein, "Online normalizer calculation for
    softmax", arXiv 1805.02867, returns the k probabilities instead: see
    ``softmax_topk``.

    See Also
    --------
    softmax, sparsemax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.topk_softmax(np.array([1.0, 3.0, 3.0, 0.0]), k=2)
    array([0. , 0.5, 0.5, 0. ])
    >>> numsoft.topk_softmax(np.array([1.0, 3.0, 2.0, 0.0]), k=2)
    array([0.        , 0.73105858, 0.26894142, 0.        ])
    """
    kk = int_arg("topk_softmax", "k", k)
    return dispatch_variant(x, axis, out, dtype, where, temperature, target, TOPK,
                            lambda n: topk_params(kk, n))  # fmt: skip
