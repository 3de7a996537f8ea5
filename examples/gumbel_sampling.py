"""Sampling categorical actions with numsoft.gumbel_softmax.

A policy gives, for each of a few states, logits over the actions. The Gumbel-max trick
samples an action as ``argmax(logits + g)`` with Gumbel noise g, which is distributed
exactly as ``softmax(logits)``; ``gumbel_softmax(..., hard=True)`` returns that sample
one-hot, and with ``hard=False`` the relaxed sample ``softmax((logits + g)/tau)`` that a
training loop can differentiate (Jang, Gu & Poole, arXiv 1611.01144).

The script

1. draws many hard samples per state in one call (the rows of one array, one seed) and
   compares the action frequencies with ``numsoft.softmax(logits)``;
2. shows that the same seed gives the same samples;
3. shows the relaxed samples approach one-hot vectors as ``tau`` decreases.

    python examples/gumbel_sampling.py
    python examples/gumbel_sampling.py --small     # fewer samples, for CI

Needs ``gumbel_softmax``; exits with status 77 (skipped) and a message when this numsoft
does not have it yet.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

import numpy as np

import numsoft

SKIPPED = 77

#: Policy logits: 3 states × 5 actions.
LOGITS = np.array(
    [
        [2.0, 1.0, 0.0, -1.0, -2.0],
        [0.0, 0.0, 0.0, 0.0, 3.0],
        [1.0, 1.0, -np.inf, 0.5, 0.5],  # action 2 is not allowed in this state
    ]
)


def find(name: str):
    """``numsoft.<name>``, or the same name from a subpackage that is not re-exported yet."""
    func = getattr(numsoft, name, None)
    for sub in ("variants", "fused"):
        if func is not None:
            break
        with contextlib.suppress(ImportError):
            func = getattr(importlib.import_module(f"numsoft.{sub}"), name, None)
    return func


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="fewer samples (for CI)")
    parser.add_argument("--samples", type=int, default=200_000, help="samples per state")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    gumbel_softmax = find("gumbel_softmax")
    if gumbel_softmax is None:
        print("skipped: this numsoft has no gumbel_softmax (numsoft.variants not merged yet)")
        return SKIPPED

    n = 20_000 if args.small else args.samples
    n_states, n_actions = LOGITS.shape
    probs = numsoft.softmax(LOGITS)

    # 1. n hard samples per state: the rows of one (states, n, actions) array.
    batch = np.broadcast_to(LOGITS[:, None, :], (n_states, n, n_actions))
    onehot = gumbel_softmax(batch, hard=True, seed=args.seed)
    if not np.all(onehot.sum(axis=-1) == 1.0):
        print("FAIL: hard samples are not one-hot")
        return 1
    freq = onehot.mean(axis=1)
    # Each frequency is a mean of n Bernoulli(p) draws: standard error sqrt(p(1-p)/n).
    z = np.abs(freq - probs) / np.sqrt(np.maximum(probs * (1 - probs), 1e-12) / n)
    print(f"{n} samples per state; action frequencies vs softmax(logits)")
    for s in range(n_states):
        cells = "  ".join(f"{f:.4f}/{p:.4f}" for f, p in zip(freq[s], probs[s], strict=True))
        print(f"  state {s}: {cells}")
    print(f"largest deviation: {z.max():.2f} standard errors")

    # 2. Same seed, same samples.
    again = gumbel_softmax(batch, hard=True, seed=args.seed)
    reproducible = np.array_equal(onehot, again)
    print(f"same seed gives the same samples: {reproducible}")

    # 3. Relaxed samples: the mean largest entry tends to 1 (one-hot) as tau → 0.
    print("relaxed samples: mean of the largest probability per sample")
    for tau in (5.0, 1.0, 0.5, 0.1):
        soft = gumbel_softmax(batch, tau=tau, seed=args.seed + 1)
        print(f"  tau = {tau:4.1f}: {soft.max(axis=-1).mean():.3f}")

    if freq[2, 2] != 0.0:
        print("FAIL: a disallowed (-inf) action was sampled")
        return 1
    if z.max() > 5.0 or not reproducible:
        print("FAIL: samples do not follow softmax(logits), or are not reproducible")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
