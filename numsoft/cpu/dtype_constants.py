"""Constants that depend on the float dtype of a kernel's argument, chosen at compile time.

A kernel that is generic over float32 and float64 needs its constants in the dtype it
computes in: a float64 constant in a float32 loop promotes the loop to float64, which
halves its vector width. ``per_dtype(f32, f64)`` makes a jit-only function ``of(x)``
that returns ``f32`` when ``x`` is a float32 (or a float32 array) and ``f64`` for
float64; Numba resolves it while typing, so the value is a constant of the compiled code.
"""

from __future__ import annotations

from numba import types
from numba.extending import overload


def per_dtype(f32, f64, doc: str = ""):
    """A jit-only function of one float (or float array) argument returning ``f32`` or
    ``f64`` by its dtype; ``doc`` becomes its docstring."""

    def of(x):
        raise NotImplementedError("jit-only: call it from a numsoft kernel")

    @overload(of)
    def _of(x):
        dt = x.dtype if isinstance(x, types.Array) else x
        if isinstance(dt, types.Float):
            value = f32 if dt.bitwidth == 32 else f64
            return lambda x: value

    of.__doc__ = doc
    return of
