"""Launch geometry: how many threads work on one row, and how a long row is split.

A row of ``n`` elements (``rows = outer·inner`` of them, the normalized axis of an
``(outer, n, inner)`` view) is handled by a *row group* of ``lanes`` threads; a block
holds ``groups`` row groups (block shape ``(lanes, groups)``). Three regimes:

- short rows (``n <= ROW_WARP_MAX``): up to a warp per row, about ``ELEMS_PER_THREAD``
  elements per lane but at least ``MIN_ROW_LANES`` lanes (and no more lanes than the row
  has elements), ``BLOCK_THREADS // lanes`` rows per block. Each lane then has whole
  register tiles to load (``tile.py``) and the row's reduction tree is shallow
  (128 elements: 8 lanes, 3 steps), while a warp's load still fills 32-byte sectors;
- medium rows: a block per row, about ``ELEMS_PER_THREAD`` elements per thread;
- middle axis (``inner > 1``, e.g. ``axis=0`` on C-ordered data): one thread per row,
  so neighbouring threads read neighbouring columns (coalesced);

and, in any regime, rows of at least ``SPLIT_MIN_N`` elements that would leave the GPU
underoccupied (fewer than ``TARGET_BLOCKS`` blocks) are cut into ``chunks`` pieces, each
reduced by its own block; the pieces' partials are merged by a second kernel.

The constants are read at launch time, so the simulator tests lower them to exercise
every regime on tiny shapes. ``LAUNCH_BOUND`` is not: kernels are compiled for blocks of
at most that many threads (see ``_jit.kernel``).
"""

from __future__ import annotations

from dataclasses import dataclass

WARP = 32
ROW_WARP_MAX = 1024
BLOCK_THREADS = 256
MAX_ROW_THREADS = 1024
ELEMS_PER_THREAD = 16
#: The fewest lanes of a short row's group: 8 float32 lanes read one 32-byte sector.
MIN_ROW_LANES = 8
COLUMN_THREADS = 128
#: The most threads of any block above. Kernels declare it as their launch bound, so the
#: compiler keeps them within 65536 / LAUNCH_BOUND = 64 registers per thread; without
#: the bound, a kernel using more (float64 softmax: 72) fails to launch with 1024 threads.
LAUNCH_BOUND = 1024
SPLIT_MIN_N = 1 << 16
TARGET_BLOCKS = 1024


def _pow2_at_least(k: int) -> int:
    return 1 << max(0, (k - 1).bit_length())


@dataclass(frozen=True)
class Plan:
    """Launch geometry for ``rows`` rows of ``n`` elements."""

    lanes: int  # threads per row group (a power of two)
    groups: int  # row groups per block
    chunks: int  # pieces per row (1: no split)
    chunk: int  # elements per piece

    @property
    def threads(self) -> int:
        return self.lanes * self.groups

    def grid(self, rows: int) -> tuple[int, int]:
        return (-(-rows // self.groups), self.chunks)

    def shared_bytes(self, slots: int, itemsize: int) -> int:
        return slots * self.threads * itemsize

    @property
    def regime(self) -> str:
        kind = "split" if self.chunks > 1 else "whole"
        if self.lanes == 1:
            return f"column-{kind}"
        if self.groups > 1:
            return f"warp-{kind}"
        return f"block-{kind}"


def plan(rows: int, n: int, inner: int, split: bool = True) -> Plan:
    """The launch geometry for ``rows`` rows of ``n`` elements (``inner > 1``: middle axis).

    ``split=False`` keeps every row whole (kernels whose row statistics do not merge
    across blocks, such as the variants' bisections).
    """
    if inner > 1:
        lanes, groups = 1, COLUMN_THREADS
    elif n <= ROW_WARP_MAX:
        per_lane = _pow2_at_least(-(-n // ELEMS_PER_THREAD))
        lanes = min(WARP, _pow2_at_least(n), max(MIN_ROW_LANES, per_lane))
        groups = max(1, BLOCK_THREADS // lanes)
    else:
        lanes = max(WARP, min(MAX_ROW_THREADS, _pow2_at_least(-(-n // ELEMS_PER_THREAD))))
        groups = 1
    chunks = 1
    blocks = -(-rows // groups)
    if split and n >= SPLIT_MIN_N and blocks < TARGET_BLOCKS:
        per_chunk = lanes * ELEMS_PER_THREAD
        chunks = max(1, min(-(-TARGET_BLOCKS // blocks), -(-n // per_chunk)))
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    return Plan(lanes, groups, chunks, chunk)
