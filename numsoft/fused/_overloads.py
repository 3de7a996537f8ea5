"""``@njit`` entry points of the fused operations (SPEC §6).

Inside a user's jitted function ``numsoft.softmax_topk``, ``numsoft.cross_entropy``,
``numsoft.linear_cross_entropy`` and ``numsoft.attention`` resolve here. They run the
same kernels (and, for ``linear_cross_entropy``, the same sweep function) as the Python
API, so results agree. Supported there:

- C-contiguous float32/float64 arrays of 1–3 dimensions (``h``, ``W``: 2-D; q, k, v:
  2-D or 3-D of the same rank, batch sizes equal or 1; ``mask``: 2-D or 3-D);
- an integer ``axis`` (``softmax_topk``: no ``axis=None``);
- ``labels`` a C-contiguous integer array (an integer for 1-D logits);
- ``cross_entropy``'s ``where``: a boolean array of the logits' shape, the classes last;
- ``reduction``, ``return_lse`` and ``return_grad`` as compile-time constants (they
  decide the result type; a runtime value is a ``TypeError``).

Anything else raises a ``TypeError`` naming the argument (``misuse``). Argument helpers come
from ``numsoft._overloads``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from .._linked import linked
from .._overloads import (
    EITHER,
    _check_array,
    _default_value,
    _geometry,
    _is_absent,
    _literal,
    _split3,
    misuse,
)
from ..cpu._jit import read_only_array
from ..cpu.paths import specialize
from ._kept_classes import (
    check_kept_labels,
    kept_targets,
    masked_rows,
    smoothing_over_kept,
    zero_left_out,
)
from .attention import attention, attention_blocks
from .cross_entropy import (
    REDUCTIONS,
    cross_entropy,
    cross_entropy_columns,
    cross_entropy_row_at,
    cross_entropy_rows,
    gradient_scale,
    loss_constants,
)
from .linear_cross_entropy import (
    PARALLEL_STEPS,
    default_chunk,
    linear_cross_entropy,
    sweeps_with,
)
from .pair_rows import SOFT_TARGETS, pair_loss_rows
from .topk import softmax_topk, softmax_topk_columns, softmax_topk_rows

# Inside @njit, numsoft runs in the caller's thread: bind the serial twins of the
# parallel drivers (see ``numsoft.cpu._jit.parallel_kernel``).
softmax_topk_rows, softmax_topk_columns = softmax_topk_rows.serial, softmax_topk_columns.serial
attention_blocks = attention_blocks.serial
_serial_sweeps = register_jitable(sweeps_with(tuple(step.serial for step in PARALLEL_STEPS)))


def _fail(func: str, message: str):
    raise misuse(func, message)


def _check_int(func: str, name: str, value) -> None:
    value = _default_value(value)
    if isinstance(value, bool) or not isinstance(value, (int, types.Integer)):
        _fail(func, f"{name} must be an int, got {value}")


def _check_number(func: str, name: str, value) -> None:
    if not isinstance(_default_value(value), (int, float, types.Number)):
        _fail(func, f"{name} must be a number, got {value}")


def _constant(func: str, name: str, value, kind):
    """The compile-time value of ``value`` (a literal or the default)."""
    value = _default_value(value)
    if isinstance(value, types.Literal):
        value = value.literal_value
    if isinstance(value, kind):
        return value
    if isinstance(value, types.Type) and kind.__name__ in str(value):
        # A variable, or a constant Numba no longer sees as one (passed through another
        # function): the value decides the result type, so it must be in the call.
        _fail(
            func,
            f"{name} decides the result's type, so it must be written in the call as a "
            f"constant ({name}={_EXAMPLE[kind]!r}), not passed as a variable ({value})",
        )
    example = _EXAMPLE[kind]
    _fail(func, f"{name} must be a constant {kind.__name__} such as {example!r}, got {value}")


#: What a constant option looks like, for the errors.
_EXAMPLE = {bool: True, str: "mean"}


def _check_int_array(func: str, name: str, arr, ndim: int) -> None:
    if not (
        isinstance(arr, types.Array)
        and isinstance(arr.dtype, types.Integer)
        and arr.ndim == ndim
        and arr.layout == "C"
    ):
        _fail(func, f"{name} must be a C-contiguous integer array of {ndim} dimensions, got {arr}")


@register_jitable
def _identity(a):
    return a


@register_jitable
def _identity2(a, b):
    return a


# ---------------------------------------------------------------- softmax_topk


@overload(softmax_topk)
def _softmax_topk_overload(x, k, axis=-1):
    func = "softmax_topk"
    _check_array(func, "x", x)
    _check_int(func, "k", k)
    _check_int(func, "axis", axis)

    def impl(x, k, axis=-1):
        ax, outer, n, inner = _split3(x.shape, axis)
        if k < 1 or k > n:
            raise ValueError("k must satisfy 1 <= k <= x.shape[axis]")
        vals = np.empty((outer, k, inner), dtype=x.dtype)
        idx = np.empty((outer, k, inner), dtype=np.int64)
        if vals.size > 0:
            xr = read_only_array(x)
            if inner == 1:
                softmax_topk_rows(xr.reshape((outer, n)), vals[:, :, 0], idx[:, :, 0])
            else:
                softmax_topk_columns(xr.reshape((outer, n, inner)), vals, idx)
        shape = tuple_setitem(x.shape, ax, k)
        return vals.reshape(shape), idx.reshape(shape)

    return impl


# ---------------------------------------------------------------- shared helpers


@register_jitable
def _check_options(label_smoothing, z_loss):
    if not (0.0 <= label_smoothing <= 1.0):
        raise ValueError("label_smoothing must lie in [0, 1]")
    if not (z_loss >= 0.0 and np.isfinite(z_loss)):
        raise ValueError("z_loss must be finite and >= 0")


@register_jitable
def _count_valid(lab, n_classes, ignore_index):
    """Number of non-ignored labels; ValueError for a label outside [0, C)."""
    n_valid = 0
    for y in lab.flat:
        if y != ignore_index:
            if y < 0 or y >= n_classes:
                raise ValueError("labels must lie in [0, C) or equal ignore_index")
            n_valid += 1
    return n_valid


@register_jitable
def _total(rows):
    t = 0.0  # float64, as the Python API
    for v in rows.flat:
        t += v
    return t


@register_jitable
def _mean(rows, labels, n_valid):
    return rows.dtype.type(_total(rows) / n_valid if n_valid > 0 else np.nan)


@register_jitable
def _sum(rows, labels, n_valid):
    return rows.dtype.type(_total(rows))


@register_jitable
def _scalar_rows(rows, labels, n_valid):
    return rows[0, 0]


@register_jitable
def _rows_like_labels(rows, labels, n_valid):
    return rows.reshape(labels.shape)


@register_jitable
def _reduced(loss, red, shape, n):
    """Per-row losses reduced: "mean" over every entry (``n`` classes a row),
    "batchmean" over rows, "sum" (the Python API's ``divergences.reduce_rows``)."""
    count = loss.size * n if red == "mean" else (loss.size if red == "batchmean" else 1)
    return loss.dtype.type(_total(loss) / count if count > 0 else math.nan)


def _finisher(red: str, ndim: int):
    """``finish(loss, red, shape, n)`` for the reduction ``red`` of per-row losses of an
    input of ``ndim`` dimensions (``"none"``: shaped like the input without its classes)."""
    if red != "none":
        return _reduced
    if ndim == 1:
        return register_jitable(lambda loss, red, shape, n: loss[0])
    return register_jitable(lambda loss, red, shape, n: loss.reshape(shape[:-1]))


#: (return_lse, return_grad) → how (loss, lse, grads) are returned.
_OUTPUTS = {
    (False, False): register_jitable(lambda loss, lse, grads: loss),
    (True, False): register_jitable(lambda loss, lse, grads: (loss, lse)),
    (False, True): register_jitable(lambda loss, lse, grads: (loss, *grads)),
    (True, True): register_jitable(lambda loss, lse, grads: (loss, lse, *grads)),
}


def _loss_typing(
    func, reduction, return_lse, return_grad, label_smoothing, z_loss, ignore_index, per_row
):
    """Check the loss options; return (loss finisher, output assembler, want_grad, reduction).

    ``per_row`` shapes per-row values like the labels (used for ``"none"`` and lse).
    """
    red = _constant(func, "reduction", reduction, str)
    if red not in REDUCTIONS:
        _fail(func, f"reduction must be one of {REDUCTIONS}, got {red!r}")
    want_lse = _constant(func, "return_lse", return_lse, bool)
    want_grad = _constant(func, "return_grad", return_grad, bool)
    _check_number(func, "label_smoothing", label_smoothing)
    _check_number(func, "z_loss", z_loss)
    _check_int(func, "ignore_index", ignore_index)
    finish = {"mean": _mean, "sum": _sum, "none": per_row}[red]
    return finish, _OUTPUTS[(want_lse, want_grad)], want_grad, red


# ---------------------------------------------------------------- cross_entropy


@register_jitable
def _all_kept(x2, q2, where, eps, shape):
    return x2, q2, eps, np.empty((0, 0), dtype=np.bool_)


@register_jitable
def _kept_rows(where, n):
    """``where`` as C-contiguous (rows, C) booleans; the classes are the last axis."""
    return np.ascontiguousarray(where).reshape((-1, n))


@register_jitable
def _keep_classes(x2, q2, where, eps, shape):
    """Rows of logits and probability targets with ``where`` applied: the classes left
    out at -inf and without target, ε smoothed over the kept ones (ε is then 0), and
    the kept classes as (rows, C) booleans."""
    if where.shape != shape:
        raise ValueError("where must have the logits' shape inside @njit")
    keep2 = _kept_rows(where, x2.shape[1])
    return (
        read_only_array(masked_rows(x2, keep2)),
        read_only_array(kept_targets(q2, keep2, eps)),
        0.0,
        keep2,
    )


def _where_typing(func: str, where, x, without, given):
    """``without`` when no ``where`` is given, else ``given``, after checking ``where``
    is a boolean array of ``x``'s rank (its shape is checked at run time)."""
    if _is_absent(where):
        return without
    if not (isinstance(where, types.Array) and isinstance(where.dtype, types.Boolean)):
        _fail(func, f"where must be a boolean array, got {where}")
    if where.ndim != x.ndim:
        _fail(func, f"where must have the shape of the logits inside @njit, got {where}")
    return given


def _kept_class_cross_entropy(label_rows, finish, output, per_row, want_grad, red):
    """The implementation for class labels with ``where`` (classes last): the Python
    API's steps (``fused.cross_entropy._kept_class_cross_entropy``) with the serial row
    driver."""
    rows = specialize(cross_entropy_rows, GRADIENT=want_grad, STREAM_OUTPUT=False).serial
    grad_of = _grad_like if want_grad else _identity2

    def impl(logits, labels, axis=-1, where=None, label_smoothing=0.0, z_loss=0.0,
             ignore_index=-100, reduction="mean", return_lse=False,
             return_grad=False):  # fmt: skip
        if axis != -1 and axis != logits.ndim - 1:
            raise ValueError("cross_entropy: where= takes the last axis inside @njit")
        if where.shape != logits.shape:
            raise ValueError("where must have the logits' shape inside @njit")
        _check_options(label_smoothing, z_loss)
        n = logits.shape[-1]
        x2 = read_only_array(logits.reshape((-1, n)))
        keep2 = _kept_rows(where, n)
        lab2 = read_only_array(label_rows(labels, x2.shape[0], 1))
        n_valid = _count_valid(lab2, n, ignore_index)
        if n > 0:
            check_kept_labels(keep2, lab2[:, 0], ignore_index)
        scale = gradient_scale(red, n_valid)
        loss2 = np.empty((x2.shape[0], 1), dtype=logits.dtype)
        lse2 = np.empty((x2.shape[0], 1), dtype=logits.dtype)
        g3 = np.empty((x2.shape[0], n if want_grad else 0, 1), dtype=logits.dtype)
        if x2.shape[0] > 0:
            ce = (int(ignore_index), 1.0 - label_smoothing, 0.0, float(z_loss), scale)
            xm = read_only_array(masked_rows(x2, keep2))
            rows(xm, lab2[:, 0], ce, loss2[:, 0], lse2[:, 0], g3[:, :, 0])
            smoothing_over_kept(
                x2, keep2, lab2[:, 0], ignore_index, label_smoothing, scale, loss2[:, 0],
                g3[:, :, 0],
            )  # fmt: skip
            zero_left_out(g3[:, :, 0], keep2)
        return output(
            finish(loss2, labels, n_valid), per_row(lse2, labels, n_valid), (grad_of(g3, logits),)
        )

    return impl


@overload(cross_entropy, prefer_literal=True)
def _cross_entropy_overload(
    logits,
    labels,
    axis=-1,
    where=None,
    label_smoothing=0.0,
    z_loss=0.0,
    ignore_index=-100,
    reduction="mean",
    return_lse=False,
    return_grad=False,
):
    func = "cross_entropy"
    _check_array(func, "logits", logits)
    keep = _where_typing(func, where, logits, _all_kept, _keep_classes)
    if isinstance(labels, types.Array) and isinstance(labels.dtype, types.Float):
        return _soft_target_cross_entropy(
            logits, labels, axis, keep, reduction, return_lse, return_grad
        )
    if logits.ndim == 1:
        if not isinstance(labels, types.Integer):
            _fail(func, f"labels must be an integer for 1-D logits, got {labels}")
        per_row = _scalar_rows
    else:
        _check_int_array(func, "labels", labels, logits.ndim - 1)
        per_row = _rows_like_labels
    _check_int(func, "axis", axis)
    finish, output, want_grad, red = _loss_typing(
        func, reduction, return_lse, return_grad, label_smoothing, z_loss, ignore_index, per_row
    )
    if keep is not _all_kept:
        label_rows = _scalar_label_rows if logits.ndim == 1 else _label_rows
        return _kept_class_cross_entropy(label_rows, finish, output, per_row, want_grad, red)
    if logits.ndim == 1 and not want_grad:
        return _one_row_cross_entropy(logits, axis, label_smoothing, z_loss, red, output)
    label_rows = _scalar_label_rows if logits.ndim == 1 else _label_rows
    grad_of = _grad_like if want_grad else _identity2
    # The serial twins of the drivers, with or without the gradient (one path each).
    rows = specialize(cross_entropy_rows, GRADIENT=want_grad, STREAM_OUTPUT=False).serial
    columns = specialize(cross_entropy_columns, GRADIENT=want_grad, STREAM_OUTPUT=False).serial

    def impl(
        logits,
        labels,
        axis=-1,
        where=None,
        label_smoothing=0.0,
        z_loss=0.0,
        ignore_index=-100,
        reduction="mean",
        return_lse=False,
        return_grad=False,
    ):
        ax, outer, n, inner = _split3(logits.shape, axis)
        _check_options(label_smoothing, z_loss)
        lab2 = read_only_array(label_rows(labels, outer, inner))
        n_valid = _count_valid(lab2, n, ignore_index)
        loss2 = np.empty((outer, inner), dtype=logits.dtype)
        lse2 = np.empty((outer, inner), dtype=logits.dtype)
        g3 = np.empty((outer, n if want_grad else 0, inner), dtype=logits.dtype)
        ce = loss_constants(ignore_index, label_smoothing, n, z_loss, gradient_scale(red, n_valid))
        if loss2.size > 0:
            xr = read_only_array(logits)
            if inner == 1:
                rows(xr.reshape((outer, n)), lab2[:, 0], ce, loss2[:, 0], lse2[:, 0], g3[:, :, 0])
            else:
                columns(xr.reshape((outer, n, inner)), lab2, ce, loss2, lse2, g3)
        return output(
            finish(loss2, labels, n_valid), per_row(lse2, labels, n_valid), (grad_of(g3, logits),)
        )

    return impl


@register_jitable
def _soft_target_rows(logits, targets, axis, label_smoothing, z_loss):
    """Both arrays as read-only (rows, C) arrays, after the run-time checks."""
    if axis != -1 and axis != logits.ndim - 1:
        raise ValueError("cross_entropy: probability targets take the last axis inside @njit")
    if logits.shape != targets.shape:
        raise ValueError("cross_entropy: probability targets must have the logits' shape")
    if z_loss != 0.0:
        raise ValueError("cross_entropy: z_loss is for class labels, not probability targets")
    if not (0.0 <= label_smoothing <= 1.0):
        raise ValueError("label_smoothing must lie in [0, 1]")
    n = logits.shape[-1]
    q2 = np.ascontiguousarray(targets).astype(logits.dtype).reshape((-1, n))
    for v in q2.flat:
        if v < 0:
            raise ValueError("cross_entropy: probability targets must not be negative")
    return read_only_array(logits.reshape((-1, n))), read_only_array(q2), n


def _soft_target_cross_entropy(logits, targets, axis, keep, reduction, return_lse, return_grad):
    """The implementation of ``cross_entropy`` for float ``targets`` shaped like
    ``logits`` (the Python API's ``pair_rows`` kernel, serial); ``keep`` applies
    ``where`` (``_where_typing``)."""
    func = "cross_entropy"
    if targets.ndim != logits.ndim:
        _fail(
            func,
            f"labels must be integers shaped like the logits without their axis, or "
            f"probability targets shaped like the logits, got {targets}",
        )
    _check_int(func, "axis", axis)
    red = _constant(func, "reduction", reduction, str)
    if red not in REDUCTIONS:
        _fail(func, f"reduction must be one of {REDUCTIONS}, got {red!r}")
    if _constant(func, "return_lse", return_lse, bool):
        _fail(func, "return_lse is for class labels, not probability targets")
    want_grad = _constant(func, "return_grad", return_grad, bool)
    rows_driver = specialize(
        pair_loss_rows, PAIR_LOSS=SOFT_TARGETS, GRADIENT=want_grad, SECOND_GRADIENT=False
    ).serial
    finish = _finisher("batchmean" if red == "mean" else red, logits.ndim)
    per_rows = "batchmean" if red == "mean" else red
    grad_of = _grad_like if want_grad else _identity2
    output = _OUTPUTS[(False, want_grad)]

    def impl(logits, labels, axis=-1, where=None, label_smoothing=0.0, z_loss=0.0,
             ignore_index=-100, reduction="mean", return_lse=False,
             return_grad=False):  # fmt: skip
        x2, q2, n = _soft_target_rows(logits, labels, axis, label_smoothing, z_loss)
        x2, q2, label_smoothing, keep2 = keep(x2, q2, where, label_smoothing, logits.shape)
        rows = x2.shape[0]
        w = 1.0 / rows if red == "mean" and rows > 0 else 1.0
        params = (1.0 - label_smoothing, label_smoothing / n if n > 0 else 0.0, w, 0.0)
        loss = np.zeros(rows, dtype=logits.dtype)
        g = np.empty((rows, n if want_grad else 0), dtype=logits.dtype)
        if rows > 0 and n > 0:
            rows_driver(x2, q2, params, loss, g, np.empty((rows, 0), dtype=logits.dtype))
            zero_left_out(g, keep2)
        result = finish(loss, per_rows, logits.shape, n)
        return output(result, loss, (grad_of(g, logits),))

    return impl


def _known_valid_options(label_smoothing, z_loss) -> bool:
    """Whether both options are known while typing (literals, defaults) and valid."""
    eps, z = _literal(label_smoothing), _literal(z_loss)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (eps, z))
    return numbers and 0.0 <= eps <= 1.0 and 0.0 <= z < math.inf


