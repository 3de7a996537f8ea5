"""Softmax over groups of any length along one axis: ``segment_softmax``,
``segment_log_softmax``, ``segment_logsumexp`` and ``segment_softmax_backward``
(SPEC §9).

The groups come as ``offsets`` (CSR, PyG's ``ptr``) or ``segment_ids`` (sorted or
not). The input goes through the front door as ``softmax``'s does (``out``, ``dtype``,
``where``, ``temperature``, any layout). Groups in order run the row or column kernels
of ``softmax`` (``numsoft.cpu.groups``): a group has §1's numerics exactly as a row of
the same values. Unsorted ids are read in their own order, three passes over x (the
groups' maxima, sums and the output) with no gather; where a group holds NaN, +inf or
only -inf, the entries are gathered into group order for the row kernels instead.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._docstrings import filled
from ..cpu.groups import (
    backward_groups_columns,
    backward_groups_rows,
    balanced_spans,
    logsumexp_groups_columns,
    logsumexp_groups_rows,
    max_by_ids,
    softmax_by_ids,
    softmax_groups_columns,
    softmax_groups_rows,
    sum_exp_by_ids,
)
from ..cpu.memory import HOST, read_only, source3
from ..cpu.paths import specialize
from ..cpu.rows import path_constants
from ..cpu.threads import core_threads_for
from ..frontdoor.arguments import (
    Request,
    as_input_array,
    broadcast_pair,
    check_out,
    normalize_axes,
    resolve_dtypes,
)
from ..frontdoor.layout import plan_layout
from ..frontdoor.prepare import prepare
from ..frontdoor.run import run_rowwise
from ..route import follows_dask_input
from ..vocabulary import THREE_PASS_STORE
from .arguments import Groups, groups_of

__all__ = [
    "segment_softmax",
    "segment_log_softmax",
    "segment_logsumexp",
    "segment_softmax_backward",
]

_GROUPS = """
    segment_ids : array_like of int, optional
        The group of each entry along ``axis`` (length ``x.shape[axis]``), in ``[0,
        num_segments)``, sorted or not. Exactly one of ``segment_ids`` and ``offsets``.
    offsets : array_like of int, optional
        CSR offsets (PyG's ``ptr``): group ``s`` is entries ``offsets[s]:offsets[s +
        1]``; non-decreasing, from 0 to ``x.shape[axis]``.
    num_segments : int, optional
        The number of groups with ``segment_ids`` (default: the largest id + 1); groups
        without entries are empty.
    axis : int, optional
        The axis the groups lie along (default 0, the edge axis of a graph); every
        other axis is independent (attention heads, say)."""

_COMMON = """
    out : ndarray, optional
        Preallocated result of the result's shape and dtype.
    dtype : dtype, optional
        Result dtype (float16, float32 or float64). Default: float32 for float16/float32
        input, float64 otherwise.
    where : array_like of bool, optional
        Mask broadcastable to ``x``; ``False`` entries are excluded from their group.
    temperature : float, optional
        Positive, finite; the function is applied to ``x / temperature``."""


def _doc(extra: str = ""):
    return filled("common", "    x : array_like\n        Input values." + _GROUPS + _COMMON + extra)


def _one_axis(func: str, axis) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(
            f"{func}: axis must be an int (the axis the groups lie along), got {axis!r}"
        )
    return int(axis)


def _on_threads(driver, elements: int):
    """(``driver``, or its serial twin when a call on ``elements`` runs on one thread;
    the number of tasks to split it into)."""
    tasks = core_threads_for(elements)
    return (driver if tasks > 1 else driver.serial), tasks


#: Spans of groups per thread: more spans than threads let a thread that finishes
#: early take another (one of two vCPUs here often runs slower; 2^22 float32 in groups
#: of mean 16, 2 threads: 8.0 ms with 2 spans, 5.4 ms with 8 or more).
SPANS_PER_THREAD = 8


def _driver(rows_kernel, columns_kernel, shape3, **constants):
    """(the driver for ``shape3``, whether it takes rows, the number of spans)."""
    outer, n, inner = shape3
    rows = inner == 1
    kernel = specialize(rows_kernel if rows else columns_kernel, **constants)
    driver, tasks = _on_threads(kernel, outer * n * inner)
    return driver, rows, (tasks * SPANS_PER_THREAD if tasks > 1 else 1)


def _softmax_constants(log_output: bool, groups: Groups, shape3, itemsize: int) -> dict:
    """The path constants of the softmax group kernels: rows (``inner == 1``) whose
    groups are all short take ``softmax_row``'s short-row form (its exponentials in a
    stack block: 2 reads, 1 write; 2^22 float32 in groups of mean 16, 2 threads,
    5.4 → 4.5 ms); every other call the long-row form."""
    longest = int(np.max(np.diff(groups.offsets))) if shape3[2] == 1 and groups.count else None
    constants = path_constants(THREE_PASS_STORE, log_output, longest, itemsize)
    return {**constants, "LANE_TILES": 0, "LOG_GROUPS": False}


def _fill_masked_groups(y3, mask3, offsets, fill) -> None:
    """Set the groups of ``y3`` with no True entry in ``mask3`` to ``fill`` (SPEC §1's
    value of a fully masked row; the kernels give NaN for a group of -inf)."""
    lengths = np.diff(offsets)
    filled_groups = lengths > 0
    has = np.logical_or.reduceat(mask3, offsets[:-1][filled_groups], axis=1)
    empty = np.zeros((mask3.shape[0], lengths.size, mask3.shape[2]), bool)
    empty[:, filled_groups, :] = ~has
    if empty.any():
        y3[np.repeat(empty, lengths, axis=1)] = fill


def _statistics_by_ids(src3, groups: Groups, inv_t):
    """(max, Σ exp) of every group, ``(outer, count, inner)``, from ids not in group
    order, read in their own order (no gather: ``cpu.groups.max_by_ids``); None when a
    non-empty group holds NaN, +inf or only -inf, whose numerics the row kernels keep.

    Each task takes a contiguous span of the entries and keeps partial (max, sum)
    arrays, merged here."""
    maxima, tasks = _on_threads(max_by_ids, src3.size)
    sums, _ = _on_threads(sum_exp_by_ids, src3.size)
    m = maxima(src3, groups.ids, groups.count, tasks).max(axis=0)
    s = sums(src3, groups.ids, m, inv_t, tasks).sum(axis=0)
    filled = (np.diff(groups.offsets) > 0)[None, :, None]
    if np.any(filled & ~(np.isfinite(m) & np.isfinite(s))):
        return None
    return m, s


def _device_result(host: np.ndarray, out):
    """A host result as the device call's result: in ``out`` (a device array) or new."""
    from numba import cuda  # lazily: numba-cuda is optional

    from ..cuda.memory import DEVICE

    if out is None:
        return cuda.to_device(np.ascontiguousarray(host))
    res = DEVICE.as_out(out)
    res[...] = cuda.to_device(np.ascontiguousarray(host, dtype=res.dtype))
    return res


