"""The losses between two distributions as torch users compose them (forward and
backward), beside numsoft's fused forms: shared by ``bench_divergences`` and the
script ``asv_bench/divergence_speed.py``.

Each contender takes float32 NumPy arrays ``(student, teacher)`` of shape (N, V) and
returns the student's gradient of the "batchmean" loss (soft-target cross-entropy:
"mean"), the work a training step does.
"""

from __future__ import annotations

import numsoft

#: The losses benchmarked; the soft-target cross-entropy takes the teacher's softmax.
LOSSES = ("kl_div", "jsd", "soft_cross_entropy")


def numsoft_step(loss: str):
    """numsoft's fused loss and gradient (``return_grad=True``): one row visit."""
    if loss == "kl_div":
        return lambda s, t: numsoft.kl_div(s, t, return_grad=True)[1]
    if loss == "jsd":
        return lambda s, t: numsoft.jsd(s, t, beta=0.5, return_grad=True)[1]
    return lambda s, q: numsoft.cross_entropy(s, q, return_grad=True)[1]


def torch_step(loss: str):
    """The same with torch's CPU operators and autograd (TRL's JSD formula)."""
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

    return {"kl_div": kl, "jsd": jsd, "soft_cross_entropy": soft_ce}[loss]


def inputs(loss: str, student, teacher):
    """The second argument of ``loss``: the teacher's logits, or its probabilities."""
    return numsoft.softmax(teacher) if loss == "soft_cross_entropy" else teacher
