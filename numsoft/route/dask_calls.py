"""Dask arrays in the NumPy API: ``numsoft.softmax(dask_array)`` and every other public
function come here from the router (``route.router_of``) and return a lazy Dask array.

numsoft.dask's lazy functions (``dask_lazy``) run whatever the chunks; the row-wise
variants and the backward passes are mapped over blocks that hold whole rows; the
segment functions merge groups split across chunks (``dask_groups``); the rest
raise, naming what to do. Nothing is computed by the call.
"""

from __future__ import annotations

import functools

import numpy as np

from ..frontdoor.arguments import broadcast_pair, normalize_axes
from . import dask_lazy, signature_of
from .dask_graphs import aligned, as_dask, as_mask, da, empty_meta, reject_out
from .dask_groups import GROUPED, route_groups

#: The functions with a lazy form over any chunks (``numsoft.dask``).
LAZY = tuple(dask_lazy.__all__)

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
    "sparsemax_loss": _FUSED,
    "entmax15_loss": _FUSED,
    "entmax_bisect_loss": _FUSED,
    "attention": _FUSED,
    "kl_div": _FUSED,
    "jsd": _FUSED,
    "margin_cross_entropy": _FUSED,
    "sampled_cross_entropy": _FUSED,
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
            f"for an in-memory result. numsoft.dask computes {', '.join(LAZY)} lazily "
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
    if name in LAZY:
        return getattr(dask_lazy, name)(**given)
    if name in GROUPED:
        return route_groups(name, given)
    if name in BLOCKWISE_ROWS:
        return _map_rows(func, given)
    if name in BLOCKWISE_PAIRS:
        return _map_pairs(func, given)
    raise TypeError(f"{name} has no Dask form")  # a new public function not classified


#: ``route.router_of``'s entry point: a call on a Dask array builds a graph.
call = route


def _whole_rows(name: str, a: da.Array, axes: tuple[int, ...]) -> None:
    for ax in axes:
        if len(a.chunks[ax]) > 1:
            raise ValueError(
                f"{name} on a Dask array needs whole rows in each block, but axis {ax} "
                f"is split into {len(a.chunks[ax])} chunks: rechunk it first "
                f"(x.rechunk({{{ax}: -1}})). numsoft.dask's {', '.join(LAZY)} take "
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
    reject_out(kwargs.pop("out"))
    a = as_dask(x, xname)
    axes = normalize_axes(kwargs["axis"], a.ndim)
    _whole_rows(func.__name__, a, axes)
    where = kwargs.pop("where")
    empty, empty_axes = _empty_rows(a, axes)
    sample_where = None if where is None else np.ones(empty.shape, np.bool_)
    result = func(empty, **{**kwargs, "axis": empty_axes}, where=sample_where).dtype
    block = functools.partial(_rows_block, func=func, kwargs=kwargs)
    arrays = [a] if where is None else [a, aligned(as_mask(where), a, "where")]
    return da.map_blocks(block, *arrays, dtype=result, meta=empty_meta(a.ndim, result))


def _map_pairs(func, given) -> da.Array:
    """A backward pass mapped over blocks of whole rows of its two broadcast inputs."""
    (aname, a), (bname, b), (_, axis) = given.items()
    a, b = as_dask(a, aname), as_dask(b, bname)
    shape = broadcast_pair(aname, a, bname, b)
    a = da.broadcast_to(a, shape)
    b = da.broadcast_to(b, shape).rechunk(a.chunks)
    axes = normalize_axes(axis, len(shape))
    _whole_rows(func.__name__, a, axes)
    empty, empty_axes = _empty_rows(a, axes)
    result = func(empty, np.empty(empty.shape, b.dtype), empty_axes).dtype
    block = functools.partial(func, axis=axis)
    return da.map_blocks(block, a, b, dtype=result, meta=empty_meta(len(shape), result))
