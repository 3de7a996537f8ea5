"""Sigmoid attention and softplus-L1 attention: softmax replacements built on an
elementwise map (sigmoid, softplus), without the exponential normalization.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..cpu._jit import kernel
from ..cpu.expfast import exp_fast
from ..cpu.online import softmax_row_online
from ..cpu.passes import row_max
from ..cpu.paths import specialize
from ._codes import SIGMOID_ATTENTION, SOFTPLUS_L1
from ._passes import count_included, l1_normalize_stored
from ._run import dispatch_variant, doc, real_arg

#: The softmax limit of softplus_l1 uses the online structure (any finite row, any scale).
_softmax_row_online = specialize(softmax_row_online, LOG_OUTPUT=False)

__all__ = ["sigmoid_attention", "softplus_l1"]

# ---------------------------------------------------------------- row kernels


@kernel
def sigmoid_attention_row(x, y, inv_t, has_bias, bias):
    """y = sigmoid(z + b), b = ``bias`` or -log(n) (n = non-excluded entries).

    Count pass (only for the default bias), then one read and one write per element.
    sigmoid(v) = 1/(1 + e^-v) for v ≥ 0 and e^v/(1 + e^v) below, so neither branch
    overflows and tiny results keep their relative accuracy.
    """
    dt = x.dtype.type
    one = dt(1.0)
    b = dt(bias) if has_bias else dt(-math.log(max(count_included(x), 1)))
    for i in range(x.size):
        v = x[i] * inv_t + b
        e = exp_fast(-abs(v))
        r = one / (one + e)
        y[i] = r if v >= 0 else e * r


@kernel
def store_softplus_and_sum(x, y, inv_t):
    """y = softplus(z) = max(z, 0) + log1p(e^-|z|), returning Σ y. 1 read, 1 write.

    softplus(-inf) = 0 (excluded entries drop out), softplus(+inf) = +inf, NaN → NaN.
    """
    zero = x.dtype.type(0.0)
    s = zero
    for i in range(x.size):
        z = x[i] * inv_t
        w = (z if z > zero else zero) + math.log1p(exp_fast(-abs(z)))
        y[i] = w
        s += w
    return s


@kernel
def softplus_l1_row(x, y, inv_t):
    """softplus(z)/Σ softplus(z): store with Σ, then normalize. 2 reads, 2 writes.

    When every softplus underflows to 0 although some z is finite (all z below about
    -745 in float64), the limit softplus(z) ~ e^z makes the result softmax(z).
    """
    s = store_softplus_and_sum(x, y, inv_t)
    if s == 0.0 and row_max(x) > -math.inf:
        _softmax_row_online(x, y, inv_t)
        return
    l1_normalize_stored(y, s, False)


# ---------------------------------------------------------------- parameters


@register_jitable
def sigmoid_attention_params(has_bias, bias):
    if has_bias and not math.isfinite(bias):
        raise ValueError("sigmoid_attention: bias must be finite")
    return np.array([1.0 if has_bias else 0.0, bias])


# ---------------------------------------------------------------- public functions


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
    return dispatch_variant(x, axis, out, dtype, where, temperature, target, SIGMOID_ATTENTION,
                            params)  # fmt: skip


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
    return dispatch_variant(x, axis, out, dtype, where, temperature, target, SOFTPLUS_L1)
