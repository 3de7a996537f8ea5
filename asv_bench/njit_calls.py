"""numsoft inside a Numba user's loop: the cost of a call per row, and what a caller
pays to compile, against the same loop written by hand (``benchmarks/njit_loops.py``).

    python asv_bench/njit_calls.py                # both tables
    python asv_bench/njit_calls.py --rows         # ns per row, by row length and dtype
    python asv_bench/njit_calls.py --compile      # a caller's compile time, in fresh processes

``--rows``: each loop over 200 000 rows, numsoft's and the hand-written one alternating
in one process, best of ``--rounds``; numsoft's kernels are compiled before timing.

``--compile``: the seconds from a caller's first call to its return (Numba compiles it
then) in a fresh interpreter that has imported numsoft and run one trivial jitted
function (Numba's own start-up, which any jitted code pays), each figure the best of
``--repeat`` processes:

- ``warm``: numsoft's kernels in the cache (a later process, or the wheel's shipped
  kernels); the caller is not cached, so this is also what a second process pays that
  did not cache the user's function;
- ``cold``: an empty cache and no shipped kernels (numsoft's kernels compile too), with
  a minimal ``parallel=True`` softmax kernel (``REFERENCE``) compiled first in the same
  process as the yardstick;
- ``cached``: the caller is ``cache=True`` and was saved by an earlier process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from asv_bench.benchmarks.njit_loops import LOOPS, SIDES, compile_loop, inputs, source  # noqa: E402

LENGTHS = (4, 8, 16, 32, 256)
ROWS = 200_000


def per_row_table(lengths, dtypes, functions, rounds: int) -> None:
    loops = {(f, s): compile_loop(f, s) for f in functions for s in SIDES}
    heads = " | ".join(f"{f} (ns/row, numsoft / by hand)" for f in functions)
    print(f"| dtype | n | {heads} |")
    print("|---|---|" + "---|" * len(functions))
    for dtype in dtypes:
        for n in lengths:
            args = inputs(ROWS, n, dtype)
            cells = []
            for f in functions:
                best = {}
                for side in SIDES:
                    loops[f, side](*args)  # compile, warm the caches
                for _ in range(rounds):
                    for side in SIDES:
                        t = time.perf_counter()
                        loops[f, side](*args)
                        dt = (time.perf_counter() - t) / ROWS * 1e9
                        best[side] = min(best.get(side, np.inf), dt)
                a, b = best["numsoft"], best["by hand"]
                cells.append(f"{a:.0f} / {b:.0f} ({a / b:.2f}×)")
            print(f"| {np.dtype(dtype).name} | {n} | " + " | ".join(cells) + " |", flush=True)


# The yardstick of a cold compile: a minimal parallel three-pass-store softmax, float32,
# with a vectorizable polynomial exp and the fastmath flags that keep NaN and inf (the
# project's compile-cost reference kernel).
REFERENCE = """
from numba import types
from numba.extending import intrinsic
FM = {"reassoc", "contract", "arcp", "nsz", "afn"}
@intrinsic
def _i2f(typingctx, b):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))
    return types.float32(types.int32), codegen
@numba.njit(inline="always", fastmath=FM)
def exp32(x):
    x = min(max(x, np.float32(-87.3)), np.float32(88.7))
    n = np.floor(x * np.float32(1.4426950408889634) + np.float32(0.5))
    r = x - n * np.float32(0.693359375) + n * np.float32(2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3); p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2); p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1); p = p * r * r + r + np.float32(1.0)
    return p * _i2f((np.int32(n) + np.int32(127)) << np.int32(23))
@numba.njit(parallel=True, fastmath=FM)
def reference(x, y):
    for i in numba.prange(x.shape[0]):
        r = x[i]; yr = y[i]; n = r.shape[0]; m = r[0]
        for j in range(n): m = max(m, r[j])
        s = np.float32(0)
        for j in range(n):
            e = exp32(r[j] - m); yr[j] = e; s += e
        inv = np.float32(1) / s
        for j in range(n): yr[j] *= inv
x = np.ones((64, 100), np.float32)
t = time.perf_counter()
reference(x, np.empty_like(x))
result["reference"] = time.perf_counter() - t
"""

PROBE = """
import json, sys, time
import numba
import numpy as np
import numsoft
from asv_bench.benchmarks.njit_loops import inputs
numba.njit(lambda: 0)()  # Numba's start-up
result = {{}}
{reference}
import {module} as user
args = inputs(4, 8, np.float64)
t = time.perf_counter()
user.loop(*args)
result["caller"] = time.perf_counter() - t
print(json.dumps(result))
"""


def _probe(folder: str, module: str, cache_dir: str, reference: bool, shipped: bool) -> dict:
    env = dict(
        os.environ,
        NUMBA_CACHE_DIR=cache_dir,
        PYTHONPATH=os.pathsep.join([folder, ROOT, os.environ.get("PYTHONPATH", "")]),
        NUMSOFT_SHIPPED_KERNELS="1" if shipped else "0",
    )
    code = PROBE.format(module=module, reference=REFERENCE if reference else "")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_table(functions, repeat: int) -> None:
    print("| caller | warm: numsoft / by hand | cold: numsoft / parallel softmax | "
          "cached caller, next process |")  # fmt: skip
    print("|---|---|---|---|")
    for f in functions:
        folder = tempfile.mkdtemp(prefix="numsoft-njit-")
        try:
            for side, name in zip(SIDES, ("with_numsoft", "by_hand"), strict=True):
                with open(os.path.join(folder, f"{name}.py"), "w") as fh:
                    fh.write(source(f, side))
            with open(os.path.join(folder, "cached_caller.py"), "w") as fh:
                fh.write(source(f, "numsoft", cache=True))
            warm_dir = os.path.join(folder, "warm-cache")
            _probe(folder, "with_numsoft", warm_dir, False, True)  # fills numsoft's kernels
            warm = min(
                _probe(folder, "with_numsoft", warm_dir, False, True)["caller"]
                for _ in range(repeat)
            )
            hand = min(
                _probe(folder, "by_hand", warm_dir, False, True)["caller"] for _ in range(repeat)
            )
            cold = []
            for _ in range(repeat):
                empty = tempfile.mkdtemp(dir=folder)
                cold.append(_probe(folder, "with_numsoft", empty, True, False))
            _probe(folder, "cached_caller", warm_dir, False, True)  # saves the caller
            cached = min(
                _probe(folder, "cached_caller", warm_dir, False, True)["caller"]
                for _ in range(repeat)
            )
            c = min(cold, key=lambda r: r["caller"] / r["reference"])
            print(
                f"| {f} | {warm:.3f} / {hand:.3f} s ({warm / hand:.2f}×) | "
                f"{c['caller']:.2f} / {c['reference']:.2f} s "
                f"({c['caller'] / c['reference']:.2f}×) | {cached:.3f} s |",
                flush=True,
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", action="store_true", help="only the per-row table")
    parser.add_argument("--compile", action="store_true", help="only the compile-time table")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="processes per compile figure")
    parser.add_argument("--lengths", type=lambda s: tuple(map(int, s.split(","))), default=LENGTHS)
    parser.add_argument("--functions", nargs="+", default=list(LOOPS), choices=list(LOOPS))
    args = parser.parse_args()
    both = not (args.rows or args.compile)
    if args.rows or both:
        per_row_table(args.lengths, (np.float64, np.float32), args.functions, args.rounds)
    if args.compile or both:
        if args.rows or both:
            print()
        compile_table(args.functions, args.repeat)


if __name__ == "__main__":
    main()