def _on_host(call, x, req: Request):
    """``call(host x, req)`` for a device ``x`` whose groups the device kernels do not
    take (ids not in group order), the result copied back to the device."""
    from ..cuda.memory import DEVICE, as_device

    host_req = req._replace(out=None, where=DEVICE.host_mask(req.where))
    return _device_result(call(as_device(x).copy_to_host(), host_req), req.out)


def _fill_masked_groups_on(memory, y3, mask3, offsets, fill) -> None:
    """``_fill_masked_groups`` of a host or device ``y3`` (a device one through a host
    copy)."""
    if memory is HOST:
        _fill_masked_groups(y3, mask3, offsets, fill)
        return
    host = y3.copy_to_host()
    _fill_masked_groups(host, mask3, offsets, fill)
    y3[...] = host


def _segment_rowwise(func, x, groups_args, req: Request, log_output: bool):
    _one_axis(func, req.axis)
    p = prepare(x, req, exp_output=True)
    groups = groups_of(func, p.layout.n, *groups_args)
    fill = -np.inf if log_output else 0.0
    mask3 = None
    if p.mask is not None:
        mask3 = np.transpose(p.mask, p.layout.perm).reshape(p.layout.shape3)
    if p.memory is not HOST:  # a device array: the device group kernels
        if groups.ids is not None:

            def again(x_host, req_host):
                return _segment_rowwise(func, x_host, groups_args, req_host, log_output)

            return _on_host(again, x, req)
        from ..frontdoor import gpu  # lazily: numba-cuda is optional

        on_groups = gpu.groups_apply(p, groups.offsets, log_output)

        def apply_on_device(src3, target3):
            on_groups(src3, target3)
            if mask3 is not None:
                _fill_masked_groups_on(p.memory, target3, mask3, groups.offsets, fill)

        return run_rowwise(p, apply_on_device, fill)
    driver, rows, spans = _driver(
        softmax_groups_rows,
        softmax_groups_columns,
        p.layout.shape3,
        **_softmax_constants(log_output, groups, p.layout.shape3, p.compute.itemsize),
    )
    bounds = balanced_spans(groups.offsets, spans)

    def apply(src3, target3):
        if groups.ids is not None and (stats := _statistics_by_ids(src3, groups, p.inv_t)):
            m, s = stats  # every group regular: one more pass writes the output in place
            with np.errstate(divide="ignore"):  # empty groups: no entry reads their scale
                scale = (np.log(s) if log_output else 1.0 / s).astype(src3.dtype)
            write, tasks = _on_threads(specialize(softmax_by_ids, LOG_OUTPUT=log_output), src3.size)
            write(src3, target3, groups.ids, m, scale, p.inv_t, tasks)
            return
        order = groups.order
        if order is None:
            src, dst = src3, target3
        else:  # the entries in group order, the result scattered back below
            src, dst = read_only(src3[:, order, :]), np.empty_like(src3)
        if rows:
            driver(src[:, :, 0], dst[:, :, 0], groups.offsets, bounds, p.inv_t)
        else:
            driver(src, dst, groups.offsets, bounds, p.inv_t)
        if mask3 is not None:
            _fill_masked_groups(
                dst, mask3 if order is None else mask3[:, order, :], groups.offsets, fill
            )
        if order is not None:
            target3[:, order, :] = dst

    return run_rowwise(p, apply, fill)


