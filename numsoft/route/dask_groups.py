"""Dask arrays in the segment functions (SPEC §9): ``segment_softmax``,
``segment_log_softmax``, ``segment_logsumexp`` and ``segment_softmax_backward`` of a
Dask ``x`` (or ``y``) chunked anyhow, the grouped axis included, lazily.

Groups may cross chunk boundaries. Each chunk along the grouped axis is summarized by
its partial statistics of every group (``segment_logsumexp`` of the chunk's part of
each group: one entry per group, beside the other axes), and the partials are merged by the
associative ``t·logaddexp(a/t, b/t)`` (a tree over the chunks). A second statistic,
the log of the number of ``+inf`` entries, keeps SPEC §1's ``+inf`` rule (they share
the group's mass) when such entries sit in several chunks. Each block is then written
by the NumPy API on the block's own part of each group, shifted by its group's
``(chunk lse − merged lse)/t``: a group inside one chunk is shifted by exactly 0, so
its values are the NumPy API's. ``segment_logsumexp`` is the merged statistic. The
backward pass has one statistic, each group's Σ y·dy, merged by addition.

``offsets`` are a NumPy array (checked now); ``segment_ids`` may be a NumPy array or a
Dask array along the grouped axis (with ``num_segments``, since counting the groups
would compute it; its values are checked when the blocks run). The per-block work
uses the public functions, looked up by name (``route.public_function``): this layer
sits below them.
"""

from __future__ import annotations

import functools

import numpy as np

from ..frontdoor.arguments import check_temperature, resolve_dtypes
from . import public_function
from .dask_graphs import aligned, as_dask, as_mask, da, empty_meta, reject_out

__all__ = ["GROUPED", "route_groups"]

_MODULE = "numsoft.groups.segments"
#: The segment functions with a Dask form.
GROUPED = frozenset(
    {"segment_softmax", "segment_log_softmax", "segment_logsumexp", "segment_softmax_backward"}
)


def _segment(name: str):
    return public_function(f"{_MODULE}:{name}")


# ---------------------------------------------------------------- blocks (NumPy side)
#
# Module-level functions bound with functools.partial: they pickle by reference. A
# block of statistics holds, along the grouped axis, the lse of each of the ``count``
# groups, then the log of each group's number of +inf entries.


def _halves(stats, ax):
    count = stats.shape[ax] // 2
    return (
        stats[_along(ax, stats.ndim, slice(0, count))],
        stats[_along(ax, stats.ndim, slice(count, 2 * count))],
    )


def _local_groups(location, offsets, ids, count: int) -> dict:
    """The keyword arguments that give a block its part of every group (``location``:
    the block's (start, stop) along the grouped axis)."""
    if ids is not None:
        return {"segment_ids": ids, "num_segments": count}
    return {"offsets": np.clip(offsets, *location) - location[0]}


def _split_rest(rest, has_ids, ax):
    """(the block's ids as 1-D or None, its mask or None) from the extra blocks."""
    ids = None
    if has_ids:  # broadcast over the other axes: one line of them
        ids = np.moveaxis(rest[0], ax, 0)[(slice(None),) + (0,) * (rest[0].ndim - 1)]
    masks = rest[1:] if has_ids else rest
    return ids, (masks[0] if masks else None)


def _statistics_block(xb, *rest, has_ids, ax, offsets, count, t, block_info=None):
    ids, wb = _split_rest(rest, has_ids, ax)
    groups = _local_groups(block_info[0]["array-location"][ax], offsets, ids, count)
    lse = _segment("segment_logsumexp")
    part = lse(xb, **groups, axis=ax, where=wb, temperature=t)
    infinite = np.isposinf(xb)
    if infinite.any():
        marks = np.where(infinite, 0.0, -np.inf).astype(part.dtype)
        count_inf = lse(marks, **groups, axis=ax, where=wb)
    else:  # the common block: no +inf to count
        count_inf = np.full_like(part, -np.inf)
    return np.concatenate([part, count_inf], axis=ax)


def _merge_block(a, b, *, ax, t):
    (la, ka), (lb, kb) = _halves(a, ax), _halves(b, ax)
    with np.errstate(invalid="ignore"):
        return np.concatenate([t * np.logaddexp(la / t, lb / t), np.logaddexp(ka, kb)], axis=ax)


