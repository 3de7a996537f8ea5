"""numsoft on Dask arrays: lazy softmax, log_softmax and logsumexp over chunked arrays.

Import it explicitly (``import numsoft.dask``); ``import numsoft`` never imports Dask.
Every function builds a Dask graph and returns a lazy ``dask.array.Array``; nothing is
computed before ``.compute()`` (or ``dask.compute``, ``dask.array.store``, ...). Argument
errors are raised immediately, when the graph is built.

How the normalized axes are handled (SPEC §7):

- **Every normalized axis lies within one chunk**: each block holds whole rows, so the
  NumPy API (``numsoft.softmax`` and friends) is mapped over the blocks
  (``dask.array.map_blocks``): one pass, exactly the CPU result.
- **A normalized axis is split across chunks**: two passes, no rechunking.
  Pass 1 summarizes each block's piece of every row as an online partial ``(m, d)``
  (max, Σ exp((x - m)/t); ``numsoft.cpu.partials``) and a tree reduction
  (``dask.array.reduction``) merges the partials of a row:
  ``M = max m_i``, ``D = Σ d_i·exp((m_i - M)/t)``, carrying NaN and ±inf so that SPEC §1
  holds for the whole row. Pass 2 writes ``exp((x - M)/t) / D`` blockwise.
  ``logsumexp`` is ``M + t·log D``: pass 1 only.

``ssmax``, ``stablemax`` and ``softplus_l1`` are softmax of an elementwise transform of
``x`` (``s·log(n)·z``, ``log s(z)``, ``log softplus(z)``), so they take the same two
paths. Variants without such a chunked reduction (sparsemax, entmax, ...) have no
function here: the main API maps them over blocks that hold whole rows (``route``).

The main API comes here for every Dask array (``numsoft.softmax(x)`` is ``softmax``
below): ``route`` gives each public function its lazy form, its blockwise map or a
``TypeError`` naming what to do.

The kernels of the split path (``numsoft.cpu.partials``) run serially: Dask already
runs one task per core. See ``docs/dask.md``.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

try:
    import dask.array as da
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "numsoft.dask needs Dask: pip install 'numsoft[dask]' (dask[array,distributed])"
    ) from exc

from . import core
from ._frontend import (
    Arguments,
    Request,
    broadcast_pair,
    check_arguments,
    check_real_dtype,
    extexp_bound,
    normalize_axes,
    plan_layout,
    signature_of,
)
from .cpu.memory import source3
from .cpu.partials import (
    piece_partials_columns,
    piece_partials_rows,
    write_pieces_columns,
    write_pieces_rows,
)
from .cpu.paths import specialize

__all__ = ["softmax", "log_softmax", "logsumexp", "ssmax", "stablemax", "softplus_l1"]


# ---------------------------------------------------------------- arguments


def _as_dask(x, name: str = "x") -> da.Array:
    """``x`` as a Dask array of real numbers with known chunk sizes."""
    try:
        a = x if isinstance(x, da.Array) else da.asarray(x)
    except Exception as exc:
        raise TypeError(f"{name} must be a Dask array or array-like: {exc}") from None
    check_real_dtype(a.dtype, name)  # the NumPy API's dtype rules
    if any(math.isnan(c) for dim in a.chunks for c in dim):
        raise ValueError(f"{name} has unknown chunk sizes: call {name}.compute_chunk_sizes()")
    return a


def _aligned(a: da.Array, x: da.Array, name: str) -> da.Array:
    """``a`` broadcast to ``x``'s shape, with ``x``'s chunks (lazily, no full copy)."""
    try:
        shape = np.broadcast_shapes(a.shape, x.shape)
    except ValueError:
        shape = None
    if shape != x.shape:
        raise ValueError(f"{name} of shape {a.shape} is not broadcastable to x of shape {x.shape}")
    if a.ndim < x.ndim:
        a = a[(None,) * (x.ndim - a.ndim)]
    a = a.rechunk(tuple(x.chunks[i] if a.shape[i] == x.shape[i] else 1 for i in range(x.ndim)))
    return da.broadcast_to(a, x.shape, chunks=x.chunks)


def _as_mask(where) -> da.Array:
    try:
        w = where if isinstance(where, da.Array) else da.asarray(where)
    except Exception as exc:
        raise TypeError(f"where must be a boolean array: {exc}") from None
    if w.dtype != np.bool_:
        raise TypeError(f"where must be a boolean array, got dtype {w.dtype}")
    return w


def _reject_out(out) -> None:
    if out is not None:
        raise TypeError(
            "out is not supported for Dask arrays (they are immutable); "
            "write the result with dask.array.store instead"
        )


def _within_one_chunk(x: da.Array, axes: tuple[int, ...]) -> bool:
    return all(len(x.chunks[ax]) == 1 for ax in axes)


def _meta(ndim: int, dtype) -> np.ndarray:
    return np.empty((0,) * ndim, dtype=dtype)


# ---------------------------------------------------------------- blocks (NumPy side)
#
# Module-level functions bound with functools.partial: they pickle by reference, so
# the graph runs on distributed workers that can import numsoft.


def _softmax_block(xb, wb=None, *, axes, result, t, algorithm, log_output):
    """The NumPy API on one block holding whole rows."""
    func = core.log_softmax if log_output else core.softmax
    return func(xb, axes, dtype=result, where=wb, temperature=t, algorithm=algorithm)


def _logsumexp_block(xb, wb=None, *, axes, result, t, algorithm):
    """``numsoft.logsumexp`` of one block holding whole rows, reduced axes kept."""
    return core.logsumexp(
        xb, axes, keepdims=True, dtype=result, where=wb, temperature=t, algorithm=algorithm
    )


def _masked_block(xb, wb, *, compute):
    """x in the compute dtype with masked entries set to -inf (excluded everywhere)."""
    return np.where(wb, xb.astype(compute, copy=False), compute.type(-np.inf))


def _partial_dtype(compute: np.dtype) -> np.dtype:
    """A row piece's online partial: max ``m`` (an element of x) and sum ``d``."""
    return np.dtype([("m", compute), ("d", np.float64)])