def _one_row_cross_entropy(logits, axis, label_smoothing, z_loss, red, output):
    """The implementation for 1-D logits and an integer label, without a gradient: one
    call of the row kernel by address (``numsoft._linked``), nothing allocated. The same
    values as the general path: the row's loss and lse stored in the logits' dtype, then
    reduced over the one row (an ignored label: no valid row)."""
    axis_unknown = _geometry(logits, axis) == EITHER
    options_known = _known_valid_options(label_smoothing, z_loss)
    row = linked(cross_entropy_row_at, GRADIENT=False)

    def impl(
        logits,
        labels,
        axis=-1,
        where=None,
        label_smoothing=0.0,
        z_loss=0.0,
        ignore_index=-100,
        reduction="mean",
        return_lse=False,
        return_grad=False,
    ):
        if axis_unknown:  # else checked while typing
            _split3(logits.shape, axis)
        if not options_known:
            _check_options(label_smoothing, z_loss)
        n = logits.shape[0]
        valid = labels != ignore_index
        if valid and (labels < 0 or labels >= n):
            raise ValueError("labels must lie in [0, C) or equal ignore_index")
        ignored, conf, eps_c, z, _ = loss_constants(ignore_index, label_smoothing, n, z_loss, 0.0)
        like = logits.dtype.type(0.0)
        loss64, lse64 = row(logits, n, labels, like, ignored, conf, eps_c, z)
        loss, lse = logits.dtype.type(loss64), logits.dtype.type(lse64)
        if red == "mean":
            loss = logits.dtype.type(1.0 * loss if valid else np.nan)
        return output(loss, lse, (lse,))

    return impl


