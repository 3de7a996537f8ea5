"""Other array libraries' host arrays: read without a copy, returned as they came.

A torch CPU tensor, an ``array_api_strict`` array or a JAX CPU array passed to a
public function is read through DLPack (no copy) into a NumPy view, the function runs
on the views as for NumPy input, and each array in the result is handed back through
the input's namespace (``from_dlpack``, again no copy). ``out=`` is written through its
view and returned as the caller's own object. The result dtype follows numsoft's rule
(the NumPy API's: float32 for float16/float32 input, float64 otherwise), whatever the
library, with one exception: torch's half-precision tensors (float16 and bfloat16,
which NumPy cannot read) are computed in float32 and returned in their own dtype, as
torch's own functions do, with or without gradients, unless ``dtype=`` asks otherwise
(``widened_halves``). ``numsoft.special`` applies SciPy's rule instead.

Every array argument must come from the input's library: a NumPy array, a device array
or another library's array beside it is a ``TypeError`` naming the argument, as SciPy's
array-API mode does (scalars, lists and ``None`` are read as usual).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .._array_kinds import is_array_api_host, is_dask_array, is_device_array, library_of
from .dlpack import exportable, read_host


@functools.cache
def signature_of(func) -> inspect.Signature:
    """``func``'s signature, for calls that bind their arguments by name."""
    return inspect.signature(func)


def namespace_of(x):
    """The array-API namespace of host array ``x`` (``array_api_compat``'s, which gives
    torch one)."""
    import array_api_compat

    return array_api_compat.array_namespace(x)


def records_gradient(values) -> bool:
    """Whether autograd records a call on ``values`` (torch's: one requires grad, in
    grad mode)."""
    if not any(getattr(v, "requires_grad", False) for v in values):
        return False
    import torch  # already loaded: a tensor is here

    return torch.is_grad_enabled()


class ArrayApiHost:
    """A call's arrays of one array-API namespace ``xp`` in host memory, for
    ``route.router_of``: ``call`` runs a public function on their NumPy views and
    returns its result in ``xp``."""

    def __init__(self, xp, like):
        import array_api_compat

        self.xp = xp
        self.library = library_of(like)
        self.device = array_api_compat.device(like)

    def call(self, func, x, args, kwargs):
        """``func(*args, **kwargs)`` (``x`` among them) on NumPy views of the arrays, the
        result in ``xp``."""
        bound = signature_of(func).bind(*args, **kwargs)
        given = bound.arguments
        if self.library == "torch" and (half := half_dtype(x)) is not None:
            return widened_halves(self, func, given, half)
        if self.library == "torch" and records_gradient(given.values()):
            from . import autograd  # lazily: torch is optional

            return autograd.call(func, bound)
        out = given.get("out")
        for name, value in given.items():
            given[name] = self.to_numpy(value, name)
        result = func(*bound.args, **bound.kwargs)
        return self.from_numpy(result, out, given.get("out"))

    def to_numpy(self, value, name: str):
        """``value`` (one argument) as the NumPy API takes it: this namespace's arrays as
        NumPy views; other libraries' arrays rejected; anything else as it is."""
        if isinstance(value, np.ndarray) or is_device_array(value) or is_dask_array(value):
            other = "NumPy" if isinstance(value, np.ndarray) else library_of(value)
            raise TypeError(self.mixed(name, other))
        if not is_array_api_host(value):
            return value
        if library_of(value) != self.library or namespace_of(value) is not self.xp:
            raise TypeError(self.mixed(name, library_of(value)))
        return read_host(value, name)

    def mixed(self, name: str, other: str) -> str:
        return (
            f"{name} is a {other} array but the input is a {self.library} array: "
            f"pass arrays of one library"
        )

    def from_numpy(self, result, out=None, out_view=None):
        """``result`` with each NumPy array (or scalar) in it as an array of ``xp``; the
        NumPy view of ``out`` as ``out`` itself."""
        if isinstance(result, tuple):
            return tuple(self.from_numpy(r, out, out_view) for r in result)
        if out is not None and result is out_view:
            return out
        if isinstance(result, (np.ndarray, np.generic)):
            import array_api_compat

            converted = self.xp.from_dlpack(exportable(np.asarray(result)))
            if array_api_compat.device(converted) != self.device:
                converted = array_api_compat.to_device(converted, self.device)
            return converted
        return result


def half_dtype(x):
    """``x``'s dtype if it is a torch half-precision dtype (float16, bfloat16), else None."""
    import torch  # already loaded: a tensor is here

    dtype = getattr(x, "dtype", None)
    return dtype if dtype in (torch.float16, torch.bfloat16) else None


def widened_halves(host: ArrayApiHost, func, given: dict, half):
    """``func`` on half-precision tensors: each computed in float32 (a differentiable
    cast), the float results cast back to ``half`` unless ``dtype=`` was given; an
    ``out=`` tensor is filled from the result."""
    import torch

    def widened(v):
        return v.float() if isinstance(v, torch.Tensor) and half_dtype(v) is not None else v

    out = given.pop("out", None)
    args = {k: widened(v) for k, v in given.items()}
    result = host.call(func, args[next(iter(args))], (), args)
    if given.get("dtype") is None:
        result = _narrowed(result, half)
    if out is None:
        return result
    out.copy_(result)
    return out


def _narrowed(result, half):
    """``result`` with its float32 tensors in ``half``."""
    import torch

    if isinstance(result, tuple):
        return tuple(_narrowed(r, half) for r in result)
    return result.to(half) if getattr(result, "dtype", None) == torch.float32 else result


def memory_for(x) -> ArrayApiHost:
    """The ``ArrayApiHost`` of ``x``'s namespace."""
    return ArrayApiHost(namespace_of(x), x)
