"""``entmax.root_finding``: the bisection maps (``numsoft.variants.bisect``)."""

from __future__ import annotations

import torch
from torch import nn

from ..variants import bisect
from .activations import in_dtype_of


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
    a = per_row(alpha, X, dim)
    return in_dtype_of(bisect.entmax_bisect(X, a, dim % X.dim(), n_iter, ensure_sum_one), X)


def sparsemax_bisect(X, dim=-1, n_iter=50, ensure_sum_one=True):
    """sparsemax by bisection. As in entmax 1.3, ``n_iter`` and ``ensure_sum_one`` are
    not used: 50 steps, then the division by the sum."""
    return in_dtype_of(bisect.entmax_bisect(X, 2.0, dim % X.dim(), 50, True), X)


def normmax_bisect(X, alpha=2, dim=-1, n_iter=50):
    """α-normmax by bisection, differentiable in ``X`` (not in ``alpha``, as in entmax)."""
    a = per_row(alpha, X, dim)
    a = a.detach() if isinstance(a, torch.Tensor) else float(a)
    return in_dtype_of(bisect.normmax_bisect(X, a, dim % X.dim(), n_iter), X)


def budget_bisect(X, budget=2, dim=-1, n_iter=50):
    """Budget-sparsemax by bisection, differentiable in ``X`` (not in ``budget``)."""
    b = per_row(budget, X, dim)
    b = b.detach() if isinstance(b, torch.Tensor) else float(b)
    return in_dtype_of(bisect.budget_bisect(X, b, dim % X.dim(), n_iter), X)


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
