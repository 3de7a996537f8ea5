"""Public functions: sigmoid attention and softplus-L1 attention.

The row kernels are in ``numsoft.cpu.variants.elementwise`` (the math is documented there).
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import Request
from ..route import follows_input_type
from ..vocabulary import SIGMOID_ATTENTION, SOFTPLUS_L1
from ._run import doc, real_arg, run_variant

__all__ = ["sigmoid_attention", "softplus_l1"]


# ---------------------------------------------------------------- parameters


@register_jitable
def sigmoid_attention_params(has_bias, bias):
    if has_bias and not math.isfinite(bias):
        raise ValueError("sigmoid_attention: bias must be finite")
    return np.array([1.0 if has_bias else 0.0, bias])


# ---------------------------------------------------------------- public functions


@follows_input_type
@doc(
    """
    bias : float, optional
        The bias b; default ``-log(n)``, n = number of unmasked entries in the row.""",
    target=True,
)
def sigmoid_attention(
    x: ArrayLike,
    bias: float | None = None,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """Sigmoid attention: ``sigmoid(z + b)`` elementwise, b = -log(n) by default.

    Parameters
    ----------
    x : array_like
        Input logits.
    {common}

    Returns
    -------
    ndarray
        Weights in [0, 1] shaped like ``x`` (not normalized); 0 at masked entries.

    Notes
    -----
    Elementwise: a NaN logit gives NaN at its own position only. The default bias
    -log(n) makes the weights sum to about 1 at initialization. Ramapuram et al.,
    "Theory, Analysis, and Best Practices for Sigmoid Self-Attention", arXiv 2409.04431.

    See Also
    --------
    softmax, softplus_l1

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.sigmoid_attention(np.array([0.0, 0.0, 0.0, 0.0]))
    array([0.2, 0.2, 0.2, 0.2])
    >>> numsoft.sigmoid_attention(np.array([0.0, 2.0]), bias=0.0)
    array([0.5       , 0.88079708])
    """
    has_bias = bias is not None
    b = real_arg("sigmoid_attention", "bias", bias) if has_bias else 0.0
    params = sigmoid_attention_params(has_bias, b)
    return run_variant(
        x, Request(axis, out, dtype, where, temperature), SIGMOID_ATTENTION, params, target=target
    )


@follows_input_type
@doc(target=True)
def softplus_l1(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """Softplus attention: ``softplus(z) / Σ softplus(z)``, softplus(v) = log(1 + e^v).

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row, shaped like ``x``; 0 at masked entries.

    Notes
    -----
    softplus is evaluated as ``max(z, 0) + log1p(e^-|z|)`` (no overflow); ``+inf``
    entries share the mass equally and NaN gives NaN (softplus attention, seed papers).

    See Also
    --------
    softmax, sigmoid_attention, stablemax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.softplus_l1(np.array([1.0, 0.0, -1.0]))
    array([0.56614147, 0.29881277, 0.13504577])
    """
    return run_variant(x, Request(axis, out, dtype, where, temperature), SOFTPLUS_L1, target=target)
