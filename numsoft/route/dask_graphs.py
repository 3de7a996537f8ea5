"""The Dask graphs of numsoft's lazy functions (``numsoft.dask``): their argument
checks, the NumPy side of their blocks, and the one- and two-pass pipelines.

- **Every normalized axis lies within one chunk**: each block holds whole rows, and the
  front door's CPU path (the NumPy API's) runs on each block
  (``dask.array.map_blocks``): one pass, exactly the CPU result.
- **A normalized axis is split across chunks**: two passes, no rechunking. Pass 1
  summarizes each block's piece of every row as an online partial ``(m, d)`` (max,
  Σ exp((x - m)/t); ``numsoft.cpu.partials``) and a tree reduction
  (``dask.array.reduction``) merges the partials of a row: ``M = max m_i``,
  ``D = Σ d_i·exp((m_i - M)/t)``, carrying NaN and ±inf so that SPEC §1 holds for the
  whole row. Pass 2 writes ``exp((x - M)/t) / D`` blockwise. ``logsumexp`` is
  ``M + t·log D``: pass 1 only.

The kernels of the split path run serially: Dask already runs one task per core.
"""

from __future__ import annotations

import functools
import math

import numpy as np

try:
    import dask.array as da
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "numsoft.dask needs Dask: pip install 'dask[array,distributed]' (numsoft's "
        "[dask] extra: pip install '.[dask]' from a checkout)"
    ) from exc

from ..cpu.memory import source3
from ..cpu.partials import (
    piece_partials_columns,
    piece_partials_rows,
    write_pieces_columns,
    write_pieces_rows,
)
from ..cpu.paths import specialize
from ..frontdoor.arguments import Arguments, Request, check_arguments, check_real_dtype
from ..frontdoor.layout import plan_layout
from ..frontdoor.run import run_logsumexp_cpu, run_softmax

# ---------------------------------------------------------------- arguments


def as_dask(x, name: str = "x") -> da.Array:
    """``x`` as a Dask array of real numbers with known chunk sizes."""
    try:
        a = x if isinstance(x, da.Array) else da.asarray(x)
    except Exception as exc:
        raise TypeError(f"{name} must be a Dask array or array-like: {exc}") from None
    check_real_dtype(a.dtype, name)  # the NumPy API's dtype rules
    if any(math.isnan(c) for dim in a.chunks for c in dim):
        raise ValueError(f"{name} has unknown chunk sizes: call {name}.compute_chunk_sizes()")
    return a


def aligned(a: da.Array, x: da.Array, name: str) -> da.Array:
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


def as_mask(where) -> da.Array:
    try:
        w = where if isinstance(where, da.Array) else da.asarray(where)
    except Exception as exc:
        raise TypeError(f"where must be a boolean array: {exc}") from None
    if w.dtype != np.bool_:
        raise TypeError(f"where must be a boolean array, got dtype {w.dtype}")
    return w


def reject_out(out) -> None:
    if out is not None:
        raise TypeError(
            "out is not supported for Dask arrays (they are immutable); "
            "write the result with dask.array.store instead"
        )


def within_one_chunk(x: da.Array, axes: tuple[int, ...]) -> bool:
    return all(len(x.chunks[ax]) == 1 for ax in axes)


def empty_meta(ndim: int, dtype) -> np.ndarray:
    return np.empty((0,) * ndim, dtype=dtype)


# ---------------------------------------------------------------- blocks (NumPy side)
#
# Module-level functions bound with functools.partial: they pickle by reference, so
# the graph runs on distributed workers that can import numsoft.


def _softmax_block(xb, wb=None, *, axes, result, t, algorithm, log_output):
    """``numsoft.softmax`` (``log_softmax``) of one block holding whole rows: the front
    door's CPU path, as the NumPy API runs it."""
    return run_softmax(xb, axes, None, result, wb, t, algorithm, log_output)


def _logsumexp_block(xb, wb=None, *, axes, result, t, algorithm):
    """``numsoft.logsumexp`` of one block holding whole rows, reduced axes kept."""
    req = Request(axes, None, result, wb, t, algorithm)
    return run_logsumexp_cpu(xb, req, None, True, False)


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
        meta=empty_meta(xc.ndim, pdt),
        name="numsoft-row-partials",
    )


def _compute_input(x: da.Array, w, compute) -> da.Array:
    """x in the compute dtype, with masked entries -inf."""
    if w is None:
        return x.astype(compute)
    block = functools.partial(_masked_block, compute=compute)
    return da.map_blocks(block, x, w, dtype=compute, meta=empty_meta(x.ndim, compute))


def softmax_pipeline(x, args: Arguments, w, algorithm, log_output):
    axes, compute, result, t = args.axes, args.compute, args.result, args.t
    if within_one_chunk(x, axes):
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
        return da.map_blocks(
            block, *args, dtype=result, meta=empty_meta(x.ndim, result), token=name
        )
    xc = _compute_input(x, w, compute)
    stats = _row_partials(xc, axes, args.inv_t)
    block = functools.partial(
        _write_block, axes=axes, inv_t=args.inv_t, log_output=log_output, result=result
    )
    y = da.map_blocks(
        block, xc, stats, dtype=result, meta=empty_meta(x.ndim, result), token="numsoft-normalize"
    )
    if w is not None:
        # A row with no unmasked entry is all -inf here (NaN from the kernels); SPEC §1
        # defines it as 0 (log: -inf).
        fill = result.type(-np.inf if log_output else 0.0)
        y = da.where(w.any(axis=axes, keepdims=True), y, fill)
    return y


def logsumexp_pipeline(x, args: Arguments, w, algorithm, keepdims):
    axes, compute, result, t = args.axes, args.compute, args.result, args.t
    if within_one_chunk(x, axes):
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
            meta=empty_meta(x.ndim, result),
            token="numsoft-logsumexp",
        )
        return lse if keepdims else da.squeeze(lse, axis=axes)
    stats = _row_partials(_compute_input(x, w, compute), axes, args.inv_t)
    block = functools.partial(_lse_from_partials, t=t, result=result)
    lse = stats.map_blocks(block, dtype=result, meta=empty_meta(x.ndim, result))
    return lse if keepdims else da.squeeze(lse, axis=axes)


def setup(x, req: Request, extra_dtype=None):
    """Validate the common arguments (SPEC §1) eagerly, before building any graph:
    (x as a Dask array, the checked ``Arguments``, the aligned mask or None)."""
    reject_out(req.out)
    a = as_dask(x)
    in_dtype = a.dtype if extra_dtype is None else np.result_type(a.dtype, extra_dtype)
    args = check_arguments(in_dtype, a.ndim, req.axis, req.dtype, req.temperature, req.algorithm)
    w = None if req.where is None else aligned(as_mask(req.where), a, "where")
    return a, args, w
