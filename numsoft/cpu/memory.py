"""Host arrays: the CPU backend's memory handling behind the front door.

The front door (``numsoft.frontdoor``) plans every call on an array's shape and
strides and then asks a *memory* object for what depends on where the data lives:
the kernels' source, a new result, a writable view of ``out``, overlap tests, the
copy back. ``HOST`` answers for NumPy arrays; ``numsoft.cuda.memory.DEVICE`` for
device arrays, with the same methods. ``layout`` arguments are
``numsoft.frontdoor.layout.Layout`` objects.
"""

from __future__ import annotations

import numpy as np


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``: the form every kernel input is passed in.

    Numba compiles a separate specialization for read-only arrays, so handing kernels
    writable inputs for some calls and read-only ones (broadcasts, frozen arrays) for
    others would compile every kernel twice. Kernels never write their inputs.
    """
    view = a.view()
    view.setflags(write=False)  # 0.25 µs; through ``view.flags`` 0.37 µs
    return view


def kernel_ready(view3: np.ndarray | None, compute) -> bool:
    """True when the kernels can read ``view3`` as is (no copy, no cast).

    The kernels read C-contiguous arrays only. Any other view (a slice of rows, padded,
    reversed, strided or broadcast) is copied first: Numba types it as non-contiguous,
    which does not vectorize the row loops (5-6x slower, measured) and compiles every
    kernel a second time; one copy pass costs less than either.
    """
    return view3 is not None and view3.dtype == compute and view3.flags.c_contiguous


def copy3(a: np.ndarray, layout, compute) -> tuple[np.ndarray, np.ndarray]:
    """``a`` cast to ``compute`` in a new C-ordered 3-D buffer: (buffer, its ``a``-shaped view)."""
    buf, full = layout.empty3(compute)
    np.copyto(full, a, casting="unsafe")
    return buf, full


def source3(a: np.ndarray, layout, view3: np.ndarray | None, compute) -> np.ndarray:
    """The kernels' (read-only) input: ``view3`` if usable as is, else a 3-D copy."""
    return HostMemory.source(a, a, layout, view3, compute, None)[0]


def same_view(a: np.ndarray, b: np.ndarray) -> bool:
    """True when ``a`` and ``b`` are the same elements in the same order."""
    return (
        a.shape == b.shape
        and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


def may_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` may share memory (``np.may_share_memory``). Two arrays
    that each own their data are distinct allocations unless they are one array: that
    answer skips the bounds test, a third of a small call's argument checks."""
    if a.flags.owndata and b.flags.owndata:
        return a is b
    return np.may_share_memory(a, b)


class HostMemory:
    """The memory methods of the front door for NumPy arrays (``HOST``)."""

    asarray = staticmethod(np.asarray)

    @staticmethod
    def host_mask(where):
        """``where`` as the front door reads masks: on the host (as given here)."""
        return where

    @staticmethod
    def plan_view(a: np.ndarray) -> np.ndarray:
        """The array the layout is planned on: ``a`` itself."""
        return a

    @staticmethod
    def source(a, planned, layout, view3, compute, mask):
        """(read-only compute-dtype 3-D source, our writable scratch behind it or None).

        Masked entries become -inf: exp(-inf) = 0 removes them from every pass, and NaN
        or +inf hidden under the mask cannot leak into the row.
        """
        if mask is None and kernel_ready(view3, compute):
            return read_only(view3), None
        scratch, full = copy3(a, layout, compute)
        if mask is not None:
            np.copyto(full, -np.inf, where=~mask)
        return read_only(scratch), scratch

    @staticmethod
    def as_out(out) -> np.ndarray:
        """``out`` if it is an array of this memory, else TypeError."""
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a NumPy array, got {type(out).__name__}")
        return out

    @staticmethod
    def check_writable(out: np.ndarray) -> None:
        if not out.flags.writeable:
            raise ValueError("out is read-only")

    @staticmethod
    def new_result(layout, dtype) -> np.ndarray:
        """A new result of the input's shape: C-ordered, as NumPy's ufuncs return it."""
        return np.empty(layout.shape, dtype=dtype)

    @staticmethod
    def view3(a: np.ndarray, layout) -> np.ndarray | None:
        """The kernels' C-contiguous 3-D view of ``a`` (shaped like the input), or None."""
        if layout.natural and a.flags.c_contiguous:  # the common case, without a reshape try
            return a.reshape(layout.shape3)
        view = layout.view3(a)
        return view if view is not None and view.flags.c_contiguous else None

    overlaps = staticmethod(may_overlap)
    same_view = staticmethod(same_view)

    @staticmethod
    def empty(shape, dtype) -> np.ndarray:
        """A new C-ordered buffer (the kernels' ``(outer, n, inner)`` or ``(outer, inner)``)."""
        return np.empty(shape, dtype)

    @staticmethod
    def fill_rows(target3: np.ndarray, empty: np.ndarray, value: float) -> None:
        """Set the rows flagged in ``empty`` (``(outer, 1, inner)`` bools) to ``value``."""
        np.copyto(target3, value, where=empty)

    @staticmethod
    def copy_back(res: np.ndarray, buf3: np.ndarray, layout) -> None:
        """``res`` = the ``(outer, n, inner)`` buffer ``buf3``, cast to ``res``'s dtype."""
        full = buf3.reshape([layout.shape[ax] for ax in layout.perm])
        np.copyto(res, full.transpose(np.argsort(layout.perm)), casting="unsafe")

    @staticmethod
    def reduced_view(buf2: np.ndarray, layout, keepdims: bool) -> np.ndarray:
        """The reduction result (original axis order) as a view of its ``(outer, inner)``
        buffer; reduced axes kept by ``keepdims`` get length 1."""
        kept_shape, order = layout.reduced
        r = buf2.reshape(kept_shape).transpose(order)
        return np.expand_dims(r, layout.axes) if keepdims else r

    @staticmethod
    def reduced_buffer(res: np.ndarray, layout) -> np.ndarray | None:
        """``res`` (a reduction's ``out``) as the kernels' ``(outer, inner)`` buffer, or
        None when its memory is not laid out as one."""
        if res.flags.c_contiguous and layout.reduced_natural:
            return res.reshape(layout.shape3[0], layout.shape3[2])
        return None

    @staticmethod
    def assign(res: np.ndarray, value: np.ndarray) -> None:
        np.copyto(res, value)

    @staticmethod
    def as_result(value: np.ndarray, dtype) -> np.ndarray:
        """``value`` in the result dtype (itself when it already is); a 0-d result is a
        NumPy scalar, as NumPy's ufuncs and SciPy return it."""
        if value.dtype != dtype:
            value = value.astype(dtype)
        return value if value.ndim else value[()]


HOST = HostMemory()