@follows_dask_input
@_doc()
def segment_softmax(
    x: ArrayLike,
    segment_ids: ArrayLike | None = None,
    *,
    offsets: ArrayLike | None = None,
    num_segments: int | None = None,
    axis: int = 0,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """Softmax within each group of entries along ``axis``.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        ``x``'s shape: each group sums to 1 (per position of the other axes). A group
        of one entry is 1; masked entries are 0, and a group with no unmasked entry is
        all 0. Special values as for ``softmax``, per group.

    See Also
    --------
    segment_log_softmax, segment_logsumexp, softmax

    Examples
    --------
    Attention over each node's incoming edges: edges 0-1 go to node 0, 2-4 to node 1.

    >>> import numpy as np
    >>> import numsoft
    >>> scores = np.array([0.0, 1.0, 2.0, 2.0, 2.0])
    >>> numsoft.groups.segment_softmax(scores, offsets=[0, 2, 5])
    array([0.26894142, 0.73105858, 0.33333333, 0.33333333, 0.33333333])
    >>> numsoft.groups.segment_softmax(scores, np.array([1, 0, 1, 0, 1]))
    array([0.06337894, 0.26894142, 0.46831053, 0.73105858, 0.46831053])
    """
    req = Request(axis, out, dtype, where, temperature, "three-pass-store")
    return _segment_rowwise(
        "segment_softmax", x, (segment_ids, offsets, num_segments), req, log_output=False
    )


@follows_dask_input
@_doc()
def segment_log_softmax(
    x: ArrayLike,
    segment_ids: ArrayLike | None = None,
    *,
    offsets: ArrayLike | None = None,
    num_segments: int | None = None,
    axis: int = 0,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """Log-softmax within each group of entries along ``axis``.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        ``x``'s shape; ``-inf`` at masked entries and for groups with no unmasked
        entry.

    See Also
    --------
    segment_softmax, log_softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.groups.segment_log_softmax(np.array([0.0, 1.0, 5.0]), offsets=[0, 2, 3])
    array([-1.31326169, -0.31326169,  0.        ])
    """
    req = Request(axis, out, dtype, where, temperature, "three-pass-store")
    return _segment_rowwise(
        "segment_log_softmax", x, (segment_ids, offsets, num_segments), req, log_output=True
    )


def _groups_first(a3: np.ndarray, groups: Groups) -> np.ndarray:
    """``a3`` (read-only) with its middle axis in group order."""
    return a3 if groups.order is None else read_only(a3[:, groups.order, :])


@follows_dask_input
@_doc()
def segment_logsumexp(
    x: ArrayLike,
    segment_ids: ArrayLike | None = None,
    *,
    offsets: ArrayLike | None = None,
    num_segments: int | None = None,
    axis: int = 0,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """``t·log Σ exp(x/t)`` of each group of entries along ``axis``.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        ``x``'s shape with ``axis`` replaced by the number of groups; ``-inf`` for an
        empty group (or one whose entries are all masked).

    See Also
    --------
    segment_softmax, logsumexp

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.groups.segment_logsumexp(np.array([0.0, 0.0, 3.0]), np.array([0, 0, 2]))
    array([0.69314718,       -inf, 3.        ])
    """
    func = "segment_logsumexp"
    ax = _one_axis(func, axis)
    req = Request(ax, None, dtype, where, temperature, "three-pass-store")
    p = prepare(x, req, index_order=True, reduction=True)
    layout = p.layout
    groups = groups_of(func, layout.n, segment_ids, offsets, num_segments)
    outer, _, inner = layout.shape3
    shape = tuple(groups.count if d == layout.axes[0] else size for d, size in enumerate(p.a.shape))
    if p.memory is not HOST:  # a device array: the device group kernels
        if groups.ids is not None or not (outer * groups.count * inner and layout.n):

            def again(x_host, req_host):
                return segment_logsumexp(
                    x_host, segment_ids, offsets=offsets, num_segments=num_segments,
                    axis=ax, out=None, dtype=dtype, where=req_host.where,
                    temperature=temperature,
                )  # fmt: skip

            return _on_host(again, x, req._replace(out=out))
        from ..frontdoor import gpu  # lazily: numba-cuda is optional

        lse3 = gpu.groups_logsumexp(p, groups.offsets)
        in_perm = tuple(shape[d] for d in layout.perm)
        host = np.transpose(lse3.reshape(in_perm), np.argsort(layout.perm)).astype(p.result)
        return _device_result(host, out)
    res = check_out(out, shape, p.result)
    lse3 = np.empty((outer, groups.count, inner), p.compute)
    stats = None
    if lse3.size and groups.ids is not None:
        stats = _statistics_by_ids(p.src3, groups, p.inv_t)
    if stats is not None:
        m, s = stats
        with np.errstate(divide="ignore", invalid="ignore"):  # empty groups: -inf
            lse3[...] = np.where(s > 0, m + np.log(s) / p.inv_t, -np.inf)
    elif lse3.size:
        driver, rows, spans = _driver(
            logsumexp_groups_rows,
            logsumexp_groups_columns,
            layout.shape3,
            **path_constants(THREE_PASS_STORE),
        )
        src = _groups_first(p.src3, groups)
        bounds = balanced_spans(groups.offsets, spans)
        if rows:
            driver(src[:, :, 0], lse3[:, :, 0], groups.offsets, bounds, p.inv_t)
        else:
            driver(src, lse3, groups.offsets, bounds, p.inv_t)
    in_perm = tuple(shape[d] for d in layout.perm)
    lse = np.transpose(lse3.reshape(in_perm), np.argsort(layout.perm))
    if res is None:
        return lse.astype(p.result)
    res[...] = lse
    return res


@follows_dask_input
def segment_softmax_backward(
    y: ArrayLike,
    dy: ArrayLike,
    segment_ids: ArrayLike | None = None,
    *,
    offsets: ArrayLike | None = None,
    num_segments: int | None = None,
    axis: int = 0,
) -> np.ndarray:
    """The vector–Jacobian product of ``segment_softmax``: ``y·(dy − Σ_group y·dy)``.

    Parameters
    ----------
    y : array_like
        The output of ``segment_softmax``.
    dy : array_like
        The upstream gradient, broadcastable with ``y``.
    segment_ids, offsets, num_segments, axis
        The groups, as given to ``segment_softmax``.

    Returns
    -------
    ndarray
        The gradient with respect to ``segment_softmax``'s input, of the broadcast
        shape; float32 for float16/float32 inputs, else float64.

    See Also
    --------
    segment_softmax, softmax_backward

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> y = numsoft.groups.segment_softmax(np.array([0.0, 0.0, 1.0]), offsets=[0, 2, 3])
    >>> numsoft.groups.segment_softmax_backward(y, np.array([1.0, 0.0, 5.0]), offsets=[0, 2, 3])
    array([ 0.25, -0.25,  0.  ])
    """
    func = "segment_softmax_backward"
    ax = _one_axis(func, axis)
    ya, dya = as_input_array(y, "y"), as_input_array(dy, "dy")
    shape = broadcast_pair("y", ya, "dy", dya)
    compute, result = resolve_dtypes(np.result_type(ya.dtype, dya.dtype), None)
    ya, dya = np.broadcast_to(ya, shape), np.broadcast_to(dya, shape)
    layout, view = plan_layout(ya, normalize_axes(ax, len(shape)))
    groups = groups_of(func, layout.n, segment_ids, offsets, num_segments)
    y3 = _groups_first(source3(ya, layout, view, compute), groups)
    dy3 = _groups_first(source3(dya, layout, layout.view3(dya), compute), groups)
    dx3, dx = layout.empty3(compute)
    if dx3.size == 0:
        return dx.astype(result, copy=False)
    target = dx3 if groups.order is None else np.empty_like(dx3)
    driver, rows, spans = _driver(backward_groups_rows, backward_groups_columns, dx3.shape)
    bounds = balanced_spans(groups.offsets, spans)
    if rows:
        driver(y3[:, :, 0], dy3[:, :, 0], target[:, :, 0], groups.offsets, bounds)
    else:
        driver(y3, dy3, target, groups.offsets, bounds)
    if groups.order is not None:
        dx3[:, groups.order, :] = target
    return dx.astype(result, copy=False)
