"""``@njit`` entry points of ``segment_softmax``, ``segment_log_softmax`` and
``segment_logsumexp`` (SPEC §6 and §9).

Supported inside jitted code: ``x`` a C-contiguous float32/float64 array of 1 to 3
dimensions, the groups as ``offsets`` or ``segment_ids`` (1-D integer arrays; ids
sorted or not, ``num_segments`` an int), an integer ``axis`` and ``temperature``,
``where`` (a boolean array of x's shape) and ``out`` (an array of the result's shape
and dtype). ``dtype`` is refused with a ``TypeError`` saying so, as is anything else
numsoft cannot take there (``numsoft._overloads.misuse``). The kernels
are the Python API's group drivers on one thread, called by address
(``numsoft._linked``, ``numsoft.cpu.by_address``), so results agree with it.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from .._linked import linked
from .._overloads import (
    ROWS,
    _check_array,
    _geometry,
    _inv_temperature,
    _is_absent,
    _known_inverse_temperature,
    _split3,
    mask_input,
    misuse,
)
from ..cpu._jit import read_only_array
from ..cpu.by_address import (
    logsumexp_groups_columns_at,
    logsumexp_groups_rows_at,
    softmax_groups_columns_at,
    softmax_groups_rows_at,
)
from ..cpu.groups import ascending_offsets, counting_order, id_range_and_order
from ..cpu.rows import path_constants
from ..vocabulary import THREE_PASS_STORE
from .segments import segment_log_softmax, segment_logsumexp, segment_softmax


def _check_groups(func: str, segment_ids, offsets, num_segments) -> bool:
    """Whether the groups come as ids (else offsets); a TypeError for anything else."""
    given = [not _is_absent(a) for a in (segment_ids, offsets)]
    if given[0] == given[1]:
        raise misuse(func, "give exactly one of segment_ids and offsets")
    name, arr = ("segment_ids", segment_ids) if given[0] else ("offsets", offsets)
    if not (
        isinstance(arr, types.Array) and isinstance(arr.dtype, types.Integer) and arr.ndim == 1
    ):
        raise misuse(func, f"{name} must be a 1-D integer array, got {arr}")
    if not _is_absent(num_segments):
        if not given[0]:
            raise misuse(func, "num_segments goes with segment_ids, not offsets")
        if not isinstance(num_segments, types.Integer):
            raise misuse(func, f"num_segments must be an int, got {num_segments}")
    return given[0]


@register_jitable
def _checked_offsets(offsets, n):
    offs = np.ascontiguousarray(offsets).astype(np.int64)
    if offs.size == 0 or offs[0] != 0 or offs[-1] != n:
        raise ValueError("offsets must start at 0 and end at the grouped axis' length")
    for g in range(offs.size - 1):
        if offs[g + 1] < offs[g]:
            raise ValueError("offsets must be non-decreasing")
    return offs


@register_jitable
def _offsets_and_order(segment_ids, num_segments, n, counted):
    """(offsets, the entries in group order or an empty array when already in order)."""
    ids = read_only_array(np.ascontiguousarray(segment_ids).astype(np.int64))
    if ids.size != n:
        raise ValueError("segment_ids must have one id per entry of the grouped axis")
    low, high, ascending = (0, -1, True) if n == 0 else id_range_and_order(ids)
    if low < 0:
        raise ValueError("segment_ids must be >= 0")
    count = num_segments if counted else high + 1
    if count <= high:
        raise ValueError("segment_ids must lie in [0, num_segments)")
    if ascending:
        return ascending_offsets(ids, count), np.empty(0, np.int64)
    offs = np.zeros(count + 1, np.int64)
    for i in range(n):
        offs[ids[i] + 1] += 1
    offs = np.cumsum(offs)
    return offs, counting_order(ids, offs)


@register_jitable
def _gather(x3, order):
    out = np.empty_like(x3)
    for o in range(x3.shape[0]):
        for i in range(order.size):
            out[o, i, :] = x3[o, order[i], :]
    return out


@register_jitable
def _scatter(y3, order, dst3):
    for o in range(y3.shape[0]):
        for i in range(order.size):
            dst3[o, order[i], :] = y3[o, i, :]


def _grouped_input(by_ids: bool, counted: bool, temperature):
    """A jitted ``(x, segment_ids, offsets, num_segments, axis, temperature) →`` (x as
    ``(outer, n, inner)`` with its entries in group order, the offsets, that order (empty
    when x is in order already), the axis, outer, n, inner, 1/t), for one call's
    argument types: the branches its constants rule out are pruned before typing."""
    known_inv_t = _known_inverse_temperature(temperature)

    @register_jitable
    def grouped(x, segment_ids, offsets, num_segments, axis, temperature):
        ax, outer, n, inner = _split3(x.shape, axis)
        if known_inv_t is not None:
            inv_t = x.dtype.type(known_inv_t)
        else:
            inv_t = _inv_temperature(x, temperature)
        if by_ids:
            offs, order = _offsets_and_order(segment_ids, num_segments, n, counted)
        else:
            offs, order = _checked_offsets(offsets, n), np.empty(0, np.int64)
        x3 = x.reshape((outer, n, inner))
        return (_gather(x3, order) if order.size else x3), offs, order, ax, outer, n, inner, inv_t

    return grouped


@register_jitable
def _no_fill(y3, where, order, offs, fill):
    pass


@register_jitable
def _fill_masked_groups(y3, where, order, offs, fill):
    """``fill`` over each group with no entry kept (``y3`` in group order), as the
    Python API's ``segments._fill_masked_groups``."""
    keep3 = np.ascontiguousarray(where).reshape(y3.shape)
    if order.size:
        keep3 = _gather(keep3, order)
    for o in range(y3.shape[0]):
        for g in range(offs.size - 1):
            for j in range(y3.shape[2]):
                kept = False
                for i in range(offs[g], offs[g + 1]):
                    kept = kept or keep3[o, i, j]
                if not kept:
                    for i in range(offs[g], offs[g + 1]):
                        y3[o, i, j] = fill


