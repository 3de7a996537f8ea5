"""How the caller gives the groups: ``offsets`` (CSR) or ``segment_ids``, checked and
turned into what the kernels take (SPEC §9); and a class tree's ``parents``.

Every error names the argument. Nothing here reads or writes ``x``.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..cpu.groups import ascending_offsets, counting_order, id_range_and_order
from ..cpu.memory import read_only


@dataclass(frozen=True)
class Groups:
    """Groups along an axis of ``n`` entries, as the kernels take them: group g is the
    entries ``offsets[g]:offsets[g + 1]`` of the axis taken in ``order``."""

    offsets: np.ndarray  # int64, S + 1
    ids: np.ndarray | None  # read-only int64 ids when they are not in group order

    @property
    def count(self) -> int:
        return self.offsets.size - 1

    @functools.cached_property
    def order(self) -> np.ndarray | None:
        """The entries in group order (a stable counting sort of ``ids``), or None when
        the axis is in group order already."""
        return None if self.ids is None else counting_order(self.ids, self.offsets)


def _integer_vector(func: str, name: str, value) -> np.ndarray:
    a = np.asarray(value)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        raise TypeError(f"{func}: {name} must hold integers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{func}: {name} must be 1-D, got shape {a.shape}")
    return a.astype(np.int64, copy=False)


def groups_of(func: str, n: int, segment_ids, offsets, num_segments) -> Groups:
    """The groups of an axis of ``n`` entries from exactly one of ``segment_ids`` and
    ``offsets``; ``ValueError``/``TypeError`` naming the argument otherwise."""
    if (segment_ids is None) == (offsets is None):
        raise ValueError(f"{func}: give exactly one of segment_ids and offsets")
    if offsets is not None:
        if num_segments is not None:
            raise ValueError(f"{func}: num_segments goes with segment_ids, not offsets")
        offs = _integer_vector(func, "offsets", offsets)
        if offs.size == 0 or offs[0] != 0 or offs[-1] != n:
            raise ValueError(
                f"{func}: offsets must start at 0 and end at the grouped axis' length {n}"
            )
        if np.any(offs[1:] < offs[:-1]):
            raise ValueError(f"{func}: offsets must be non-decreasing")
        return Groups(np.ascontiguousarray(offs), None)
    ids = _integer_vector(func, "segment_ids", segment_ids)
    if ids.size != n:
        raise ValueError(
            f"{func}: segment_ids must have one id per entry of the grouped axis ({n}), "
            f"got {ids.size}"
        )
    ids = read_only(ids)  # one compiled signature for the kernels, whoever owns ids
    low, high, ascending = id_range_and_order(ids) if ids.size else (0, -1, True)
    if low < 0:
        raise ValueError(f"{func}: segment_ids must be >= 0, got {low}")
    if num_segments is None:
        count = high + 1
    else:
        if isinstance(num_segments, (bool, np.bool_)) or not isinstance(
            num_segments, numbers.Integral
        ):
            raise TypeError(f"{func}: num_segments must be an int, got {num_segments!r}")
        count = int(num_segments)
        if count <= high:
            raise ValueError(
                f"{func}: segment_ids must lie in [0, num_segments={count}), got {high}"
            )
    if ascending:
        return Groups(ascending_offsets(ids, count), None)
    offs = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(ids, minlength=count), out=offs[1:])
    return Groups(offs, ids)


class Tree(NamedTuple):
    """A class tree: each node's parent (-1 for a root) and its depth."""

    parents: np.ndarray  # int64
    depth: np.ndarray  # int64, 0 for a root


def tree_of(func: str, parents, n: int) -> Tree:
    """``parents`` checked: one per class (``n``), each -1 or a node, no cycle."""
    p = _integer_vector(func, "parents", parents)
    if p.size != n:
        raise ValueError(f"{func}: parents must have one entry per class ({n}), got {p.size}")
    if p.size and (p.min() < -1 or p.max() >= n):
        raise ValueError(f"{func}: parents must be -1 (a root) or a class index in [0, {n})")
    depth = np.full(n, -1, np.int64)
    depth[p == -1] = 0
    level = 0
    while True:  # one level of the tree per step: a node whose parent has a depth
        found = (depth == -1) & (p >= 0)
        found[found] = depth[p[found]] == level
        if not found.any():
            break
        level += 1
        depth[found] = level
    if np.any(depth < 0):
        raise ValueError(
            f"{func}: parents has a cycle (node {int(np.argmax(depth < 0))} is in one)"
        )
    return Tree(p, depth)
