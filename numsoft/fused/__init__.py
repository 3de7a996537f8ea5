"""Fused operations (SPEC §5), one module per operation.

- ``topk``: :func:`softmax_topk`, the online normalizer fused with a running top-k;
- ``cross_entropy``: :func:`cross_entropy` (loss, logsumexp and gradient in one pass);
- ``linear_cross_entropy``: :func:`linear_cross_entropy`, the loss of ``h @ W.T``
  by vocabulary chunks, never forming the logits (Cut Cross-Entropy);
- ``attention``: :func:`attention`, online-softmax attention by blocks (FlashAttention);
- ``divergences``: :func:`kl_div`, :func:`jsd` and ``cross_entropy``'s probability
  targets (two distributions per row; row kernels in ``pair_rows``);
- ``sampled``: :func:`sampled_cross_entropy` (the true class and sampled classes);
- ``margin``: :func:`margin_cross_entropy` (ArcFace, CosFace, SphereFace margins);
- ``fenchel_young``: :func:`sparsemax_loss`, :func:`entmax15_loss`,
  :func:`entmax_bisect_loss` (the sparse maps' losses, loss and gradient in one pass);
- ``_overloads``: the same names inside ``@numba.njit`` (SPEC §6).
"""

from __future__ import annotations

from .attention import attention
from .cross_entropy import cross_entropy
from .divergences import jsd, kl_div
from .fenchel_young import entmax15_loss, entmax_bisect_loss, sparsemax_loss
from .linear_cross_entropy import linear_cross_entropy
from .margin import margin_cross_entropy
from .sampled import sampled_cross_entropy
from .topk import softmax_topk

__all__ = ["softmax_topk", "cross_entropy", "linear_cross_entropy", "attention"]
__all__ += ["sparsemax_loss", "entmax15_loss", "entmax_bisect_loss", "kl_div", "jsd"]
__all__ += ["margin_cross_entropy", "sampled_cross_entropy"]
