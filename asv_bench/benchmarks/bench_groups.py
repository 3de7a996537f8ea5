"""Softmax over groups of any length (``numsoft.groups.segment_softmax``), beside a copy
of the same bytes and PyG's ``torch_geometric.utils.softmax`` where it is installed.

The shapes of ``group_shapes.shapes``: 2^22 entries in groups of random size with mean
16, 2^20 edges × 8 heads, 64 long groups, groups of 1-4, and a power-law split (one
group holds half the entries); float32, 2 threads (or the one there is). The ``call``
parameter puts the contenders side by side: ``asv_bench/segment_speed.py`` prints the
same as ratios to the copy from one process.
"""

from __future__ import annotations

import numpy as np

from .common import SMOKE, available_threads, optional_module, set_threads
from .group_shapes import SHAPES, contenders, shapes

CALLS = ("copy", "offsets, out=", "sorted ids, out=", "unsorted ids, out=", "logsumexp",
         "PyG ptr", "PyG index")  # fmt: skip


class TimeSegmentSoftmax:
    timeout = 600
    params = (SHAPES, CALLS)
    param_names = ["shape", "call"]

    def setup(self, shape, call):
        pyg_softmax = None
        if call.startswith("PyG"):
            torch = optional_module("torch")
            pyg_softmax = optional_module("torch_geometric.utils").softmax
            torch.set_num_threads(max(available_threads()))
        set_threads(max(available_threads()))
        rng = np.random.default_rng(0)
        _, sizes, heads = shapes(rng, 1 << 14 if SMOKE else 1 << 22)[SHAPES.index(shape)]
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        n = int(offsets[-1])
        ids = np.repeat(np.arange(sizes.size), sizes)
        x = rng.standard_normal((n, heads) if heads else n).astype(np.float32)
        self.call = contenders(x, offsets, ids, rng.permutation(n), pyg_softmax)[call]
        self.call()  # compiled here, not timed

    def time_segment_softmax(self, shape, call):
        self.call()
