"""``entmax.root_finding``: the bisection maps (``numsoft.variants.bisect``), their
autograd ``Function`` classes and modules."""

from __future__ import annotations

import torch
from torch import nn

from ..variants import bisect
from ._functions import autograd_function
from .activations import along, in_dtype_of


def per_row(value, X: torch.Tensor, dim: int):
    """A number as it is; a tensor expanded to ``X``'s shape with ``dim`` of length 1, as
    entmax expands α (autograd sums the gradient back to ``value``'s shape)."""
    if not isinstance(value, torch.Tensor):
        return value
    shape = list(X.shape)
    shape[dim] = 1
    return value.to(X.dtype).expand(*shape)


def entmax_bisect(X, alpha=1.5, dim=-1, n_iter=50, ensure_sum_one=True):
    """α-entmax by bisection, differentiable in ``X`` and in ``alpha`` (a number or a
    tensor broadcast against ``X`` with ``dim`` of length 1), as ``entmax.entmax_bisect``."""
    axis = along(X, dim)
    a = per_row(alpha, X, axis)
    return in_dtype_of(bisect.entmax_bisect(X, a, axis, n_iter, ensure_sum_one), X)


def sparsemax_bisect(X, dim=-1, n_iter=50, ensure_sum_one=True):
    """sparsemax by bisection. As in entmax 1.3, ``n_iter`` and ``ensure_sum_one`` are
    not used: 50 steps, then the division by the sum."""
    return in_dtype_of(bisect.entmax_bisect(X, 2.0, along(X, dim), 50, True), X)


def normmax_bisect(X, alpha=2, dim=-1, n_iter=50):
    """α-normmax by bisection, differentiable in ``X`` (not in ``alpha``, as in entmax)."""
    axis = along(X, dim)
    a = per_row(alpha, X, axis)
    a = a.detach() if isinstance(a, torch.Tensor) else float(a)
    return in_dtype_of(bisect.normmax_bisect(X, a, axis, n_iter), X)


def budget_bisect(X, budget=2, dim=-1, n_iter=50):
    """Budget-sparsemax by bisection, differentiable in ``X`` (not in ``budget``)."""
    axis = along(X, dim)
    b = per_row(budget, X, axis)
    b = b.detach() if isinstance(b, torch.Tensor) else float(b)
    return in_dtype_of(bisect.budget_bisect(X, b, axis, n_iter), X)


EntmaxBisectFunction = autograd_function(
    "EntmaxBisectFunction", entmax_bisect, alpha=1.5, dim=-1, n_iter=50, ensure_sum_one=True
)
SparsemaxBisectFunction = autograd_function(
    "SparsemaxBisectFunction", sparsemax_bisect, dim=-1, n_iter=50, ensure_sum_one=True
)
NormmaxBisectFunction = autograd_function(
    "NormmaxBisectFunction", normmax_bisect, alpha=2, dim=-1, n_iter=50
)
BudgetBisectFunction = autograd_function(
    "BudgetBisectFunction", budget_bisect, budget=2, dim=-1, n_iter=50
)


class SparsemaxBisect(nn.Module):
    """``sparsemax_bisect`` as a module."""

    def __init__(self, dim=-1, n_iter=None):
        self.dim = dim
        self.n_iter = n_iter
        super().__init__()

    def forward(self, X):
        return sparsemax_bisect(X, dim=self.dim, n_iter=self.n_iter)


class EntmaxBisect(nn.Module):
    """``entmax_bisect`` as a module (``alpha`` may be a learned ``nn.Parameter``)."""

    def __init__(self, alpha=1.5, dim=-1, n_iter=50):
        self.dim = dim
        self.n_iter = n_iter
        self.alpha = alpha
        super().__init__()

    def forward(self, X):
        return entmax_bisect(X, alpha=self.alpha, dim=self.dim, n_iter=self.n_iter)


class NormmaxBisect(nn.Module):
    """``normmax_bisect`` as a module."""

    def __init__(self, alpha=2, dim=-1, n_iter=50):
        self.dim = dim
        self.n_iter = n_iter
        self.alpha = alpha
        super().__init__()

    def forward(self, X):
        return normmax_bisect(X, alpha=self.alpha, dim=self.dim, n_iter=self.n_iter)


class BudgetBisect(nn.Module):
    """``budget_bisect`` as a module."""

    def __init__(self, budget=2, dim=-1, n_iter=50):
        self.dim = dim
        self.n_iter = n_iter
        self.budget = budget
        super().__init__()

    def forward(self, X):
        return budget_bisect(X, budget=self.budget, dim=self.dim, n_iter=self.n_iter)
