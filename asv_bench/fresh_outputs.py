"""What a fresh output costs: allocating calls against ``out=``, a new array and SciPy.

    python asv_bench/fresh_outputs.py
    MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=2147483648 \\
        python asv_bench/fresh_outputs.py      # glibc keeps freed memory (Linux)
    python asv_bench/fresh_outputs.py --first   # the first calls of a new process

An allocating call takes its result from ``np.empty``; beyond glibc's mmap threshold
that is new pages, which the kernel zeroes at their first touch. The table prints, in
ms (best of ``--repeat``): ``np.copyto`` of the array, a new array filled, numsoft
``out=``, numsoft allocating, SciPy, and SciPy's time over numsoft's allocating one.
``--first`` prints instead each of the first allocating calls of this process with its
system time, page faults and the transparent-huge-page counters of ``/proc/vmstat``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.roofline import best_time  # noqa: E402

CASES = (
    (np.float32, (4096, 4096), -1),
    (np.float32, (4096, 4096), 0),
    (np.float32, (1, 1 << 24), -1),
    (np.float64, (4096, 4096), -1),
    (np.float64, (1, 1 << 24), -1),
)
VMSTAT = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall")


def table(repeat: int) -> None:
    print("| dtype | shape, axis | copy | new + fill | out= | allocating | SciPy | SciPy ÷ alloc |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for dtype, shape, axis in CASES:
        print(row(dtype, shape, axis, repeat), flush=True)


def row(dtype, shape, axis, repeat: int) -> str:
    """One line of ``table``: the five timings (ms) and SciPy's over numsoft's."""
    import scipy.special as sps

    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    out = np.empty_like(x)
    copy = best_time(lambda: np.copyto(out, x), repeat, 0.0) * 1e3
    fresh = best_time(lambda: np.empty_like(x).fill(0), repeat, 0.0) * 1e3
    into = best_time(lambda: numsoft.softmax(x, axis=axis, out=out), repeat, 0.0) * 1e3
    alloc = best_time(lambda: numsoft.softmax(x, axis=axis), repeat, 0.0) * 1e3
    theirs = best_time(lambda: sps.softmax(x, axis=axis), max(3, repeat // 3), 0.0) * 1e3
    return (
        f"| {np.dtype(dtype).name} | {shape}, {axis} | {copy:.2f} | {fresh:.2f} | "
        f"{into:.2f} | {alloc:.2f} | {theirs:.1f} | {theirs / alloc:.2f} |"
    )


def vmstat() -> dict:
    try:
        with open("/proc/vmstat") as f:
            return {k: int(v) for k, v in (line.split() for line in f) if k in VMSTAT}
    except OSError:  # not Linux
        return {}


def first_calls(calls: int) -> None:
    x = np.random.default_rng(0).normal(size=(4096, 4096)).astype(np.float32)
    numsoft.softmax(x[:64], axis=0)  # compile or load both paths on a small array
    numsoft.softmax(x[:64], axis=-1)
    for axis in (-1, 0):
        for i in range(calls):
            r0, v0, t = resource.getrusage(resource.RUSAGE_SELF), vmstat(), time.perf_counter()
            numsoft.softmax(x, axis=axis)
            dt, r1, v1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF), vmstat()
            moved = {k: v1[k] - v0[k] for k in v0 if v1[k] != v0[k]}
            print(
                f"softmax axis={axis:2d} #{i}: {dt * 1e3:6.1f} ms, system "
                f"{(r1.ru_stime - r0.ru_stime) * 1e3:5.1f} ms, "
                f"{r1.ru_minflt - r0.ru_minflt} page faults {moved}",
                flush=True,
            )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--first", type=int, nargs="?", const=3, default=0, metavar="CALLS")
    args = ap.parse_args(argv)
    if args.first:
        first_calls(args.first)
    else:
        table(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
