"""What bounds softmax along axis 0 beyond the cache: two contiguous reads, or one strided.

    python asv_bench/column_bound.py                      # 4096×4096 float32 and float64
    python asv_bench/column_bound.py --n 8192 --dtypes float32 --repeat 9

A column's softmax needs the column's statistics before any output, so ``axis=0`` on a
C-ordered array beyond the cache either reads ``x`` twice in contiguous rows (numsoft's
``column_chunks``: an online statistics pass, then the write pass; 2 reads and 1 write)
or reads it once in column panels that stay in cache between their passes (1 read, 1
write, like a row beyond the cache), and a panel's rows are ``inner`` elements apart.
This script times, beside ``np.copyto`` (1 read, 1 write) and ``np.max(x, axis=0)`` (1
contiguous read), both on one thread:

- numsoft's statistics pass alone (``logsumexp(x, axis=0)``) and the whole
  ``softmax(x, axis=0, out=)``, whose two-read bound is read + copy;
- the read of the one-read scheme: every panel of ``w`` adjacent columns copied down all
  rows into a contiguous buffer (what such a kernel must read before it can write),
  panels in parallel.

numsoft runs on ``--threads`` threads (default: all). docs/performance.md quotes a run.
"""

from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np
from numba import prange

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.roofline import best_time  # noqa: E402
from numsoft.cpu._jit import parallel_kernel  # noqa: E402

#: Panel widths in columns: 64 B to 1 KiB of float32 per row.
PANEL_WIDTHS = (16, 64, 256)


@parallel_kernel
def read_panels(x, width, buffers):
    """Copy every panel of ``width`` columns of ``x`` (all rows) into a contiguous buffer,
    the panels in ``buffers.shape[0]`` contiguous spans, spans in parallel."""
    n, inner = x.shape
    panels = (inner + width - 1) // width
    spans = buffers.shape[0]
    for t in prange(spans):
        buf = buffers[t]
        for b in range(panels * t // spans, panels * (t + 1) // spans):
            j0 = b * width
            w = min(width, inner - j0)
            for k in range(n):
                for j in range(w):
                    buf[k, j] = x[k, j0 + j]


def report(dtype: str, n: int, threads: int, repeat: int) -> None:
    """Print the times and ratios of the module docstring for one dtype."""
    x = np.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    y = np.empty_like(x)
    col = np.empty(n, dtype)

    def best(f):
        return best_time(f, repeat, 0.1) * 1e3

    copy = best(lambda: np.copyto(y, x))
    read = best(lambda: np.max(x, axis=0, out=col))
    stats = best(lambda: numsoft.logsumexp(x, axis=0))
    whole = best(lambda: numsoft.softmax(x, axis=0, out=y))
    print(f"{dtype} {n}×{n}, axis 0, {threads} thread(s), best of {repeat}")
    print(f"  copy (1 read, 1 write) {copy:7.2f} ms   read (np.max axis 0) {read:7.2f} ms")
    print(f"  numsoft statistics pass (logsumexp)  {stats:7.2f} ms  {stats / read:5.2f}× read")
    print(
        f"  numsoft softmax out=                 {whole:7.2f} ms  {whole / copy:5.2f}× copy, "
        f"{whole / (read + copy):5.2f}× (read + copy)"
    )
    for width in PANEL_WIDTHS:
        buffers = np.empty((threads, n, width), dtype)
        read_panels(x, width, buffers)
        panel = best(lambda b=buffers, w=width: read_panels(x, w, b))
        print(
            f"  one read in panels of {width:3d} columns   {panel:7.2f} ms  "
            f"{panel / read:5.2f}× read, {panel / copy:5.2f}× copy"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="rows and columns")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    ap.add_argument("--repeat", type=int, default=7, help="timings per case (best kept)")
    args = ap.parse_args(argv)
    numba.set_num_threads(args.threads)
    for dtype in args.dtypes.split(","):
        report(dtype, args.n, args.threads, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
