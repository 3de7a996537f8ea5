"""``python -m numsoft``: the demo; ``warmup``: compile ahead of use; ``info``: the install.

The demo computes softmax, log_softmax and logsumexp with every pass structure on
sample arrays and prints, per function and algorithm, the max error against SciPy
(float64 reference) and the time relative to NumPy and SciPy, measured side by side.
``warmup`` compiles the common paths into Numba's cache (``numsoft.warmup``); ``info``
prints what a bug report needs (``numsoft.info``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import numsoft
from numsoft._frontend import ALGORITHMS


def _best_time(repeats: int, func, *args, **kwargs) -> float:
    func(*args, **kwargs)  # warm-up (compiles on first use, then loads from the cache)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        func(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return best


def _numpy_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _numpy_log_softmax(x):
    d = x - x.max(axis=-1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=-1, keepdims=True))


def _numpy_logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[..., 0]


def _warmup(args) -> int:
    from numsoft import warmup

    functions = tuple(args.functions) or (warmup.ALL if args.all else warmup.CORE)
    print(f"numsoft warmup: compiling {', '.join(functions)} into Numba's cache", flush=True)
    try:
        seconds = warmup.warmup(functions, args.all, args.jobs,
                                echo=lambda line: print(line, flush=True))  # fmt: skip
    except ValueError as exc:
        print(exc)
        return 2
    print(f"done in {seconds:.0f} s; later processes load these kernels from the cache")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m numsoft", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2048, help="rows of the sample array")
    parser.add_argument("--cols", type=int, default=2048, help="row length of the sample array")
    parser.add_argument("--repeats", type=int, default=5, help="timing repeats (best of)")
    commands = parser.add_subparsers(dest="command", metavar="{warmup,info}")
    commands.add_parser(
        "info", help="versions, threading layer and why, threads, CPU, cache, CUDA",
        description="Print what a bug report needs: versions, the threading layer Numba "
        "runs numsoft on and why, threads, what numsoft read from the CPU, the kernel "
        "cache and whether CUDA is available.",
    )  # fmt: skip
    warm = commands.add_parser(
        "warmup", help="compile the common paths ahead of use (numsoft.warmup)",
        description="Compile numsoft's common paths into Numba's on-disk cache, in worker "
        "processes side by side, so that later processes start without compiling.",
    )  # fmt: skip
    warm.add_argument("functions", nargs="*", help="public functions to warm up (default: "
                      "softmax, log_softmax, logsumexp)")  # fmt: skip
    warm.add_argument("--all", action="store_true", help="every pass structure, split rows, "
                      "the backward passes, the variants and cross_entropy")  # fmt: skip
    warm.add_argument("--jobs", type=int, default=0, help="worker processes (default: one "
                      "per core)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.command == "warmup":
        return _warmup(args)
    if args.command == "info":
        from numsoft.info import report

        print(report())
        return 0
    try:
        import scipy.special as sps
    except ImportError:  # the demo still runs; SciPy columns are left out
        sps = None

    rng = np.random.default_rng(0)
    print(f"numsoft {numsoft.__version__}: {args.rows}x{args.cols} sample arrays, "
          f"best of {args.repeats}; error vs {'SciPy' if sps else 'NumPy'} in float64")  # fmt: skip
    header = f"{'function':<12} {'dtype':<8} {'algorithm':<18} {'max error':>10} "
    header += f"{'ms':>8} {'vs NumPy':>9}" + (f" {'vs SciPy':>9}" if sps else "")
    print(header)
    print("-" * len(header))
    funcs = [
        ("softmax", numsoft.softmax, _numpy_softmax, "softmax"),
        ("log_softmax", numsoft.log_softmax, _numpy_log_softmax, "log_softmax"),
        ("logsumexp", numsoft.logsumexp, _numpy_logsumexp, "logsumexp"),
    ]
    worst = 0.0
    for dtype in (np.float32, np.float64):
        x = rng.normal(scale=4.0, size=(args.rows, args.cols)).astype(dtype)
        x64 = x.astype(np.float64)
        for name, ours, numpy_impl, scipy_name in funcs:
            ref = getattr(sps, scipy_name)(x64, axis=-1) if sps else numpy_impl(x64)
            t_numpy = _best_time(args.repeats, numpy_impl, x)
            t_scipy = (
                _best_time(args.repeats, getattr(sps, scipy_name), x, axis=-1) if sps else None
            )
            for algorithm in ALGORITHMS:
                result = ours(x, algorithm=algorithm)
                err = float(np.max(np.abs(result.astype(np.float64) - ref)))
                scale = float(np.max(np.abs(ref))) or 1.0
                worst = max(worst, err / scale / (1e-5 if dtype == np.float32 else 1e-12))
                t = _best_time(args.repeats, ours, x, algorithm=algorithm)
                row = f"{name:<12} {np.dtype(dtype).name:<8} {algorithm:<18} {err:>10.2e} "
                row += f"{t * 1e3:>8.2f} {t_numpy / t:>8.1f}x"
                if sps:
                    row += f" {t_scipy / t:>8.1f}x"
                print(row)
    print("\n'vs NumPy'/'vs SciPy': how many times faster numsoft is (higher is better).")
    if worst > 1.0:
        print("ERROR: an error exceeded the tolerance")
        return 1
    print("All errors within tolerance (float32 1e-5, float64 1e-12 relative to max |ref|).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
