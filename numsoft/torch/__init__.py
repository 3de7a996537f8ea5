"""numsoft as a drop-in for the ``entmax`` package (version 1.3): ``import numsoft.torch
as entmax``.

Every name ``entmax`` exports, with its signatures, defaults and results, computed by
numsoft's kernels and differentiated by numsoft's backward passes (``numsoft.gradients``):

- ``sparsemax``, ``entmax15`` and their losses: numsoft's exact kernels (the threshold
  refined on the support candidates, no sort) and fused Fenchel–Young losses (loss and
  gradient in one row visit);
- ``entmax_bisect``, ``sparsemax_bisect``, ``normmax_bisect``, ``budget_bisect`` and the
  bisection losses: ``numsoft.variants.bisect``, which bisects as entmax does (every
  step, α per row, α < 1 included), with the gradient in α where entmax gives one;
- the ``torch.nn.Module`` classes of each, and under entmax's module paths
  (``numsoft.torch.activations``, ``.losses``, ``.root_finding``) its autograd
  ``Function`` classes (``SparsemaxFunction.apply(X, dim, k)``, ...).

``k`` (entmax's partial-sort hint) is accepted and changes nothing. Integer and bool
tensors give float results (torch's default dtype), half-precision tensors are computed
in float32 and returned in their own dtype, and the inputs entmax refuses (an empty
normalized dim; losses of scores that are not 2-D) are refused with an error naming the
argument. Where this module differs from entmax it says so in ``docs/gradients.md``.
``__version__`` is the version of entmax this module stands in for.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "numsoft.torch needs PyTorch. Its CPU build: pip install torch --index-url "
        "https://download.pytorch.org/whl/cpu (docs/gradients.md, 'Install')"
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

__version__ = "1.3"

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
