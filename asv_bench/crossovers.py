"""Measure the crossovers behind numsoft's CPU dispatch (``rows.plan_rows``, ``auto``).

Times the drivers' paths directly, bypassing the planner, so each threshold can be read
off one table:

* serial vs parallel over rows, by total size (``SERIAL_MAX_ELEMENTS``);
* one long row: serial vs split across threads, by row length (``SPLIT_MIN_ROW``);
* short rows: row tiles vs the row kernel, by row length (``TILE_MAX_N``);
* short rows: the row kernel inlined into the row loop vs called (``INLINE_ROW_BYTES``);
* the four pass structures by row length and dtype, many rows, all threads (``auto``).

    python asv_bench/crossovers.py [--quick]
"""

# ruff: noqa: B023  (each lambda is timed at once, inside its loop iteration)
from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from numsoft.cpu import rows  # noqa: E402
from numsoft.cpu.paths import specialize  # noqa: E402
from numsoft.vocabulary import ALGORITHM_NAMES  # noqa: E402


def best(fn, min_time=0.2, repeat=20):
    fn()
    times, start = [], time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) > 2000:
            break
    return min(times)


def path(driver, x, algorithm):
    """The compiled path of ``driver`` for softmax of ``x``'s rows with ``algorithm``."""
    code = ALGORITHM_NAMES.index(algorithm)
    return specialize(driver, **rows.path_constants(code, False, x.shape[1], x.dtype.itemsize))


def serial_vs_parallel(sizes, threads):
    print(f"\n## serial vs {threads} threads over rows (rows of 256, two-pass)")
    print("| elements | serial µs | parallel µs | parallel / serial |\n|---|---|---|---|")
    for total in sizes:
        x = np.random.default_rng(0).standard_normal((max(total // 256, 1), 256), np.float32)
        y = np.empty_like(x)
        serial = path(rows.softmax_rows_span, x, "two-pass")
        parallel = path(rows.softmax_rows_parallel, x, "two-pass")
        ts = best(lambda: serial(x, y, 0, 1, x.dtype.type(1.0)))
        tp = best(lambda: parallel(x, y, threads, x.dtype.type(1.0)))
        print(f"| {x.size} | {ts * 1e6:.1f} | {tp * 1e6:.1f} | {tp / ts:.2f} |", flush=True)


def serial_vs_split(lengths, threads):
    print(f"\n## one row: serial vs split across {threads} threads (float32)")
    print("| n | algorithm | serial µs | split µs | split / serial |\n|---|---|---|---|---|")
    for n in lengths:
        x = np.random.default_rng(0).standard_normal((1, n), np.float32)
        y = np.empty_like(x)
        for name in ("two-pass", "three-pass-store"):
            serial = path(rows.softmax_rows_span, x, name)
            split = path(rows.softmax_rows_split, x, name)
            ts = best(lambda: serial(x, y, 0, 1, x.dtype.type(1.0)))
            tp = best(lambda: split(x, y, threads, x.dtype.type(1.0)))
            print(f"| {n} | {name} | {ts * 1e6:.1f} | {tp * 1e6:.1f} | {tp / ts:.2f} |", flush=True)


def tiles_vs_rows(lengths, rows_total=1 << 12):
    print("\n## short rows, one thread: row tiles vs the row kernel (softmax, auto's store)")
    print("| dtype | n | rows µs | tiles µs | tiles / rows |\n|---|---|---|---|---|")
    for dtype in (np.float32, np.float64):
        for n in lengths:
            x = np.random.default_rng(0).standard_normal((rows_total, n)).astype(dtype)
            y = np.empty_like(x)
            by_rows = path(rows.softmax_rows_parallel, x, "three-pass-store").serial
            by_tiles = path(rows.softmax_tiles_parallel, x, "three-pass-store").serial
            tr = best(lambda: by_rows(x, y, 1, x.dtype.type(1.0)))
            tt = best(lambda: by_tiles(x, y, 1, x.dtype.type(1.0)))
            print(f"| {np.dtype(dtype).name} | {n} | {tr * 1e6:.1f} | {tt * 1e6:.1f} | "
                  f"{tt / tr:.2f} |", flush=True)  # fmt: skip


def inline_vs_call(lengths, elements=1 << 21):
    print("\n## short rows, one thread: row kernel inlined into the row loop vs called per row")
    print("| dtype | n | called µs | inlined µs | inlined / called |\n|---|---|---|---|---|")
    for dtype in (np.float32, np.float64):
        for n in lengths:
            x = np.random.default_rng(0).standard_normal((elements // n, n)).astype(dtype)
            y = np.empty_like(x)
            constants = rows.path_constants(
                ALGORITHM_NAMES.index("three-pass-store"), False, n, x.itemsize
            )
            called, inlined = (
                specialize(rows.softmax_rows_parallel, **{**constants, "INLINE_ROWS": v}).serial
                for v in (False, True)
            )
            tc = best(lambda: called(x, y, 1, x.dtype.type(1.0)))
            ti = best(lambda: inlined(x, y, 1, x.dtype.type(1.0)))
            print(f"| {np.dtype(dtype).name} | {n} | {tc * 1e6:.1f} | {ti * 1e6:.1f} | "
                  f"{ti / tc:.2f} |", flush=True)  # fmt: skip


def algorithms_by_row_length(cases, threads):
    print(f"\n## pass structures, {threads} threads: time / time of the fastest")
    print("| dtype | shape | " + " | ".join(ALGORITHM_NAMES) + " |")
    print("|---" * (len(ALGORITHM_NAMES) + 2) + "|")
    for dtype in (np.float32, np.float64):
        for shape in cases:
            x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
            y = np.empty_like(x)
            t = []
            for code in range(len(ALGORITHM_NAMES)):
                t.append(best(lambda: rows.run_softmax(x[:, :, None], y[:, :, None], code, False,
                                                       x.dtype.type(1.0))))  # fmt: skip
            cells = " | ".join(f"{v / min(t):.2f} ({v * 1e3:.2f} ms)" for v in t)
            print(f"| {np.dtype(dtype).name} | {shape[0]}x{shape[1]} | {cells} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    args = ap.parse_args(argv)
    numba.set_num_threads(args.threads)
    print(f"# load average {os.getloadavg()[0]:.2f}")
    if args.quick:
        serial_vs_parallel([1 << 10, 1 << 14], args.threads)
        serial_vs_split([1 << 14, 1 << 16], args.threads)
        tiles_vs_rows([8, 32])
        inline_vs_call([32, 256])
        algorithms_by_row_length([(64, 256), (4, 1 << 16)], args.threads)
        return
    serial_vs_parallel([1 << k for k in range(10, 20)], args.threads)
    serial_vs_split([1 << k for k in range(13, 23)], args.threads)
    tiles_vs_rows([2, 4, 8, 10, 16, 24, 32, 48, 64, 128])
    inline_vs_call([16, 32, 64, 128, 256, 512])
    algorithms_by_row_length(
        [(16384, 128), (4096, 1024), (1024, 16384), (256, 65536), (64, 1 << 18),
         (16, 1 << 20), (8, 1 << 22), (2, 1 << 24)],
        args.threads,
    )  # fmt: skip


if __name__ == "__main__":
    main()
