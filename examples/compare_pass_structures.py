"""Time every pass structure on a few shapes on this machine, against np.copyto.

A copy reads and writes every element once: no softmax can move fewer bytes, so
``time / copy time`` says how close each pass structure comes to the memory bound
(three-pass-store moves 5 elements per element, three-pass-reload 4, two-pass and
online 3; see docs/pass-structures.md). Both sides write into preallocated output
(``out=``), so allocation is not timed. The script also checks that all algorithms
agree within the float tolerance.

    python examples/compare_pass_structures.py                  # 64 MiB arrays
    python examples/compare_pass_structures.py --small          # tiny, for CI
    python examples/compare_pass_structures.py --dtype float64 --function logsumexp
"""

from __future__ import annotations

import argparse
import sys
import time

import numba
import numpy as np

import numsoft
from numsoft.cpu.auto import choose_algorithm
from numsoft.vocabulary import ALGORITHM_NAMES

ALGORITHMS = ("auto", *ALGORITHM_NAMES)

#: (shape, axis) cases: square, many short rows, one long row, a middle (column) axis.
FULL_CASES = [((4096, 4096), -1), ((131072, 128), -1), ((1, 1 << 24), -1), ((4096, 4096), 0)]
SMALL_CASES = [((256, 256), -1), ((2048, 32), -1), ((1, 1 << 16), -1), ((256, 256), 0)]


def best_time(func, repeats: int) -> float:
    func()  # warm-up: compiles on first use, then loads from the cache
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t0)
    return best


def run_case(shape, axis, dtype, function: str, repeats: int, rng) -> list[tuple]:
    x = rng.normal(scale=3.0, size=shape).astype(dtype)
    y = np.empty_like(x)
    t_copy = best_time(lambda: np.copyto(y, x), repeats)
    func = getattr(numsoft, function)
    results, rows = {}, []
    for algorithm in ALGORITHMS:
        if function == "logsumexp":

            def call(algorithm=algorithm):
                return func(x, axis=axis, algorithm=algorithm)

        else:

            def call(algorithm=algorithm):
                return func(x, axis=axis, out=y, algorithm=algorithm)

        t = best_time(call, repeats)
        results[algorithm] = np.array(call(), dtype=np.float64, copy=True)
        rows.append((algorithm, t, t / t_copy))
    ref = results["three-pass-reload"]
    scale = np.maximum(np.abs(ref), 1.0) if function != "softmax" else np.abs(ref) + 1e-30
    worst = max(float(np.max(np.abs(r - ref) / scale)) for r in results.values())
    return t_copy, rows, worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="tiny shapes (a CI-sized run)")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument(
        "--function", choices=["softmax", "log_softmax", "logsumexp"], default="softmax"
    )
    parser.add_argument("--repeats", type=int, default=None, help="best of (default 5; 2 small)")
    args = parser.parse_args(argv)
    dtype = np.dtype(args.dtype)
    repeats = args.repeats or (2 if args.small else 5)
    cases = SMALL_CASES if args.small else FULL_CASES
    rng = np.random.default_rng(0)

    print(
        f"numsoft {numsoft.__version__}, numba {numba.__version__}, "
        f"{numba.get_num_threads()} threads; {args.function}, {dtype}, best of {repeats}"
    )
    print("time / copy: the run time divided by np.copyto's on the same array (1.0 = copy speed)")
    header = f"{'shape':>14} {'axis':>4} {'algorithm':<23} {'ms':>9} {'GB/s':>7} {'/ copy':>7}"
    print(header)
    print("-" * len(header))
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    failed = False
    for shape, axis in cases:
        n = shape[axis]
        picked = ALGORITHM_NAMES[choose_algorithm(n, dtype.itemsize)]
        t_copy, rows, worst = run_case(shape, axis, dtype, args.function, repeats, rng)
        nbytes = 2 * np.prod(shape) * dtype.itemsize  # one read + one write of the array
        label = "x".join(map(str, shape))
        print(
            f"{label:>14} {axis:>4} {'np.copyto':<23} {t_copy * 1e3:9.3f} "
            f"{nbytes / t_copy / 1e9:7.1f} {1.0:7.2f}"
        )
        for algorithm, t, ratio in rows:
            name = f"auto ({picked})" if algorithm == "auto" else algorithm
            print(
                f"{'':>14} {'':>4} {name:<23} {t * 1e3:9.3f} {nbytes / t / 1e9:7.1f} {ratio:7.2f}"
            )
        print(f"{'':>14} {'':>4} max relative difference between algorithms: {worst:.1e}")
        failed |= worst > tolerance
    if failed:
        print(f"FAIL: algorithms disagree by more than {tolerance:g}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
