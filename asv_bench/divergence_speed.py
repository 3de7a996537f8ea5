"""Losses between two distributions, forward + backward, numsoft against torch's
composed CPU operators: time (best of alternating rounds, one process) and the peak
memory one step adds (Linux's resident high-water mark, reset before each step).

    PYTHONPATH=$PWD python asv_bench/divergence_speed.py [--n 4096 --v 32000 --rounds 5]

The contenders are those of the asv benchmark ``bench_divergences``
(``asv_bench/benchmarks/divergence_peers.py``); float32, all threads for both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from asv_bench.benchmarks.common import extra_peak_mib  # noqa: E402
from asv_bench.benchmarks.divergence_peers import (  # noqa: E402
    LOSSES,
    inputs,
    numsoft_step,
    torch_step,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4096, help="rows (tokens)")
    parser.add_argument("--v", type=int, default=32000, help="classes (vocabulary)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch

    threads = numba.get_num_threads()
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    student = (2 * rng.standard_normal((args.n, args.v), dtype=np.float32)).astype(np.float32)
    teacher = (2 * rng.standard_normal((args.n, args.v), dtype=np.float32)).astype(np.float32)
    gib = student.nbytes / 2**20
    print(f"(N, V) = ({args.n}, {args.v}) float32, {threads} threads; one array {gib:.0f} MiB")
    print(
        "| loss | numsoft s | torch s | speed-up | numsoft extra peak MiB | torch extra peak MiB |"
    )
    print("|---|---|---|---|---|---|")
    for loss in LOSSES:
        second = inputs(loss, student, teacher)
        steps = {"numsoft": numsoft_step(loss), "torch": torch_step(loss)}
        best = {}
        for step in steps.values():
            step(student, second)  # compile / warm up
        for _ in range(args.rounds):
            for name, step in steps.items():
                t0 = time.perf_counter()
                step(student, second)
                best[name] = min(best.get(name, np.inf), time.perf_counter() - t0)
        peak = {
            name: extra_peak_mib(lambda s=step, b=second: s(student, b))
            for name, step in steps.items()
        }
        ratio = best["torch"] / best["numsoft"]
        print(
            f"| {loss} | {best['numsoft']:.3f} | {best['torch']:.3f} | {ratio:.1f}× | "
            f"{peak['numsoft']:.0f} | {peak['torch']:.0f} |"
        )


if __name__ == "__main__":
    main()