def _write_block(xb, sb, mb, *rest, name, has_ids, ax, offsets, count, t, start, result,
                 block_info=None):  # fmt: skip
    """The NumPy API on the block's part of each group, shifted to the whole group."""
    ids, wb = _split_rest(rest, has_ids, ax)
    lo, hi = block_info[0]["array-location"][ax]
    groups = _local_groups((start + lo, start + hi), offsets, ids, count)
    local = _segment(name)(xb, **groups, axis=ax, where=wb, temperature=t)
    (lse, k), (lse_all, k_all) = _halves(sb, ax), _halves(mb, ax)
    with np.errstate(invalid="ignore"):
        shift = np.where(lse == lse_all, 0.0, (lse - lse_all) / t)
        shift = np.where(lse_all == np.inf, k - k_all, shift).astype(local.dtype)
    if ids is not None:
        per_entry = np.take(shift, ids, axis=ax)
    else:
        per_entry = np.repeat(shift, np.diff(groups["offsets"]), axis=ax)
    if name == "segment_log_softmax":
        y = np.where(per_entry == -np.inf, -np.inf, local + per_entry)
    else:
        y = np.where(per_entry == -np.inf, 0.0, local * np.exp(per_entry))
    return y.astype(result, copy=False)


# ---------------------------------------------------------------- the graph


def _groups(name, a, ax, segment_ids, offsets, num_segments):
    """(offsets as NumPy or None, ids as a Dask array of ``a``'s rank or None, count).
    NumPy groups get the NumPy API's checks now (on an empty ``x``: nothing runs)."""
    n = a.shape[ax]
    if isinstance(segment_ids, da.Array):
        if offsets is not None:
            raise ValueError(f"{name}: give exactly one of segment_ids and offsets")
        if num_segments is None:
            raise ValueError(
                f"{name}: segment_ids given as a Dask array needs num_segments (counting "
                f"the groups would compute the ids)"
            )
        if segment_ids.ndim != 1 or segment_ids.shape[0] != n:
            raise ValueError(
                f"{name}: segment_ids must have one id per entry of the grouped axis "
                f"({n}), got shape {segment_ids.shape}"
            )
        if segment_ids.dtype.kind not in "iu":
            raise TypeError(f"{name}: segment_ids must hold integers, got {segment_ids.dtype}")
        ids, count = segment_ids, int(num_segments)
    else:
        lse = _segment("segment_logsumexp")
        empty = np.zeros((n, 0))
        count = lse(empty, segment_ids, offsets=offsets, num_segments=num_segments).shape[0]
        if offsets is not None:
            return np.asarray(offsets).astype(np.int64), None, count
        ids = da.from_array(np.asarray(segment_ids).astype(np.int64), chunks=(a.chunks[ax],))
    shape = tuple(-1 if d == ax else 1 for d in range(a.ndim))
    chunks = tuple(a.chunks[ax] if d == ax else (1,) for d in range(a.ndim))
    ids = ids.astype(np.int64).reshape(shape).rechunk(chunks)
    return None, da.broadcast_to(ids, a.shape, chunks=a.chunks), count


def _along(ax: int, ndim: int, piece: slice) -> tuple:
    return tuple(piece if d == ax else slice(None) for d in range(ndim))


def _axis(name: str, axis, ndim: int) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int (the axis the groups lie along)")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of {ndim} dimensions")
    return int(axis) % ndim


def _graph(a, extra, ax, width, statistics, merge, write, dtype, result):
    """The two passes over ``a`` (and the ``extra`` arrays beside it): ``statistics``
    of each block (``width`` entries along ``ax``), merged over the chunks of ``ax`` in
    a tree, then ``write(block, its chunk's statistics, the merged ones, *extra blocks,
    start=…)`` per chunk; (the merged statistics, the written array or None)."""
    chunks = tuple((width,) * len(c) if d == ax else c for d, c in enumerate(a.chunks))
    stats = da.map_blocks(
        statistics, a, *extra, chunks=chunks, dtype=dtype, meta=empty_meta(a.ndim, dtype)
    )
    pieces = [stats[_along(ax, a.ndim, slice(i * width, (i + 1) * width))]
              for i in range(len(a.chunks[ax]))]  # fmt: skip
    merged = pieces
    while len(merged) > 1:  # a tree of pairwise merges
        pairs = [da.map_blocks(merge, merged[i], merged[i + 1], dtype=dtype)
                 for i in range(0, len(merged) - 1, 2)]  # fmt: skip
        merged = pairs + merged[len(pairs) * 2 :]
    if write is None:
        return merged[0], None
    edges = np.concatenate(([0], np.cumsum(a.chunks[ax]))).tolist()
    out = []
    for i, piece in enumerate(pieces):
        take = _along(ax, a.ndim, slice(edges[i], edges[i + 1]))
        out.append(da.map_blocks(
            functools.partial(write, start=edges[i]), a[take], piece, merged[0],
            *(e[take] for e in extra), dtype=result, meta=empty_meta(a.ndim, result),
        ))  # fmt: skip
    return merged[0], da.concatenate(out, axis=ax)


