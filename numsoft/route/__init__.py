"""The array-type router: every public function of the NumPy API takes any array type
and returns the input's (``follows_input_type``).

A NumPy array (or a list, a scalar) goes straight to the function. Any other array
type is handed to the module of its kind, which converts the arguments, calls the
function or the layer below, and converts the result back:

- a Dask array: ``route.dask_calls`` (a lazy graph, ``numsoft.dask``);
- a torch tensor or another array-API library's host array: ``route.array_api``
  (NumPy views in, the library's arrays out);
- a device array: ``route.device`` (the GPU path, the result in the input's library);
- a torch tensor that requires grad: ``route.autograd`` (through ``route.array_api``),
  and any torch tensor while ``torch.compile`` traces: ``route.compiled`` (a graph break).

The kind tests are ``_array_kinds``'s and look libraries up in ``sys.modules`` only;
each kind's module is imported when its first array arrives (Dask, torch and
numba-cuda are optional dependencies).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .._array_kinds import (
    is_array_api_host,
    is_dask_array,
    is_device_array,
    is_torch_tensor,
    torch_is_compiling,
)
from .array_api import memory_for, signature_of

__all__ = [
    "follows_input_type",
    "follows_dask_input",
    "router_of",
    "signature_of",
    "public_function",
]

#: Every public function made by ``follows_input_type``, by ``"module:name"``: how a
#: traced graph (``route.compiled``), which holds names, not functions, finds them.
_PUBLIC: dict = {}


def public_function(key: str):
    """The public function of ``key`` (``"numsoft.core:softmax"``)."""
    return _PUBLIC[key]


def router_of(x):
    """The module-level router for ``x``'s array type (an object with ``call(public, x,
    args, kwargs)``), or None for NumPy arrays and array-likes."""
    if type(x) is np.ndarray:
        return None
    if is_torch_tensor(x) and torch_is_compiling():
        from . import compiled  # lazily: torch is optional

        return compiled
    if is_device_array(x):
        from . import device  # lazily: numba-cuda is optional

        return device
    if is_dask_array(x):
        from . import dask_calls  # lazily: Dask is optional

        return dask_calls
    if is_array_api_host(x):
        return memory_for(x)
    return None


def follows_input_type(func):
    """``func`` (a public function of the NumPy API, its array input first, passed by
    position or by name) for any array type: the result is of the input's type
    (``router_of(x).call(public, x, args, kwargs)``, ``args`` holding ``x`` when it was
    passed by position).

    A NumPy array goes straight to ``func``; a device array runs on the GPU and comes
    back as the caller's array type; a Dask array builds a lazy graph; a torch tensor
    or another array-API library's host array is read without a copy and returned in
    its namespace.
    """

    first = next(iter(inspect.signature(func).parameters))  # x, y, logits, q, ...

    @functools.wraps(func)
    def public(*args, **kwargs):
        x = args[0] if args else kwargs.get(first)
        if type(x) is np.ndarray:
            return func(*args, **kwargs)
        router = router_of(x)
        if router is None:
            return func(*args, **kwargs)
        return router.call(public, x, args, kwargs)

    _PUBLIC[f"{func.__module__}:{func.__name__}"] = public
    return public


def follows_dask_input(func):
    """``func`` with a Dask array ``x`` routed to ``route.dask_calls`` (a lazy graph);
    every other input goes straight to ``func`` (the segment functions, whose torch
    form is ``numsoft.torch.geometric``)."""

    first = next(iter(inspect.signature(func).parameters))

    @functools.wraps(func)
    def public(*args, **kwargs):
        x = args[0] if args else kwargs.get(first)
        if type(x) is np.ndarray or not is_dask_array(x):
            return func(*args, **kwargs)
        from . import dask_calls  # lazily: Dask is optional

        return dask_calls.call(public, x, args, kwargs)

    _PUBLIC[f"{func.__module__}:{func.__name__}"] = public
    return public
