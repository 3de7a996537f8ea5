"""``entmax.losses``: the Fenchel–Young losses, per row, and their modules.

``sparsemax_loss``, ``entmax15_loss`` and ``entmax_bisect_loss`` with a number α > 1
run numsoft's fused losses (loss and gradient in one row visit). The bisection losses
(``sparsemax_bisect_loss``, ``normmax_bisect_loss``, and ``entmax_bisect_loss`` with a
tensor α or α ≤ 1) take p* from ``root_finding`` and form ``Ω(p*) + ⟨p* − e_y, X⟩``
with p* held constant, whose gradient in X is ``p* − e_y``, entmax's (no gradient in α,
as in entmax).
"""

from __future__ import annotations

import torch
from torch import nn

import numsoft

from ._functions import autograd_function
from .activations import in_dtype_of
from .root_finding import entmax_bisect, normmax_bisect, sparsemax_bisect


def rows_and_labels(X, target):
    """Refuse what entmax's losses cannot take: scores that are not a 2-D
    (n_samples, n_classes) tensor, targets that are not one label per row."""
    if not isinstance(X, torch.Tensor) or X.dim() != 2 or X.shape[1] == 0:
        shape = tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__
        raise ValueError(
            f"X: the losses take 2-D (n_samples, n_classes) scores with a class, got {shape}"
        )
    if not isinstance(target, torch.Tensor) or target.shape != X.shape[:1]:
        shape = tuple(target.shape) if isinstance(target, torch.Tensor) else type(target).__name__
        raise ValueError(f"target: one label per row of X ({X.shape[0]},) expected, got {shape}")


def _with_constant_map(X, target, p, omega):
    """``Ω(p) + ⟨p − e_y, X⟩`` per row, p held constant."""
    p = p.detach()
    diff = p.scatter_add(1, target.unsqueeze(1), torch.full_like(p, -1))
    return omega(p) + (diff * X).sum(dim=1)


def sparsemax_loss(X, target, k=None):
    """The sparsemax loss of each row of the 2-D ``X`` (``numsoft.sparsemax_loss``)."""
    rows_and_labels(X, target)
    return in_dtype_of(numsoft.sparsemax_loss(X, target, reduction="none"), X)


def entmax15_loss(X, target, k=None):
    """The 1.5-entmax loss of each row (``numsoft.entmax15_loss``)."""
    rows_and_labels(X, target)
    return in_dtype_of(numsoft.entmax15_loss(X, target, reduction="none"), X)


def sparsemax_bisect_loss(X, target, n_iter=50):
    """The sparsemax loss with p* by bisection (50 steps, as in entmax 1.3)."""
    rows_and_labels(X, target)
    p = sparsemax_bisect(X.detach(), n_iter=n_iter)
    return _with_constant_map(X, target, p, lambda p: (1 - (p**2).sum(dim=1)) / 2)


def _per_row_alpha(alpha):
    """α held constant (the losses have no gradient in α), a vector as a column: one α
    per row of the 2-D X."""
    if not isinstance(alpha, torch.Tensor):
        return alpha
    return alpha.detach().reshape(-1, 1) if alpha.dim() == 1 else alpha.detach()


def _exponent(a, p):
    """(α as the exponent of ``p``'s entries, α per row): numbers, or a column and a
    vector of per-row values."""
    if not isinstance(a, torch.Tensor) or a.dim() == 0:
        return a, a
    column = a.reshape(-1, 1).expand(p.shape[0], 1)
    return column, column.reshape(-1)


def entmax_bisect_loss(X, target, alpha=1.5, n_iter=50):
    """The α-entmax loss of each row; α a number or a tensor (one per row)."""
    rows_and_labels(X, target)
    if not isinstance(alpha, torch.Tensor) and alpha > 1:
        return in_dtype_of(
            numsoft.entmax_bisect_loss(X, target, float(alpha), n_iter, reduction="none"), X
        )
    a = _per_row_alpha(alpha)
    p = entmax_bisect(X.detach(), a, n_iter=n_iter)
    power, row = _exponent(a, p)
    return _with_constant_map(
        X, target, p, lambda p: (1 - (p**power).sum(dim=1)) / (row * (row - 1))
    )