@register_jitable
def _new_result(res, out):
    return res


@register_jitable
def _into_out(res, out):
    if out.shape != res.shape:
        raise ValueError("out has the wrong shape")
    out[...] = res
    return out


def _where_and_out(func: str, x, out, dtype, where, result_ndim: int):
    """(fill the groups left empty, return the result) for the call's ``where`` and
    ``out`` (the source is masked by ``mask_input``); ``dtype=`` is refused (cast the
    result instead)."""
    if not _is_absent(dtype):
        raise misuse(func, "dtype= is not supported there: cast the result (y.astype)")
    masked = not _is_absent(where)
    if masked and not (
        isinstance(where, types.Array)
        and isinstance(where.dtype, types.Boolean)
        and where.ndim == x.ndim
    ):
        raise misuse(func, f"where must be a boolean array of x's shape, got {where}")
    if not _is_absent(out) and not (
        isinstance(out, types.Array) and out.dtype == x.dtype and out.ndim == result_ndim
    ):
        raise misuse(func, f"out must be an array of the result's shape and dtype, got {out}")
    return (
        _fill_masked_groups if masked else _no_fill,
        _new_result if _is_absent(out) else _into_out,
    )


def _segment_overload(func: str, log_output: bool):
    def typer(
        x,
        segment_ids=None,
        offsets=None,
        num_segments=None,
        axis=0,
        out=None,
        dtype=None,
        where=None,
        temperature=1.0,
    ):
        _check_array(func, "x", x)
        by_ids = _check_groups(func, segment_ids, offsets, num_segments)
        fill_empty, result = _where_and_out(func, x, out, dtype, where, x.ndim)
        geometry = _geometry(x, axis)
        grouped = _grouped_input(by_ids, not _is_absent(num_segments), temperature)
        constants = path_constants(THREE_PASS_STORE, log_output)
        fill = -np.inf if log_output else 0.0
        rows = linked(softmax_groups_rows_at, **constants)
        columns = linked(softmax_groups_columns_at, **constants)

        def impl(
            x,
            segment_ids=None,
            offsets=None,
            num_segments=None,
            axis=0,
            out=None,
            dtype=None,
            where=None,
            temperature=1.0,
        ):
            src, offs, order, _, outer, n, inner, inv_t = grouped(
                mask_input(x, where), segment_ids, offsets, num_segments, axis, temperature
            )
            y3 = np.empty_like(src)
            count = offs.size - 1
            if x.size > 0:
                if geometry == ROWS or inner == 1:
                    rows(src, y3, offs, outer, n, count, inv_t)
                else:
                    columns(src, y3, offs, outer, n, inner, count, inv_t)
                fill_empty(y3, where, order, offs, fill)
            if order.size:
                res = np.empty_like(y3)
                _scatter(y3, order, res)
                return result(res.reshape(x.shape), out)
            return result(y3.reshape(x.shape), out)

        return impl

    return typer


overload(segment_softmax, prefer_literal=True)(_segment_overload("segment_softmax", False))
overload(segment_log_softmax, prefer_literal=True)(_segment_overload("segment_log_softmax", True))


@overload(segment_logsumexp, prefer_literal=True)
def _segment_logsumexp_overload(
    x,
    segment_ids=None,
    offsets=None,
    num_segments=None,
    axis=0,
    out=None,
    dtype=None,
    where=None,
    temperature=1.0,
):
    func = "segment_logsumexp"
    _check_array(func, "x", x)
    by_ids = _check_groups(func, segment_ids, offsets, num_segments)
    _, result = _where_and_out(func, x, out, dtype, where, x.ndim)
    geometry = _geometry(x, axis)
    grouped = _grouped_input(by_ids, not _is_absent(num_segments), temperature)
    rows = linked(logsumexp_groups_rows_at, **path_constants(THREE_PASS_STORE))
    columns = linked(logsumexp_groups_columns_at, **path_constants(THREE_PASS_STORE))

    def impl(
        x,
        segment_ids=None,
        offsets=None,
        num_segments=None,
        axis=0,
        out=None,
        dtype=None,
        where=None,
        temperature=1.0,
    ):
        src, offs, order, ax, outer, n, inner, inv_t = grouped(
            mask_input(x, where), segment_ids, offsets, num_segments, axis, temperature
        )
        count = offs.size - 1
        lse3 = np.full((outer, count, inner), -np.inf, dtype=x.dtype)
        if x.size > 0:
            if geometry == ROWS or inner == 1:
                rows(src, lse3, offs, outer, n, count, inv_t)
            else:
                columns(src, lse3, offs, outer, n, inner, count, inv_t)
        return result(lse3.reshape(tuple_setitem(x.shape, ax, count)), out)

    return impl