@register_jitable
def _scalar_label_rows(label, outer, inner):
    return np.full((1, 1), label, dtype=np.int64)


@register_jitable
def _grad_like(g3, logits):
    return g3.reshape(logits.shape)


@register_jitable
def _label_rows(labels, outer, inner):
    if labels.size != outer * inner:
        raise ValueError("labels must have the shape of logits without the class axis")
    return labels.astype(np.int64).reshape((outer, inner))


# ---------------------------------------------------------------- linear_cross_entropy


@register_jitable
def _no_bias(bias, dtype):
    return np.empty(0, dtype=dtype)


@register_jitable
def _given_chunk(chunk_size, n, vocab, itemsize):
    return chunk_size


@register_jitable
def _default_chunk(chunk_size, n, vocab, itemsize):
    return default_chunk(n, vocab, itemsize)


@register_jitable
def _grads_with_dbias(dh, dW, dbias):
    return dh, dW, dbias


@register_jitable
def _grads(dh, dW, dbias):
    return dh, dW


def _require_scipy_blas(func: str) -> None:
    """Numba's ``np.dot`` binds SciPy's BLAS, which numsoft does not depend on: without
    SciPy, say so at typing time instead of Numba's ImportError from deep inside."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (optional: what Numba's np.dot calls)
    except ImportError:
        raise misuse(
            func,
            "its matrix products are Numba's np.dot, which needs SciPy's BLAS: "
            "pip install scipy (outside @njit, NumPy's BLAS runs them without it)",
        ) from None


def _check_hidden_and_weights(func: str, h, W) -> None:
    """``h`` (N, D) and ``W`` (V, D): 2-D arrays of one float dtype, and SciPy's BLAS."""
    _require_scipy_blas(func)
    _check_array(func, "h", h)
    _check_array(func, "W", W)
    if h.ndim != 2 or W.ndim != 2 or W.dtype != h.dtype:
        _fail(func, f"h and W must be 2-D arrays of one dtype, got {h} and {W}")