def normmax_bisect_loss(X, target, alpha=2, n_iter=50):
    """The α-normmax loss of each row: ``1 − ‖p*‖_α + ⟨p* − e_y, X⟩``."""
    rows_and_labels(X, target)
    a = _per_row_alpha(alpha)
    p = normmax_bisect(X.detach(), alpha=a, n_iter=n_iter)
    power, row = _exponent(a, p)
    return _with_constant_map(X, target, p, lambda p: 1 - (p**power).sum(dim=1) ** (1 / row))


SparsemaxLossFunction = autograd_function("SparsemaxLossFunction", sparsemax_loss, k=None)
SparsemaxBisectLossFunction = autograd_function(
    "SparsemaxBisectLossFunction", sparsemax_bisect_loss, n_iter=50
)
Entmax15LossFunction = autograd_function("Entmax15LossFunction", entmax15_loss, k=None)
EntmaxBisectLossFunction = autograd_function(
    "EntmaxBisectLossFunction", entmax_bisect_loss, alpha=1.5, n_iter=50
)
NormmaxBisectLossFunction = autograd_function(
    "NormmaxBisectLossFunction", normmax_bisect_loss, alpha=2, n_iter=50
)


class _GenericLoss(nn.Module):
    """entmax's reductions over the per-row losses: rows labelled ``ignore_index`` (when
    it is ≥ 0) count 0 and leave the mean."""

    def __init__(self, ignore_index=-100, reduction="elementwise_mean"):
        assert reduction in ["elementwise_mean", "sum", "none"]
        self.reduction = reduction
        self.ignore_index = ignore_index
        super().__init__()

    def forward(self, X, target):
        loss = self.loss(X, target)
        if self.ignore_index >= 0:
            ignored_positions = target == self.ignore_index
            size = float((target.size(0) - ignored_positions.sum()).item())
            loss = loss.masked_fill(ignored_positions, 0.0)
        else:
            size = float(target.size(0))
        if self.reduction == "sum":
            loss = loss.sum()
        elif self.reduction == "elementwise_mean":
            loss = loss.sum() / size
        return loss


class SparsemaxBisectLoss(_GenericLoss):
    """``sparsemax_bisect_loss`` with entmax's reductions."""

    def __init__(self, n_iter=50, ignore_index=-100, reduction="elementwise_mean"):
        self.n_iter = n_iter
        super().__init__(ignore_index, reduction)

    def loss(self, X, target):
        return sparsemax_bisect_loss(X, target, self.n_iter)


class SparsemaxLoss(_GenericLoss):
    """``sparsemax_loss`` with entmax's reductions."""

    def __init__(self, k=None, ignore_index=-100, reduction="elementwise_mean"):
        self.k = k
        super().__init__(ignore_index, reduction)

    def loss(self, X, target):
        return sparsemax_loss(X, target, self.k)


class EntmaxBisectLoss(_GenericLoss):
    """``entmax_bisect_loss`` with entmax's reductions."""

    def __init__(self, alpha=1.5, n_iter=50, ignore_index=-100, reduction="elementwise_mean"):
        self.alpha = alpha
        self.n_iter = n_iter
        super().__init__(ignore_index, reduction)

    def loss(self, X, target):
        return entmax_bisect_loss(X, target, self.alpha, self.n_iter)


class NormmaxBisectLoss(_GenericLoss):
    """``normmax_bisect_loss`` with entmax's reductions."""

    def __init__(self, alpha=2, n_iter=50, ignore_index=-100, reduction="elementwise_mean"):
        self.alpha = alpha
        self.n_iter = n_iter
        super().__init__(ignore_index, reduction)

    def loss(self, X, target):
        return normmax_bisect_loss(X, target, self.alpha, self.n_iter)


class Entmax15Loss(_GenericLoss):
    """``entmax15_loss`` with entmax's reductions (``k`` unused)."""

    def __init__(self, k=100, ignore_index=-100, reduction="elementwise_mean"):
        self.k = k
        super().__init__(ignore_index, reduction)

    def loss(self, X, target):
        return entmax15_loss(X, target, self.k)
