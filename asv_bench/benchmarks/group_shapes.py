"""The group shapes and calls of the segment benchmarks, shared by ``bench_groups.py``
(asv) and ``asv_bench/segment_speed.py`` (the table with ratios to a copy and to PyG).
Nothing here is a benchmark."""

from __future__ import annotations

import numpy as np

import numsoft.groups

#: The shapes by name (``shapes``), in the order the issue lists them.
SHAPES = ("mean 16", "edges x 8 heads", "64 groups", "groups of 1-4", "power law")


def shapes(rng, total: int = 1 << 22):
    """(label, the groups' sizes, heads) of ``total`` entries (the edges × heads shape:
    ``total / 4`` edges of 8 heads)."""

    def mean16(total):
        sizes = rng.integers(1, 32, total // 16 + 1)
        ends = np.cumsum(sizes)
        sizes = sizes[: np.searchsorted(ends, total) + 1]
        sizes[-1] -= ends[len(sizes) - 1] - total
        return sizes[sizes > 0]

    half = total // 2
    power = np.concatenate(([half], rng.integers(1, 4, 2 * half // 5)))
    power = power[np.cumsum(power) <= total]
    return [
        (f"{total} scalars, groups of mean 16", mean16(total), 0),
        (f"{total // 4} edges × 8 heads, mean 16", mean16(total // 4), 8),
        (f"64 groups of {total // 64}", np.full(64, total // 64), 0),
        (f"{total} scalars, groups of 1-4", rng.integers(1, 5, total // 5 * 2), 0),
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
