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
import time

import numpy as np

import numsoft
import numsoft.groups


def shapes(rng):
    """(label, number of groups' sizes, heads)."""

    def mean16(total):
        sizes = rng.integers(1, 32, total // 16 + 1)
        ends = np.cumsum(sizes)
        sizes = sizes[: np.searchsorted(ends, total) + 1]
        sizes[-1] -= ends[len(sizes) - 1] - total
        return sizes[sizes > 0]

    power = np.concatenate(([1 << 21], rng.integers(1, 4, 2 * (1 << 21) // 5)))
    power = power[np.cumsum(power) <= 1 << 22]
    return [
        ("2^22 scalars, groups of mean 16", mean16(1 << 22), 0),
        ("2^20 edges × 8 heads, mean 16", mean16(1 << 20), 8),
        ("64 groups of 65536", np.full(64, 65536), 0),
        ("2^22 scalars, groups of 1-4", rng.integers(1, 5, (1 << 22) // 5 * 2), 0),
        ("power law: one group of half", power, 0),
    ]


def contenders(x, offsets, ids, shuffled, pyg_softmax) -> dict:
    """name → a call on x (groups by ``offsets``, ``ids``; ``shuffled``: an order of the
    entries for the unsorted ids)."""
    out = np.empty_like(x)
    x_unsorted, ids_unsorted = x[shuffled], ids[shuffled]
    f, log_f, lse_f = (
        numsoft.groups.segment_softmax,
        numsoft.groups.segment_log_softmax,
        numsoft.groups.segment_logsumexp,
    )
    calls = {
        "copy": lambda: np.copyto(out, x),
        "offsets, out=": lambda: f(x, offsets=offsets, out=out),
        "sorted ids, out=": lambda: f(x, ids, out=out),
        "unsorted ids, out=": lambda: f(x_unsorted, ids_unsorted, out=out),
        "allocating": lambda: f(x, offsets=offsets),
        "log_softmax, out=": lambda: log_f(x, offsets=offsets, out=out),
        "logsumexp": lambda: lse_f(x, offsets=offsets),
    }
    if pyg_softmax is not None:
        import torch

        tx, tptr, tids = (torch.from_numpy(a) for a in (x, offsets, ids))
        groups = offsets.size - 1
        calls["PyG ptr"] = lambda: pyg_softmax(tx, ptr=tptr, dim=0)
        calls["PyG index"] = lambda: pyg_softmax(tx, tids, num_nodes=groups, dim=0)
    return calls


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
