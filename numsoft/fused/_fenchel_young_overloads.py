"""``@njit`` entry points of the Fenchel–Young losses (SPEC §6).

Inside a user's jitted function ``numsoft.sparsemax_loss``, ``numsoft.entmax15_loss``
and ``numsoft.entmax_bisect_loss`` resolve here and run the Python API's kernel
(its serial twin, in the caller's thread). Supported there: a C-contiguous float32 or
float64 ``x`` of 2 dimensions with the classes last (``axis=-1`` or ``1``), ``labels``
a C-contiguous 1-D integer array, ``reduction`` and ``return_grad`` as constants (they
decide the result type). Anything else raises a ``TypeError`` naming the argument.
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload, register_jitable

from .._overloads import _check_array
from ..cpu._jit import read_only_array
from ..cpu.paths import specialize
from ..cpu.variants.fenchel_young import fenchel_young_rows
from ..vocabulary import ENTMAX, ENTMAX15, SPARSEMAX
from ._overloads import (
    _OUTPUTS,
    _check_int,
    _check_int_array,
    _check_number,
    _constant,
    _count_valid,
    _fail,
    _mean,
    _sum,
    gradient_scale,
)
from .fenchel_young import REDUCTIONS, entmax15_loss, entmax_bisect_loss, sparsemax_loss


@register_jitable
def _per_row(rows, labels, n_valid):
    return rows


def _typing(func, x, labels, axis, ignore_index, reduction, return_grad, code):
    """Check the arguments; (the row kernel, the loss finisher, the output assembler)."""
    _check_array(func, "x", x)
    if x.ndim != 2:
        _fail(func, f"x must have 2 dimensions (rows, classes) inside @njit, got {x.ndim}")
    _check_int_array(func, "labels", labels, 1)
    _check_int(func, "axis", axis)
    _check_int(func, "ignore_index", ignore_index)
    red = _constant(func, "reduction", reduction, str)
    if red not in REDUCTIONS:
        _fail(func, f"reduction must be one of {tuple(REDUCTIONS)}, got {red!r}")
    want_grad = _constant(func, "return_grad", return_grad, bool)
    finish = {"mean": _mean, "sum": _sum, "none": _per_row}[REDUCTIONS[red]]
    rows = specialize(fenchel_young_rows, VARIANT=code).serial
    return rows, finish, _OUTPUTS[(False, want_grad)], REDUCTIONS[red]


@register_jitable
def _loss(rows, x, labels, alpha, n_iter, axis, ignore_index, red):
    """(per-row losses, gradient rows, number of rows not ignored)."""
    if axis != -1 and axis != 1:
        raise ValueError("axis must be the class axis, -1 or 1, inside @njit")
    n_rows, n = x.shape
    if labels.size != n_rows:
        raise ValueError("labels must have one label per row of x")
    n_valid = _count_valid(labels, n, ignore_index)
    loss = np.zeros(n_rows, dtype=x.dtype)
    g = np.empty((n_rows, n), dtype=x.dtype)
    if n_rows > 0 and n > 0:
        scale = gradient_scale(red, n_valid)
        lab = read_only_array(labels.astype(np.int64))
        rows(read_only_array(x), lab, alpha, n_iter, ignore_index, scale, loss, g)
    return loss, g, n_valid


def _overload_with_alpha(func, name: str, code: int, alpha: float):
    """The overload of a loss whose map has a fixed α (sparsemax: 2, entmax15: 1.5)."""

    @overload(func, prefer_literal=True)
    def _loss_overload(
        x, labels, axis=-1, ignore_index=-100, reduction="elementwise_mean", return_grad=False
    ):
        rows, finish, output, red = _typing(
            name, x, labels, axis, ignore_index, reduction, return_grad, code
        )

        def impl(x, labels, axis=-1, ignore_index=-100, reduction="elementwise_mean",
                 return_grad=False):  # fmt: skip
            loss, g, n_valid = _loss(rows, x, labels, alpha, 1, axis, ignore_index, red)
            return output(finish(loss, labels, n_valid), loss, (g,))

        return impl


_overload_with_alpha(sparsemax_loss, "sparsemax_loss", SPARSEMAX, 2.0)
_overload_with_alpha(entmax15_loss, "entmax15_loss", ENTMAX15, 1.5)


@overload(entmax_bisect_loss, prefer_literal=True)
def _entmax_bisect_loss_overload(
    x, labels, alpha=1.5, n_iter=50, axis=-1, ignore_index=-100, reduction="elementwise_mean",
    return_grad=False,
):  # fmt: skip
    func = "entmax_bisect_loss"
    _check_number(func, "alpha", alpha)
    _check_int(func, "n_iter", n_iter)
    rows, finish, output, red = _typing(
        func, x, labels, axis, ignore_index, reduction, return_grad, ENTMAX
    )

    def impl(x, labels, alpha=1.5, n_iter=50, axis=-1, ignore_index=-100,
             reduction="elementwise_mean", return_grad=False):  # fmt: skip
        if not (alpha > 1.0 and np.isfinite(alpha)):
            raise ValueError("entmax_bisect_loss: alpha must be a finite number > 1")
        if n_iter < 1:
            raise ValueError("entmax_bisect_loss: n_iter must be at least 1")
        loss, g, n_valid = _loss(rows, x, labels, float(alpha), n_iter, axis, ignore_index, red)
        return output(finish(loss, labels, n_valid), loss, (g,))

    return impl
