"""Margin cross-entropy (ArcFace, CosFace, SphereFace; SPEC §10), fused per row.

For a row of cosines ``c`` (the normalized features against each class's normalized
weights) and its label ``y``, the target's cosine becomes

    φ(c_y) = cos(m1·θ + m2) − m3,    θ = arccos(clip(c_y, −1, 1)),

every logit is scaled, ``z_j = s·c_j`` (``z_y = s·φ(c_y)``), and the loss is the
cross-entropy ``lse(z) − z_y`` (``paddle.nn.functional.margin_cross_entropy``). The
row's normalizer is the blocked online pass of every other fused loss
(``_online_blocks.fold_row``), run on the classes before and after the label, with the
target's one modified logit merged in: no copy of the row, one read. The gradient

    ∂ℓ/∂c_j = w·s·p_j (j ≠ y),    ∂ℓ/∂c_y = w·s·(p_y − 1)·φ′(c_y),
    φ′(c) = m1·sin(m1·θ + m2)/sin θ  for |c| < 1, and 0 where the clip is flat,

is written in one more read of the row (``w``: the reduction's weight). So the gradient
is finite everywhere; at ``c_y = ±1`` it is the clip's flat side.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import prange
from numpy.typing import ArrayLike

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.memory import read_only
from ..cpu.passes import is_regular, write_exp_scaled
from ..cpu.paths import GRADIENT
from ..cpu.rows import driver_for
from ..frontdoor.arguments import as_input_array
from ..route import follows_input_type
from ._class_rows import ClassRows
from ._kept_classes import check_kept_labels, masked_rows, zero_left_out
from ._online_blocks import fold_partial, fold_row, lse_from_stats
from .cross_entropy import check_labels, check_loss_options, reduce_losses

__all__ = ["margin_cross_entropy"]


@kernel
def target_margin(c, m1, m2, m3):
    """(φ(c), φ′(c)) of the target's cosine (float64; module docstring)."""
    clipped = min(max(c, -1.0), 1.0)
    theta = math.acos(clipped)
    phi = math.cos(m1 * theta + m2) - m3
    sin_theta = math.sqrt(1.0 - clipped * clipped)
    if sin_theta == 0.0:  # |c| >= 1: the clip's flat side
        return phi, 0.0
    return phi, m1 * math.sin(m1 * theta + m2) / sin_theta


@kernel
def margin_row(x, g, label, params):
    """The loss of one row of cosines ``x`` with ``label`` (0 for ``ignore_index``); the
    gradient into ``g`` with ``GRADIENT``. ``params``: (m1, m2, m3, s, w, ignore_index).

    One read for the normalizer (the classes around the label, the target merged in),
    one read and one write for the gradient.
    """
    m1, m2, m3, s, w, ignore = params
    if label == ignore:
        if GRADIENT:
            for j in range(g.size):
                g[j] = 0.0
        return 0.0
    st = x.dtype.type(s)
    phi, dphi = target_margin(1.0 * x[label], m1, m2, m3)
    phi_t = x.dtype.type(phi)
    m, d, _ = fold_row(x.dtype.type(-math.inf), 0.0, x[:label], False, st)
    m, d, _ = fold_row(m, d, x[label + 1 :], False, st)
    m, d = fold_partial(m, d, phi_t, 1.0, st)
    if not is_regular(m, d):  # a NaN cosine
        if GRADIENT:
            for j in range(g.size):
                g[j] = math.nan
        return math.nan
    lse = lse_from_stats(m * st, d)
    if GRADIENT:
        write_exp_scaled(x, g, m, st, g.dtype.type(w * s / d))
        p_y = math.exp((phi_t - m) * s) / d
        g[label] = w * s * (p_y - 1.0) * dphi
    return lse - s * phi


