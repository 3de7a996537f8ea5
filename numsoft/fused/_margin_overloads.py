"""``@njit`` entry point of ``margin_cross_entropy`` (SPEC §6, §10).

Inside a user's jitted function ``numsoft.margin_cross_entropy`` resolves here and runs
the Python API's row kernel (``margin.margin_rows``, its serial twin). Supported there:
C-contiguous float32/float64 cosines of 2 or 3 dimensions with the classes last,
``labels`` a C-contiguous integer array of the other axes' shape, ``where`` a boolean
array of the cosines' shape, ``reduction`` and
``return_grad`` as compile-time constants. Anything else raises a ``TypeError`` naming
the argument.
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload, register_jitable

from .._overloads import _check_array
from ..cpu._jit import read_only_array
from ..cpu.paths import specialize
from ._kept_classes import check_kept_labels, masked_rows, zero_left_out
from ._overloads import (
    _OUTPUTS,
    _check_int,
    _check_int_array,
    _check_number,
    _constant,
    _count_valid,
    _fail,
    _grad_like,
    _identity2,
    _kept_rows,
    _mean,
    _rows_like_labels,
    _sum,
    _where_typing,
    gradient_scale,
)
from .cross_entropy import REDUCTIONS
from .margin import ROUNDING, margin_cross_entropy, margin_rows


@register_jitable
def _check_cosines(x2, keep2, bound):
    """ValueError for a cosine outside [-1, 1] beyond rounding (only the kept classes
    are read when ``keep2`` has rows)."""
    for i in range(x2.shape[0]):
        for j in range(x2.shape[1]):
            v = x2[i, j]
            if (keep2.shape[0] == 0 or keep2[i, j]) and (v > bound or v < -bound):
                raise ValueError("margin_cross_entropy: cos_logits must hold cosines, in [-1, 1]")


@register_jitable
def _cosines_as_given(x2, where, labels, ignore_index, bound, shape):
    none = np.empty((0, 0), dtype=np.bool_)
    _check_cosines(x2, none, bound)
    return x2, none


@register_jitable
def _kept_cosines(x2, where, labels, ignore_index, bound, shape):
    """The rows with the classes ``where`` leaves out at -inf, after the checks, and
    the kept classes as (rows, C) booleans."""
    if where.shape != shape:
        raise ValueError("where must have the shape of cos_logits inside @njit")
    keep2 = _kept_rows(where, x2.shape[1])
    _check_cosines(x2, keep2, bound)
    if x2.shape[1] > 0:
        check_kept_labels(keep2, labels, ignore_index)
    return read_only_array(masked_rows(x2, keep2)), keep2


@overload(margin_cross_entropy, prefer_literal=True)
def _margin_cross_entropy_overload(
    cos_logits, labels, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, axis=-1,
    where=None, ignore_index=-100, reduction="mean", return_grad=False,
):  # fmt: skip
    func = "margin_cross_entropy"
    _check_array(func, "cos_logits", cos_logits)
    if cos_logits.ndim < 2:
        _fail(func, "cos_logits must have 2 or 3 dimensions (rows, classes) inside @njit")
    _check_int_array(func, "labels", labels, cos_logits.ndim - 1)
    for name, value in (("margin1", margin1), ("margin2", margin2), ("margin3", margin3)):
        _check_number(func, name, value)
    _check_number(func, "scale", scale)
    _check_int(func, "axis", axis)
    _check_int(func, "ignore_index", ignore_index)
    red = _constant(func, "reduction", reduction, str)
    if red not in REDUCTIONS:
        _fail(func, f"reduction must be one of {REDUCTIONS}, got {red!r}")
    want_grad = _constant(func, "return_grad", return_grad, bool)
    finish = {"mean": _mean, "sum": _sum, "none": _rows_like_labels}[red]
    output = _OUTPUTS[(False, want_grad)]
    grad_of = _grad_like if want_grad else _identity2
    rows = specialize(margin_rows, GRADIENT=want_grad, STREAM_OUTPUT=False).serial
    bound = 1.0 + ROUNDING[cos_logits.dtype.bitwidth // 8]
    keep = _where_typing(func, where, cos_logits, _cosines_as_given, _kept_cosines)

    def impl(cos_logits, labels, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, axis=-1,
             where=None, ignore_index=-100, reduction="mean", return_grad=False):  # fmt: skip
        if axis != -1 and axis != cos_logits.ndim - 1:
            raise ValueError("margin_cross_entropy: axis must be the last axis inside @njit")
        if not (scale > 0.0 and np.isfinite(scale)):
            raise ValueError("margin_cross_entropy: scale must be positive and finite")
        n = cos_logits.shape[-1]
        x2 = read_only_array(cos_logits.reshape((-1, n)))
        if labels.size != x2.shape[0]:
            raise ValueError("margin_cross_entropy: labels must have one label per row")
        lab = read_only_array(labels.reshape(-1).astype(np.int64))
        n_valid = _count_valid(lab, n, ignore_index)
        x2, keep2 = keep(x2, where, lab, ignore_index, bound, cos_logits.shape)
        loss = np.zeros(x2.shape[0], dtype=cos_logits.dtype)
        g = np.empty((x2.shape[0], n if want_grad else 0), dtype=cos_logits.dtype)
        if x2.shape[0] > 0 and n > 0:
            w = gradient_scale(red, n_valid)
            params = (float(margin1), float(margin2), float(margin3), float(scale), w,
                      float(ignore_index))  # fmt: skip
            rows(x2, lab, params, loss, g)
            zero_left_out(g, keep2)
        return output(finish(loss, labels, n_valid), loss, (grad_of(g, cos_logits),))

    return impl