def _block_partials(xb, axis, keepdims, *, inv_t):
    """Pass 1 (``reduction`` chunk): the partial of every row piece in one block."""
    layout, view = plan_layout(xb, axis)
    src3 = source3(xb, layout, view, xb.dtype)
    m2, m = layout.reduced_empty(xb.dtype)
    d2, d = layout.reduced_empty(np.float64)
    if m2.size == 0:
        pass
    elif layout.shape3[2] == 1:
        piece_partials_rows(src3[:, :, 0], m2[:, 0], d2[:, 0], inv_t)
    else:
        piece_partials_columns(src3, m2, d2, inv_t)
    out = np.empty(m.shape, dtype=_partial_dtype(xb.dtype))
    out["m"], out["d"] = m, d
    return np.expand_dims(out, axis)


def _merge_partials(p, axis, keepdims, *, inv_t):
    """Tree step (``reduction`` combine/aggregate): merge the partials along ``axis``.

    ``M = max m_i`` and ``D = Σ d_i·exp((m_i - M)·inv_t)``, where a partial whose ``m``
    equals ``M`` enters with weight 1. In the encoding of ``numsoft.cpu.partials`` this
    also merges the special values: NaN wins (``max`` propagates it), +inf partials add
    their counts, -inf/empty partials (d = 0) add nothing.
    """
    m, d = p["m"], p["d"]
    with np.errstate(invalid="ignore", over="ignore"):
        mm = np.max(m, axis=axis, keepdims=True)
        scaled = (m.astype(np.float64) - mm) * float(inv_t)
        weight = np.where(m == mm, 1.0, np.exp(scaled))
        dd = np.sum(d * weight, axis=axis, keepdims=True)
    out = np.empty(mm.shape, dtype=p.dtype)
    out["m"], out["d"] = mm, dd
    return out


def _lse_from_partials(pb, *, t, result):
    """logsumexp from merged partials: ``t·log Σ exp(x/t) = M + t·log D``.

    Also right for the special values: NaN → NaN, (+inf, k) → +inf, (-inf, 0) → -inf.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = pb["m"].astype(np.float64) + t * np.log(pb["d"])
    return lse.astype(result)


def _rows_2d(field, layout, dtype):
    """A row statistic of keepdims shape as the kernels' ``(outer, inner)`` array."""
    buf, view = layout.reduced_empty(dtype)
    np.copyto(view, np.squeeze(field, layout.axes))
    return buf


def _write_block(xb, pb, *, axes, inv_t, log_output, result):
    """Pass 2: normalize every row piece of one block with its row's merged partial.

    The block's output is a new array, written with ordinary stores
    (``auto.streams_output``)."""
    layout, view = plan_layout(xb, axes)
    src3 = source3(xb, layout, view, xb.dtype)
    y3, y = layout.empty3(xb.dtype)
    m2 = _rows_2d(pb["m"], layout, xb.dtype)
    d2 = _rows_2d(pb["d"], layout, np.float64)
    if y3.size == 0:
        pass
    elif layout.shape3[2] == 1:
        write = specialize(write_pieces_rows, STREAM_OUTPUT=False)
        write(src3[:, :, 0], y3[:, :, 0], m2[:, 0], d2[:, 0], inv_t, log_output)
    else:
        write = specialize(write_pieces_columns, STREAM_OUTPUT=False)
        write(src3, y3, m2, d2, inv_t, log_output)
    return y.astype(result, copy=False)


