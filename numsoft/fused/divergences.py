"""Losses between two distributions: ``kl_div``, ``jsd`` and cross-entropy with
probability targets (SPEC §10), one fused row visit each (``pair_rows``).

The class axis is moved last (``_class_rows``); the kernels then run over rows of both
inputs side by side.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike

from ..cpu.memory import read_only
from ..cpu.rows import driver_for
from ..frontdoor.arguments import (
    as_input_array,
    broadcast_where,
    check_temperature,
    inverse_temperature,
)
from ..route import follows_input_type
from ._class_rows import PairRows
from ._kept_classes import kept_targets, masked_rows, zero_left_out
from .pair_rows import JSD, KL, SOFT_TARGETS, pair_loss_rows

__all__ = ["kl_div", "jsd"]

#: The reductions of ``kl_div`` and ``jsd`` (torch's ``kl_div`` names).
DIVERGENCE_REDUCTIONS = ("batchmean", "sum", "mean", "none")


@register_jitable
def row_weight(reduction: str, rows: int, n: int) -> float:
    """The weight of each row's loss in the reduced loss (1 for "none": the gradient of
    the per-row losses' sum); the same from ``@njit`` code."""
    if reduction == "batchmean":
        return 1.0 / rows if rows else 0.0
    if reduction == "mean":
        return 1.0 / (rows * n) if rows * n else 0.0
    return 1.0


def reduce_rows(loss: np.ndarray, pr: PairRows, reduction: str):
    """The per-row losses reduced as ``reduction`` says (sums in float64)."""
    if reduction == "none":
        out = loss.reshape(pr.moved_shape[:-1])
        return out if out.ndim else out[()]
    total = float(np.sum(loss, dtype=np.float64))
    count = {"sum": 1, "batchmean": pr.rows, "mean": pr.rows * pr.n}[reduction]
    return pr.compute.type(total / count if count else math.nan)


def run_pair_loss(code: int, pr: PairRows, params, grads: tuple[bool, bool]):
    """(per-row losses, ∂/∂a, ∂/∂b) of ``PAIR_LOSS`` ``code``; a gradient not asked
    for is None."""
    loss = np.empty(pr.rows, pr.compute)
    ga, gb = pr.gradient(grads[0]), pr.gradient(grads[1])
    if pr.rows and pr.n:
        driver, _ = driver_for(
            pair_loss_rows,
            pair_loss_rows,
            (pr.rows, pr.n, 1),
            PAIR_LOSS=code,
            GRADIENT=grads[0],
            SECOND_GRADIENT=grads[1],
        )
        driver(pr.a2, pr.b2, tuple(float(p) for p in params), loss, ga, gb)
    elif pr.rows:  # no classes: no distribution
        loss.fill(math.nan)
    return loss, (ga if grads[0] else None), (gb if grads[1] else None)


def _check_reduction(reduction) -> str:
    if not isinstance(reduction, str) or reduction not in DIVERGENCE_REDUCTIONS:
        raise ValueError(f"reduction must be one of {DIVERGENCE_REDUCTIONS}, got {reduction!r}")
    return reduction


def _check_flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _pair(student_logits, teacher_logits, axis, where) -> PairRows:
    """Both inputs as rows; with ``where``, masked entries at -inf in both: the classes
    left out of both distributions (a copy of each input)."""
    a = as_input_array(student_logits, "student_logits")
    b = as_input_array(teacher_logits, "teacher_logits")
    if where is not None and a.shape == b.shape:
        mask = broadcast_where(where, a.shape)
        a, b = np.where(mask, a, -np.inf), np.where(mask, b, -np.inf)
    return PairRows(a, b, axis, ("student_logits", "teacher_logits"))


def kl_div_with_grads(
    student_logits, teacher_logits, axis, where, temperature, reverse, reduction, grads
):
    """(loss, ∂/∂student_logits, ∂/∂teacher_logits) of ``kl_div``, each gradient only
    where ``grads`` asks (else None)."""
    pr = _pair(student_logits, teacher_logits, axis, where)
    reduction = _check_reduction(reduction)
    inv_t = inverse_temperature(check_temperature(temperature), pr.compute)
    reverse = _check_flag(reverse, "reverse")
    w = row_weight(reduction, pr.rows, pr.n)
    if reverse:  # KL(p_student ‖ p_teacher): the student's row first
        loss, gs, gt = run_pair_loss(KL, pr, (inv_t, w, 0, 0), grads)
    else:  # KL(p_teacher ‖ p_student): the rows swapped
        loss, gt, gs = run_pair_loss(KL, pr.swapped(), (inv_t, w, 0, 0), grads[::-1])
    return (reduce_rows(loss, pr, reduction), *(_shaped(pr, g) for g in (gs, gt)))


