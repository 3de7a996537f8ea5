"""Arrays with a class axis as ``(rows, C)`` arrays of the compute dtype, the classes
last: the form the fused losses' row kernels take (``pair_rows``, ``margin``).

The class axis is moved last; a copy is made only where its entries are not adjacent in
memory or the dtype changes. Results come back in the caller's layout (``like_input``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..cpu.memory import read_only
from ..frontdoor.arguments import broadcast_where, resolve_dtypes


class ClassRows:
    """``x`` as read-only ``(rows, C)`` rows (``x2``) of the compute dtype, ``C`` the
    length of ``axis``, and what results are shaped like."""

    def __init__(self, x: np.ndarray, axis, name: str, dtype: np.dtype | None = None):
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            raise TypeError(f"axis must be an int, got {axis!r}")
        if x.ndim == 0:
            raise ValueError(f"{name} must have a class axis, got a 0-d array")
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"axis {axis} is out of bounds for an array of {x.ndim} dimensions")
        self.axis = int(axis) % x.ndim
        self.shape = x.shape
        self.compute, _ = resolve_dtypes(x.dtype if dtype is None else dtype, None)
        self.moved_shape = x.shape[: self.axis] + x.shape[self.axis + 1 :] + (x.shape[self.axis],)
        self.n = x.shape[self.axis]
        self.rows = math.prod(self.moved_shape[:-1])
        self.x2 = self.rows_of(x)

    def rows_of(self, x: np.ndarray) -> np.ndarray:
        """An array of this shape as the kernels' read-only ``(rows, C)`` array."""
        moved = np.moveaxis(x, self.axis, -1).reshape(self.rows, self.n)
        return read_only(np.ascontiguousarray(moved, dtype=self.compute))

    def mask_rows(self, where) -> np.ndarray:
        """``where`` broadcast to the input's shape, as a C-contiguous ``(rows, C)``
        boolean array (the kept classes)."""
        mask = broadcast_where(where, self.shape)
        return np.ascontiguousarray(np.moveaxis(mask, self.axis, -1).reshape(self.rows, self.n))

    def gradient(self, wanted: bool) -> np.ndarray:
        """A new ``(rows, C)`` gradient array, or a zero-width one that is never written."""
        return np.empty((self.rows, self.n if wanted else 0), self.compute)

    def like_input(self, g2: np.ndarray) -> np.ndarray:
        """A ``(rows, C)`` result shaped like the input (the class axis back in place)."""
        return np.moveaxis(g2.reshape(self.moved_shape), -1, self.axis)


class PairRows(ClassRows):
    """Two arrays of one shape as ``(rows, C)`` arrays ``a2``, ``b2`` of their common
    compute dtype."""

    def __init__(self, a: np.ndarray, b: np.ndarray, axis, names: tuple[str, str]):
        if a.shape != b.shape:
            raise ValueError(
                f"{names[1]} has shape {b.shape}, expected {a.shape} (the shape of {names[0]})"
            )
        super().__init__(a, axis, names[0], np.result_type(a.dtype, b.dtype))
        self.a2 = self.x2
        self.b2 = self.rows_of(b)

    def swapped(self) -> PairRows:
        """The same pair with the rows of ``b`` first."""
        pair = object.__new__(PairRows)
        pair.__dict__.update(self.__dict__, a2=self.b2, b2=self.a2)
        return pair
