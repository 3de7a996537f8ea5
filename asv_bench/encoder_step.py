"""A transformer encoder block whose attention normalizer is 1.5-entmax, trained with
Adam: the time of a training step with ``numsoft.torch`` against the ``entmax``
package, in one process.

    python asv_bench/encoder_step.py [--steps 30] [--threads 2] [--batch 16] [--seq 128]

The block: multi-head self-attention (``--heads`` heads over ``--dim`` features, the
scores ``q·kᵀ/sqrt(d)`` normalized by ``entmax15`` along the keys, a (batch, heads, q, k)
tensor), a residual, layer norm and a two-layer MLP; the loss is the mean square error
to a fixed random target. Both libraries train the same initial weights on the same
batches for ``--steps`` steps, alternating step by step; the table gives each one's
first step (compiles or loads numsoft's kernels) and the median and best of the others,
and the largest difference between their loss curves. Attention scores are small
early in training (std about 0.3 here): most keys are in each support.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch import nn  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, normalizer):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.normalizer = normalizer

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (b, heads, n, d/heads)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        attn = self.normalizer(scores, dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, n, d)
        x = self.norm1(x + self.out(y))
        return self.norm2(x + self.mlp(x))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    opts = ap.parse_args()
    import entmax
    import numba

    import numsoft.torch as nt

    torch.set_num_threads(opts.threads)
    numba.set_num_threads(opts.threads)
    torch.manual_seed(0)
    base = Block(opts.dim, opts.heads, None)
    models, optims, times, losses = {}, {}, {}, {}
    for name, normalizer in (("numsoft", nt.entmax15), ("entmax", entmax.entmax15)):
        models[name] = copy.deepcopy(base)
        models[name].normalizer = normalizer
        optims[name] = torch.optim.Adam(models[name].parameters(), lr=1e-3)
        times[name], losses[name] = [], []
    gen = torch.Generator().manual_seed(1)
    shape = (opts.batch, opts.seq, opts.dim)
    batches = [torch.randn(shape, generator=gen) for _ in range(opts.steps)]
    target = torch.randn(shape, generator=gen)
    for x in batches:
        for name, model in models.items():
            t0 = time.perf_counter()
            optims[name].zero_grad()
            loss = nn.functional.mse_loss(model(x), target)
            loss.backward()
            optims[name].step()
            times[name].append(time.perf_counter() - t0)
            losses[name].append(loss.item())
    print(f"encoder block, batch {opts.batch}, {opts.seq} tokens, {opts.dim} features, "
          f"{opts.heads} heads, {opts.steps} Adam steps, {opts.threads} threads; "
          f"torch {torch.__version__}, numba {numba.__version__}")  # fmt: skip
    print(f"{'library':8} {'first ms':>9} {'median ms':>10} {'best ms':>8}")
    for name, t in times.items():
        rest = t[1:]
        print(f"{name:8} {t[0] * 1e3:9.1f} {statistics.median(rest) * 1e3:10.2f} "
              f"{min(rest) * 1e3:8.2f}")  # fmt: skip
    a, b = times["numsoft"][1:], times["entmax"][1:]
    print(f"entmax ÷ numsoft, median step: {statistics.median(b) / statistics.median(a):.2f}")
    diff = max(abs(p - q) for p, q in zip(losses["numsoft"], losses["entmax"], strict=True))
    print(f"largest loss difference over the steps: {diff:.2e}")


if __name__ == "__main__":
    main()
