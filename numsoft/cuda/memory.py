"""Device arrays: the CUDA backend's memory handling behind the front door.

Inputs may be Numba device arrays, CuPy arrays, torch CUDA tensors (anything with
``__cuda_array_interface__``) or, under the CUDA simulator, the simulator's arrays.
``DEVICE`` gives the front door (``numsoft.frontdoor``) the same methods for them as
``numsoft.cpu.memory.HOST`` does for NumPy arrays. Layout decisions are the front
door's: ``shadow`` gives a NumPy array with the same shape, strides and dtype but no
data, so ``plan_layout`` plans the ``(outer, n, inner)`` view of a device array
without touching its memory; ``restride`` then builds that view on the device.
"""

from __future__ import annotations

import numpy as np
from numba import cuda
from numba.cuda.cudadrv import devicearray

from .._array_kinds import is_device_array, library_of
from .rows import apply_mask, fill_empty_rows

try:
    from numba.cuda.core import config as _cuda_config

    SIMULATOR = bool(_cuda_config.ENABLE_CUDASIM)
except ImportError:  # older numba-cuda
    from numba import config as _cuda_config

    SIMULATOR = bool(getattr(_cuda_config, "ENABLE_CUDASIM", False))


def as_device(x):
    """A Numba device array sharing ``x``'s memory (no copy)."""
    if devicearray.is_cuda_ndarray(x):
        return x
    return cuda.as_cuda_array(x)


def shadow(dev) -> np.ndarray:
    """A NumPy array with ``dev``'s shape, strides and dtype, for planning only.

    Its data pointer is a single element: never read or write through it.
    """
    return np.lib.stride_tricks.as_strided(
        np.zeros(1, dtype=dev.dtype), shape=dev.shape, strides=dev.strides
    )


def restride(dev, shape, strides):
    """A device view of ``dev``'s memory from its first element with new shape/strides.

    ``strides`` are in bytes and non-negative; the view must stay inside ``dev``'s
    allocation (callers derive it from ``shadow(dev)`` by transposes and reshapes).
    """
    shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
    if SIMULATOR:
        view = np.lib.stride_tricks.as_strided(dev._ary, shape=shape, strides=strides)
        return devicearray.FakeCUDAArray(view)
    desc = {
        "shape": shape,
        "strides": strides,
        "typestr": dev.dtype.str,
        "data": (dev.__cuda_array_interface__["data"][0], False),
        "version": 3,
    }
    return cuda.from_cuda_array_interface(desc, owner=dev)


def view_like(dev, host_view: np.ndarray, host_base: np.ndarray):
    """The device view of ``dev`` that ``host_view`` is of ``host_base`` (its shadow)."""
    if min(host_view.strides, default=0) < 0:
        return None
    offset = host_view.__array_interface__["data"][0] - host_base.__array_interface__["data"][0]
    if offset != 0:
        return None
    return restride(dev, host_view.shape, host_view.strides)


def in_axis_order(buf, layout):
    """The array of ``layout.shape`` that the contiguous buffer ``buf`` holds with its
    axes in ``layout.perm`` order (like ``numsoft.frontdoor.layout.Layout.empty3``'s view)."""
    perm = layout.perm
    if layout.natural:
        return buf.reshape(layout.shape)
    c_strides = shadow(buf.reshape(tuple(layout.shape[ax] for ax in perm))).strides
    strides = [0] * len(perm)
    for pos, ax in enumerate(perm):
        strides[ax] = c_strides[pos]
    return restride(buf, layout.shape, strides)


def extent(dev) -> tuple[int, int]:
    """[first, last) byte addresses spanned by ``dev`` (for overlap checks)."""
    if SIMULATOR:
        start = dev._ary.__array_interface__["data"][0]
    else:
        start = dev.__cuda_array_interface__["data"][0]
    lo = hi = start
    for size, stride in zip(dev.shape, dev.strides, strict=True):
        if size == 0:
            return start, start
        span = (size - 1) * stride
        lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
    return lo, hi + dev.dtype.itemsize


def _reduced_view(buf2, layout, keepdims):
    """The reduction result (original axis order) as a view of the ``(outer, inner)``
    buffer ``buf2``, C-ordered over the kept axes in ``layout.perm`` order like the
    CPU's ``Layout.reduced_empty``; reduced axes kept by ``keepdims`` get length 1."""
    stride_of, step = {}, buf2.dtype.itemsize
    for ax in reversed(layout.kept):
        stride_of[ax] = step
        step *= layout.shape[ax]
    shape, strides = [], []
    for ax in range(len(layout.shape)):
        if ax in stride_of:
            shape.append(layout.shape[ax])
            strides.append(stride_of[ax])
        elif keepdims:
            shape.append(1)
            strides.append(0)
    return restride(buf2, shape, strides)


