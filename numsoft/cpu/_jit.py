"""The one place that decides how numsoft's CPU kernels are compiled.

``fastmath=True`` would add ``nnan``/``ninf``, letting LLVM assume no NaN or inf and
breaking the numerics contract (SPEC §1). The flag set below keeps NaN/inf semantics
while allowing reassociation, so reductions still vectorize.
"""

from __future__ import annotations

import functools

import numba

#: fastmath flags that keep NaN/inf semantics (no ``nnan``/``ninf``).
SAFE_FASTMATH = {"reassoc", "contract", "arcp", "nsz", "afn"}

#: Decorator for row kernels and helpers called from them (serial code).
kernel = functools.partial(
    numba.njit, cache=True, fastmath=SAFE_FASTMATH, error_model="numpy", nogil=True
)

#: Decorator for drivers that parallelize over rows with ``prange``.
parallel_kernel = functools.partial(
    numba.njit,
    cache=True,
    fastmath=SAFE_FASTMATH,
    error_model="numpy",
    nogil=True,
    parallel=True,
)
