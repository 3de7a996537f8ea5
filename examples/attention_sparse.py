"""Attention over a sequence: dense (numsoft.attention) and sparse (sparsemax, entmax15).

A toy retrieval task: a sequence of L tokens, each with a random key and a value that
encodes its identity; every query is a noisy copy of one token's key, and the model
should retrieve that token's value. Dense softmax attention gives every key some weight;
sparsemax and 1.5-entmax give exact zeros to most of them, so the retrieved value is
less blurred.

The script

1. computes dense attention with ``numsoft.attention`` (blockwise, online softmax, the
   score matrix never formed) and checks it against ``softmax(q·kᵀ·scale)·v`` computed
   with ``numsoft.softmax``, also with ``causal=True`` against a ``where=`` mask;
2. computes sparse attention weights with ``sparsemax`` and ``entmax15`` from the same
   scores;
3. prints, per method, the mean number of keys with non-zero weight, the mean weight on
   the right key and the retrieval accuracy.

    python examples/attention_sparse.py
    python examples/attention_sparse.py --small     # for CI

Needs ``attention``, ``sparsemax`` and ``entmax15``; exits with status 77 (skipped) and a
message when this numsoft does not have them yet.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

import numpy as np

import numsoft

SKIPPED = 77


def find(name: str):
    """``numsoft.<name>``, or the same name from a subpackage that is not re-exported yet."""
    func = getattr(numsoft, name, None)
    for sub in ("variants", "fused"):
        if func is not None:
            break
        with contextlib.suppress(ImportError):
            func = getattr(importlib.import_module(f"numsoft.{sub}"), name, None)
    return func


def make_task(length: int, dim: int, n_queries: int, noise: float, rng):
    """Keys, one-hot values, queries near a chosen key, and the chosen indices."""
    keys = rng.normal(size=(length, dim))
    values = np.eye(length)  # value j identifies token j
    target = rng.integers(length, size=n_queries)
    queries = keys[target] + rng.normal(scale=noise, size=(n_queries, dim))
    return queries, keys, values, target


def report(name: str, weights: np.ndarray, output: np.ndarray, target: np.ndarray) -> None:
    rows = np.arange(len(target))
    support = float(np.mean(np.count_nonzero(weights, axis=1)))
    on_target = float(np.mean(weights[rows, target]))
    accuracy = float(np.mean(np.argmax(output, axis=1) == target))
    print(f"{name:<22} {support:14.1f} {on_target:16.3f} {accuracy:10.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a short sequence (for CI)")
    parser.add_argument("--length", type=int, default=1024, help="sequence length L")
    parser.add_argument("--dim", type=int, default=64, help="key/query dimension")
    parser.add_argument("--noise", type=float, default=1.0, help="query noise (std)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    funcs = {name: find(name) for name in ("attention", "sparsemax", "entmax15")}
    missing = [name for name, f in funcs.items() if f is None]
    if missing:
        print(
            f"skipped: this numsoft has no {', '.join(missing)} (numsoft.fused / "
            "numsoft.variants not merged yet)"
        )
        return SKIPPED
    attention, sparsemax, entmax15 = funcs.values()

    length = 128 if args.small else args.length
    rng = np.random.default_rng(args.seed)
    q, k, v, target = make_task(length, args.dim, length, args.noise, rng)
    scale = 1.0 / np.sqrt(args.dim)  # the usual scaling, attention's default
    scores = scale * (q @ k.T)

    # 1. Dense attention, blockwise, against the materialized reference.
    dense = attention(q, k, v)
    weights = numsoft.softmax(scores, axis=-1)
    err = float(np.max(np.abs(dense - weights @ v)))
    causal = np.tril(np.ones((length, length), dtype=bool))
    err_causal = float(
        np.max(
            np.abs(
                attention(q, k, v, scale=scale, causal=True)
                - numsoft.softmax(scores, where=causal) @ v
            )
        )
    )
    print(f"sequence length {length}, dimension {args.dim}, {length} queries")
    print(
        f"numsoft.attention vs softmax(q·kᵀ·scale)·v: max |difference| = {err:.1e} "
        f"(causal: {err_causal:.1e})"
    )

    # 2. Sparse attention weights from the same scores.
    sparse = sparsemax(scores, axis=-1)
    ent = entmax15(scores, axis=-1)

    print(f"\n{'method':<22} {'keys with w>0':>14} {'w on right key':>16} {'retrieval':>10}")
    report("softmax (attention)", weights, dense, target)
    report("sparsemax", sparse, sparse @ v, target)
    report("entmax15", ent, ent @ v, target)

    for name, w in (("sparsemax", sparse), ("entmax15", ent)):
        if not np.allclose(w.sum(axis=1), 1.0, atol=1e-10):
            print(f"FAIL: {name} rows do not sum to 1")
            return 1
    if err > 1e-10 or err_causal > 1e-10:
        print("FAIL: numsoft.attention disagrees with the materialized reference")
        return 1
    if np.count_nonzero(sparse) >= np.count_nonzero(weights):
        print("FAIL: sparsemax is not sparser than softmax")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
