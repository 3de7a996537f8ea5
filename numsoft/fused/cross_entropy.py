"""Fused cross-entropy: loss (and its gradient) from logits in one pass per row.

Per row of C logits x with label y, one read of x gives the online logsumexp
``lse = m + log Σ exp(x - m)`` (blocked online normalizer, ``_online_blocks``), the
label logit ``x_y`` (one gather) and, with label smoothing, ``Σ x``. With smoothing ε
and z-loss weight z the row loss is

    loss = (1 − ε)·(lse − x_y) + ε·(lse − mean(x)) + z·lse²
         = lse − (1 − ε)·x_y − (ε/C)·Σx + z·lse²

and its gradient with respect to the logits, for upstream weight w (1/#valid for
"mean", 1 otherwise), is

    ∂loss/∂x_j = w·(p_j·(1 + 2z·lse) − ε/C − (1 − ε)·[j = y]),  p = softmax(x).

The gradient is written in the same row visit (a second read of the row, from cache
when it fits): 2 reads, 1 write per element in all, and no softmax is stored.

The row helpers (``ce_loss_value``, ``ce_grad_row``) are shared with
``linear_cross_entropy``, which applies them to vocabulary chunks.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import prange
from numba.extending import register_jitable
from numpy.typing import ArrayLike

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.by_address import array_at, reading
from ..cpu.memory import read_only
from ..cpu.passes import is_regular, shift_inplace, write_exp_scaled
from ..cpu.paths import GRADIENT
from ..cpu.rows import driver_for
from ..cpu.tiles import load_tile, store_tile, tile_count, tile_origin
from ..frontdoor.arguments import Request, as_input_array
from ..frontdoor.layout import Layout
from ..frontdoor.prepare import prepare
from ..route import follows_input_type
from ._class_rows import ClassRows
from ._kept_classes import check_kept_labels, masked_rows, smoothing_over_kept, zero_left_out
from ._online_blocks import row_stats
from .divergences import soft_target_cross_entropy

__all__ = ["cross_entropy"]

REDUCTIONS = ("mean", "sum", "none")


# ---------------------------------------------------------------- row helpers


@register_jitable
def loss_constants(ignore_index, label_smoothing, n_classes, z, scale):
    """The constants of a cross-entropy row as the kernels take them, one tuple ``ce``:
    ``(ignore_index, conf, eps_c, z, scale)`` with ``conf = 1 − ε``, ``eps_c = ε/C``
    (0 without classes), ``z`` the z-loss weight and ``scale`` the gradient's factor
    (``gradient_scale``). The same types from Python and from ``@njit`` code."""
    eps_c = label_smoothing / n_classes if n_classes > 0 else 0.0
    return (int(ignore_index), 1.0 - label_smoothing, eps_c, float(z), float(scale))


@kernel
def ce_loss_value(lse, x_label, s, ce):
    """Row loss ``lse − conf·x_label − eps_c·s + z·lse²`` (float64; ``loss_constants``).

    ``s = Σ x``. A term whose weight is zero is left out, so that e.g. ``s = -inf``
    without smoothing cannot turn into ``0·inf = NaN``.
    """
    _, conf, eps_c, z, _ = ce
    loss = 1.0 * lse
    if conf != 0.0:
        loss -= conf * x_label
    if eps_c != 0.0:
        loss -= eps_c * s
    if z != 0.0:
        loss += z * lse * lse
    return loss


@kernel
def ce_grad_row(x, g, m, d, lse, label, ce):
    """g = scale·(exp(x − m)/d·(1 + 2z·lse) − eps_c), then g[label] −= scale·conf
    (``ce``: ``loss_constants``).

    ``(m, d)`` are the online statistics of the *whole* row and ``lse = m + log d``,
    so ``x``/``g`` may be a segment of the row (a vocabulary chunk) with ``label``
    relative to the segment (no one-hot term when it falls outside). ``g`` may be
    ``x``. A row whose statistics are not finite gets NaN. One read, one write per
    element (plus an in-cache pass when ``eps_c ≠ 0``).
    """
    _, conf, eps_c, z, scale = ce
    if not is_regular(m, d):
        for j in range(g.size):
            g[j] = math.nan
        return
    one = x.dtype.type(1.0)
    write_exp_scaled(x, g, m, one, g.dtype.type(scale * (1.0 + 2.0 * z * lse) / d))
    if eps_c != 0.0:
        shift_inplace(g, g.dtype.type(scale * eps_c))
    if 0 <= label < g.size:
        g[label] -= g.dtype.type(scale * conf)


@kernel
def ce_row(x, g, label, ce):
    """(loss, lse) of one row; its gradient into ``g`` with ``GRADIENT`` (g may be x).

    An ignored row (``label == ignore_index``) has loss 0 and a zero gradient.
    """
    m, d, lse, s = row_stats(x, ce[2] != 0.0, x.dtype.type(1.0))
    if label == ce[0]:
        if GRADIENT:
            for j in range(g.size):
                g[j] = 0.0
        return 0.0, lse
    loss = ce_loss_value(lse, x[label], s, ce)
    if GRADIENT:
        ce_grad_row(x, g, m, d, lse, label, ce)
    return loss, lse


@kernel
def cross_entropy_row_at(x, n, label, like, ignore_index, conf, eps_c, z):
    """(loss, lse) of the row of ``n`` logits at the address ``x`` (of ``like``'s dtype)
    with ``label``, as ``ce_row`` without a gradient: what a user's ``@njit`` code calls
    for 1-D logits (``numsoft._linked``). One read of the row."""
    no_gradient = array_at(0, (0,), like)  # never written: GRADIENT is off
    return ce_row(reading(x, (n,), like), no_gradient, label, (ignore_index, conf, eps_c, z, 0.0))


# ---------------------------------------------------------------- drivers


@parallel_kernel
def cross_entropy_rows(x2, labels, ce, loss, lse, g2):
    """Row driver: loss[i], lse[i] (and g2[i] with ``GRADIENT``) for every row, in parallel.

    Without ``GRADIENT``, ``g2`` may have zero columns (it is never written). The
    drivers are templates over that path constant (``cpu.paths``).
    """
    for i in prange(x2.shape[0]):
        loss[i], lse[i] = ce_row(x2[i], g2[i], labels[i], ce)


@parallel_kernel
def cross_entropy_columns(x3, labels2, ce, loss2, lse2, g3):
    """Column driver (class axis in the middle), by tiles of columns (``cpu.tiles``).

    The gradient is computed in the tile, in place, and scattered into ``g3``.
    """
    outer, n, inner = x3.shape
    tiles = tile_count(inner)
    for task in prange(outer * tiles):
        o, j0, width = tile_origin(task, tiles, inner)
        tile = np.empty((width, n), dtype=x3.dtype)
        load_tile(x3, o, j0, tile)
        for j in range(width):
            loss2[o, j0 + j], lse2[o, j0 + j] = ce_row(tile[j], tile[j], labels2[o, j0 + j], ce)
        if GRADIENT:
            store_tile(tile, g3, o, j0)


# ---------------------------------------------------------------- argument checks


def _real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def check_loss_options(label_smoothing, z_loss, ignore_index, reduction):
    """Validate the options shared by cross_entropy and linear_cross_entropy.

    Returns ``(ε, z, ignore_index)`` as Python float, float, int.
    """
    eps = _real(label_smoothing, "label_smoothing")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"label_smoothing must lie in [0, 1], got {label_smoothing!r}")
    z = _real(z_loss, "z_loss")
    if not (z >= 0.0 and math.isfinite(z)):
        raise ValueError(f"z_loss must be finite and >= 0, got {z_loss!r}")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise TypeError(f"ignore_index must be an int, got {type(ignore_index).__name__}")
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return eps, z, int(ignore_index)


def check_labels(labels, shape: tuple[int, ...], n_classes: int, ignore_index: int):
    """``labels`` as an int64 array of ``shape`` with values in [0, C) or ignore_index."""
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iu":
        raise TypeError(
            f"labels must be an integer array of class indices, or probabilities shaped "
            f"like the logits; got dtype {lab.dtype} and shape {lab.shape}"
        )
    if lab.shape != tuple(shape):
        raise ValueError(
            f"labels has shape {lab.shape}, expected {tuple(shape)} (the logits' shape "
            f"without the class axis)"
        )
    bad = (lab != ignore_index) & ((lab < 0) | (lab >= n_classes))
    if bad.any():
        raise ValueError(
            f"labels must lie in [0, {n_classes}) or equal ignore_index={ignore_index}; "
            f"found {lab[bad].flat[0]}"
        )
    return lab.astype(np.int64, copy=False)


def reduce_losses(loss_rows: np.ndarray, n_valid: int, reduction: str, compute: np.dtype):
    """Apply ``reduction`` to per-row losses (ignored rows hold 0).

    "mean" divides by the number of non-ignored rows (PyTorch); with none it is NaN.
    The reduction sums in float64.
    """
    if reduction == "none":
        return loss_rows if loss_rows.ndim else loss_rows[()]
    total = float(np.sum(loss_rows, dtype=np.float64))
    if reduction == "sum":
        return compute.type(total)
    return compute.type(total / n_valid if n_valid else math.nan)


@register_jitable
def gradient_scale(reduction: str, n_valid: int) -> float:
    """Upstream weight of each row's loss: 1/#valid for "mean" (0 if none), else 1."""
    if reduction == "mean":
        return 1.0 / n_valid if n_valid else 0.0
    return 1.0


# ---------------------------------------------------------------- public function


@follows_input_type
def cross_entropy(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    axis: int = -1,
    where: ArrayLike | None = None,
    label_smoothing: float = 0.0,
    z_loss: float = 0.0,
    ignore_index: int = -100,
    reduction: str = "mean",
    return_lse: bool = False,
    return_grad: bool = False,
):
    """Cross-entropy ``−log softmax(logits)[label]``, fused into one pass per row.

    For each row ``x`` (the entries along ``axis``, C classes) with label ``y``:

        ℓ = lse − (1 − ε)·x_y − (ε/C)·Σ_j x_j + z·lse²,    lse = log Σ_j exp(x_j),

    i.e. ``(1 − ε)·CE(y) + ε·CE(uniform)`` plus the z-loss ``z·lse²``. The
    logsumexp (online normalizer), the gather of ``x_y`` and ``Σ x`` come from one
    read of the row.

    Parameters
    ----------
    logits : array_like
        Unnormalized scores; float16/float32 are computed in float32, other input in
        float64.
    labels : array_like of int, or of float
        Class indices, shaped like ``logits`` without ``axis``. Each is in ``[0, C)``
        or equal to ``ignore_index``. Or probability targets ``q``: a float array shaped
        like ``logits``, for ``−Σ q'·log softmax(logits)`` with ``q' = (1 − ε)·q + ε/C``
        per row (torch's soft targets; a row is taken as given, summing to one or not;
        ``ignore_index`` does not apply, ``"mean"`` averages over rows, and ``z_loss``
        and ``return_lse`` are refused). See the "Losses between distributions" page.
    axis : int, optional
        The class axis (default ``-1``; PyTorch's ``(N, C, d1, ...)`` layout is
        ``axis=1``).
    where : array_like of bool, optional
        The classes of each row's distribution (broadcast to ``logits``' shape): a class
        where it is False is left out, as ``softmax(where=)`` leaves it out (its logit
        read as -inf, its gradient 0). Label smoothing then spreads ε over the k classes
        kept in the row (ε/k each); a label may not name a class left out
        (``ValueError``), and probability targets on it are not read. The logits are
        copied once to apply it.
    label_smoothing : float, optional
        ε in ``[0, 1]``: the target is ``(1 − ε)·onehot(y) + ε/C``.
    z_loss : float, optional
        Weight ``z ≥ 0`` of the auxiliary ``z·lse²`` term (PaLM's z-loss).
    ignore_index : int, optional
        Rows with this label contribute 0 loss and 0 gradient and are not counted by
        ``"mean"`` (default ``-100``).
    reduction : str, optional
        ``"mean"`` (default) averages over the non-ignored rows (PyTorch semantics; NaN when all
        rows are ignored), ``"sum"`` adds them, ``"none"`` returns per-row losses
        (0 for ignored rows).
    return_lse : bool, optional
        Also return the per-row logsumexp (shaped like ``labels``; computed for every
        row, ignored or not).
    return_grad : bool, optional
        Also return ``∂loss/∂logits`` of the *reduced* loss (shaped like ``logits``):
        ``∂ℓ/∂x_j = w·(p_j·(1 + 2z·lse) − ε/C − (1 − ε)·[j = y])``, with
        ``p = softmax(x)``, ``w = 1/#valid`` for ``"mean"`` and ``1`` otherwise (for
        ``"none"`` this is the gradient of ``Σ loss``; scale row i by its upstream
        gradient to chain), ``0`` on ignored rows. Computed in the same row visit.

    Returns
    -------
    loss : scalar or ndarray
        Scalar for ``"mean"``/``"sum"``, else shaped like ``labels``.
    lse : ndarray
        Only with ``return_lse=True``.
    grad : ndarray
        Only with ``return_grad=True``. Outputs come in this order, as a tuple when more
        than one is returned.

    Raises
    ------
    ValueError
        If a label is outside ``[0, C)`` and not ``ignore_index``; if ``labels`` has the
        wrong shape; for ``label_smoothing`` outside ``[0, 1]``, negative or non-finite
        ``z_loss`` or an unknown ``reduction``.
    TypeError
        If ``labels`` is not an integer array or ``axis`` is not an int.

    Notes
    -----
    Rows whose logsumexp is not finite (a NaN or ``+inf`` logit, or only ``-inf``)
    give a non-finite loss and a NaN gradient. ``-inf`` logits are otherwise fine
    (excluded classes: probability 0); a label on a ``-inf`` class gives ``+inf``.

    See Also
    --------
    linear_cross_entropy, numsoft.log_softmax

    References
    ----------
    1. M. Milakov, N. Gimelshein, "Online normalizer calculation for softmax",
       arXiv:1805.02867 (2018).
    2. C. Szegedy et al., "Rethinking the Inception Architecture for Computer
       Vision", arXiv:1512.00567 (2015) (label smoothing).
    3. A. Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways",
       arXiv:2204.02311 (2022) (z-loss).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> float(numsoft.cross_entropy(logits, np.array([0, 2])))
    0.66907853
    >>> numsoft.cross_entropy(logits, np.array([0, -100]), reduction="none")
    array([0.23954477, 0.        ])
    >>> loss, grad = numsoft.cross_entropy(logits, np.array([0, 2]), return_grad=True)
    >>> grad
    array([[-0.10650698,  0.05325349,  0.05325349],
           [ 0.16666667,  0.16666667, -0.33333333]])
    """
    a = as_input_array(logits, "logits")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an int, got {axis!r}")
    eps, z, ignore_index = check_loss_options(label_smoothing, z_loss, ignore_index, reduction)
    targets = np.asarray(labels)
    if targets.dtype.kind == "f" and targets.shape == a.shape and a.ndim:
        if z or return_lse:
            raise TypeError(
                "cross_entropy with probability targets takes no z_loss or return_lse "
                "(they are for class labels)"
            )
        return soft_target_cross_entropy(a, targets, axis, where, eps, reduction, return_grad)
    if where is not None:
        return _kept_class_cross_entropy(
            a, labels, axis, where, (eps, z, ignore_index), reduction, return_lse, return_grad
        )
    p = prepare(a, Request(axis, algorithm="online"))
    layout = p.layout
    (ax,) = layout.axes
    n_classes = layout.n
    lab = check_labels(labels, a.shape[:ax] + a.shape[ax + 1 :], n_classes, ignore_index)
    n_valid = int(np.count_nonzero(lab != ignore_index))
    loss2, loss_rows = layout.reduced_empty(p.compute)
    lse2, lse_rows = layout.reduced_empty(p.compute)
    if return_grad:
        g3, grad = layout.empty3(p.compute)
    else:
        g3, grad = np.empty((layout.shape3[0], 0, layout.shape3[2]), p.compute), None
    # labels in the (outer, inner) order of the kernels' view
    lab2 = read_only(_reduced_view(layout, lab))
    ce = loss_constants(ignore_index, eps, n_classes, z, gradient_scale(reduction, n_valid))
    if loss2.size:
        # the gradient is written with ordinary stores (auto.streams_output: a new array)
        driver, rows = driver_for(
            cross_entropy_rows,
            cross_entropy_columns,
            layout.shape3,
            GRADIENT=return_grad,
            STREAM_OUTPUT=False,
        )
        if rows:
            driver(p.src3[:, :, 0], lab2[:, 0], ce, loss2[:, 0], lse2[:, 0], g3[:, :, 0])
        else:
            driver(p.src3, lab2, ce, loss2, lse2, g3)
    outputs = [reduce_losses(loss_rows, n_valid, reduction, p.compute)]
    if return_lse:
        outputs.append(lse_rows if lse_rows.ndim else lse_rows[()])
    if return_grad:
        outputs.append(grad)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _kept_class_cross_entropy(a, labels, axis, where, options, reduction, return_lse, return_grad):
    """``cross_entropy`` of class labels with ``where``: the rows with the classes last
    (``ClassRows``), the classes left out at -inf in a copy, the row kernel run without
    smoothing, then ε spread over each row's kept classes (``_kept_classes``)."""
    eps, z, ignore_index = options
    rows = ClassRows(a, axis, "logits")
    keep2 = rows.mask_rows(where)
    lab = check_labels(labels, rows.moved_shape[:-1], rows.n, ignore_index).reshape(-1)
    if rows.n:
        check_kept_labels(keep2, lab, ignore_index)
    n_valid = int(np.count_nonzero(lab != ignore_index))
    scale = gradient_scale(reduction, n_valid)
    loss, lse = np.empty(rows.rows, rows.compute), np.empty(rows.rows, rows.compute)
    g2 = rows.gradient(return_grad)
    if rows.rows:
        xm = read_only(masked_rows(rows.x2, keep2))
        ce = (ignore_index, 1.0 - eps, 0.0, z, scale)
        driver, _ = driver_for(
            cross_entropy_rows, cross_entropy_rows, (rows.rows, rows.n, 1),
            GRADIENT=return_grad, STREAM_OUTPUT=False,
        )  # fmt: skip
        driver(xm, read_only(lab), ce, loss, lse, g2)
        smoothing_over_kept(rows.x2, keep2, lab, ignore_index, eps, scale, loss, g2)
        zero_left_out(g2, keep2)
    shape = rows.moved_shape[:-1]
    outputs = [reduce_losses(loss.reshape(shape), n_valid, reduction, rows.compute)]
    if return_lse:
        outputs.append(lse.reshape(shape) if shape else lse[0])
    if return_grad:
        outputs.append(rows.like_input(g2))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _reduced_view(layout: Layout, values: np.ndarray) -> np.ndarray:
    """``values`` (shaped like the reduction result) as the kernels' (outer, inner) array."""
    kept = layout.kept  # non-normalized axes in the view's order
    (ax,) = layout.axes
    pos = [k if k < ax else k - 1 for k in kept]
    return np.reshape(values.transpose(pos), (layout.shape3[0], layout.shape3[2]))
