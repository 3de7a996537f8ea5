"""``entmax.activations``: sparsemax and 1.5-entmax (numsoft's exact kernels)."""

from __future__ import annotations

import torch
from torch import nn

import numsoft


def in_dtype_of(result: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``result`` in ``X``'s dtype, as entmax returns it (numsoft computes float16 in
    float32)."""
    return result if result.dtype == X.dtype else result.to(X.dtype)


def sparsemax(X: torch.Tensor, dim: int = -1, k: int | None = None) -> torch.Tensor:
    """sparsemax along ``dim``: the Euclidean projection onto the simplex
    (``numsoft.sparsemax``). ``k``, entmax's partial-sort hint, changes nothing."""
    return in_dtype_of(numsoft.sparsemax(X, axis=dim), X)


def entmax15(X: torch.Tensor, dim: int = -1, k: int | None = None) -> torch.Tensor:
    """1.5-entmax along ``dim`` (``numsoft.entmax15``). ``k`` changes nothing."""
    return in_dtype_of(numsoft.entmax15(X, axis=dim), X)


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
