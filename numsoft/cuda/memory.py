"""Device arrays: recognizing them, viewing them with other shapes/strides, allocating.

Inputs may be Numba device arrays, CuPy arrays, torch CUDA tensors (anything with
``__cuda_array_interface__``) or, under the CUDA simulator, the simulator's arrays.
Layout decisions reuse the CPU front door: ``shadow`` gives a NumPy array with the same
shape, strides and dtype but no data, so ``numsoft._frontend.plan_layout`` can plan the
``(outer, n, inner)`` view of a device array without touching its memory. ``restride``
then builds that view on the device.
"""

from __future__ import annotations

import numpy as np
from numba import cuda
from numba.cuda.cudadrv import devicearray

try:
    from numba.cuda.core import config as _cuda_config

    SIMULATOR = bool(_cuda_config.ENABLE_CUDASIM)
except ImportError:  # older numba-cuda
    from numba import config as _cuda_config

    SIMULATOR = bool(getattr(_cuda_config, "ENABLE_CUDASIM", False))


def is_device_array(x) -> bool:
    """True for an object whose data lives on the GPU (or in the simulator)."""
    return bool(devicearray.is_cuda_ndarray(x)) or hasattr(x, "__cuda_array_interface__")


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


def empty_like_layout(shape_in_order, perm, dtype):
    """A new contiguous device buffer in ``perm`` axis order, and its view of ``shape``.

    ``shape_in_order`` is the array's shape; the buffer holds the axes in the order
    ``perm`` (so the kernels' 3-D view of it is contiguous) and the returned view has
    the original axis order, like ``numsoft._frontend.Layout.empty3``.
    """
    permuted = tuple(shape_in_order[ax] for ax in perm)
    buf = cuda.device_array(permuted, dtype=dtype)
    if tuple(perm) == tuple(range(len(perm))):
        return buf, buf
    c_strides = shadow(buf).strides
    strides = [0] * len(perm)
    for pos, ax in enumerate(perm):
        strides[ax] = c_strides[pos]
    return buf, restride(buf, shape_in_order, strides)


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
