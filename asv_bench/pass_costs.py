"""Each pass of the long-row kernels alone, against a copy of the same row.

Why is ``two-pass`` (2 passes, 3 transfers per element) not ahead of
``three-pass-reload`` (3 passes, 4 transfers) on one long row out of cache? Time each
pass of both structures (and of ``three-pass-store``) as the row kernels call it, on
one thread, beside ``np.copyto`` of the row (one read and one write per element: the
memory bound of a pass that writes) and ``np.max`` of it (one read: the bound of a pass
that only reads). A pass near its bound is memory-bound; one far above it is bound by
its arithmetic, the exponential.

    python asv_bench/pass_costs.py [--log2n 26] [--dtype float32] [--repeat 7]

Prints one line per pass: its time, its time over the copy's and over the read's, and
each structure's sum of passes beside the whole call (``numsoft.softmax`` with that
``algorithm=``, one thread). docs/pass-structures.md quotes a run.
"""

from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.roofline import best_time  # noqa: E402
from numsoft.cpu.passes import (  # noqa: E402
    row_max,
    row_sum_exp,
    scale_inplace,
    store_exp_and_sum,
    write_exp_scaled,
)
from numsoft.cpu.two_pass import extexp_stats, write_two_pass  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log2n", type=int, default=26, help="row length 2**log2n")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    numba.set_num_threads(1)
    dt = np.dtype(args.dtype)
    x = np.random.default_rng(0).standard_normal(1 << args.log2n).astype(dt)
    y = np.empty_like(x)
    one = dt.type(1.0)
    m = dt.type(row_max(x))  # Numba returns a Python float: retype it as the kernels see it
    s = row_sum_exp(x, m, one)
    mant, e = extexp_stats(x, one)

    copy = best_time(lambda: np.copyto(y, x), args.repeat, 0.0)
    read = best_time(lambda: np.max(x), args.repeat, 0.0)
    passes = {
        "three-pass-reload": [
            ("max", lambda: row_max(x)),
            ("sum exp", lambda: row_sum_exp(x, m, one)),
            ("write exp/sum", lambda: write_exp_scaled(x, y, m, one, dt.type(1.0 / s))),
        ],
        "three-pass-store": [
            ("max", lambda: row_max(x)),
            ("store exp, sum", lambda: store_exp_and_sum(x, y, m, one)),
            ("scale in place", lambda: scale_inplace(y, dt.type(1.0 / s))),
        ],
        "two-pass": [
            ("(M, E) sum", lambda: extexp_stats(x, one)),
            ("write p 2^(n-E)/M", lambda: write_two_pass(x, y, one, mant, e, False)),
        ],
    }
    print(f"one row of 2^{args.log2n} {dt.name}, 1 thread; best of {args.repeat}")
    print(f"  copy (1 read, 1 write) {copy * 1e3:8.2f} ms;  read (np.max) {read * 1e3:8.2f} ms")
    print(f"  {'structure':18s} {'pass':18s} {'ms':>8s} {'/copy':>6s} {'/read':>6s}")
    for name, steps in passes.items():
        total = 0.0
        for label, run in steps:
            t = best_time(run, args.repeat, 0.0)
            total += t
            print(f"  {name:18s} {label:18s} {t * 1e3:8.2f} {t / copy:6.2f} {t / read:6.2f}")
        whole = best_time(lambda a=name: numsoft.softmax(x, out=y, algorithm=a), args.repeat, 0.0)
        print(f"  {name:18s} {'sum of passes':18s} {total * 1e3:8.2f} {total / copy:6.2f}")
        print(f"  {name:18s} {'whole call':18s} {whole * 1e3:8.2f} {whole / copy:6.2f}")


if __name__ == "__main__":
    main()
