"""Small calls, where Python dispatch is a large part of the cost: numsoft beside torch.

    python asv_bench/small_calls.py             # every case, best of 7 rounds
    python asv_bench/small_calls.py --repeat 3

Prints each case's best time per call in µs, numsoft's and (when installed) torch's on
the same thread count: the default (200, 10) softmax, a float temperature, a mask,
the (64, 100) column call along axis 0 (LDA's and mixture models' per-document shape),
small ``logsumexp`` calls and a variant (docs/performance.md quotes its runs).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.targets import best_side_by_side, best_torch  # noqa: E402

try:
    import torch
except ImportError:  # torch is optional: numsoft's column only
    torch = None


def cases(rng):
    """(label, numsoft call, torch call or None)."""
    x = rng.normal(size=(200, 10))
    x32 = x.astype(np.float32)
    col = rng.normal(size=(64, 100)).astype(np.float32)
    col64 = col.astype(np.float64)
    mask = x > -1
    t = (lambda a: torch.from_numpy(a)) if torch is not None else (lambda a: None)
    tx, tx32, tcol, tcol64 = t(x), t(x32), t(col), t(col64)
    return [
        ("softmax (200, 10) f64", lambda: numsoft.softmax(x), lambda: torch.softmax(tx, -1)),
        ("softmax (200, 10) f32", lambda: numsoft.softmax(x32), lambda: torch.softmax(tx32, -1)),
        (
            "softmax (200, 10) temperature=2",
            lambda: numsoft.softmax(x, temperature=2.0),
            lambda: torch.softmax(tx / 2.0, -1),
        ),
        ("softmax (200, 10) where=", lambda: numsoft.softmax(x, where=mask), None),
        (
            "softmax (64, 100) f32 axis=0",
            lambda: numsoft.softmax(col, axis=0),
            lambda: torch.softmax(tcol, 0),
        ),
        (
            "softmax (64, 100) f64 axis=0",
            lambda: numsoft.softmax(col64, axis=0),
            lambda: torch.softmax(tcol64, 0),
        ),
        (
            "logsumexp (200, 10) f64",
            lambda: numsoft.logsumexp(x),
            lambda: torch.logsumexp(tx, -1),
        ),
        (
            "logsumexp (64, 100) f32 axis=0",
            lambda: numsoft.logsumexp(col, axis=0),
            lambda: torch.logsumexp(tcol, 0),
        ),
        ("stablemax (200, 10) f64", lambda: numsoft.stablemax(x), None),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="rounds per case (best kept)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    numsoft_threads = min(args.threads, os.cpu_count() or 1)
    if torch is not None:
        torch.set_num_threads(numsoft_threads)
    print(f"{'case':34s} {'numsoft µs':>10s} {'torch µs':>9s}")
    for label, ours, theirs in cases(np.random.default_rng(0)):
        # torch in rounds of its own: its threads spin after a call (targets.best_torch)
        mine = best_side_by_side({label: ours}, args.repeat)[label] * 1e6
        other = best_torch({label: theirs}, args.repeat)[label] * 1e6 if theirs and torch else None
        shown = f"{other:9.2f}" if other is not None else f"{'–':>9s}"
        print(f"{label:34s} {mine:10.2f} {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
