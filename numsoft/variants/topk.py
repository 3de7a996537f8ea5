"""Public functions: top-k softmax.

The row kernels are in ``numsoft.cpu.variants.topk`` (the math is documented there).
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import Request
from ..route import follows_input_type
from ..vocabulary import TOPK
from ._run import doc, int_arg, run_variant

__all__ = ["topk_softmax"]


@register_jitable
def topk_params(k, n):
    if k < 1 or k > n:
        raise ValueError("topk_softmax: k must satisfy 1 <= k <= the length of the axis")
    return np.array([float(k)])


@follows_input_type
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
    return run_variant(
        x,
        Request(axis, out, dtype, where, temperature),
        TOPK,
        lambda n: topk_params(kk, n),
        target=target,
    )
