"""numsoft as a drop-in for the ``entmax`` package (version 1.3): ``import numsoft.torch
as entmax``.

Every name ``entmax`` exports, with its signatures, defaults and results, computed by
numsoft's kernels and differentiated by numsoft's backward passes (``numsoft.gradients``):

- ``sparsemax``, ``entmax15`` and their losses: numsoft's exact sort-free kernels and
  fused Fenchel–Young losses (loss and gradient in one row visit);
- ``entmax_bisect``, ``sparsemax_bisect``, ``normmax_bisect``, ``budget_bisect`` and the
  bisection losses: ``numsoft.variants.bisect``, which bisects as entmax does (every
  step, α per row, α < 1 included), with the gradient in α where entmax gives one;
- the ``torch.nn.Module`` classes of each.

``k`` (entmax's partial-sort hint) is accepted and changes nothing. Where this module
differs from entmax it says so in ``docs/gradients.md``.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "numsoft.torch needs PyTorch: pip install 'numsoft[torch]' (or torch itself)"
    ) from exc

from .activations import Entmax15, Sparsemax, entmax15, sparsemax
from .losses import (
    Entmax15Loss,
    EntmaxBisectLoss,
    NormmaxBisectLoss,
    SparsemaxBisectLoss,
    SparsemaxLoss,
    entmax15_loss,
    entmax_bisect_loss,
    normmax_bisect_loss,
    sparsemax_bisect_loss,
    sparsemax_loss,
)
from .root_finding import (
    BudgetBisect,
    EntmaxBisect,
    NormmaxBisect,
    SparsemaxBisect,
    budget_bisect,
    entmax_bisect,
    normmax_bisect,
    sparsemax_bisect,
)

__all__ = [
    "BudgetBisect",
    "Entmax15",
    "Entmax15Loss",
    "EntmaxBisect",
    "EntmaxBisectLoss",
    "NormmaxBisect",
    "NormmaxBisectLoss",
    "Sparsemax",
    "SparsemaxBisect",
    "SparsemaxBisectLoss",
    "SparsemaxLoss",
    "budget_bisect",
    "entmax15",
    "entmax15_loss",
    "entmax_bisect",
    "entmax_bisect_loss",
    "normmax_bisect",
    "normmax_bisect_loss",
    "sparsemax",
    "sparsemax_bisect",
    "sparsemax_bisect_loss",
    "sparsemax_loss",
]
