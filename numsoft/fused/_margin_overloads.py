"""``@njit`` entry point of ``margin_cross_entropy`` (SPEC §6, §10).

Inside a user's jitted function ``numsoft.margin_cross_entropy`` resolves here and runs
the Python API's row kernel (``margin.margin_rows``, its serial twin). Supported there:
C-contiguous float32/float64 cosines of 2 or 3 dimensions with the classes last,
``labels`` a C-contiguous integer array of the other axes' shape, ``reduction`` and
``return_grad`` as compile-time constants. Anything else raises a ``TypeError`` naming
the argument.
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload

from .._overloads import _check_array
from ..cpu._jit import read_only_array
from ..cpu.paths import specialize
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
    _mean,
    _rows_like_labels,
    _sum,
    gradient_scale,
)
from .cross_entropy import REDUCTIONS
from .margin import ROUNDING, margin_cross_entropy, margin_rows


@overload(margin_cross_entropy, prefer_literal=True)
def _margin_cross_entropy_overload(
    cos_logits, labels, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, axis=-1,
    ignore_index=-100, reduction="mean", return_grad=False,
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

    def impl(cos_logits, labels, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, axis=-1,
             ignore_index=-100, reduction="mean", return_grad=False):  # fmt: skip
        if axis != -1 and axis != cos_logits.ndim - 1:
            raise ValueError("margin_cross_entropy: axis must be the last axis inside @njit")
        if not (scale > 0.0 and np.isfinite(scale)):
            raise ValueError("margin_cross_entropy: scale must be positive and finite")
        n = cos_logits.shape[-1]
        x2 = read_only_array(cos_logits.reshape((-1, n)))
        if labels.size != x2.shape[0]:
            raise ValueError("margin_cross_entropy: labels must have one label per row")
        for v in x2.flat:
            if v > bound or v < -bound:
                raise ValueError("margin_cross_entropy: cos_logits must hold cosines, in [-1, 1]")
        lab = read_only_array(labels.reshape(-1).astype(np.int64))
        n_valid = _count_valid(lab, n, ignore_index)
        loss = np.zeros(x2.shape[0], dtype=cos_logits.dtype)
        g = np.empty((x2.shape[0], n if want_grad else 0), dtype=cos_logits.dtype)
        if x2.shape[0] > 0 and n > 0:
            w = gradient_scale(red, n_valid)
            params = (float(margin1), float(margin2), float(margin3), float(scale), w,
                      float(ignore_index))  # fmt: skip
            rows(x2, lab, params, loss, g)
        return output(finish(loss, labels, n_valid), loss, (grad_of(g, cos_logits),))

    return impl