@parallel_kernel
def margin_rows(x2, labels, params, loss, g2):
    """Row driver: ``loss[i]`` (and ``g2[i]`` with ``GRADIENT``) of every row, in parallel."""
    for i in prange(x2.shape[0]):
        loss[i] = margin_row(x2[i], g2[i], labels[i], params)


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not (float(value) > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return float(value)


def _real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


#: How far beyond [−1, 1] a cosine may lie from rounding (a normalized dot product).
ROUNDING = {4: 1e-4, 8: 1e-10}


@follows_input_type
def margin_cross_entropy(
    cos_logits,
    labels,
    *,
    margin1: float = 1.0,
    margin2: float = 0.5,
    margin3: float = 0.0,
    scale: float = 64.0,
    axis: int = -1,
    where: ArrayLike | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    return_grad: bool = False,
):
    """Additive/multiplicative angular margin cross-entropy (ArcFace, CosFace,
    SphereFace), fused into one pass per row.

    For each row of cosines ``c`` with label ``y``, the target's cosine becomes
    ``cos(margin1·θ + margin2) − margin3`` with ``θ = arccos(clip(c_y, −1, 1))``; all
    logits are multiplied by ``scale``; the loss is the cross-entropy of those logits
    (``paddle.nn.functional.margin_cross_entropy``). ArcFace is ``(1, 0.5, 0)``,
    CosFace ``(1, 0, 0.35)``, SphereFace ``(1.35, 0, 0)``.

    Parameters
    ----------
    cos_logits : array_like
        Cosines in ``[−1, 1]`` (normalized features times normalized class weights).
        float16/float32 are computed in float32, other input in float64.
    labels : array_like of int
        Class indices, shaped like ``cos_logits`` without ``axis``; each in ``[0, C)``
        or equal to ``ignore_index``.
    margin1 : float, optional
        Multiplicative angular margin m1 (SphereFace).
    margin2 : float, optional
        Additive angular margin m2 (ArcFace).
    margin3 : float, optional
        Additive cosine margin m3 (CosFace).
    scale : float, optional
        s > 0 multiplying every logit.
    axis : int, optional
        The class axis (default ``-1``).
    where : array_like of bool, optional
        The classes of each row (broadcast to ``cos_logits``' shape): a class where it
        is False is left out of the normalizer (probability 0, gradient 0, its cosine
        not read); a label may not name it (``ValueError``).
    ignore_index : int, optional
        Rows with this label give 0 loss and 0 gradient and are not counted by ``"mean"``.
    reduction : str, optional
        ``"mean"`` (over rows not ignored), ``"sum"`` or ``"none"``.
    return_grad : bool, optional
        Also return the gradient of the reduced loss with respect to ``cos_logits``
        (``"none"``: of the rows' sum). Through the target's cosine it is
        ``s·(p_y − 1)·m1·sin(m1·θ + m2)/sin θ``, and 0 at ``|c_y| = 1`` (the clip's
        flat side), so it is finite everywhere.

    Returns
    -------
    loss : scalar or ndarray
        A scalar, or for ``"none"`` shaped like ``labels``.
    grad : ndarray
        Only with ``return_grad=True``: shaped like ``cos_logits``.

    Raises
    ------
    ValueError
        If a cosine lies outside ``[−1, 1]`` beyond rounding (1e-4 in float32, 1e-10 in
        float64), ``scale`` is not positive, a margin is not finite, a label is out of
        range, or ``reduction`` is unknown.
    TypeError
        If ``labels`` is not an integer array or an option has the wrong type.

    See Also
    --------
    cross_entropy

    References
    ----------
    1. J. Deng et al., "ArcFace: Additive Angular Margin Loss for Deep Face
       Recognition", arXiv:1801.07698 (2019).
    2. H. Wang et al., "CosFace: Large Margin Cosine Loss for Deep Face
       Recognition", arXiv:1801.09414 (2018).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> cos = np.array([[0.8, 0.1, -0.2], [0.0, 0.5, 0.5]])
    >>> numsoft.margin_cross_entropy(cos, np.array([0, 2]), scale=4.0, reduction="none")
    array([0.31478153, 2.15564575])
    """
    c = as_input_array(cos_logits, "cos_logits")
    m1 = _real(margin1, "margin1")
    m2 = _real(margin2, "margin2")
    m3 = _real(margin3, "margin3")
    s = _positive(scale, "scale")
    _, _, ignore_index = check_loss_options(0.0, 0.0, ignore_index, reduction)
    if not isinstance(return_grad, (bool, np.bool_)):
        raise TypeError(f"return_grad must be True or False, got {return_grad!r}")
    pr = ClassRows(c, axis, "cos_logits")
    lab = check_labels(labels, pr.moved_shape[:-1], pr.n, ignore_index).reshape(-1)
    keep2 = None if where is None else pr.mask_rows(where)
    read = pr.x2 if keep2 is None else np.where(keep2, pr.x2, 0)
    bound = 1.0 + ROUNDING[pr.compute.itemsize]
    if read.size and (np.max(read) > bound or np.min(read) < -bound):
        raise ValueError("cos_logits must hold cosines, in [-1, 1]")
    x2 = pr.x2
    if keep2 is None:
        keep2 = np.empty((0, 0), np.bool_)
    elif pr.n:
        check_kept_labels(keep2, lab, ignore_index)
        x2 = read_only(masked_rows(pr.x2, keep2))
    n_valid = int(np.count_nonzero(lab != ignore_index))
    w = (1.0 / n_valid if n_valid else 0.0) if reduction == "mean" else 1.0
    loss = np.empty(pr.rows, pr.compute)
    g = pr.gradient(bool(return_grad))
    if pr.rows and pr.n:
        driver, _ = driver_for(
            margin_rows, margin_rows, (pr.rows, pr.n, 1), GRADIENT=bool(return_grad),
            STREAM_OUTPUT=False,
        )  # fmt: skip
        params = (m1, m2, m3, s, w, float(ignore_index))
        driver(x2, read_only(lab), params, loss, g)
        zero_left_out(g, keep2)
    result = reduce_losses(loss.reshape(pr.moved_shape[:-1]), n_valid, reduction, pr.compute)
    return (result, pr.like_input(g)) if return_grad else result
