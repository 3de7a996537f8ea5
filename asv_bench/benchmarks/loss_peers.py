"""The losses of SPEC §10 as torch users compose them (forward and backward), beside
numsoft's fused forms: shared by ``bench_losses`` and the script
``asv_bench/loss_speed.py``.

Each contender takes float32 NumPy arrays (``arguments``) and returns a gradient of the
loss (the student's logits, the cosines, or the class weights ``W``), after the work a
training step does.
"""

from __future__ import annotations

import numpy as np

import numsoft

#: The losses benchmarked, and their (N, C) problem: a batch of 4096 tokens over a
#: 32 000-word vocabulary; 4096 faces over 10 000 identities; for the sampled loss,
#: 8192 of 10**6 classes sampled, hidden size 256 (W: 1 GB).
SHAPES = {
    "kl_div": (4096, 32000),
    "jsd": (4096, 32000),
    "soft_cross_entropy": (4096, 32000),
    "margin_cross_entropy": (4096, 10000),
    "sampled_cross_entropy": (4096, 10**6),
}
LOSSES = tuple(SHAPES)
#: ArcFace's margins and scale.
ARCFACE = {"margin1": 1.0, "margin2": 0.5, "margin3": 0.0, "scale": 64.0}
#: The sampled loss: classes sampled, hidden size.
SAMPLED, HIDDEN = 8192, 256


def arguments(loss: str, shape: tuple[int, int], seed: int = 0) -> tuple:
    """The float32 arguments of ``loss`` for an (N, C) problem: two arrays of logits,
    logits and probabilities, (cosines, labels), or (h, W, labels, sampled, log q)."""
    rng = np.random.default_rng(seed)
    n, c = shape
    if loss == "sampled_cross_entropy":
        h = rng.standard_normal((n, HIDDEN), dtype=np.float32)
        W = rng.standard_normal((c, HIDDEN), dtype=np.float32) * np.float32(0.05)
        labels = rng.integers(0, c, n)
        sampled = rng.choice(c, min(SAMPLED, c), replace=False)
        log_q = np.full(sampled.size, np.log(sampled.size / c), np.float32)
        return h, W, labels, sampled, log_q
    student = 2 * rng.standard_normal(shape, dtype=np.float32)
    teacher = 2 * rng.standard_normal(shape, dtype=np.float32)
    if loss == "soft_cross_entropy":
        return student, numsoft.softmax(teacher)
    if loss == "margin_cross_entropy":
        return np.tanh(student * np.float32(0.3)), rng.integers(0, c, n)
    return student, teacher


def numsoft_step(loss: str):
    """numsoft's fused loss and gradient (``return_grad=True``): one row visit."""
    if loss == "kl_div":
        return lambda s, t: numsoft.kl_div(s, t, return_grad=True)[1]
    if loss == "jsd":
        return lambda s, t: numsoft.jsd(s, t, beta=0.5, return_grad=True)[1]
    if loss == "margin_cross_entropy":
        return lambda c, y: numsoft.margin_cross_entropy(c, y, return_grad=True, **ARCFACE)[1]
    if loss == "sampled_cross_entropy":
        return lambda h, W, y, k, q: numsoft.sampled_cross_entropy(
            h, W, y, k, sampled_log_q=q, return_grad=True
        )[2]
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

    def sampled(h, W, y, k, q):
        hidden = torch.from_numpy(h).requires_grad_()
        weights = torch.from_numpy(W).requires_grad_()
        labels, ids = torch.from_numpy(y), torch.from_numpy(k)
        true = (hidden * weights[labels]).sum(1)
        logits = hidden @ weights[ids].T - torch.from_numpy(q)
        logits = logits.masked_fill(ids[None, :] == labels[:, None], float("-inf"))
        target = torch.zeros(len(y), dtype=torch.long)
        functional.cross_entropy(torch.cat([true[:, None], logits], 1), target).backward()
        return weights.grad

    steps = {"kl_div": kl, "jsd": jsd, "soft_cross_entropy": soft_ce}
    return {**steps, "margin_cross_entropy": margin, "sampled_cross_entropy": sampled}[loss]
