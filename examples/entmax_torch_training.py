"""Train a small torch model with sparse attention and a sparse loss: numsoft.torch in
place of the entmax package.

A toy task: each sample is a bag of L tokens (random vectors) and its label is the class
of one "signal" token hidden among them. The model scores the tokens, pools them with
1.5-entmax attention weights (exact zeros for most tokens) and classifies the pooled
vector; it trains with the 1.5-entmax loss (``Entmax15Loss``). Both the attention and
the loss run numsoft's kernels forward and backward through torch autograd.

The script trains the model for a few epochs with ``numsoft.torch`` and prints the loss,
the accuracy and how many tokens the attention keeps per sample; where the ``entmax``
package is installed it trains the same model with it and prints the largest difference
of the two loss curves, and both times (after one warm-up batch each: a process's first
numsoft calls load its compiled kernels, about half a second).

    python examples/entmax_torch_training.py
    python examples/entmax_torch_training.py --small     # for CI

Needs torch (its CPU build: ``pip install torch --index-url
https://download.pytorch.org/whl/cpu``); exits with status 77 (skipped) and a
message without it.
"""

from __future__ import annotations

import argparse
import sys
import time

SKIPPED = 77


def make_data(torch, n: int, length: int, dim: int, classes: int):
    """Bags of ``length`` noise tokens with one signal token (its class's prototype)."""
    gen = torch.Generator().manual_seed(0)
    prototypes = torch.randn(classes, dim, generator=gen) * 2
    tokens = torch.randn(n, length, dim, generator=gen)
    labels = torch.randint(0, classes, (n,), generator=gen)
    where = torch.randint(0, length, (n,), generator=gen)
    tokens[torch.arange(n), where] = prototypes[labels] + 0.3 * torch.randn(n, dim, generator=gen)
    return tokens, labels


def train(torch, lib, tokens, labels, epochs: int, classes: int):
    """(losses per epoch, accuracy, mean kept tokens, seconds) with ``lib``'s entmax15."""
    torch.manual_seed(1)
    dim = tokens.shape[-1]
    score = torch.nn.Sequential(torch.nn.Linear(dim, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    head = torch.nn.Linear(dim, classes)
    params = [*score.parameters(), *head.parameters()]
    opt = torch.optim.Adam(params, lr=0.01)
    loss_fn = lib.Entmax15Loss(k=None)
    losses = []
    start = time.perf_counter()
    for _ in range(epochs):
        for i in range(0, len(tokens), 256):
            x, y = tokens[i : i + 256], labels[i : i + 256]
            weights = lib.entmax15(score(x).squeeze(-1), dim=-1)
            loss = loss_fn(head((weights.unsqueeze(-1) * x).sum(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    with torch.no_grad():
        weights = lib.entmax15(score(tokens).squeeze(-1), dim=-1)
        pooled = (weights.unsqueeze(-1) * tokens).sum(1)
        accuracy = (lib.entmax15(head(pooled), dim=-1).argmax(-1) == labels).float().mean()
        kept = (weights > 0).sum(-1).float().mean()
    return losses, float(accuracy), float(kept), seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="a quick run (CI)")
    opts = ap.parse_args()
    try:
        import torch

        import numsoft.torch as nt
    except ImportError as exc:
        print(f"skipped: {exc}")
        return SKIPPED
    n, length, epochs = (1024, 32, 4) if opts.small else (8192, 64, 10)
    classes, dim = 8, 16
    tokens, labels = make_data(torch, n, length, dim, classes)
    train(torch, nt, tokens[:256], labels[:256], 1, classes)  # first calls: load the kernels
    losses, accuracy, kept, seconds = train(torch, nt, tokens, labels, epochs, classes)
    print(f"numsoft.torch: loss {losses[0]:.4f} -> {losses[-1]:.4f}, accuracy {accuracy:.3f}, "
          f"attention keeps {kept:.1f} of {length} tokens, {seconds:.2f} s")  # fmt: skip
    if not losses[-1] < losses[0]:
        print("the loss did not fall")
        return 1
    try:
        import entmax
    except ImportError:
        print("entmax is not installed: no comparison")
        return 0
    train(torch, entmax, tokens[:256], labels[:256], 1, classes)
    theirs, their_accuracy, _, their_seconds = train(torch, entmax, tokens, labels, epochs, classes)
    gap = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, theirs, strict=True))
    print(f"entmax:        loss {theirs[0]:.4f} -> {theirs[-1]:.4f}, accuracy "
          f"{their_accuracy:.3f}, {their_seconds:.2f} s")  # fmt: skip
    print(f"largest relative gap between the two loss curves: {gap:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
