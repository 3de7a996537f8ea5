"""The losses of SPEC §10 as torch users compose them (forward and backward), beside
numsoft's fused forms: shared by ``bench_losses`` and the script
``asv_bench/loss_speed.py``.

Each contender takes float32 NumPy arrays (``arguments``) and returns the gradient of
the loss with respect to its first argument (the student's logits, or the cosines), the
work a training step does.
"""

from __future__ import annotations

import numpy as np

import numsoft

#: The losses benchmarked, and their (N, C) problem: a batch of 4096 tokens over a
#: 32 000-word vocabulary; 4096 faces over 10 000 identities.
SHAPES = {
    "kl_div": (4096, 32000),
    "jsd": (4096, 32000),
    "soft_cross_entropy": (4096, 32000),
    "margin_cross_entropy": (4096, 10000),
}
LOSSES = tuple(SHAPES)
#: ArcFace's margins and scale.
ARCFACE = {"margin1": 1.0, "margin2": 0.5, "margin3": 0.0, "scale": 64.0}


def arguments(loss: str, student: np.ndarray, teacher: np.ndarray) -> tuple:
    """The arguments of ``loss`` from two float32 (N, C) arrays of logits: the teacher's
    logits, its probabilities, or (cosines, labels)."""
    if loss == "soft_cross_entropy":
        return student, numsoft.softmax(teacher)
    if loss == "margin_cross_entropy":
        labels = np.argmax(teacher[:, :64], axis=1).astype(np.int64)
        return np.tanh(student * np.float32(0.3)), labels
    return student, teacher


def numsoft_step(loss: str):
    """numsoft's fused loss and gradient (``return_grad=True``): one row visit."""
    if loss == "kl_div":
        return lambda s, t: numsoft.kl_div(s, t, return_grad=True)[1]
    if loss == "jsd":
        return lambda s, t: numsoft.jsd(s, t, beta=0.5, return_grad=True)[1]
    if loss == "margin_cross_entropy":
        return lambda c, y: numsoft.margin_cross_entropy(c, y, return_grad=True, **ARCFACE)[1]
    return lambda s, q: numsoft.cross_entropy(s, q, return_grad=True)[1]


def torch_step(loss: str):
    """The same with torch's CPU operators and autograd (TRL's JSD formula; the margin
    as insightface and Paddle's reference write it: arccos, cos, a one-hot blend)."""
    import torch

    functional = torch.nn.functional

    def kl(s, t):
        student = torch.from_numpy(s).requires_grad_()
        log_t = functional.log_softmax(torch.from_numpy(t), dim=-1)
        out = functional.kl_div(
            functional.log_softmax(student, dim=-1), log_t, reduction="batchmean", log_target=True
        )
        out.backward()
        return student.grad

    def jsd(s, t):
        student = torch.from_numpy(s).requires_grad_()
        log_s = functional.log_softmax(student, dim=-1)
        log_t = functional.log_softmax(torch.from_numpy(t), dim=-1)
        beta = torch.tensor(0.5, dtype=log_s.dtype)
        mix = torch.logsumexp(
            torch.stack([log_s + torch.log(1 - beta), log_t + torch.log(beta)]), dim=0
        )
        kt = functional.kl_div(mix, log_t, reduction="none", log_target=True)
        ks = functional.kl_div(mix, log_s, reduction="none", log_target=True)
        out = (beta * kt + (1 - beta) * ks).sum() / s.shape[0]
        out.backward()
        return student.grad

    def soft_ce(s, q):
        student = torch.from_numpy(s).requires_grad_()
        functional.cross_entropy(student, torch.from_numpy(q)).backward()
        return student.grad

    def margin(c, y):
        cos = torch.from_numpy(c).requires_grad_()
        labels = torch.from_numpy(y)
        target = cos.gather(1, labels[:, None]).clamp(-1, 1)
        theta = torch.acos(target) * ARCFACE["margin1"] + ARCFACE["margin2"]
        margined = torch.cos(theta) - ARCFACE["margin3"]
        logits = cos.scatter(1, labels[:, None], margined) * ARCFACE["scale"]
        functional.cross_entropy(logits, labels).backward()
        return cos.grad

    steps = {"kl_div": kl, "jsd": jsd, "soft_cross_entropy": soft_ce}
    return {**steps, "margin_cross_entropy": margin}[loss]
