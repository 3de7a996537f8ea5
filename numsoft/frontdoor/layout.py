"""The front door's layout: how an array maps onto the kernels' ``(outer, n, inner)`` view.

For the normalized axes to become one axis of a view, they must be adjacent with
compatible strides. ``plan_layout`` tries the array's own axis order, then the order of
decreasing strides (so Fortran-ordered input needs no copy); only when neither works
(e.g. ``axis=(0, 2)``) is the input copied. It plans on shape and strides alone, so a
device array is planned on its shadow (``cuda.memory.shadow``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


def _try_view3(a: np.ndarray, perm: tuple[int, ...], shape3: tuple[int, int, int]):
    try:
        return np.reshape(a.transpose(perm), shape3, copy=False)
    except ValueError:
        return None


@dataclass(frozen=True)
class Layout:
    """How an array of ``shape`` maps onto the kernels' ``(outer, n, inner)`` view.

    ``perm`` orders the axes so the normalized ones are adjacent; ``shape3`` is the
    3-D shape after that permutation. ``kept`` lists the non-normalized axes in
    ``perm`` order (the axes of a reduction's result).
    """

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    perm: tuple[int, ...]
    shape3: tuple[int, int, int]

    @property
    def n(self) -> int:
        return self.shape3[1]

    @functools.cached_property
    def natural(self) -> bool:
        """The axes are in their natural order (a C-ordered array's own layout)."""
        return self.perm == tuple(range(len(self.perm)))

    @functools.cached_property
    def kept(self) -> tuple[int, ...]:
        return tuple(ax for ax in self.perm if ax not in self.axes)

    @functools.cached_property
    def reduced(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(shape, axis order) that turn a reduction's ``(outer, inner)`` buffer into
        its result: reshape to the kept axes in ``perm`` order, then transpose."""
        return tuple(self.shape[ax] for ax in self.kept), tuple(np.argsort(self.kept))

    @functools.cached_property
    def reduced_natural(self) -> bool:
        """Whether a C-ordered reduction result is the ``(outer, inner)`` buffer itself
        (the kept axes keep their order)."""
        order = self.reduced[1]
        return order == tuple(range(len(order)))

    def view3(self, a: np.ndarray) -> np.ndarray | None:
        """The 3-D view of ``a`` (shaped like the input), or None if it needs a copy."""
        return _try_view3(a, self.perm, self.shape3)

    def empty3(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """A new C-ordered 3-D buffer and the array of ``shape`` it is a view of."""
        buf = np.empty(self.shape3, dtype=dtype)
        permuted = buf.reshape([self.shape[ax] for ax in self.perm])
        return buf, permuted.transpose(np.argsort(self.perm))

    def reduced_empty(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """A 2-D ``(outer, inner)`` buffer and the reduction result it is a view of."""
        buf = np.empty((self.shape3[0], self.shape3[2]), dtype=dtype)
        kept_shape, order = self.reduced  # kept axes in perm order → original order
        return buf, buf.reshape(kept_shape).transpose(order)


def _split_shape(shape, perm, axes) -> tuple[int, int, int] | None:
    """(outer, n, inner) if ``axes`` are adjacent in ``perm``, else None."""
    pos = [perm.index(ax) for ax in axes]
    if axes and max(pos) - min(pos) + 1 != len(axes):
        return None
    first = min(pos) if axes else len(perm)
    last = max(pos) + 1 if axes else len(perm)
    size = [shape[ax] for ax in perm]
    return (math.prod(size[:first]), math.prod(size[first:last]), math.prod(size[last:]))


@functools.lru_cache(maxsize=1024)
def _natural_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> Layout | None:
    """The layout of a C-ordered array of ``shape`` in its natural axis order, if the
    normalized axes are adjacent there (memoized: a small call's dispatch is a lookup)."""
    natural = tuple(range(len(shape)))
    shape3 = _split_shape(shape, natural, axes)
    return None if shape3 is None else Layout(shape, axes, natural, shape3)


def plan_layout(
    a: np.ndarray, axes: tuple[int, ...], *, index_order: bool = False
) -> tuple[Layout, np.ndarray | None]:
    """Choose the layout for ``a`` and return it with ``a``'s 3-D view (None: copy).

    ``index_order=True`` keeps the axes in their natural order, so every row lists its
    entries in C index order whatever the memory layout: for the variants whose result
    depends on that order (top-k's ties, Gumbel noise; ``vocabulary.INDEX_ORDER``).
    """
    if a.flags.c_contiguous:  # the common case, fast: the natural order is a view
        layout = _natural_layout(a.shape, axes)
        if layout is not None:
            return layout, a.reshape(layout.shape3)
    natural = tuple(range(a.ndim))
    by_stride = (
        natural
        if index_order
        else tuple(sorted(natural, key=lambda ax: (a.shape[ax] == 1, -abs(a.strides[ax]), ax)))
    )
    # The memory order is taken only for a C-contiguous view (one the kernels read as is,
    # e.g. a Fortran array, normalized axis in the middle). Other views are copied
    # (``kernel_ready``), and then in the natural order: a stride-0 (broadcast) axis must
    # not move the normalized axis to the middle.
    fallback = None
    for perm in dict.fromkeys((natural, by_stride)):
        shape3 = _split_shape(a.shape, perm, axes)
        if shape3 is None:
            continue
        view = _try_view3(a, perm, shape3)
        if view is not None and (perm == natural or view.flags.c_contiguous):
            return Layout(a.shape, axes, perm, shape3), view
        if fallback is None:
            fallback = Layout(a.shape, axes, perm, shape3), None
    if fallback is not None:
        return fallback
    perm = tuple(ax for ax in natural if ax not in axes) + axes
    return Layout(a.shape, axes, perm, _split_shape(a.shape, perm, axes)), None