@register_jitable
def _hidden_shapes(h, W, labels, b):
    """(N, D, V) of ``h`` (N, D), ``W`` (V, D), ``labels`` (N,) and a bias of V entries
    or none, after the run-time checks of their shapes."""
    n, dim = h.shape
    vocab = W.shape[0]
    if W.shape[1] != dim:
        raise ValueError("W must have shape (V, D) with the D of h")
    if labels.size != n:
        raise ValueError("labels must have one entry per row of h")
    if b.size != 0 and b.size != vocab:
        raise ValueError("bias must have shape (V,)")
    return n, dim, vocab


@overload(linear_cross_entropy, prefer_literal=True)
def _linear_cross_entropy_overload(
    h,
    W,
    labels,
    bias=None,
    chunk_size=None,
    label_smoothing=0.0,
    z_loss=0.0,
    ignore_index=-100,
    reduction="mean",
    return_lse=False,
    return_grad=False,
):
    func = "linear_cross_entropy"
    _check_hidden_and_weights(func, h, W)
    _check_int_array(func, "labels", labels, 1)
    has_bias = not _is_absent(bias)
    if has_bias:
        _check_array(func, "bias", bias)
        if bias.ndim != 1 or bias.dtype != h.dtype:
            _fail(func, f"bias must be a 1-D array of dtype {h.dtype}, got {bias}")
    has_chunk = not _is_absent(chunk_size)
    if has_chunk:
        _check_int(func, "chunk_size", chunk_size)
    finish, output, want_grad, red = _loss_typing(
        func,
        reduction,
        return_lse,
        return_grad,
        label_smoothing,
        z_loss,
        ignore_index,
        _rows_like_labels,
    )
    bias_of = _identity2 if has_bias else _no_bias
    chunk_of = _given_chunk if has_chunk else _default_chunk
    grads_of = _grads_with_dbias if has_bias else _grads

    def impl(
        h,
        W,
        labels,
        bias=None,
        chunk_size=None,
        label_smoothing=0.0,
        z_loss=0.0,
        ignore_index=-100,
        reduction="mean",
        return_lse=False,
        return_grad=False,
    ):
        b = bias_of(bias, h.dtype)
        n, dim, vocab = _hidden_shapes(h, W, labels, b)
        chunk = chunk_of(chunk_size, n, vocab, h.itemsize)
        if chunk < 1:
            raise ValueError("chunk_size must be >= 1")
        _check_options(label_smoothing, z_loss)
        lab = labels.astype(np.int64)
        n_valid = _count_valid(lab, vocab, ignore_index)
        loss = np.empty(n, dtype=h.dtype)
        lse = np.empty(n)
        rows, cols = (n, dim) if want_grad else (0, 0)
        dh = np.empty((rows, cols), dtype=h.dtype)
        dW = np.empty((vocab if want_grad else 0, cols), dtype=h.dtype)
        dbias = np.empty(b.size if want_grad else 0, dtype=h.dtype)
        ce = loss_constants(
            ignore_index, label_smoothing, vocab, z_loss, gradient_scale(red, n_valid)
        )
        _serial_sweeps((h, W, b), lab, chunk, ce, want_grad, (loss, lse, dh, dW, dbias))
        return output(finish(loss, labels, n_valid), lse.astype(h.dtype), grads_of(dh, dW, dbias))

    return impl


