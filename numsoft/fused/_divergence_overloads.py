"""``@njit`` entry points of the divergences (SPEC §6, §10).

Inside a user's jitted function ``numsoft.kl_div`` and ``numsoft.jsd`` resolve here and
run the Python API's row kernels (``pair_rows``, their serial twin, in the caller's
thread), so results agree. Supported there: C-contiguous float32 or float64 arrays of
one dtype and shape, 1 to 3 dimensions, with the classes last (``axis=-1`` or
``ndim - 1``); ``where`` a boolean array of their shape; ``reduction``, ``reverse`` and
``return_grad`` as compile-time constants (they decide the kernel and the result type).
Anything else raises a ``TypeError`` naming the argument.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .._overloads import _check_array, _is_absent, mask_input
from ..cpu._jit import read_only_array
from ..cpu.paths import specialize
from ._overloads import _check_int, _check_number, _constant, _fail, _finisher
from .divergences import DIVERGENCE_REDUCTIONS, jsd, kl_div, row_weight
from .pair_rows import JSD, KL, pair_loss_rows


@register_jitable
def _rows_of(x, y, axis, temperature):
    """Both inputs as read-only (rows, C) arrays, after the run-time checks."""
    if axis != -1 and axis != x.ndim - 1:
        raise ValueError("axis must be the last axis (-1) inside @njit")
    if x.shape != y.shape:
        raise ValueError("student_logits and teacher_logits must have one shape")
    if not (temperature > 0.0 and np.isfinite(temperature)):
        raise ValueError("temperature must be positive and finite")
    n = x.shape[-1]
    return read_only_array(x.reshape((-1, n))), read_only_array(y.reshape((-1, n))), n


def _typing(func, s, t, axis, temperature, reduction, return_grad):
    _check_array(func, "student_logits", s)
    _check_array(func, "teacher_logits", t)
    if s.dtype != t.dtype or s.ndim != t.ndim:
        _fail(func, f"student_logits ({s}) and teacher_logits ({t}) must have one dtype and rank")
    _check_int(func, "axis", axis)
    _check_number(func, "temperature", temperature)
    red = _constant(func, "reduction", reduction, str)
    if red not in DIVERGENCE_REDUCTIONS:
        _fail(func, f"reduction must be one of {DIVERGENCE_REDUCTIONS}, got {red!r}")
    want_grad = _constant(func, "return_grad", return_grad, bool)
    output = (
        (lambda loss, g, s: (loss, g.reshape(s.shape))) if want_grad else (lambda loss, g, s: loss)
    )
    return red, want_grad, _finisher(red, s.ndim), register_jitable(output)


def _student_first(code: int, want_grad: bool):
    """The loss of the rows in (student, teacher) order, the student's gradient first."""
    driver = specialize(
        pair_loss_rows, PAIR_LOSS=code, GRADIENT=want_grad, SECOND_GRADIENT=False
    ).serial

    @register_jitable
    def run(a2, b2, params, loss, g, none):
        driver(a2, b2, params, loss, g, none)

    return run


def _teacher_first(want_grad: bool):
    """KL(p_teacher ‖ p_student): the rows swapped, the student's gradient second."""
    driver = specialize(
        pair_loss_rows, PAIR_LOSS=KL, GRADIENT=False, SECOND_GRADIENT=want_grad
    ).serial

    @register_jitable
    def run(a2, b2, params, loss, g, none):
        driver(b2, a2, params, loss, none, g)

    return run


def _mask_typing(func, where):
    """``mask(x, where)``: the inputs as given, or with the masked entries at -inf
    (``numsoft._overloads.mask_input``)."""
    if not _is_absent(where) and not (
        isinstance(where, types.Array) and isinstance(where.dtype, types.Boolean)
    ):
        _fail(func, f"where must be a boolean array, got {where}")
    return mask_input


@register_jitable
def _divergence(run, s, t, axis, temperature, beta, red, want_grad):
    """(per-row losses, the student's gradient as (rows, C) or (rows, 0))."""
    a2, b2, n = _rows_of(s, t, axis, temperature)
    rows = a2.shape[0]
    loss = np.empty(rows, dtype=s.dtype)
    g = np.empty((rows, n if want_grad else 0), dtype=s.dtype)
    none = np.empty((rows, 0), dtype=s.dtype)
    if rows > 0 and n > 0:
        w = row_weight(red, rows, n)
        inv_t = 1.0 / temperature
        params = (inv_t, w, 0.0, 0.0) if beta < 0 else (inv_t, beta, w, 0.0)
        run(a2, b2, params, loss, g, none)
    elif rows > 0:
        loss[:] = math.nan
    return loss, g


@overload(kl_div, prefer_literal=True)
def _kl_div_overload(
    student_logits, teacher_logits, axis=-1, where=None, temperature=1.0, reverse=False,
    reduction="batchmean", return_grad=False,
):  # fmt: skip
    func = "kl_div"
    red, want_grad, finish, output = _typing(
        func, student_logits, teacher_logits, axis, temperature, reduction, return_grad
    )
    backwards = _constant(func, "reverse", reverse, bool)
    run = _student_first(KL, want_grad) if backwards else _teacher_first(want_grad)
    mask = _mask_typing(func, where)

    def impl(student_logits, teacher_logits, axis=-1, where=None, temperature=1.0,
             reverse=False, reduction="batchmean", return_grad=False):  # fmt: skip
        s, t = mask(student_logits, where), mask(teacher_logits, where)
        loss, g = _divergence(run, s, t, axis, temperature, -1.0, red, want_grad)
        n = student_logits.shape[-1]
        return output(finish(loss, red, student_logits.shape, n), g, student_logits)

    return impl


@overload(jsd, prefer_literal=True)
def _jsd_overload(
    student_logits, teacher_logits, beta=0.5, axis=-1, where=None, temperature=1.0,
    reduction="batchmean", return_grad=False,
):  # fmt: skip
    func = "jsd"
    _check_number(func, "beta", beta)
    red, want_grad, finish, output = _typing(
        func, student_logits, teacher_logits, axis, temperature, reduction, return_grad
    )
    run = _student_first(JSD, want_grad)
    mask = _mask_typing(func, where)

    def impl(student_logits, teacher_logits, beta=0.5, axis=-1, where=None, temperature=1.0,
             reduction="batchmean", return_grad=False):  # fmt: skip
        if not (0.0 < beta < 1.0):
            raise ValueError("jsd: beta must lie in (0, 1) inside @njit (for 0 or 1: kl_div)")
        s, t = mask(student_logits, where), mask(teacher_logits, where)
        loss, g = _divergence(run, s, t, axis, temperature, float(beta), red, want_grad)
        n = student_logits.shape[-1]
        return output(finish(loss, red, student_logits.shape, n), g, student_logits)

    return impl
