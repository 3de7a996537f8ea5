"""Public functions: adaptive, scalable and self-adjusting softmax, MultiMax, Rowmax-PoT.

The row kernels are in ``numsoft.cpu.variants.scaled`` (the math is documented there).
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import Request
from ..route import follows_input_type
from ..vocabulary import ADAPTIVE, MULTIMAX, ROWMAX_POT, SA_SOFTMAX, SSMAX
from ._run import (
    NO_PARAMS,
    bool_arg,
    doc,
    real_arg,
    real_vector_arg,
    run_variant,
)

__all__ = ["adaptive_softmax", "ssmax", "sa_softmax", "multimax", "rowmax_pot"]


# ---------------------------------------------------------------- parameters


@register_jitable
def ssmax_params(s):
    if not (s > 0.0 and math.isfinite(s)):
        raise ValueError("ssmax: s must be positive and finite")
    return np.array([s])


@register_jitable
def sa_softmax_params(normalized):
    return np.array([1.0 if normalized else 0.0])


@register_jitable
def multimax_params(ranges, ts):
    if len(ranges) != 4:
        raise ValueError("multimax: ranges must have 4 entries (b0, b1, b2, b3)")
    if len(ts) != 4:
        raise ValueError("multimax: ts must have 4 entries (t0, t1, t2, t3)")
    params = np.empty(8)
    for i in range(4):
        params[i] = ranges[i]
        params[4 + i] = ts[i]
    if not np.all(np.isfinite(params)):
        raise ValueError("multimax: ranges and ts must be finite")
    return params


# ---------------------------------------------------------------- public functions


@follows_input_type
@doc()
def adaptive_softmax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """Adaptive-temperature softmax: ``softmax(β·z)`` with β from the entropy of softmax(z).

    H = entropy of softmax(z) (nats); ``β = max(1, poly(H))`` where H > 0.5, else 1,
    with ``poly`` the polynomial with coefficients (highest degree first)
    ``[-0.037, 0.481, -2.3, 4.917, -1.791]``.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row, shaped like ``x``.

    Notes
    -----
    Sharpens high-entropy rows (β ≥ 1) and leaves confident ones unchanged.
    Veličković, Perivolaropoulos, Barbero & Pascanu, "softmax is not enough (for sharp
    out-of-distribution)", arXiv 2410.01104.

    See Also
    --------
    softmax, ssmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.adaptive_softmax(np.array([0.5, 0.0, 0.0, 0.0]))
    array([0.4412063 , 0.18626457, 0.18626457, 0.18626457])
    """
    return run_variant(x, Request(axis, out, dtype, where, temperature), ADAPTIVE)


@follows_input_type
@doc(
    """
    s : float, optional
        Positive scaling parameter (default 1).""",
    target=True,
)
def ssmax(
    x: ArrayLike,
    s: float = 1.0,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    target: str = "cpu",
) -> np.ndarray:
    """Scalable-Softmax: ``softmax(s·log(n)·z)``, n = number of unmasked entries per row.

    Parameters
    ----------
    x : array_like
        Input logits.
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row, shaped like ``x``.

    Notes
    -----
    The log(n) factor keeps attention from flattening as the context grows. Entries
    equal to ``-inf`` count as masked, not as entries. Nakanishi, "Scalable-Softmax Is
    Superior for Attention", arXiv 2501.19399.

    See Also
    --------
    softmax, adaptive_softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.ssmax(np.array([1.0, 0.0, 0.0, 0.0]))
    array([0.57142857, 0.14285714, 0.14285714, 0.14285714])
    """
    params = ssmax_params(real_arg("ssmax", "s", s))
    return run_variant(
        x, Request(axis, out, dtype, where, temperature), SSMAX, params, target=target
    )


@follows_input_type
@doc(
    """
    normalized : bool, optional
        Use the range-normalized factor (default False)."""
)
def sa_softmax(
    x: ArrayLike,
    normalized: bool = False,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """Self-Adjust Softmax: ``z·softmax(z)``, or normalized
    ``(z - min(z_min, 0)) / (max(z_max, 0) - min(z_min, 0))·softmax(z)``.

    Parameters
    ----------
    x : array_like
        Input logits.
    {common}

    Returns
    -------
    ndarray
        Weights shaped like ``x`` (not a distribution: the plain form can be negative);
        0 at masked entries.

    Notes
    -----
    z_min and z_max range over the unmasked entries. A row whose unmasked entries are
    all 0 has an empty range; its normalized output is 0. "Self-Adjust Softmax"
    (SA-Softmax), 2025.

    See Also
    --------
    softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.sa_softmax(np.array([2.0, 0.0, -2.0]))
    array([ 1.73362666,  0.        , -0.03175248])
    >>> numsoft.sa_softmax(np.array([2.0, 0.0, -2.0]), normalized=True)
    array([0.86681333, 0.05865521, 0.        ])
    """
    params = sa_softmax_params(bool_arg("sa_softmax", "normalized", normalized))
    return run_variant(x, Request(axis, out, dtype, where, temperature), SA_SOFTMAX, params)


@follows_input_type
@doc(
    """
    ranges : sequence of 4 floats
        The breakpoints (b0, b1, b2, b3).
    ts : sequence of 4 floats
        The slopes (t0, t1, t2, t3)."""
)
def multimax(
    x: ArrayLike,
    ranges,
    ts,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """MultiMax: ``softmax(σ(z))`` with a piecewise modulation of the logits,

    ``σ(z) = z + t0·relu(b0 - z) + t1·relu(z - b1) + t2·relu(b2 - z)² + t3·relu(z - b3)²``.

    Parameters
    ----------
    x : array_like
        Input logits.
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row, shaped like ``x``.

    Notes
    -----
    Masked (and ``-inf``) entries stay excluded; a ``+inf`` entry takes σ's limit at
    +inf. Zhou, Fritz & Keuper, "MultiMax: Sparse and Multi-Modal Attention
    Learning", ICML 2024.

    See Also
    --------
    softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.multimax(np.array([2.0, 0.0, -2.0]), (0.0, 1.0, 0.0, 1.0), (1.0, 1.0, 0.0, 0.0))
    array([0.909443 , 0.0452785, 0.0452785])
    """
    params = multimax_params(
        real_vector_arg("multimax", "ranges", ranges), real_vector_arg("multimax", "ts", ts)
    )
    return run_variant(x, Request(axis, out, dtype, where, temperature), MULTIMAX, params)


@follows_input_type
@doc()
def rowmax_pot(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """Rowmax-PoT: power-of-two weights ``2^(-round((max z - z)·log2 e))``, normalized.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities summing to 1 per row, shaped like ``x``.

    Notes
    -----
    Each weight is exp(z - max z) rounded to the nearest power of two in the exponent
    (ties to even), a hardware-friendly softmax approximation anchored at the row
    maximum, so the largest entry always has weight 1 before normalization
    (Rowmax-PoT).

    See Also
    --------
    softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.rowmax_pot(np.array([3.0, 2.0, 0.0]))
    array([0.64, 0.32, 0.04])
    """
    return run_variant(x, Request(axis, out, dtype, where, temperature), ROWMAX_POT, NO_PARAMS)