# ---------------------------------------------------------------- attention


@register_jitable
def _lift2(a):
    return a.reshape((1, a.shape[0], a.shape[1]))


@register_jitable
def _first(a):
    return a[0]


@register_jitable
def _batch_index(size, batch):
    if size == batch:
        return np.arange(batch)
    if size != 1:
        raise ValueError("the batch sizes of q, k, v and mask must be equal or 1")
    return np.zeros(batch, dtype=np.int64)


@register_jitable
def _given_scale(scale, dim):
    if not np.isfinite(scale):
        raise ValueError("scale must be finite")
    return scale


@register_jitable
def _default_scale(scale, dim):
    return 1.0 / math.sqrt(dim) if dim > 0 else 1.0


def _mask_typing(mask_lift):
    @register_jitable
    def given_mask(mask, lq, lk):
        m3 = mask_lift(mask)
        if (m3.shape[1] != 1 and m3.shape[1] != lq) or (m3.shape[2] != 1 and m3.shape[2] != lk):
            raise ValueError("mask is not broadcastable to (..., Lq, Lk)")
        return np.broadcast_to(m3, (m3.shape[0], lq, lk))

    return given_mask


@register_jitable
def _no_mask(mask, lq, lk):
    return np.broadcast_to(np.ones((1, 1, 1), dtype=np.bool_), (1, lq, lk))


