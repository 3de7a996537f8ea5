"""Public functions: StableMax, log-StableMax and softpick.

The row kernels are in ``numsoft.cpu.variants.stable`` (the math is documented there).
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import Request
from ..route import follows_input_type
from ..vocabulary import LOG_STABLEMAX, SOFTPICK, STABLEMAX
from ._run import doc, real_arg, run_variant
from ._run import run_variant_backward as _run_backward

__all__ = ["stablemax", "log_stablemax", "softpick", "stablemax_backward"]


# ---------------------------------------------------------------- parameters


@register_jitable
def softpick_params(eps):
    if not (eps >= 0.0 and math.isfinite(eps)):
        raise ValueError("softpick: eps must be a finite number >= 0")
    return np.array([eps])


# ---------------------------------------------------------------- public functions


@follows_input_type
@doc(target=True)
def stablemax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """StableMax: ``p = s(z) / Σ s(z)`` with ``s(v) = v + 1`` (v ≥ 0), ``1/(1 - v)`` (v < 0).

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row, shaped like ``x``.

    Notes
    -----
    s grows linearly, so nothing overflows for any finite logit (a sum that overflows
    is recomputed after scaling by the largest term); ``+inf`` entries share the mass
    equally, NaN gives NaN, masked entries are 0. Prieto, Barsbey, Mediano & Birdal,
    "Grokking at the Edge of Numerical Stability", arXiv 2501.04697.

    See Also
    --------
    log_stablemax, stablemax_backward, softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.stablemax(np.array([1.0, 0.0, -1.0]))
    array([0.57142857, 0.28571429, 0.14285714])
    >>> numsoft.stablemax(np.array([1000.0, -1000.0]))
    array([9.99999002e-01, 9.98002000e-07])
    """
    return run_variant(x, Request(axis, out, dtype, where, temperature), STABLEMAX, target=target)


@follows_input_type
@doc(target=True)
def log_stablemax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """log-StableMax: ``log s(z) - log Σ s(z)`` (see :func:`stablemax`).

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Log-probabilities shaped like ``x``; ``-inf`` at masked entries and for rows with
        no unmasked entry.

    Notes
    -----
    Prieto et al., arXiv 2501.04697 (the loss they train with is -log_stablemax).

    See Also
    --------
    stablemax, log_softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.log_stablemax(np.array([1.0, 0.0, -1.0]))
    array([-0.55961579, -1.25276297, -1.94591015])
    """
    return run_variant(
        x, Request(axis, out, dtype, where, temperature), LOG_STABLEMAX, target=target
    )


@follows_input_type
@doc(
    """
    eps : float, optional
        Non-negative constant added to the denominator (default 1e-6).""",
    target=True,
)
def softpick(
    x: ArrayLike,
    eps: float = 1e-6,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """Softpick: ``p = relu(e^z - 1) / (Σ|e^z - 1| + eps)``, evaluated without overflow.

    With ``m = max(z, 0)`` this is
    ``relu(e^(z-m) - e^(-m)) / (Σ|e^(z-m) - e^(-m)| + eps·e^(-m))``.

    Parameters
    ----------
    x : array_like
        Input logits.
    {common}

    Returns
    -------
    ndarray
        Non-negative weights shaped like ``x``, summing to at most 1 per row; exactly 0
        wherever ``z ≤ 0`` and at masked entries.

    Notes
    -----
    ``|e^(z-m) - e^(-m)|`` is computed as ``-expm1(-|z|)·e^(max(z, 0) - m)``, so entries
    with z near 0 keep full relative accuracy. ``+inf`` entries share the mass equally
    and NaN gives NaN. Zuhri, Fuadi & Aji, "Softpick: No Attention Sink, No Massive
    Activations with Rectified Softmax", arXiv 2504.20966.

    See Also
    --------
    softmax, stablemax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.softpick(np.array([1.0, 0.0, -1.0]), eps=0.0)
    array([0.73105858, 0.        , 0.        ])
    """
    params = softpick_params(real_arg("softpick", "eps", eps))
    return run_variant(
        x, Request(axis, out, dtype, where, temperature), SOFTPICK, params, target=target
    )


@follows_input_type
def stablemax_backward(x: ArrayLike, dy: ArrayLike, axis: int | tuple[int, ...] | None = -1):
    """Gradient through stablemax at logits ``x``: ``dx = s'(x)/S · (dy - Σ p·dy)``.

    ``S = Σ s(x)``, ``p = s(x)/S``, ``s'(v) = 1`` for v ≥ 0 and ``1/(1 - v)²`` for v < 0.

    Parameters
    ----------
    x : array_like
        The logits stablemax was applied to (not its output: the Jacobian depends on
        S, which the output does not determine; e.g. x = (0, 0) and (-1, -1) both give
        y = (½, ½) but different gradients).
    dy : array_like
        Upstream gradient, broadcastable with ``x``.
    axis : int, tuple of int or None, optional
        The axis (or axes) stablemax normalized over.

    Returns
    -------
    ndarray
        ``dx``, the gradient with respect to ``x`` (temperature 1).

    Notes
    -----
    Prieto et al., arXiv 2501.04697.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.stablemax_backward(np.array([0.0, 0.0]), np.array([1.0, 0.0]))
    array([ 0.25, -0.25])
    """
    return _run_backward(x, dy, axis, STABLEMAX)
