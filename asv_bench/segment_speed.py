"""Softmax over groups of any length: numsoft beside a copy of the same bytes and PyG.

    python asv_bench/segment_speed.py                 # every shape, float32 and float64
    python asv_bench/segment_speed.py --rounds 9 --dtypes float32

Each shape's calls alternate in one process, best of ``--rounds``, 2 threads by
default (``NUMBA_NUM_THREADS`` / ``torch.set_num_threads``): ``np.copyto`` of x into a
preallocated array (the bound: a fused kernel reads x once or twice and writes y
once); ``segment_softmax`` with ``offsets`` and ``out=``, with sorted and unsorted
``segment_ids``, allocating; ``segment_log_softmax`` and ``segment_logsumexp``; and,
where torch-geometric is installed, PyG's ``torch_geometric.utils.softmax`` with
``ptr`` and with ``index`` on the same tensor.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from asv_bench.benchmarks.group_shapes import contenders, shapes  # noqa: E402


def best(f, rounds):
    f()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    args = parser.parse_args()
    try:
        import torch
        from torch_geometric.utils import softmax as pyg_softmax

        torch.set_num_threads(int(os.environ.get("NUMBA_NUM_THREADS", "2")))
    except ImportError:
        pyg_softmax = None
    rng = np.random.default_rng(0)
    print("ms per call (× a copy of x); PyG: ptr / index")
    for label, sizes, heads in shapes(rng):
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        n = int(offsets[-1])
        ids = np.repeat(np.arange(sizes.size), sizes)
        shuffled = rng.permutation(n)
        for dtype in args.dtypes:
            x = rng.standard_normal((n, heads) if heads else n).astype(dtype)
            calls = contenders(x, offsets, ids, shuffled, pyg_softmax)
            times = {name: best(f, args.rounds) for name, f in calls.items()}
            copy = times["copy"]
            cells = ", ".join(
                f"{name} {t * 1e3:.2f} ({t / copy:.1f}×)" for name, t in times.items()
            )
            print(f"{label}, {dtype}: {cells}", flush=True)
            if pyg_softmax is not None:
                ratio = min(times["PyG ptr"], times["PyG index"]) / times["allocating"]
                print(f"    PyG (faster form) ÷ numsoft allocating: {ratio:.1f}×", flush=True)


if __name__ == "__main__":
    main()
