"""Each pass of the long-row kernels alone, against a copy of the same row.

Why is ``two-pass`` (2 passes, 3 transfers per element) not ahead of
``three-pass-reload`` (3 passes, 4 transfers) on one long row out of cache? Time each
pass of both structures (and of ``three-pass-store``) as the split-row kernels run it
(``numsoft.cpu.split``: the row in one chunk per thread, chunks in parallel), beside
``np.copyto`` of the row (one read and one write per element, on one thread: the
memory bound of a pass that writes) and ``np.max`` of it (one read: the bound of a pass
that only reads). A pass near its bound is memory-bound; one far above it is bound by
its arithmetic, the exponential. The output passes run twice: with ordinary stores and
with streaming ones (``passes.streamed``, what an ``out=`` beyond the cache gets).

    python asv_bench/pass_costs.py [--log2n 26] [--dtype float32] [--threads 1] [--repeat 7]

Prints one line per pass: its time, its time over the copy's and over the read's, and
each structure's sum of passes beside the whole call (``numsoft.softmax(x, out=y)``
with that ``algorithm=``). docs/pass-structures.md quotes runs.
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
from numsoft.cpu import split  # noqa: E402
from numsoft.cpu.paths import specialize  # noqa: E402


def chunk_pass(op, stream=False):
    """Split-row pass ``op`` (``split.MAX`` ...) as ``f(x, y, chunks, m, s, mant, e)``."""
    if op in (split.MAX, split.SUM_EXP, split.EXTEXP_STATS):
        stats = specialize(split._stats, CHUNK_PASS=op)
        return lambda x, y, chunks, m, s, mant, e: stats(x, chunks, x.dtype.type(1), m)
    write = specialize(split._pass, CHUNK_PASS=op, STREAM_OUTPUT=stream)
    return lambda x, y, chunks, m, s, mant, e: write(x, y, chunks, x.dtype.type(1), m, s, mant, e)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log2n", type=int, default=26, help="row length 2**log2n")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--threads", type=int, default=1, help="threads (= chunks of the row)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    numba.set_num_threads(args.threads)
    dt = np.dtype(args.dtype)
    x = np.random.default_rng(0).standard_normal(1 << args.log2n).astype(dt)
    y = np.empty_like(x)
    m = x.max()
    s = dt.type(1.0 / np.exp(x.astype(np.float64) - m).sum())
    mant, e = split._merged_extexp(x, args.threads, dt.type(1))
    stats = (x, y, args.threads, m, s, mant, e)

    copy = best_time(lambda: np.copyto(y, x), args.repeat, 0.0)
    read = best_time(lambda: np.max(x), args.repeat, 0.0)
    passes = {
        "three-pass-reload": [
            ("max", chunk_pass(split.MAX)),
            ("sum exp", chunk_pass(split.SUM_EXP)),
            ("write exp/sum", chunk_pass(split.WRITE_EXP)),
            ("  streaming", chunk_pass(split.WRITE_EXP, stream=True)),
        ],
        "three-pass-store": [
            ("max", chunk_pass(split.MAX)),
            ("store exp, sum", chunk_pass(split.STORE_EXP)),
            ("scale in place", chunk_pass(split.SCALE)),
        ],
        "two-pass": [
            ("(M, E) sum", chunk_pass(split.EXTEXP_STATS)),
            ("write p 2^(n-E)/M", chunk_pass(split.WRITE_TWO_PASS)),
            ("  streaming", chunk_pass(split.WRITE_TWO_PASS, stream=True)),
        ],
    }
    print(f"one row of 2^{args.log2n} {dt.name}, {args.threads} thread(s); best of {args.repeat}")
    print(f"  copy (1 read, 1 write) {copy * 1e3:8.2f} ms;  read (np.max) {read * 1e3:8.2f} ms")
    print(f"  {'structure':18s} {'pass':18s} {'ms':>8s} {'/copy':>6s} {'/read':>6s}")
    for name, steps in passes.items():
        total = {False: 0.0, True: 0.0}  # the sum of passes with ordinary / streaming stores
        for label, run in steps:
            t = best_time(lambda r=run: r(*stats), args.repeat, 0.0)
            streaming = label.strip() == "streaming"
            for kind in total:
                if streaming == kind or (kind and not streaming and not label.startswith("write")):
                    total[kind] += t
            print(f"  {name:18s} {label:18s} {t * 1e3:8.2f} {t / copy:6.2f} {t / read:6.2f}")
        whole = best_time(lambda a=name: numsoft.softmax(x, out=y, algorithm=a), args.repeat, 0.0)
        for kind, label in ((False, "sum of passes"), (True, "  with streaming")):
            if kind and name == "three-pass-store":
                continue
            print(f"  {name:18s} {label:18s} {total[kind] * 1e3:8.2f} {total[kind] / copy:6.2f}")
        print(f"  {name:18s} {'whole call (out=)':18s} {whole * 1e3:8.2f} {whole / copy:6.2f}")


if __name__ == "__main__":
    main()