# ---------------------------------------------------------------- pipelines


def _row_partials(xc: da.Array, axes, inv_t) -> da.Array:
    """Pass 1 over a compute-dtype array: the merged ``(M, D)`` of every row, keepdims."""
    pdt = _partial_dtype(xc.dtype)
    merge = functools.partial(_merge_partials, inv_t=inv_t)
    return da.reduction(
        xc,
        chunk=functools.partial(_block_partials, inv_t=inv_t),
        combine=merge,
        aggregate=merge,
        axis=axes,
        keepdims=True,
        dtype=pdt,
        meta=_meta(xc.ndim, pdt),
        name="numsoft-row-partials",
    )


def _compute_input(x: da.Array, w, compute) -> da.Array:
    """x in the compute dtype, with masked entries -inf."""
    if w is None:
        return x.astype(compute)
    block = functools.partial(_masked_block, compute=compute)
    return da.map_blocks(block, x, w, dtype=compute, meta=_meta(x.ndim, compute))


def _softmax_pipeline(x, args: Arguments, w, algorithm, log_output):
    axes, compute, result, t = args.axes, args.compute, args.result, args.t
    if _within_one_chunk(x, axes):
        block = functools.partial(
            _softmax_block,
            axes=axes,
            result=result,
            t=t,
            algorithm=algorithm,
            log_output=log_output,
        )
        args = (x,) if w is None else (x, w)
        name = "numsoft-log-softmax" if log_output else "numsoft-softmax"
        return da.map_blocks(block, *args, dtype=result, meta=_meta(x.ndim, result), token=name)
    xc = _compute_input(x, w, compute)
    stats = _row_partials(xc, axes, args.inv_t)
    block = functools.partial(
        _write_block, axes=axes, inv_t=args.inv_t, log_output=log_output, result=result
    )
    y = da.map_blocks(
        block, xc, stats, dtype=result, meta=_meta(x.ndim, result), token="numsoft-normalize"
    )
    if w is not None:
        # A row with no unmasked entry is all -inf here (NaN from the kernels); SPEC §1
        # defines it as 0 (log: -inf).
        fill = result.type(-np.inf if log_output else 0.0)
        y = da.where(w.any(axis=axes, keepdims=True), y, fill)
    return y


def _logsumexp_pipeline(x, args: Arguments, w, algorithm, keepdims):
    axes, compute, result, t = args.axes, args.compute, args.result, args.t
    if _within_one_chunk(x, axes):
        block = functools.partial(
            _logsumexp_block, axes=axes, result=result, t=t, algorithm=algorithm
        )
        args = (x,) if w is None else (x, w)
        chunks = tuple((1,) if i in axes else c for i, c in enumerate(x.chunks))
        lse = da.map_blocks(
            block,
            *args,
            chunks=chunks,
            dtype=result,
            meta=_meta(x.ndim, result),
            token="numsoft-logsumexp",
        )
        return lse if keepdims else da.squeeze(lse, axis=axes)
    stats = _row_partials(_compute_input(x, w, compute), axes, args.inv_t)
    block = functools.partial(_lse_from_partials, t=t, result=result)
    lse = stats.map_blocks(block, dtype=result, meta=_meta(x.ndim, result))
    return lse if keepdims else da.squeeze(lse, axis=axes)