def in_library_of(x, result, out=None):
    """``result`` (a GPU path's: Numba device arrays, or a tuple of them) as arrays of
    ``x``'s library (CuPy, torch CUDA), through its ``asarray``
    (``__cuda_array_interface__``: no copy) on ``x``'s device; ``out`` as the caller
    gave it. Numba's own arrays, and those of a library ``array_api_compat`` does not
    know, stay Numba device arrays."""
    if library_of(x) == "numba":
        return result
    import array_api_compat

    try:
        xp, device = array_api_compat.array_namespace(x), array_api_compat.device(x)
    except TypeError:
        return result
    return _converted(result, xp, device, out)


def _converted(result, xp, device, out):
    if isinstance(result, tuple):
        return tuple(_converted(r, xp, device, out) for r in result)
    if out is not None and _same_data(result, out):
        return out
    if devicearray.is_cuda_ndarray(result) or isinstance(result, (np.ndarray, np.generic)):
        return xp.asarray(result, device=device)
    return result


def _same_data(a, b) -> bool:
    """``a`` and ``b`` are views of the same memory with one shape."""
    return (
        devicearray.is_cuda_ndarray(a)
        and tuple(a.shape) == tuple(b.shape)
        and extent(a) == extent(as_device(b))
    )


class DeviceMemory:
    """The memory methods of the front door for device arrays (``DEVICE``); see
    ``numsoft.cpu.memory.HostMemory`` for what each one answers."""

    asarray = staticmethod(as_device)
    plan_view = staticmethod(shadow)
    reduced_view = staticmethod(_reduced_view)

    @staticmethod
    def host_mask(where):
        """A device ``where`` is read on the host (the mask logic is the front door's)."""
        return as_device(where).copy_to_host() if is_device_array(where) else where

    @staticmethod
    def source(dev, planned, layout, view3, compute, mask):
        """(compute-dtype 3-D source, our scratch behind it or None): ``dev`` itself
        through a strided view when it has one, else a device-side copy and cast, its
        masked entries set to -inf."""
        if view3 is not None and dev.dtype == compute and mask is None:
            src3 = view_like(dev, view3, planned)
            if src3 is not None:
                return src3, None
        buf = cuda.device_array(layout.shape3, dtype=compute)
        in_axis_order(buf, layout)[...] = dev  # device-side copy and dtype conversion
        if mask is not None:
            keep, keep_full = layout.empty3(np.bool_)
            np.copyto(keep_full, mask)
            apply_mask(buf.reshape(buf.size), cuda.to_device(keep.reshape(-1)))
        return buf, buf

    @staticmethod
    def as_out(out):
        if not is_device_array(out):
            raise TypeError(
                f"out must be a device array when x is on the device, got {type(out).__name__}"
            )
        return as_device(out)

    @staticmethod
    def check_writable(out) -> None:
        pass  # device arrays have no read-only flag

    @staticmethod
    def new_result(layout, dtype):
        """A new result laid out like the kernels' view (no copy back needed)."""
        return in_axis_order(cuda.device_array(layout.shape3, dtype=dtype), layout)

    @staticmethod
    def view3(a, layout):
        sh = shadow(a)
        view = layout.view3(sh)
        return None if view is None else view_like(a, view, sh)

    @staticmethod
    def overlaps(a, b) -> bool:
        (a0, a1), (b0, b1) = extent(a), extent(b)
        return a0 < b1 and b0 < a1

    @staticmethod
    def same_view(a, b) -> bool:
        return extent(a) == extent(b) and tuple(a.strides) == tuple(b.strides)

    @staticmethod
    def empty(shape, dtype):
        return cuda.device_array(shape, dtype=dtype)

    @staticmethod
    def fill_rows(target3, empty, value) -> None:
        outer, _, inner = target3.shape
        flags = cuda.to_device(np.ascontiguousarray(empty.reshape(outer, inner)))
        fill_empty_rows(target3, flags, target3.dtype.type(value))

    @staticmethod
    def copy_back(res, buf3, layout) -> None:
        res[...] = in_axis_order(buf3, layout)

    @staticmethod
    def reduced_buffer(res, layout):
        return None  # the kernels write a buffer of their own, assigned to ``out``

    @staticmethod
    def assign(res, value) -> None:
        res[...] = value

    @staticmethod
    def as_result(value, dtype):
        if value.dtype == dtype:
            return value
        res = cuda.device_array(value.shape, dtype=dtype)
        res[...] = value
        return res


DEVICE = DeviceMemory()
