"""Public functions: sparsemax, 1.5-entmax and α-entmax (sparse maps onto the simplex).

The row kernels are in ``numsoft.cpu.variants.sparse`` (the math is documented there).
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import Request
from ..route import follows_input_type
from ..vocabulary import ENTMAX, ENTMAX15, SOFTMAX, SPARSEMAX
from ._run import doc, int_arg, real_arg, run_variant
from ._run import run_variant_backward as _run_backward

__all__ = [
    "sparsemax",
    "entmax15",
    "entmax",
    "sparsemax_backward",
    "entmax15_backward",
]


# ---------------------------------------------------------------- parameters


@register_jitable
def entmax_setup(alpha, n_iter):
    """(variant code, parameters) of ``entmax``: α = 1 is softmax, α = 2 sparsemax."""
    if not (alpha >= 1.0 and math.isfinite(alpha)):
        raise ValueError("entmax: alpha must be a finite number >= 1")
    if n_iter < 1:
        raise ValueError("entmax: n_iter must be at least 1")
    params = np.zeros(2)
    if alpha == 1.0:
        return SOFTMAX, params
    if alpha == 2.0:
        return SPARSEMAX, params
    params[0] = alpha
    params[1] = n_iter
    return ENTMAX, params


# ---------------------------------------------------------------- public functions


@follows_input_type
@doc(target=True)
def sparsemax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """Sparsemax: the Euclidean projection of ``z = x / temperature`` onto the simplex.

    ``p = max(z - τ, 0)`` with, for z sorted descending,
    ``k = max{k : 1 + k·z(k) > Σ_{j≤k} z(j)}`` and ``τ = (Σ_{j≤k} z(j) - 1)/k``: the
    exact τ, found without sorting. Entries below τ get exactly 0.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities (summing to 1 per row, with exact zeros), shaped like ``x``.

    Notes
    -----
    NaN in a row gives NaN; ``+inf`` entries share the mass equally; masked entries are
    0. Only the entries within 1 of the row maximum (and above a bound from the row's
    mean) can be in the support; τ is found on those by Newton steps (Michelot's
    projection), each a vectorized pass, and is exact once the support stops changing:
    1 to 12 passes over the candidates, whether the support holds a few entries or
    nearly all (small logits). Martins & Astudillo, "From Softmax to Sparsemax", arXiv
    1602.02068.

    See Also
    --------
    entmax15, entmax, sparsemax_backward

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.sparsemax(np.array([1.0, 0.8, 0.1, -1.0]))
    array([0.6, 0.4, 0. , 0. ])
    """
    return run_variant(x, Request(axis, out, dtype, where, temperature), SPARSEMAX, target=target)


@follows_input_type
@doc(target=True)
def entmax15(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """1.5-entmax: ``p = max(z/2 - τ, 0)²`` with τ such that ``Σp = 1``, exact.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities (summing to 1 per row, with exact zeros), shaped like ``x``.

    Notes
    -----
    Between softmax (α = 1) and sparsemax (α = 2). τ is found without sorting, over the
    entries within 2 of the row maximum (the only possible support): Newton steps on
    the square root of Σ max(z/2 - τ, 0)², each a vectorized pass, until the support
    stops changing, when the closed form over it is exact (Peters et al.'s sorted
    algorithm gives the same τ).
    Peters, Niculae & Martins, "Sparse Sequence-to-Sequence Models", arXiv 1905.05702.

    See Also
    --------
    entmax, sparsemax, entmax15_backward

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.entmax15(np.array([1.0, 0.5, -2.0]))
    array([0.67399264, 0.32600736, 0.        ])
    """
    return run_variant(x, Request(axis, out, dtype, where, temperature), ENTMAX15, target=target)


@follows_input_type
@doc(target=True)
def entmax(
    x: ArrayLike,
    alpha: float = 1.5,
    n_iter: int = 50,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """α-entmax: ``p = max((α-1)·z - τ, 0)^(1/(α-1))`` with ``Σp = 1``, τ by bisection.

    Parameters
    ----------
    x : array_like
        Input logits.
    alpha : float, optional
        α ≥ 1 (default 1.5). α = 1 is softmax and α = 2 sparsemax, both computed exactly
        by their own kernels; α < 1 raises ``ValueError``.
    n_iter : int, optional
        Most bisection steps (default 50); the bisection stops earlier once the bracket
        on τ is below the dtype's epsilon.
    {common}

    Returns
    -------
    ndarray
        Probabilities (summing to 1 per row, with exact zeros for α > 1).

    Notes
    -----
    The bisection runs in float64 over the entries with ``z > max z - 1/(α-1)`` (the
    only ones that can get mass), and the output is renormalized to sum to 1.
    Peters, Niculae & Martins, "Sparse Sequence-to-Sequence Models", arXiv 1905.05702.

    See Also
    --------
    entmax15, sparsemax, softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.entmax(np.array([1.0, 0.5, -2.0]), alpha=1.5)
    array([0.67399264, 0.32600736, 0.        ])
    >>> numsoft.entmax(np.array([1.0, 0.8, 0.1, -1.0]), alpha=2.0)
    array([0.6, 0.4, 0. , 0. ])
    """
    a = real_arg("entmax", "alpha", alpha)
    code, params = entmax_setup(a, int_arg("entmax", "n_iter", n_iter))
    return run_variant(
        x, Request(axis, out, dtype, where, temperature), code, params, target=target
    )


@follows_input_type
def sparsemax_backward(y: ArrayLike, dy: ArrayLike, axis: int | tuple[int, ...] | None = -1):
    """Gradient through sparsemax: ``dx = s·(dy - Σ s·dy / Σ s)``, s = 1 where y > 0.

    Parameters
    ----------
    y : array_like
        The sparsemax output.
    dy : array_like
        Upstream gradient, broadcastable with ``y``.
    axis : int, tuple of int or None, optional
        The axis (or axes) sparsemax normalized over.

    Returns
    -------
    ndarray
        ``dx``, the gradient with respect to sparsemax's input (``x``, temperature 1).

    Notes
    -----
    Martins & Astudillo, arXiv 1602.02068, §2.5.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> y = numsoft.sparsemax(np.array([1.0, 0.8, 0.1, -1.0]))
    >>> numsoft.sparsemax_backward(y, np.array([1.0, 0.0, 5.0, 5.0]))
    array([ 0.5, -0.5,  0. ,  0. ])
    """
    return _run_backward(y, dy, axis, SPARSEMAX)


@follows_input_type
def entmax15_backward(y: ArrayLike, dy: ArrayLike, axis: int | tuple[int, ...] | None = -1):
    """Gradient through 1.5-entmax: ``dx = g·dy - g·Σ(g·dy)/Σg`` with ``g = sqrt(y)``.

    Parameters
    ----------
    y : array_like
        The entmax15 output.
    dy : array_like
        Upstream gradient, broadcastable with ``y``.
    axis : int, tuple of int or None, optional
        The axis (or axes) entmax15 normalized over.

    Returns
    -------
    ndarray
        ``dx``, the gradient with respect to entmax15's input (``x``, temperature 1).

    Notes
    -----
    Peters, Niculae & Martins, arXiv 1905.05702, Proposition 2.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> y = numsoft.entmax15(np.array([1.0, 0.5]))
    >>> numsoft.entmax15_backward(y, np.array([1.0, 0.0]))
    array([ 0.33675994, -0.33675994])
    """
    return _run_backward(y, dy, axis, ENTMAX15)
