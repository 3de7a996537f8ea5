"""numsoft's lazy functions on Dask arrays, public as ``numsoft.dask``: softmax,
log_softmax and logsumexp over any chunking, and the variants that are a softmax of an
elementwise transform of ``x`` (``ssmax``, ``stablemax``, ``softplus_l1``). Each checks
its arguments at once and returns a graph (``dask_graphs``).
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._docstrings import filled
from ..frontdoor.arguments import Arguments, Request, broadcast_pair, extexp_bound
from .dask_graphs import (
    aligned,
    as_dask,
    da,
    empty_meta,
    logsumexp_pipeline,
    setup,
    softmax_pipeline,
)

__all__ = ["softmax", "log_softmax", "logsumexp", "ssmax", "stablemax", "softplus_l1"]


# ---------------------------------------------------------------- public API

_COMMON = """
    x : dask.array.Array or array_like
        Input logits (array-likes are wrapped with ``dask.array.asarray``). Any
        chunking; chunk sizes must be known.
    axis : int, tuple of int or None, optional
        Axis or axes normalized together (default ``-1``); ``None`` means all axes.
        They may be split across chunks.
    dtype : dtype, optional
        Result dtype, as in the NumPy API (float32 for float16/float32 input, float64
        otherwise).
    where : dask.array.Array or array_like of bool, optional
        Mask broadcastable to ``x``; ``False`` entries are excluded.
    temperature : float, optional
        Positive, finite; the function is applied to ``x / temperature``."""

_ALGORITHM = """
    algorithm : str, optional
        Pass structure used on blocks that hold whole rows (see ``numsoft.softmax``);
        rows split across chunks always use the online partials.
    out : None
        Not supported (Dask arrays are immutable): passing an array raises
        ``TypeError``; use ``dask.array.store``."""


def _doc(extra: str):
    return filled("common", _COMMON.strip("\n") + extra)


@_doc(_ALGORITHM)
def softmax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
) -> da.Array:
    """Lazy softmax ``exp(x_i) / Σ_j exp(x_j)`` of a Dask array along ``axis``.

    Parameters
    ----------
    {common}

    Returns
    -------
    dask.array.Array
        Probabilities, same shape and chunks as ``x``, not yet computed.

    Notes
    -----
    Same numerics as ``numsoft.softmax`` (NaN rows, ``+inf`` entries, all ``-inf`` rows,
    masks), whichever way the rows are split across chunks.

    See Also
    --------
    numsoft.softmax, log_softmax, logsumexp

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import numsoft.dask
    >>> x = da.from_array(np.array([[1.0, 2.0, 3.0, 4.0]]), chunks=(1, 2))
    >>> y = numsoft.dask.softmax(x)  # the row is split across 2 chunks
    >>> y.compute()
    array([[0.0320586 , 0.08714432, 0.23688282, 0.64391426]])
    """
    a, args, w = setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    return softmax_pipeline(a, args, w, algorithm, log_output=False)


@_doc(_ALGORITHM)
def log_softmax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
) -> da.Array:
    """Lazy log-softmax ``x_i - logsumexp(x)`` of a Dask array along ``axis``.

    Parameters
    ----------
    {common}

    Returns
    -------
    dask.array.Array
        Log-probabilities, same shape and chunks as ``x``; ``-inf`` at masked entries.

    See Also
    --------
    numsoft.log_softmax, softmax, logsumexp

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import numsoft.dask
    >>> x = da.from_array(np.array([1.0, 2.0, 3.0, 1000.0]), chunks=2)
    >>> numsoft.dask.log_softmax(x).compute()
    array([-999., -998., -997.,    0.])
    """
    a, args, w = setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    return softmax_pipeline(a, args, w, algorithm, log_output=True)


@_doc(
    """
    b : dask.array.Array or array_like, optional
        Weights broadcastable to ``x``: ``log Σ b·exp(x)``, as in SciPy (``b == 0``
        excluded; a negative sum is NaN unless ``return_sign``). Costs a second pass.
    keepdims : bool, optional
        Keep the reduced axes as length-1 axes.
    return_sign : bool, optional
        Also return the sign of the sum (1, -1, or 0 for an empty/zero sum)."""
    + _ALGORITHM
)
def logsumexp(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    b: ArrayLike | None = None,
    keepdims: bool = False,
    return_sign: bool = False,
    out: None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
):
    """Lazy ``t·log Σ exp(x/t)`` of a Dask array along ``axis`` (one pass, a tree reduction).

    Parameters
    ----------
    {common}

    Returns
    -------
    dask.array.Array
        The reduction (0-d when every axis is reduced and ``keepdims`` is False). An
        empty or fully masked row gives ``-inf``; NaN gives NaN; ``+inf`` gives ``+inf``.
    sign : dask.array.Array
        Only with ``return_sign=True``.

    See Also
    --------
    numsoft.logsumexp, scipy.special.logsumexp

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import numsoft.dask
    >>> x = da.from_array(np.array([[0.0, 0.0, 1000.0, 1000.0]]), chunks=(1, 2))
    >>> numsoft.dask.logsumexp(x, axis=1).compute()
    array([1000.69314718])
    >>> b = np.array([1.0, -1.0, 1.0, 0.0])  # weights: 1 - 1 + e**1000
    >>> float(numsoft.dask.logsumexp(x, axis=None, b=b).compute())
    1000.0
    """
    bd = None if b is None else as_dask(b, "b")
    if bd is not None:  # x and b broadcast together, as in the NumPy API
        x = as_dask(x)
        shape = broadcast_pair("x", x, "b", bd)
        x, bd = da.broadcast_to(x, shape), da.broadcast_to(bd, shape)
    req = Request(axis, out, dtype, where, temperature, algorithm)
    a, args, w = setup(x, req, extra_dtype=None if bd is None else bd.dtype)
    axes, compute, result, t = args.axes, args.compute, args.result, args.t
    if any(a.shape[ax] == 0 for ax in axes):  # empty rows: log 0, sign 0
        kept = tuple(
            1 if ax in axes else a.shape[ax] for ax in range(a.ndim) if keepdims or ax not in axes
        )
        lse = da.full(kept, -np.inf, dtype=result)
        return (lse, da.zeros(kept, dtype=result)) if return_sign else lse
    if b is None:
        lse = logsumexp_pipeline(a, args, w, algorithm, keepdims)
        if not return_sign:
            return lse
        return lse, lse.map_blocks(_sign_of_lse, dtype=result, meta=empty_meta(lse.ndim, result))
    # SciPy's algorithm in two reductions: the largest weighted z = x/t, then the
    # signed sum Σ b·exp(z - max) in float64 (numsoft.logsumexp does the same): weights
    # that cancel give -inf with sign 0, NaN in b gives NaN.
    bb = aligned(bd, a, "b")
    active = bb != 0 if w is None else (bb != 0) & w
    z = a.astype(compute) / compute.type(t) if t != 1.0 else a.astype(compute)
    top = da.max(da.where(active, z, -np.inf), axis=axes, keepdims=True)
    top = da.where(da.isfinite(top), top, 0)  # ±inf or no entry: exp(z) itself
    terms = da.where(active, bb.astype(compute) * da.exp(da.where(active, z - top, 0)), 0)
    total = da.sum(terms, axis=axes, keepdims=keepdims, dtype=np.float64)
    if not keepdims:
        top = da.squeeze(top, axis=axes)
    meta = empty_meta(total.ndim, result)
    lse = da.map_blocks(
        functools.partial(_weighted_lse, t=t, return_sign=return_sign, result=result),
        total,
        top,
        dtype=result,
        meta=meta,
    )
    if not return_sign:
        return lse
    return lse, total.map_blocks(lambda s: np.sign(s).astype(result), dtype=result, meta=meta)


def _weighted_lse(total, top, *, t, return_sign, result):
    """t·(log|Σ| + max) from the signed sum; NaN for a negative sum without its sign."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.asarray(t * (np.log(np.abs(total)) + top))  # 0-d blocks stay arrays
    if not return_sign:
        lse[total < 0] = np.nan  # a negative sum has no real logarithm (as SciPy)
    return lse.astype(result)