def _setup(x, req: Request, extra_dtype=None):
    """Validate the common arguments (SPEC §1) eagerly, before building any graph:
    (x as a Dask array, the checked ``Arguments``, the aligned mask or None)."""
    _reject_out(req.out)
    a = _as_dask(x)
    in_dtype = a.dtype if extra_dtype is None else np.result_type(a.dtype, extra_dtype)
    args = check_arguments(in_dtype, a.ndim, req.axis, req.dtype, req.temperature, req.algorithm)
    w = None if req.where is None else _aligned(_as_mask(req.where), a, "where")
    return a, args, w


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
    def deco(func):
        func.__doc__ = func.__doc__.replace("    {common}", _COMMON.strip("\n") + extra)
        return func

    return deco


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
    a, args, w = _setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    return _softmax_pipeline(a, args, w, algorithm, log_output=False)


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
    a, args, w = _setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    return _softmax_pipeline(a, args, w, algorithm, log_output=True)


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
    bd = None if b is None else _as_dask(b, "b")
    if bd is not None:  # x and b broadcast together, as in the NumPy API
        x = _as_dask(x)
        shape = broadcast_pair("x", x, "b", bd)
        x, bd = da.broadcast_to(x, shape), da.broadcast_to(bd, shape)
    req = Request(axis, out, dtype, where, temperature, algorithm)
    a, args, w = _setup(x, req, extra_dtype=None if bd is None else bd.dtype)
    axes, compute, result, t = args.axes, args.compute, args.result, args.t
    if any(a.shape[ax] == 0 for ax in axes):  # empty rows: log 0, sign 0
        kept = tuple(
            1 if ax in axes else a.shape[ax] for ax in range(a.ndim) if keepdims or ax not in axes
        )
        lse = da.full(kept, -np.inf, dtype=result)
        return (lse, da.zeros(kept, dtype=result)) if return_sign else lse
    if b is None:
        lse = _logsumexp_pipeline(a, args, w, algorithm, keepdims)
        if not return_sign:
            return lse
        return lse, lse.map_blocks(_sign_of_lse, dtype=result, meta=_meta(lse.ndim, result))
    # SciPy's algorithm in two reductions: the largest weighted z = x/t, then the
    # signed sum Σ b·exp(z - max) in float64 (numsoft.logsumexp does the same): weights
    # that cancel give -inf with sign 0, NaN in b gives NaN.
    bb = _aligned(bd, a, "b")
    active = bb != 0 if w is None else (bb != 0) & w
    z = a.astype(compute) / compute.type(t) if t != 1.0 else a.astype(compute)
    top = da.max(da.where(active, z, -np.inf), axis=axes, keepdims=True)
    top = da.where(da.isfinite(top), top, 0)  # ±inf or no entry: exp(z) itself
    terms = da.where(active, bb.astype(compute) * da.exp(da.where(active, z - top, 0)), 0)
    total = da.sum(terms, axis=axes, keepdims=keepdims, dtype=np.float64)
    if not keepdims:
        top = da.squeeze(top, axis=axes)
    meta = _meta(total.ndim, result)
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
    return _softmax_pipeline(g, g_args, w, algorithm, False).astype(args.result)


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
    a, args, w = _setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    axes, t = args.axes, args.t
    s = _check_s(s)
    f64 = np.dtype(np.float64)
    if w is None:
        block = functools.partial(_ssmax_logits, n=math.prod(a.shape[ax] for ax in axes), s=s, t=t)
        g = a.map_blocks(block, dtype=f64, meta=_meta(a.ndim, f64))
    else:
        counts = w.sum(axis=axes, keepdims=True)
        block = functools.partial(_ssmax_logits, s=s, t=t)
        g = da.map_blocks(block, a, counts, dtype=f64, meta=_meta(a.ndim, f64))
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
    a, args, w = _setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    t = args.t
    f64 = np.dtype(np.float64)
    g = a.map_blocks(functools.partial(_stablemax_logits, t=t), dtype=f64, meta=_meta(a.ndim, f64))
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
    a, args, w = _setup(x, Request(axis, out, dtype, where, temperature, algorithm))
    t = args.t
    f64 = np.dtype(np.float64)
    g = a.map_blocks(
        functools.partial(_softplus_l1_logits, t=t), dtype=f64, meta=_meta(a.ndim, f64)
    )
    return _variant(g, args, w, algorithm)


# ---------------------------------------------------------------- the NumPy API on Dask arrays
#
# ``numsoft.softmax(dask_array)`` and every other public function of the NumPy API come
# here (``_frontend.memory_of``): the functions above run lazily, whatever the chunks;
# the row-wise variants and the backward passes are mapped over blocks that hold whole
# rows; the rest raise, naming what to do. Nothing is computed by the call.

#: The row-wise variants with no chunked reduction: mapped over blocks of whole rows.
BLOCKWISE_ROWS = frozenset(
    {
        "adaptive_softmax",
        "entmax",
        "entmax15",
        "log_stablemax",
        "multimax",
        "rowmax_pot",
        "sa_softmax",
        "sigmoid_attention",
        "softpick",
        "sparsemax",
        "topk_softmax",
    }
)

#: The backward passes (two inputs): mapped over blocks of whole rows of both.
BLOCKWISE_PAIRS = frozenset(
    {
        "softmax_backward",
        "log_softmax_backward",
        "sparsemax_backward",
        "entmax15_backward",
        "stablemax_backward",
    }
)

_FUSED = "a fused function, its result is not shaped like its input"