def jsd_with_grads(
    student_logits, teacher_logits, beta, axis, where, temperature, reduction, grads
):
    """(loss, ∂/∂student_logits, ∂/∂teacher_logits) of ``jsd``, as ``kl_div_with_grads``."""
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
        raise TypeError(f"beta must be a real number, got {type(beta).__name__}")
    beta = float(beta)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must lie in [0, 1], got {beta!r}")
    if beta in (0.0, 1.0):  # TRL's end points: the KLs themselves, not the limits (0)
        return kl_div_with_grads(
            student_logits, teacher_logits, axis, where, temperature, beta == 1.0, reduction, grads
        )
    pr = _pair(student_logits, teacher_logits, axis, where)
    reduction = _check_reduction(reduction)
    inv_t = inverse_temperature(check_temperature(temperature), pr.compute)
    w = row_weight(reduction, pr.rows, pr.n)
    loss, gs, gt = run_pair_loss(JSD, pr, (inv_t, beta, w, 0), grads)
    return (reduce_rows(loss, pr, reduction), *(_shaped(pr, g) for g in (gs, gt)))


def _shaped(pr: PairRows, g):
    return None if g is None else pr.like_input(g)


def soft_target_cross_entropy(
    logits, targets, axis, where, label_smoothing, reduction, return_grad
):
    """``cross_entropy`` with probability ``targets`` (already checked: float, the shape
    of ``logits``; ``label_smoothing`` in [0, 1]; ``reduction`` one of torch's). With
    ``where``, the classes left out are -inf in a copy of the logits and the targets
    are smoothed over the classes kept (``_kept_classes``)."""
    pr = PairRows(logits, targets, axis, ("logits", "labels"))
    if pr.b2.size and np.min(pr.b2) < 0:  # NaN passes: a NaN target gives a NaN loss
        raise ValueError("labels (probability targets) must not be negative")
    keep2 = np.empty((0, 0), np.bool_)
    if where is not None:
        keep2 = pr.mask_rows(where)
        pr.a2 = pr.x2 = read_only(masked_rows(pr.a2, keep2))
        pr.b2 = read_only(kept_targets(pr.b2, keep2, label_smoothing))
        label_smoothing = 0.0
    eps = label_smoothing
    w = 1.0 / pr.rows if reduction == "mean" and pr.rows else 1.0
    params = (1.0 - eps, eps / pr.n if pr.n else 0.0, w, 0)
    loss, g, _ = run_pair_loss(SOFT_TARGETS, pr, params, (return_grad, False))
    if return_grad:
        zero_left_out(g, keep2)
    reduction = "batchmean" if reduction == "mean" else reduction  # torch: mean over rows
    result = reduce_rows(loss, pr, reduction)
    return (result, pr.like_input(g)) if return_grad else result


# ---------------------------------------------------------------- public functions


@follows_input_type
def kl_div(
    student_logits: ArrayLike,
    teacher_logits: ArrayLike,
    *,
    axis: int = -1,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    reverse: bool = False,
    reduction: str = "batchmean",
    return_grad: bool = False,
):
    """Kullback–Leibler divergence between the softmaxes of two arrays of logits.

    For each row (the entries along ``axis``), with ``p_s = softmax(student_logits / T)``
    and ``p_t = softmax(teacher_logits / T)``:

        KL(p_t ‖ p_s) = Σ_j p_t,j·(log p_t,j − log p_s,j)

    (``reverse=True``: KL(p_s ‖ p_t)). Both normalizers come from one read of each
    row, the sum from a second; no array of the input's size is made but the gradient.

    Parameters
    ----------
    student_logits : array_like
        The student's logits (the distribution being trained). float16/float32 are
        computed in float32, other input in float64.
    teacher_logits : array_like
        The teacher's logits, of ``student_logits``' shape.
    axis : int, optional
        The class axis (default ``-1``).
    where : array_like of bool, optional
        The classes to compare (broadcast to the inputs' shape): entries where it is
        False are left out of both distributions, as ``softmax(where=)`` leaves them
        out, and get a zero gradient. A row with no class left has no distribution
        (NaN). The inputs are copied with those entries at ``-inf``.
    temperature : float, optional
        T > 0 dividing both arrays of logits (Hinton's distillation temperature). The
        loss is not multiplied by T²; multiply it yourself for Hinton's scaling.
    reverse : bool, optional
        Compute KL(p_s ‖ p_t) (the mode-seeking direction) instead.
    reduction : str, optional
        ``"batchmean"`` (default) sums over classes and averages over rows (every
        axis but ``axis``; torch's ``kl_div`` divides by the first axis alone);
        ``"sum"``; ``"mean"`` divides the sum by the number of entries (torch's);
        ``"none"`` gives each row's divergence (torch's gives each entry's).
    return_grad : bool, optional
        Also return the gradient of the reduced loss with respect to
        ``student_logits`` (``"none"``: of the rows' sum), from the same row visits:
        ``(p_s − p_t)/T`` per row (forward), ``p_s·(log p_s − log p_t − KL)/T``
        (reverse), times the reduction's weight.

    Returns
    -------
    loss : scalar or ndarray
        A scalar, or for ``"none"`` the inputs' shape without ``axis``.
    grad : ndarray
        Only with ``return_grad=True``: shaped like the inputs.

    Raises
    ------
    ValueError
        If the shapes differ, ``temperature`` is not positive and finite, or
        ``reduction`` is unknown.
    TypeError
        If an input is not real-valued, or ``axis`` is not an int.

    Notes
    -----
    A class with ``p_t = 0`` (a ``-inf`` teacher logit) adds 0; one with ``p_s = 0``
    and ``p_t > 0`` makes the divergence ``+inf``. A row with a NaN or ``+inf`` logit,
    or only ``-inf`` ones, in either input has no distribution: NaN loss and gradient.
    Under torch autograd both inputs and ``temperature`` may require grad.

    See Also
    --------
    jsd, cross_entropy

    References
    ----------
    1. G. Hinton, O. Vinyals, J. Dean, "Distilling the Knowledge in a Neural
       Network", arXiv:1503.02531 (2015).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> student = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> teacher = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> numsoft.kl_div(student, teacher, reduction="none")
    array([0.09888599, 0.        ])
    >>> loss, grad = numsoft.kl_div(student, teacher, return_grad=True)
    >>> grad
    array([[-0.10543458,  0.05271729,  0.05271729],
           [ 0.        ,  0.        ,  0.        ]])
    """
    loss, grad, _ = kl_div_with_grads(
        student_logits,
        teacher_logits,
        axis,
        where,
        temperature,
        reverse,
        reduction,
        (_check_flag(return_grad, "return_grad"), False),
    )
    return (loss, grad) if return_grad else loss