def _sign_of_lse(lse):
    """Sign of Σ exp: 1, or 0 for an empty sum (-inf), NaN for NaN."""
    sign = np.where(lse > -np.inf, 1.0, 0.0).astype(lse.dtype)
    sign[np.isnan(lse)] = np.nan
    return sign


# ---------------------------------------------------------------- variants (SPEC §4)
#
# Each is softmax of an elementwise transform g of z = x / temperature, so it takes
# the same one- or two-pass path as softmax. g is computed in float64 whatever the
# input dtype: the transforms (a product with log n, a log) would otherwise cost the
# float32 result its tolerance.


def _variant(g: da.Array, args: Arguments, w, algorithm) -> da.Array:
    """softmax of the float64 logits ``g`` (temperature applied), in the result dtype."""
    f64 = np.dtype(np.float64)
    g_args = args._replace(
        compute=f64, result=f64, t=1.0, inv_t=f64.type(1.0), bound=extexp_bound(f64)
    )
    return softmax_pipeline(g, g_args, w, algorithm, False).astype(args.result)


def _ssmax_logits(xb, n, *, s, t):
    """g = s·log(n)·x/t, n the row's number of (unmasked) entries."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return xb.astype(np.float64) * (s * np.log(n) / t)


def _stablemax_logits(xb, *, t):
    """g = log s(z): s(v) = v + 1 for v >= 0, 1/(1 - v) for v < 0, so s(z) = exp(g)."""
    z = xb.astype(np.float64) / t
    with np.errstate(divide="ignore", invalid="ignore"):  # the branch not taken
        return np.where(z >= 0, np.log1p(z), -np.log1p(-z))


def _softplus_l1_logits(xb, *, t):
    """g = log softplus(z), stably: softplus(z) = exp(g), no overflow or underflow to 0.

    z > 0: softplus = z + log1p(exp(-z)); -36 <= z <= 0: log1p(exp(z)); below -36,
    log softplus(z) = z + log(log1p(u)/u) with u = exp(z) < 2.4e-16, which is z to
    float64 precision.
    """
    z = xb.astype(np.float64) / t
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        pos = np.log(z + np.log1p(np.exp(-z)))
        mid = np.log(np.log1p(np.exp(z)))
    return np.where(z > 0, pos, np.where(z < -36.0, z, mid))


def _check_s(s) -> float:
    if isinstance(s, bool) or not isinstance(s, numbers.Real) or not math.isfinite(s):
        raise TypeError(f"s must be a finite real number, got {s!r}")
    return float(s)


_VARIANT_ALGORITHM = """
    algorithm : str, optional
        Pass structure of the softmax of the transformed logits (see ``softmax``).
    out : None
        Not supported (``TypeError``), as in ``softmax``."""


@_doc(
    """
    s : float, optional
        The scale of the ``log n`` factor (default 1)."""
    + _VARIANT_ALGORITHM
)
def ssmax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    s: float = 1.0,
    out: None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
) -> da.Array:
    """Lazy scalable softmax ``softmax(s·log(n)·z)`` (arXiv 2501.19399), z = x / temperature.

    ``n`` is the number of entries of the row (unmasked entries with ``where``), so a
    row of one entry gives ``softmax(0·z)``.

    Parameters
    ----------
    {common}

    Returns
    -------
    dask.array.Array
        Probabilities, same shape and chunks as ``x``.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import numsoft.dask
    >>> x = da.from_array(np.array([0.0, 1.0, 0.0, 0.0]), chunks=2)
    >>> numsoft.dask.ssmax(x).compute()  # softmax(log(4)·x)
    array([0.14285714, 0.57142857, 0.14285714, 0.14285714])
    """
    a, args, w = setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    axes, t = args.axes, args.t
    s = _check_s(s)
    f64 = np.dtype(np.float64)
    if w is None:
        block = functools.partial(_ssmax_logits, n=math.prod(a.shape[ax] for ax in axes), s=s, t=t)
        g = a.map_blocks(block, dtype=f64, meta=empty_meta(a.ndim, f64))
    else:
        counts = w.sum(axis=axes, keepdims=True)
        block = functools.partial(_ssmax_logits, s=s, t=t)
        g = da.map_blocks(block, a, counts, dtype=f64, meta=empty_meta(a.ndim, f64))
    return _variant(g, args, w, algorithm)


@_doc(_VARIANT_ALGORITHM)
def stablemax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
) -> da.Array:
    """Lazy stablemax ``s(z) / Σ s(z)`` (arXiv 2501.04697), z = x / temperature.

    ``s(v) = v + 1`` for ``v >= 0`` and ``1 / (1 - v)`` for ``v < 0``.

    Parameters
    ----------
    {common}

    Returns
    -------
    dask.array.Array
        Probabilities, same shape and chunks as ``x``.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import numsoft.dask
    >>> x = da.from_array(np.array([-1.0, 0.0, 1.0, 2.0]), chunks=2)
    >>> numsoft.dask.stablemax(x).compute()  # [1/2, 1, 2, 3] / 6.5
    array([0.07692308, 0.15384615, 0.30769231, 0.46153846])
    """
    a, args, w = setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    t = args.t
    f64 = np.dtype(np.float64)
    g = a.map_blocks(
        functools.partial(_stablemax_logits, t=t), dtype=f64, meta=empty_meta(a.ndim, f64)
    )
    return _variant(g, args, w, algorithm)


@_doc(_VARIANT_ALGORITHM)
def softplus_l1(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
) -> da.Array:
    """Lazy ``softplus(z) / Σ softplus(z)`` (softplus attention), z = x / temperature.

    Parameters
    ----------
    {common}

    Returns
    -------
    dask.array.Array
        Probabilities, same shape and chunks as ``x``.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> import numsoft.dask
    >>> x = da.from_array(np.array([0.0, 0.0, 50.0, 50.0]), chunks=2)
    >>> numsoft.dask.softplus_l1(x).compute()  # [log 2, log 2, 50, 50] / (100 + 2 log 2)
    array([0.0068367, 0.0068367, 0.4931633, 0.4931633])
    """
    a, args, w = setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    t = args.t
    f64 = np.dtype(np.float64)
    g = a.map_blocks(
        functools.partial(_softplus_l1_logits, t=t), dtype=f64, meta=empty_meta(a.ndim, f64)
    )
    return _variant(g, args, w, algorithm)
