"""The one place that decides how numsoft's CUDA kernels are compiled.

``fastmath`` stays off: numba-cuda's ``fastmath=True`` flushes subnormals and lets
NVVM assume no NaN/inf, which breaks the numerics contract (SPEC §1). ``math.exp`` and
``math.log`` compile to libdevice's accurate ``__nv_exp[f]``/``__nv_log[f]``.

Kernels are compiled lazily, per argument types, on first launch, with the launch bound
``launch.LAUNCH_BOUND`` (threads per block), which caps their registers so that every
block size of ``launch.plan`` can launch. ``kernel`` records every kernel with the
argument types of its float32/float64 specializations, so the test suite can compile
each one to PTX and assemble it for a real device without a GPU
(``numba.cuda.compile_ptx``, see ``tests/test_cuda_ptx.py``).
"""

from __future__ import annotations

import functools

from numba import config, cuda, types

from .launch import LAUNCH_BOUND

#: Device functions (called from kernels only).
device = functools.partial(cuda.jit, device=True)

#: ``(python function, argtypes)`` of every kernel; ``argtypes(ft)`` gives the
#: argument types of its specialization for float type ``ft`` (float32 or float64).
KERNELS: list = []


def array3(ft):
    """Numba type of a 3-D array of ``ft`` with any strides."""
    return types.Array(ft, 3, "A")


def array2(ft):
    """Numba type of a 2-D array of ``ft`` with any strides."""
    return types.Array(ft, 2, "A")


def kernel(argtypes):
    """Decorator: a lazily compiled CUDA kernel, registered with its ``argtypes(ft)``."""

    def deco(fn):
        KERNELS.append((fn, argtypes))
        if config.ENABLE_CUDASIM:  # the simulator's jit has no launch bounds
            return cuda.jit(fn)
        return cuda.jit(fn, launch_bounds=LAUNCH_BOUND)

    return deco
