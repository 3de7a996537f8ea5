"""Fenchel–Young losses of the sparse maps: sparsemax, 1.5-entmax and α-entmax.

The losses of the ``entmax`` package (``entmax.losses``), as NumPy functions: per row,
``Ω(p*) + ⟨p* − e_y, z⟩`` with its gradient ``p* − e_y`` from the same row visit
(``numsoft.cpu.variants.fenchel_young``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._docstrings import filled
from ..cpu.memory import read_only
from ..cpu.paths import specialize
from ..cpu.variants.fenchel_young import fenchel_young_rows
from ..route import follows_input_type
from ..variants._run import int_arg, real_arg, rows_along
from ..vocabulary import ENTMAX, ENTMAX15, SPARSEMAX
from .cross_entropy import check_labels, gradient_scale, reduce_losses

__all__ = ["sparsemax_loss", "entmax15_loss", "entmax_bisect_loss"]

#: The reductions of ``entmax.losses`` ("elementwise_mean" is the mean over the rows
#: not ignored), and "mean", its name in ``cross_entropy`` and torch.
REDUCTIONS = {"elementwise_mean": "mean", "mean": "mean", "sum": "sum", "none": "none"}


def check_reduction(reduction) -> str:
    """``reduction`` as ``cross_entropy`` names it; ValueError for an unknown one."""
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {tuple(REDUCTIONS)}, got {reduction!r}")
    return REDUCTIONS[reduction]


def fenchel_young(func, code, x, labels, axis, ignore_index, reduction, return_grad, alpha=2.0,
                  n_iter=50):  # fmt: skip
    """The loss of map ``code`` (``numsoft.vocabulary``, its α ``alpha``) and, with
    ``return_grad``, its gradient; the arguments as the public functions take them."""
    x2, shape = rows_along(func, x, axis)
    ignore = int_arg(func, "ignore_index", ignore_index)
    red = check_reduction(reduction)
    n_classes = shape[-1]
    lab = check_labels(labels, shape[:-1], n_classes, ignore)
    n_valid = int(np.count_nonzero(lab != ignore))
    z2 = read_only(x2)
    loss = np.zeros(z2.shape[0], z2.dtype)
    g2 = np.empty_like(z2)
    if z2.shape[0] and n_classes:
        rows = specialize(fenchel_young_rows, VARIANT=code)
        scale = gradient_scale(red, n_valid)
        rows(z2, read_only(lab.reshape(-1)), alpha, n_iter, ignore, scale, loss, g2)
    result = reduce_losses(loss.reshape(shape[:-1]), n_valid, red, z2.dtype)
    if not return_grad:
        return result
    return result, np.moveaxis(g2.reshape(shape), -1, axis)


_DOC = """
    Parameters
    ----------
    x : array_like
        Scores (logits), the classes along ``axis``.
    labels : array_like of int
        The target class of each row: ``x``'s shape without ``axis``.{extra}
    axis : int, optional
        The class axis (default -1).
    ignore_index : int, optional
        Rows with this label have loss 0 and gradient 0 and leave the mean (default -100).
    reduction : {{"elementwise_mean", "mean", "sum", "none"}}, optional
        The mean over the rows not ignored (default; "mean" is the same), the sum, or
        the per-row losses.
    return_grad : bool, optional
        Also return the gradient of the (reduced) loss with respect to ``x``, from the
        same row visit (for "none": the gradient of the sum).

    Returns
    -------
    loss : scalar or ndarray
        Scalar unless ``reduction="none"`` (then shaped like ``labels``).
    grad : ndarray
        Only with ``return_grad=True``: ``w·(p* − e_y)``, shaped like ``x``, ``w`` the
        reduction's weight."""


def _doc(extra: str = ""):
    return filled("params", _DOC.format(extra=extra))


@follows_input_type
@_doc()
def sparsemax_loss(
    x: ArrayLike,
    labels: ArrayLike,
    *,
    axis: int = -1,
    ignore_index: int = -100,
    reduction: str = "elementwise_mean",
    return_grad: bool = False,
):
    """The sparsemax loss: ``(1 − Σp²)/2 + ⟨p − e_y, x⟩`` per row, p = sparsemax(x).

    {params}

    Notes
    -----
    The Fenchel–Young loss of sparsemax (Martins & Astudillo, arXiv 1602.02068;
    Blondel, Martins & Niculae, arXiv 1901.02324): 0 when the label gets probability
    1, never negative. As ``entmax.sparsemax_loss`` with the reductions of its
    ``SparsemaxLoss``.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> x = np.array([[1.0, 0.8, 0.1, -1.0], [3.0, 0.0, 0.0, 0.0]])
    >>> numsoft.sparsemax_loss(x, np.array([1, 0]), reduction="none")
    array([0.36, 0.  ])
    """
    return fenchel_young("sparsemax_loss", SPARSEMAX, x, labels, axis, ignore_index, reduction,
                         return_grad)  # fmt: skip


@follows_input_type
@_doc()
def entmax15_loss(
    x: ArrayLike,
    labels: ArrayLike,
    *,
    axis: int = -1,
    ignore_index: int = -100,
    reduction: str = "elementwise_mean",
    return_grad: bool = False,
):
    """The 1.5-entmax loss: ``(1 − Σp^1.5)/0.75 + ⟨p − e_y, x⟩`` per row, p = entmax15(x).

    {params}

    Notes
    -----
    The Fenchel–Young loss of 1.5-entmax (Peters, Niculae & Martins, arXiv 1905.05702),
    as ``entmax.entmax15_loss``.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> float(numsoft.entmax15_loss(np.array([[1.0, 0.5, -2.0]]), np.array([0])))
    0.18437137891806946
    """
    return fenchel_young("entmax15_loss", ENTMAX15, x, labels, axis, ignore_index, reduction,
                         return_grad, 1.5)  # fmt: skip


@follows_input_type
@_doc(
    """
    alpha : float, optional
        α > 1 (default 1.5).
    n_iter : int, optional
        Most bisection steps, as for ``numsoft.entmax`` (default 50)."""
)
def entmax_bisect_loss(
    x: ArrayLike,
    labels: ArrayLike,
    alpha: float = 1.5,
    n_iter: int = 50,
    *,
    axis: int = -1,
    ignore_index: int = -100,
    reduction: str = "elementwise_mean",
    return_grad: bool = False,
):
    """The α-entmax loss: ``(1 − Σp^α)/(α(α−1)) + ⟨p − e_y, x⟩`` per row, p = entmax(x, α).

    {params}

    Notes
    -----
    The Fenchel–Young loss of α-entmax (Peters, Niculae & Martins, arXiv 1905.05702),
    as ``entmax.entmax_bisect_loss``; p comes from ``numsoft.entmax``'s bisection.
    α = 1 (the softmax's cross-entropy) is ``numsoft.cross_entropy``.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> x = np.array([[1.0, 0.8, 0.1, -1.0]])
    >>> float(numsoft.entmax_bisect_loss(x, np.array([1]), alpha=2.0))
    0.36
    """
    a = real_arg("entmax_bisect_loss", "alpha", alpha)
    if not (a > 1.0 and np.isfinite(a)):
        raise ValueError(f"entmax_bisect_loss: alpha must be a finite number > 1, got {alpha!r}")
    steps = int_arg("entmax_bisect_loss", "n_iter", n_iter)
    if steps < 1:
        raise ValueError("entmax_bisect_loss: n_iter must be at least 1")
    return fenchel_young("entmax_bisect_loss", ENTMAX, x, labels, axis, ignore_index, reduction,
                         return_grad, a, steps)  # fmt: skip
