"""numsoft's losses between distributions as ``torch.nn.Module`` classes, with torch's
conventions: ``loss = KLDivLoss(temperature=2.0)(student_logits, teacher_logits)``.

``KLDivLoss`` and ``JSDLoss`` take two arrays of logits (log-probabilities are logits
too: their softmax is the distribution itself, so torch's ``KLDivLoss(log_target=True)``
inputs give the same result). The work is ``numsoft.kl_div`` and ``numsoft.jsd``: fused
row visits, their gradients with respect to both inputs and the temperature under
autograd.
``MarginCrossEntropyLoss`` is ``numsoft.margin_cross_entropy`` (ArcFace, CosFace,
SphereFace): ``forward(cos_logits, labels)``.
"""

from __future__ import annotations

from torch import nn

from .. import fused

__all__ = ["KLDivLoss", "JSDLoss", "MarginCrossEntropyLoss"]


class KLDivLoss(nn.Module):
    """KL(p_teacher ‖ p_student) of the softmaxes of two arrays of logits
    (``numsoft.kl_div``); ``reverse=True``: KL(p_student ‖ p_teacher).

    ``forward(student_logits, teacher_logits)``: the order of torch's
    ``KLDivLoss(input, target)``. ``dim`` is the class dimension.
    """

    def __init__(self, temperature=1.0, reverse=False, reduction="batchmean", dim=-1):
        super().__init__()
        self.temperature, self.reverse, self.reduction, self.dim = (
            temperature,
            reverse,
            reduction,
            dim,
        )

    def forward(self, student_logits, teacher_logits):
        return fused.kl_div(
            student_logits,
            teacher_logits,
            axis=self.dim,
            temperature=self.temperature,
            reverse=self.reverse,
            reduction=self.reduction,
        )


class JSDLoss(nn.Module):
    """Generalized Jensen–Shannon divergence β·KL(p_t ‖ m) + (1 − β)·KL(p_s ‖ m),
    ``m = β·p_t + (1 − β)·p_s`` (``numsoft.jsd``; TRL's ``generalized_jsd_loss``)."""

    def __init__(self, beta=0.5, temperature=1.0, reduction="batchmean", dim=-1):
        super().__init__()
        self.beta, self.temperature, self.reduction, self.dim = beta, temperature, reduction, dim

    def forward(self, student_logits, teacher_logits):
        return fused.jsd(
            student_logits,
            teacher_logits,
            beta=self.beta,
            axis=self.dim,
            temperature=self.temperature,
            reduction=self.reduction,
        )


class MarginCrossEntropyLoss(nn.Module):
    """Angular margin cross-entropy of cosines (``numsoft.margin_cross_entropy``):
    ArcFace ``(1, 0.5, 0)`` by default, CosFace ``(1, 0, 0.35)``, SphereFace
    ``(1.35, 0, 0)``; ``forward(cos_logits, labels)``."""

    def __init__(
        self, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, reduction="mean", dim=-1,
        ignore_index=-100,
    ):  # fmt: skip
        super().__init__()
        self.margins = (margin1, margin2, margin3)
        self.scale, self.reduction, self.dim, self.ignore_index = (
            scale,
            reduction,
            dim,
            ignore_index,
        )

    def forward(self, cos_logits, labels):
        m1, m2, m3 = self.margins
        return fused.margin_cross_entropy(
            cos_logits,
            labels,
            margin1=m1,
            margin2=m2,
            margin3=m3,
            scale=self.scale,
            axis=self.dim,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )
