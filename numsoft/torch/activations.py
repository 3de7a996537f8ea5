"""``entmax.activations``: sparsemax and 1.5-entmax (numsoft's exact kernels), their
autograd ``Function`` classes and modules."""

from __future__ import annotations

import torch
from torch import nn

import numsoft

from ._functions import autograd_function


def in_dtype_of(result: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``result`` in the dtype entmax returns for ``X``: ``X``'s own for a float tensor,
    torch's default float dtype for integer and bool tensors (entmax divides or
    subtracts in it)."""
    dtype = X.dtype if X.is_floating_point() else torch.get_default_dtype()
    return result if result.dtype == dtype else result.to(dtype)


def along(X: torch.Tensor, dim: int) -> int:
    """``dim`` as a non-negative axis of ``X``, after entmax's refusals: an empty
    normalized dim (entmax's maximum over it raises IndexError) or a dim out of range."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"X: expected a torch.Tensor, got {type(X).__name__}")
    ndim = max(X.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(f"dim: {dim} is out of range for X of {X.dim()} dimensions")
    if X.dim() and X.shape[dim] == 0:
        raise IndexError(f"X: dim {dim} has size 0; the maps need an entry along it")
    return dim % ndim


def sparsemax(X: torch.Tensor, dim: int = -1, k: int | None = None) -> torch.Tensor:
    """sparsemax along ``dim``: the Euclidean projection onto the simplex
    (``numsoft.sparsemax``). ``k``, entmax's partial-sort hint, changes nothing."""
    return in_dtype_of(numsoft.sparsemax(X, axis=along(X, dim)), X)


def entmax15(X: torch.Tensor, dim: int = -1, k: int | None = None) -> torch.Tensor:
    """1.5-entmax along ``dim`` (``numsoft.entmax15``). ``k`` changes nothing."""
    return in_dtype_of(numsoft.entmax15(X, axis=along(X, dim)), X)


#: ``SparsemaxFunction.apply(X, dim=-1, k=None)``, as entmax's.
SparsemaxFunction = autograd_function("SparsemaxFunction", sparsemax, dim=-1, k=None)

#: ``Entmax15Function.apply(X, dim=0, k=None)``: entmax's default dim here is 0.
Entmax15Function = autograd_function("Entmax15Function", entmax15, dim=0, k=None)


class Sparsemax(nn.Module):
    """``sparsemax`` as a module."""

    def __init__(self, dim: int = -1, k: int | None = None):
        self.dim = dim
        self.k = k
        super().__init__()

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return sparsemax(X, dim=self.dim, k=self.k)


class Entmax15(nn.Module):
    """``entmax15`` as a module."""

    def __init__(self, dim: int = -1, k: int | None = None):
        self.dim = dim
        self.k = k
        super().__init__()

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return entmax15(X, dim=self.dim, k=self.k)