def route_groups(name: str, given: dict) -> da.Array:
    """``name(**given)`` for a Dask ``x`` or ``y``, lazily (the module docstring)."""
    if name == "segment_softmax_backward":
        return _backward(given)
    reject_out(given.get("out"))
    a = as_dask(given["x"])
    ax = _axis(name, given["axis"], a.ndim)
    t = check_temperature(given["temperature"])
    compute, result = resolve_dtypes(a.dtype, given["dtype"])
    offsets, ids, count = _groups(
        name, a, ax, given["segment_ids"], given["offsets"], given["num_segments"]
    )
    extra = [] if ids is None else [ids]
    if given["where"] is not None:
        extra.append(aligned(as_mask(given["where"]), a, "where"))
    options = {"has_ids": ids is not None, "ax": ax, "offsets": offsets, "count": count, "t": t}
    write = None
    if name != "segment_logsumexp":
        write = functools.partial(_write_block, name=name, result=result, **options)
    merged, written = _graph(
        a, extra, ax, 2 * count, functools.partial(_statistics_block, **options),
        functools.partial(_merge_block, ax=ax, t=t), write, compute, result,
    )  # fmt: skip
    if written is None:
        return merged[_along(ax, a.ndim, slice(0, count))].astype(result)
    return written


# ---------------------------------------------------------------- segment_softmax_backward


def _group_of_entries(location, offsets, ids, count):
    """Each entry's group along the grouped axis of a block (1-D)."""
    if ids is not None:
        return ids
    return np.repeat(
        np.arange(count), np.diff(_local_groups(location, offsets, None, count)["offsets"])
    )


def _dot_block(yb, dyb, *rest, has_ids, ax, offsets, count, compute, block_info=None):
    """Σ y·dy of each group over the block's part of it."""
    ids, _ = _split_rest(rest, has_ids, ax)
    where = _group_of_entries(block_info[0]["array-location"][ax], offsets, ids, count)
    product = np.moveaxis(yb.astype(compute) * dyb.astype(compute), ax, 0)
    sums = np.zeros((count,) + product.shape[1:], compute)
    np.add.at(sums, where, product)
    return np.moveaxis(sums, 0, ax)


def _add_block(a, b):
    return a + b


def _backward_block(yb, sb, mb, dyb, *rest, has_ids, ax, offsets, count, compute, start,
                    block_info=None):  # fmt: skip
    ids, _ = _split_rest(rest, has_ids, ax)
    lo, hi = block_info[0]["array-location"][ax]
    where = _group_of_entries((start + lo, start + hi), offsets, ids, count)
    return yb.astype(compute) * (dyb.astype(compute) - np.take(mb, where, axis=ax))


def _backward(given: dict) -> da.Array:
    name = "segment_softmax_backward"
    y, dy = as_dask(given["y"], "y"), as_dask(given["dy"], "dy")
    try:
        shape = np.broadcast_shapes(y.shape, dy.shape)
    except ValueError:
        raise ValueError(
            f"y of shape {y.shape} and dy of shape {dy.shape} do not broadcast"
        ) from None
    y = da.broadcast_to(y, shape)
    dy = da.broadcast_to(dy, shape).rechunk(y.chunks)
    ax = _axis(name, given["axis"], y.ndim)
    compute, _ = resolve_dtypes(np.result_type(y.dtype, dy.dtype), None)
    offsets, ids, count = _groups(
        name, y, ax, given["segment_ids"], given["offsets"], given["num_segments"]
    )
    extra = [dy] + ([] if ids is None else [ids])
    options = {"has_ids": ids is not None, "ax": ax, "offsets": offsets, "count": count,
               "compute": compute}  # fmt: skip
    _, dx = _graph(
        y, extra, ax, count, functools.partial(_dot_block, **options), _add_block,
        functools.partial(_backward_block, **options), compute, compute,
    )  # fmt: skip
    return dx
