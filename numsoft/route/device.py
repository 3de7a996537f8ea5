"""Device arrays (``__cuda_array_interface__``: Numba, CuPy, torch CUDA; the CUDA
simulator's): a public function runs its GPU path, and its result comes back in the
input's own library (``cuda.memory.in_library_of``). Imported by the router when the
first device array arrives (numba-cuda is an optional dependency).
"""

from __future__ import annotations

from ..cuda.memory import in_library_of


def call(public, x, args, kwargs):
    """``public(*args, **kwargs)`` on device array ``x`` (among them): the function
    itself (which runs on the GPU for a device array), its result in ``x``'s library."""
    result = public.__wrapped__(*args, **kwargs)
    return in_library_of(x, result, kwargs.get("out"))