@overload(attention)
def _attention_overload(q, k, v, scale=None, mask=None, causal=False):
    func = "attention"
    for name, a in (("q", q), ("k", k), ("v", v)):
        _check_array(func, name, a)
    if not (q.ndim == k.ndim == v.ndim and q.ndim in (2, 3)):
        _fail(func, "q, k and v must all be 2-D or all be 3-D")
    if not (q.dtype == k.dtype == v.dtype):
        _fail(func, "q, k and v must have one dtype")
    has_mask = not _is_absent(mask)
    if has_mask:
        if not (
            isinstance(mask, types.Array)
            and mask.dtype == types.boolean
            and 2 <= mask.ndim <= q.ndim
            and mask.layout == "C"
        ):
            _fail(
                func,
                f"mask must be a C-contiguous bool array of 2 or q.ndim dimensions, got {mask}",
            )
        mask_of = _mask_typing(_lift2 if mask.ndim == 2 else _identity)
    else:
        mask_of = _no_mask
    if not isinstance(_default_value(causal), (bool, types.Boolean)):
        _fail(func, f"causal must be a bool, got {causal}")
    if _is_absent(scale):
        scale_of = _default_scale
    else:
        _check_number(func, "scale", scale)
        scale_of = _given_scale
    three_d = q.ndim == 3
    lift = _identity if three_d else _lift2
    result = _identity if three_d else _first

    def impl(q, k, v, scale=None, mask=None, causal=False):
        q3, k3, v3 = lift(q), lift(k), lift(v)
        lq, dim = q3.shape[1], q3.shape[2]
        lk, dv = v3.shape[1], v3.shape[2]
        if k3.shape[2] != dim or k3.shape[1] != lk:
            raise ValueError("k must have shape (..., Lk, D) matching q and v")
        mask3 = mask_of(mask, lq, lk)
        batch = max(q3.shape[0], k3.shape[0], v3.shape[0], mask3.shape[0])
        out3 = np.empty((batch, lq, dv), dtype=q.dtype)
        if out3.size > 0:
            maps = (
                _batch_index(q3.shape[0], batch),
                _batch_index(k3.shape[0], batch),
                _batch_index(v3.shape[0], batch),
                _batch_index(mask3.shape[0], batch),
            )
            options = (has_mask, causal, q.dtype.type(scale_of(scale, dim)))
            attention_blocks(
                read_only_array(q3),
                read_only_array(k3),
                read_only_array(v3),
                read_only_array(mask3),
                maps,
                options,
                out3,
            )
        return result(out3)

    return impl
