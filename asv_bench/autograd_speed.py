"""Forward + backward through torch autograd: numsoft against the ``entmax`` package
(sparsemax, 1.5-entmax, the bisection maps) and against torch's own softmax, in one run.

    python asv_bench/autograd_speed.py [--rounds 7] [--threads 2] [--scales 3 1 0.3 0.1]

For each shape (float32) and scale: ``x = randn * scale``, ``y = f(x)``,
``y.backward(w)`` with ``x`` requiring grad, timed as one step; numsoft through
``numsoft.torch`` (the entmax drop-in) and ``numsoft.softmax``, entmax through its CPU
path, torch through ``torch.softmax``. The scale sets how many entries a sparse map's
support holds: a few at 3, almost all at 0.1. The contenders alternate within each
round; the table gives the best of ``--rounds`` per contender and their ratio (the
other's time ÷ numsoft's: above 1, numsoft is faster). torch and Numba both run
``--threads`` threads. ``asv_bench/benchmarks/bench_sparse_maps.py`` has the same cases
for asv.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numba  # noqa: E402
import torch  # noqa: E402

import numsoft  # noqa: E402
import numsoft.torch as nt  # noqa: E402

SHAPES = [(4096, 1000), (256, 50257), (16, 8, 128, 128)]


def step(func, x, w):
    """Seconds of one forward + backward."""
    x.grad = None
    t0 = time.perf_counter()
    func(x).backward(w)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scales", type=float, nargs="+", default=[3.0])
    ap.add_argument("--functions", nargs="+", default=None, help="default: all of them")
    ap.add_argument("--alpha", type=float, default=1.5, help="entmax_bisect's α (default 1.5)")
    opts = ap.parse_args()
    import entmax

    torch.set_num_threads(opts.threads)
    numba.set_num_threads(opts.threads)
    pairs = {
        "sparsemax": (nt.sparsemax, entmax.sparsemax, "entmax"),
        "entmax15": (nt.entmax15, entmax.entmax15, "entmax"),
        "entmax_bisect": (
            lambda t: nt.entmax_bisect(t, opts.alpha),
            lambda t: entmax.entmax_bisect(t, opts.alpha),
            "entmax",
        ),
        "sparsemax_bisect": (nt.sparsemax_bisect, entmax.sparsemax_bisect, "entmax"),
        "softmax": (lambda t: numsoft.softmax(t), lambda t: torch.softmax(t, -1), "torch"),
    }
    if opts.functions:
        pairs = {k: pairs[k] for k in opts.functions}
    print(f"torch {torch.__version__}, entmax 1.3, numba {numba.__version__}, "
          f"{opts.threads} threads, best of {opts.rounds}; ms per forward + backward")  # fmt: skip
    print(f"{'function':16} {'shape':>17} {'scale':>5} {'numsoft':>9} {'other':>9}  other ÷ ours")
    gen = torch.Generator().manual_seed(0)
    for shape, scale in [(s, c) for s in SHAPES for c in opts.scales]:
        x = (torch.randn(shape, generator=gen) * scale).requires_grad_()
        w = torch.randn(shape, generator=gen)
        for name, (ours, theirs, other) in pairs.items():
            for f in (ours, theirs):  # warm-up: compiles, loads, first-touches
                step(f, x, w)
            best = {ours: float("inf"), theirs: float("inf")}
            for _ in range(opts.rounds):
                for f in (ours, theirs):
                    best[f] = min(best[f], step(f, x, w))
            a, b = best[ours] * 1e3, best[theirs] * 1e3
            row = f"{name:16} {str(shape):>17} {scale:5g} {a:9.2f} {b:9.2f}"
            print(f"{row}  {b / a:5.2f} ({other})")


if __name__ == "__main__":
    main()
