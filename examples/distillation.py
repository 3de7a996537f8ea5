"""Knowledge distillation: a small torch student learns a teacher's distributions
through numsoft's generalized Jensen–Shannon divergence.

The teacher is a fixed random two-layer network over 64 classes; the student is a
linear model trained with ``numsoft.jsd(student_logits, teacher_logits, beta=0.5,
temperature=2.0)`` (TRL's on-policy distillation loss; numsoft computes it in fused row
visits, with its gradient flowing to the student through torch autograd). The script
checks the loss and its gradient against TRL's formula written in torch once, then
trains; the loss must fall and the student must agree with the teacher's top class far
more often than chance.

    python examples/distillation.py
    python examples/distillation.py --small     # fewer samples and steps, for CI
"""

from __future__ import annotations

import argparse
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("skipped: this example needs torch (pip install torch)")
    sys.exit(77)

import numsoft

CLASSES, FEATURES, HIDDEN = 64, 32, 128


def trl_jsd(student_logits, teacher_logits, beta, temperature):
    """TRL's ``generalized_jsd_loss`` (0 < β < 1, "batchmean"), for the check."""
    log_s = F.log_softmax(student_logits / temperature, dim=-1)
    log_t = F.log_softmax(teacher_logits / temperature, dim=-1)
    b = torch.tensor(beta, dtype=log_s.dtype)
    mix = torch.logsumexp(torch.stack([log_s + torch.log(1 - b), log_t + torch.log(b)]), dim=0)
    kt = F.kl_div(mix, log_t, reduction="none", log_target=True)
    ks = F.kl_div(mix, log_s, reduction="none", log_target=True)
    return (b * kt + (1 - b) * ks).sum() / log_s.shape[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="fewer samples and steps")
    args = parser.parse_args()
    n, steps = (512, 150) if args.small else (4096, 400)
    torch.manual_seed(0)
    teacher = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, CLASSES)
    ).requires_grad_(False)
    x = torch.randn(n, FEATURES)
    with torch.no_grad():
        teacher_logits = 4 * teacher(x)
    student = torch.nn.Linear(FEATURES, CLASSES)

    # One check against the formula: the loss and the student's gradient.
    logits = student(x[:64])
    ours = torch.autograd.grad(numsoft.jsd(logits, teacher_logits[:64], temperature=2.0), logits)
    theirs = torch.autograd.grad(trl_jsd(logits, teacher_logits[:64], 0.5, 2.0), logits)
    torch.testing.assert_close(ours[0], theirs[0], rtol=1e-4, atol=1e-7)
    print("gradient check against TRL's formula: ok")

    optimizer = torch.optim.Adam(student.parameters(), lr=0.02)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = numsoft.jsd(student(x), teacher_logits, beta=0.5, temperature=2.0)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % (steps // 5) == 0 or step == steps - 1:
            print(f"step {step:4d}: JSD {loss.item():.4f}")
    with torch.no_grad():
        agree = (student(x).argmax(-1) == teacher_logits.argmax(-1)).float().mean().item()
    print(f"student agrees with the teacher's top class on {agree:.0%} (chance: {1 / CLASSES:.0%})")
    ok = losses[-1] < 0.5 * losses[0] and agree > 10 / CLASSES
    print("ok" if ok else "FAILED: the loss did not fall or the student did not learn")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
