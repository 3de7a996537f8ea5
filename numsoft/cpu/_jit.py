"""The one place that decides how numsoft's CPU kernels are compiled.

``fastmath=True`` would add ``nnan``/``ninf``, letting LLVM assume no NaN or inf and
breaking the numerics contract (SPEC §1). The flag set below keeps NaN/inf semantics
while allowing reassociation, so reductions still vectorize.

Kernels are cached on disk (``cache=True``). Numba picks the cache location when a
function is decorated, i.e. at import; where no location is writable (a read-only
install and no writable home or ``NUMBA_CACHE_DIR``) it raises. numsoft then falls
back to compiling in each process, with one warning, instead of failing to import.
"""

from __future__ import annotations

import warnings

import numba

#: fastmath flags that keep NaN/inf semantics (no ``nnan``/``ninf``).
SAFE_FASTMATH = {"reassoc", "contract", "arcp", "nsz", "afn"}

#: Options every CPU kernel is compiled with (besides ``cache``).
JIT_OPTIONS = {"fastmath": SAFE_FASTMATH, "error_model": "numpy", "nogil": True}


class CacheUnavailableWarning(UserWarning):
    """No writable Numba cache location: kernels compile anew in every process."""


_warned = False


def _jit(func, **options):
    global _warned
    try:
        return numba.njit(cache=True, **JIT_OPTIONS, **options)(func)
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
        if not _warned:
            _warned = True
            warnings.warn(
                f"numsoft: {exc}; kernels will be compiled in every process "
                "(set NUMBA_CACHE_DIR to a writable directory to cache them)",
                CacheUnavailableWarning,
                stacklevel=3,
            )
        return numba.njit(cache=False, **JIT_OPTIONS, **options)(func)


def kernel(func=None, **options):
    """Decorator for row kernels and helpers called from them (serial code).

    Use bare (``@kernel``) or with extra ``numba.njit`` options (``@kernel(inline=...)``).
    """
    if func is None:
        return lambda f: _jit(f, **options)
    return _jit(func, **options)


def parallel_kernel(func=None, **options):
    """Decorator for drivers that parallelize over rows with ``prange``."""
    return kernel(func, parallel=True, **options)
