"""The losses of SPEC §10, forward + backward, numsoft against torch's composed CPU
operators: time (best of alternating rounds, one process) and the peak memory one step
adds (Linux's resident high-water mark, reset before each step).

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=$PWD python asv_bench/loss_speed.py [--rounds 3]

The contenders and problem sizes are those of the asv benchmark ``bench_losses``
(``asv_bench/benchmarks/loss_peers.py``); float32, all threads for both.
``OMP_WAIT_POLICY=PASSIVE`` keeps torch's OpenMP threads from spinning into the next
contender's time.
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
from asv_bench.benchmarks.loss_peers import (  # noqa: E402
    LOSSES,
    SHAPES,
    arguments,
    numsoft_step,
    torch_step,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("losses", nargs="*", default=LOSSES, help=f"of {LOSSES}")
    args = parser.parse_args()
    import torch

    threads = numba.get_num_threads()
    torch.set_num_threads(threads)
    print(f"float32, {threads} threads")
    print("| loss | (N, C) | numsoft s | torch s | speed-up | extra peak MiB: numsoft | torch |")
    print("|---|---|---|---|---|---|---|")
    for loss in args.losses:
        shape = SHAPES[loss]
        inputs = arguments(loss, shape)
        steps = {"numsoft": numsoft_step(loss), "torch": torch_step(loss)}
        for step in steps.values():
            step(*inputs)  # compile / warm up
        best = {}
        for _ in range(args.rounds):
            for name, step in steps.items():
                t0 = time.perf_counter()
                step(*inputs)
                best[name] = min(best.get(name, np.inf), time.perf_counter() - t0)
        peak = {
            name: extra_peak_mib(lambda s=step, a=inputs: s(*a)) for name, step in steps.items()
        }
        ratio = best["torch"] / best["numsoft"]
        print(
            f"| {loss} | {shape} | {best['numsoft']:.3f} | {best['torch']:.3f} | {ratio:.1f}× | "
            f"{peak['numsoft']:.0f} | {peak['torch']:.0f} |"
        )


if __name__ == "__main__":
    main()
