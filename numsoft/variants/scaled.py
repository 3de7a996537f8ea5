"""Softmax of a transformed row: adaptive temperature, scalable softmax, self-adjusting
softmax, MultiMax and the power-of-two Rowmax-PoT weights.

Where the variant is "softmax of something", the row kernel computes the something
(a scale, or a transformed row in the output buffer) and hands it to the core
``softmax_row`` with the call's pass structure, so every guarantee of ``softmax``
(NaN, ±inf, masks, temperature) carries over unchanged.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..cpu._jit import kernel
from ..cpu.expfast import exp_fast, ldexp_fast
from ..cpu.passes import is_finite, is_regular, row_max, row_sum_exp, special_row_write
from ..cpu.rows import softmax_row
from ._codes import ADAPTIVE, MULTIMAX, ROWMAX_POT, SA_SOFTMAX, SSMAX
from ._passes import (
    count_included,
    l1_normalize_stored,
    row_min_included,
    sum_exp_and_weighted,
)
from ._run import (
    NO_PARAMS,
    bool_arg,
    dispatch_variant,
    doc,
    prepare_variant,
    real_arg,
    real_vector_arg,
    run_variant,
)

__all__ = ["adaptive_softmax", "ssmax", "sa_softmax", "multimax", "rowmax_pot"]

#: β(H) of adaptive temperature, highest degree first (Veličković et al. 2024).
ADAPTIVE_POLY = (-0.037, 0.481, -2.3, 4.917, -1.791)

# ---------------------------------------------------------------- row kernels


@kernel
def adaptive_beta(h):
    """β = max(1, poly(H)) where the entropy H > 0.5, else 1."""
    if not h > 0.5:
        return 1.0
    p = 0.0
    for c in ADAPTIVE_POLY:
        p = p * h + c
    return max(1.0, p)


@kernel
def adaptive_softmax_row(x, y, inv_t):
    """softmax(β·z) with β from the entropy of softmax(z).

    Max (1 read) and (Σ e^d, Σ d·e^d) (1 read) give H = log Σe^d - Σd·e^d/Σe^d, then
    the core softmax of the row at inverse temperature β·inv_t.
    """
    m = row_max(x)
    s, w = sum_exp_and_weighted(x, m, inv_t)
    beta = adaptive_beta(math.log(s) - w / s) if is_regular(m, s) else 1.0
    softmax_row(x, y, inv_t * x.dtype.type(beta))


@kernel
def ssmax_row(x, y, inv_t, s):
    """softmax(s·log(n)·z), n = number of non-excluded entries: a count pass, then softmax.

    For n = 1 the output does not depend on the scale, so it is left at 1 (log 1 = 0
    would turn excluded -inf entries into 0·inf).
    """
    n = count_included(x)
    scale = s * math.log(n) if n > 1 else 1.0
    softmax_row(x, y, inv_t * x.dtype.type(scale))


@kernel
def write_sa(x, y, m, inv_t, inv_s, lo, inv_range):
    """y = ((z - lo)·inv_range)·softmax(z) from the softmax statistics (m, 1/Σ).

    One read, one write per element; y may be x. Excluded entries (weight 0) give 0.
    """
    zero = x.dtype.type(0.0)
    for i in range(x.size):
        v = x[i]
        w = exp_fast((v - m) * inv_t) * inv_s
        y[i] = w * ((v * inv_t - lo) * inv_range) if w > zero else zero


@kernel
def sa_softmax_row(x, y, inv_t, normalized):
    """z·softmax(z), or its range-normalized form, in the three-pass-reload structure.

    Max (and min for the normalized form) pass, Σ exp pass, write pass: 3 reads, 1
    write. Special rows: NaN → NaN; k ``+inf`` entries: 1/k there (normalized) or +inf
    (plain, the limit of z/k); a row of only -inf: NaN, like softmax.
    """
    dt = x.dtype.type
    m = row_max(x)
    s = row_sum_exp(x, m, inv_t)
    if not is_regular(m, s):
        special_row_write(x, y, False)
        if not normalized:
            for i in range(y.size):
                if y[i] > 0:
                    y[i] = math.inf
        return
    lo = dt(0.0)
    inv_range = dt(1.0)
    if normalized:
        lo = min(row_min_included(x) * inv_t, dt(0.0))
        span = max(m * inv_t, dt(0.0)) - lo
        inv_range = dt(1.0) / span if span > 0 else dt(0.0)
    write_sa(x, y, m, inv_t, dt(1.0) / s, lo, inv_range)


@kernel
def multimax_limit(b1, t1, t3):
    """σ(+inf): the limit of z + t1·relu(z - b1) + t3·relu(z - b3)² (b0, b2 terms vanish)."""
    if t3 != 0:
        return math.inf if t3 > 0 else -math.inf
    if t1 != -1:
        return math.inf if t1 > -1 else -math.inf
    return b1


@kernel
def multimax_row(x, y, inv_t, params):
    """softmax(σ(z)): σ written into y (1 read, 1 write), then the core softmax on y.

    Excluded (-inf) entries stay -inf; +inf entries take σ's limit at +inf.
    """
    dt = x.dtype.type
    zero = dt(0.0)
    b0, b1, b2, b3 = dt(params[0]), dt(params[1]), dt(params[2]), dt(params[3])
    t0, t1, t2, t3 = dt(params[4]), dt(params[5]), dt(params[6]), dt(params[7])
    top = dt(multimax_limit(params[1], params[5], params[7]))
    for i in range(x.size):
        z = x[i] * inv_t
        r0 = b0 - z
        r1 = z - b1
        r2 = b2 - z
        r3 = z - b3
        r0 = r0 if r0 > zero else zero
        r1 = r1 if r1 > zero else zero
        r2 = r2 if r2 > zero else zero
        r3 = r3 if r3 > zero else zero
        v = z + t0 * r0 + t1 * r1 + t2 * r2 * r2 + t3 * r3 * r3
        y[i] = z if z == -math.inf else (top if z == math.inf else v)
    softmax_row(y, y, dt(1.0))


@kernel
def store_pot_and_sum(x, y, m, c):
    """y = 2^(-rint((m - x)·c)), returning Σ y; NaN entries store NaN. 1 read, 1 write."""
    one = x.dtype.type(1.0)
    s = x.dtype.type(0.0)
    for i in range(x.size):
        e = np.rint((m - x[i]) * c)
        w = ldexp_fast(one, -e)
        w = w if e == e else e
        y[i] = w
        s += w
    return s


@kernel
def rowmax_pot_row(x, y, inv_t):
    """Rowmax-PoT of one row: max; store power-of-two weights with Σ; normalize.

    3 reads, 2 writes per element. Each weight is an exact power of two.
    """
    m = row_max(x)
    if not is_finite(m):
        special_row_write(x, y, False)
        return
    c = inv_t * x.dtype.type(1.0 / math.log(2.0))
    l1_normalize_stored(y, store_pot_and_sum(x, y, m, c), False)


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
    p = prepare_variant(x, axis, dtype, where, temperature, ADAPTIVE)
    return run_variant(p, out, ADAPTIVE)


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
    return dispatch_variant(x, axis, out, dtype, where, temperature, target, SSMAX, params)


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
    p = prepare_variant(x, axis, dtype, where, temperature, SA_SOFTMAX)
    return run_variant(p, out, SA_SOFTMAX, params)


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
    p = prepare_variant(x, axis, dtype, where, temperature, MULTIMAX)
    return run_variant(p, out, MULTIMAX, params)


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
    p = prepare_variant(x, axis, dtype, where, temperature, ROWMAX_POT)
    return run_variant(p, out, ROWMAX_POT, NO_PARAMS)