#: The functions with no Dask form, and why.
NO_DASK_FORM = {
    "gumbel_softmax": "its noise depends on each entry's place in the whole array",
    "softmax_topk": _FUSED,
    "cross_entropy": _FUSED,
    "linear_cross_entropy": _FUSED,
    "attention": _FUSED,
}


def route(func, x, args, kwargs):
    """``func(*args, **kwargs)`` of the NumPy API for a Dask array ``x`` (among
    them), lazily.

    ``func`` is the public function (it pickles by reference, so blocks run on
    distributed workers). Argument errors are raised now, as by the lazy forms.
    """
    name = func.__name__
    if name in NO_DASK_FORM:
        raise TypeError(
            f"{name} has no Dask form ({NO_DASK_FORM[name]}); call it on x.compute() "
            f"for an in-memory result. numsoft.dask computes {', '.join(__all__)} lazily "
            f"over any chunks, and the row-wise variants map over blocks of whole rows"
        )
    bound = signature_of(func).bind(*args, **kwargs)
    bound.apply_defaults()
    given = bound.arguments
    target = given.pop("target", "cpu")
    if target != "cpu":
        raise ValueError(
            f"target={target!r}: numsoft computes Dask arrays on the CPU; map numsoft "
            f"over the blocks with dask.array.map_blocks to run them elsewhere"
        )
    if name in __all__:
        return globals()[name](**given)
    if name in BLOCKWISE_ROWS:
        return _map_rows(func, given)
    if name in BLOCKWISE_PAIRS:
        return _map_pairs(func, given)
    raise TypeError(f"{name} has no Dask form")  # a new public function not classified


class DaskCalls:
    """``_frontend.memory_of``'s answer for a Dask array: a call builds a graph
    (``route``)."""

    call = staticmethod(route)


DASK = DaskCalls()


def _whole_rows(name: str, a: da.Array, axes: tuple[int, ...]) -> None:
    for ax in axes:
        if len(a.chunks[ax]) > 1:
            raise ValueError(
                f"{name} on a Dask array needs whole rows in each block, but axis {ax} "
                f"is split into {len(a.chunks[ax])} chunks: rechunk it first "
                f"(x.rechunk({{{ax}: -1}})). numsoft.dask's {', '.join(__all__)} take "
                f"split rows"
            )


def _empty_rows(a: da.Array, axes: tuple[int, ...]):
    """(an empty NumPy array whose rows are as long as ``a``'s, its axes): calling the
    NumPy API on it checks every argument and gives the result dtype, computing and
    compiling nothing."""
    shape = (0,) + tuple(a.shape[ax] if ax in axes else 0 for ax in range(a.ndim))
    return np.empty(shape, a.dtype), tuple(ax + 1 for ax in axes)


def _rows_block(xb, wb=None, *, func, kwargs):
    return func(xb, **kwargs) if wb is None else func(xb, where=wb, **kwargs)


def _map_rows(func, given) -> da.Array:
    """A row-wise variant mapped over blocks of whole rows (``x`` first in ``given``)."""
    (xname, x), *rest = given.items()
    kwargs = dict(rest)
    _reject_out(kwargs.pop("out"))
    a = _as_dask(x, xname)
    axes = normalize_axes(kwargs["axis"], a.ndim)
    _whole_rows(func.__name__, a, axes)
    where = kwargs.pop("where")
    empty, empty_axes = _empty_rows(a, axes)
    sample_where = None if where is None else np.ones(empty.shape, np.bool_)
    result = func(empty, **{**kwargs, "axis": empty_axes}, where=sample_where).dtype
    block = functools.partial(_rows_block, func=func, kwargs=kwargs)
    arrays = [a] if where is None else [a, _aligned(_as_mask(where), a, "where")]
    return da.map_blocks(block, *arrays, dtype=result, meta=_meta(a.ndim, result))


def _map_pairs(func, given) -> da.Array:
    """A backward pass mapped over blocks of whole rows of its two broadcast inputs."""
    (aname, a), (bname, b), (_, axis) = given.items()
    a, b = _as_dask(a, aname), _as_dask(b, bname)
    shape = broadcast_pair(aname, a, bname, b)
    a = da.broadcast_to(a, shape)
    b = da.broadcast_to(b, shape).rechunk(a.chunks)
    axes = normalize_axes(axis, len(shape))
    _whole_rows(func.__name__, a, axes)
    empty, empty_axes = _empty_rows(a, axes)
    result = func(empty, np.empty(empty.shape, b.dtype), empty_axes).dtype
    block = functools.partial(func, axis=axis)
    return da.map_blocks(block, a, b, dtype=result, meta=_meta(len(shape), result))
