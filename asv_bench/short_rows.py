"""numsoft against torch on short rows: softmax, log_softmax and logsumexp of 2^21
elements in rows of 32, 128 and 512, allocating forms, both libraries on the same
thread count, measured in one process (the short-row target: torch's time over
numsoft's >= 1.5).

    python asv_bench/short_rows.py                  # float32/float64, 1 and 2 threads
    python asv_bench/short_rows.py --threads 1 --dtypes float32
    python asv_bench/short_rows.py --lengths 16,32,48,64 --functions softmax
    python asv_bench/short_rows.py --processes 5 --threads 2 --dtypes float32

Prints one line per case: each library's best time and torch's time over numsoft's
(above 1: numsoft is faster). ``--processes N`` runs the cases in N fresh processes one
after the other and prints, per case, the ratio's median and lowest over them: how much
a single process's best-of-15 moves on a shared machine. Each library's calls come
right after the other's, as in a program that calls both; torch's OpenMP threads spin
for about 10 ms after each call, and numsoft's calls in that window share the cores with
them. ``--settle 0.05`` waits that long before each library's calls, out of the other's
window. Needs torch (the CPU wheel).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.roofline import best_time  # noqa: E402

ELEMENTS = 1 << 21
ROW_LENGTHS = (32, 128, 512)


def pairs(x, torch):
    """(function name, numsoft call, torch call) on the rows of ``x``."""
    tx = torch.from_numpy(x)
    return (
        ("softmax", lambda: numsoft.softmax(x), lambda: torch.softmax(tx, -1)),
        ("log_softmax", lambda: numsoft.log_softmax(x), lambda: torch.log_softmax(tx, -1)),
        ("logsumexp", lambda: numsoft.logsumexp(x, axis=-1), lambda: torch.logsumexp(tx, -1)),
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--repeat", type=int, default=15, help="timings per case (best kept)")
    ap.add_argument("--lengths", default=",".join(map(str, ROW_LENGTHS)), help="row lengths")
    ap.add_argument("--functions", default="softmax,log_softmax,logsumexp")
    ap.add_argument("--processes", type=int, default=1, help="fresh processes, one by one")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds before each library's calls")
    ap.add_argument("--json", action="store_true", help="one JSON line of the ratios only")
    args = ap.parse_args(argv)
    if args.processes > 1:
        return across_processes(args.processes, sys.argv[1:] if argv is None else argv)
    import torch

    ratios = {}

    for threads in (min(int(t), numba.config.NUMBA_NUM_THREADS) for t in args.threads.split(",")):
        numba.set_num_threads(threads)
        torch.set_num_threads(threads)
        for dtype in args.dtypes.split(","):
            for n in map(int, args.lengths.split(",")):
                x = np.random.default_rng(0).standard_normal((ELEMENTS // n, n)).astype(dtype)
                for name, ours, theirs in pairs(x, torch):
                    if name not in args.functions.split(","):
                        continue
                    time.sleep(args.settle)
                    a = best_time(ours, args.repeat, 0.0)
                    time.sleep(args.settle)
                    b = best_time(theirs, args.repeat, 0.0)
                    case = f"{threads}T {dtype} n={n:4d} {name:12s}"
                    ratios[case] = b / a
                    if not args.json:
                        times = f"numsoft {a * 1e3:7.3f} ms torch {b * 1e3:7.3f} ms"
                        print(f"{case} {times}  torch/numsoft {b / a:5.2f}", flush=True)
    if args.json:
        print(json.dumps(ratios))
    return 0


def across_processes(processes: int, argv: list[str]) -> int:
    """The cases of ``argv`` in ``processes`` fresh processes, one after the other; per
    case, the median and lowest of torch's time over numsoft's."""
    # the same arguments, the last --processes and --json overriding the ones given
    command = [sys.executable, __file__, *argv, "--processes", "1", "--json"]
    runs = []
    for _ in range(processes):
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for case in runs[0]:
        values = [run[case] for run in runs]
        each = " ".join(f"{v:.2f}" for v in values)
        median, lowest = statistics.median(values), min(values)
        print(f"{case} torch/numsoft median {median:5.2f} lowest {lowest:5.2f}  ({each})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
