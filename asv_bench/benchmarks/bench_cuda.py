"""CUDA backend (SPEC §7): device arrays in, device arrays out.

Skipped unless numba's CUDA target finds a GPU and ``numsoft.cuda`` exists at the
benchmarked commit. Inputs live on the device; each call is followed by a
synchronize, so the time is the kernels' and not the launch's. The bandwidth track
divides by a device-to-device copy of the same bytes, measured side by side.
"""

from __future__ import annotations

import importlib

try:  # imported here, once: asv's forkserver shares it with every benchmark process
    from numba import cuda
except ImportError:  # numba built without its CUDA target
    cuda = None

from .common import (
    ALGORITHMS,
    DTYPES,
    SHAPES,
    make_logits,
    numsoft_function,
    timed_side_by_side,
)


def cuda_or_skip():
    """``numba.cuda`` when a GPU and ``numsoft.cuda`` are both present, else skip."""
    if cuda is None:
        raise NotImplementedError("numba's CUDA target is not installed")
    if not cuda.is_available():  # initializes the driver: only ever in the child
        raise NotImplementedError("no CUDA GPU")
    try:
        importlib.import_module("numsoft.cuda")
    except ImportError:
        raise NotImplementedError("numsoft has no cuda backend at this commit") from None
    return cuda


class _CudaSoftmax:
    timeout = 300
    params = (("auto", *ALGORITHMS), DTYPES, SHAPES)
    param_names = ["algorithm", "dtype", "shape"]

    def setup(self, algorithm, dtype, shape):
        cuda = cuda_or_skip()
        softmax = numsoft_function("softmax")
        d_x = cuda.to_device(make_logits(shape, dtype))
        d_out = cuda.device_array_like(d_x)
        d_copy = cuda.device_array_like(d_x)
        self.nbytes = d_x.nbytes

        def run():
            softmax(d_x, out=d_out, algorithm=algorithm)
            cuda.synchronize()

        def copy():
            d_copy.copy_to_device(d_x)
            cuda.synchronize()

        self.run, self.copy = run, copy
        run()


class TimeCudaSoftmax(_CudaSoftmax):
    """``softmax(device_array, out=device_array, algorithm=)``."""

    def time_softmax(self, algorithm, dtype, shape):
        self.run()


class TrackCudaBandwidth(_CudaSoftmax):
    """Time ÷ device-to-device copy time (1.0 = at the GPU's memory bandwidth)."""

    def track_time_over_copy(self, algorithm, dtype, shape):
        t_run, t_copy = timed_side_by_side(self.run, self.copy)
        return t_run / t_copy

    track_time_over_copy.unit = "ratio"