@follows_input_type
def jsd(
    student_logits: ArrayLike,
    teacher_logits: ArrayLike,
    *,
    beta: float = 0.5,
    axis: int = -1,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    reduction: str = "batchmean",
    return_grad: bool = False,
):
    """Generalized Jensen–Shannon divergence between the softmaxes of two arrays of
    logits (on-policy distillation's loss).

    For each row, with ``p_s``, ``p_t`` the softmaxes of ``student_logits / T`` and
    ``teacher_logits / T`` and the mixture ``m = β·p_t + (1 − β)·p_s``:

        JSD_β = β·KL(p_t ‖ m) + (1 − β)·KL(p_s ‖ m)

    as TRL's ``generalized_jsd_loss`` defines it, end points included: β = 0 gives
    KL(p_t ‖ p_s) and β = 1 gives KL(p_s ‖ p_t) (``kl_div``), not the limits (0).
    Normalizers from one read of each row, the sum from a second.

    Parameters
    ----------
    student_logits : array_like
        The student's logits (the distribution being trained). float16/float32 are
        computed in float32, other input in float64.
    teacher_logits : array_like
        The teacher's logits, of ``student_logits``' shape.
    beta : float, optional
        β in ``[0, 1]`` (default 0.5: the symmetric Jensen–Shannon divergence).
    axis : int, optional
        The class axis (default ``-1``).
    where : array_like of bool, optional
        The classes to compare (broadcast to the inputs' shape): entries where it is
        False are left out of both distributions, as ``softmax(where=)`` leaves them
        out, and get a zero gradient. A row with no class left has no distribution
        (NaN). The inputs are copied with those entries at ``-inf``.
    temperature : float, optional
        T > 0 dividing both arrays of logits.
    reduction : str, optional
        ``"batchmean"`` (default: summed over classes, averaged over rows, as TRL),
        ``"sum"``, ``"mean"`` (over every entry) or ``"none"`` (each row's).
    return_grad : bool, optional
        Also return the gradient of the reduced loss with respect to
        ``student_logits``: ``(1 − β)·p_s·(log(p_s/m) − KL(p_s ‖ m))/T`` per row, times
        the reduction's weight.

    Returns
    -------
    loss : scalar or ndarray
        A scalar, or for ``"none"`` the inputs' shape without ``axis``.
    grad : ndarray
        Only with ``return_grad=True``: shaped like the inputs.

    Raises
    ------
    ValueError
        If the shapes differ, ``beta`` is outside ``[0, 1]``, ``temperature`` is not
        positive and finite, or ``reduction`` is unknown.
    TypeError
        If an input is not real-valued, or ``beta`` or ``axis`` has the wrong type.

    Notes
    -----
    Rows without a distribution (a NaN or ``+inf`` logit, or only ``-inf`` ones) give
    NaN. Under torch autograd both inputs and ``temperature`` may require grad.

    See Also
    --------
    kl_div

    References
    ----------
    1. R. Agarwal et al., "On-Policy Distillation of Language Models: Learning from
       Self-Generated Mistakes", arXiv:2306.13649 (2024).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> student = np.array([[1.0, 0.0, 0.0]])
    >>> teacher = np.array([[0.0, 0.0, 1.0]])
    >>> float(numsoft.jsd(student, teacher))
    0.08743041
    >>> float(numsoft.jsd(student, teacher, beta=0.0)) == float(numsoft.kl_div(student, teacher))
    True
    """
    loss, grad, _ = jsd_with_grads(
        student_logits,
        teacher_logits,
        beta,
        axis,
        where,
        temperature,
        reduction,
        (_check_flag(return_grad, "return_grad"), False),
    )
    return (loss, grad) if return_grad else loss
