"""What kind of array an argument is, asked without importing any array library.

At the bottom of the package: the router (``numsoft.route``), the front door and both
backends may import it, and it imports none of them.
Each test looks a library up in ``sys.modules`` only: an array of a library that was
never imported cannot exist, so asking never pays for an import.
"""

from __future__ import annotations

import sys

import numpy as np


def library_of(x) -> str:
    """The name users know ``x``'s library by (``torch``, ``dask``, ``numba``)."""
    return type(x).__module__.split(".")[0]


def is_device_array(x) -> bool:
    """``x`` is a device array (``__cuda_array_interface__``, or a Numba/simulator one)."""
    if type(x) is np.ndarray:  # the common case, without two failed attribute lookups
        return False
    return hasattr(x, "__cuda_array_interface__") or getattr(x, "__cuda_ndarray__", False)


def is_dask_array(x) -> bool:
    """``x`` is a ``dask.array.Array``."""
    dask_array = sys.modules.get("dask.array")
    return dask_array is not None and isinstance(x, dask_array.Array)


def is_array_api_host(x) -> bool:
    """``x`` is another array library's array in host memory: a torch CPU tensor, an
    ``array_api_strict`` or JAX CPU array, anything with ``__array_namespace__`` that is
    neither NumPy's, a device array nor a Dask array.

    NumPy arrays and their subclasses (``np.ma``, ``np.memmap``) and NumPy scalars are
    NumPy's own; other array-likes (lists, pandas objects) are read with ``np.asarray``
    as NumPy reads them.
    """
    if isinstance(x, (np.ndarray, np.generic, type)):  # (a type: np.float32 has the
        return False  # attribute too)
    if not (hasattr(x, "__array_namespace__") or is_torch_tensor(x)):
        return False
    return not (is_device_array(x) or is_dask_array(x))


def is_torch_tensor(x) -> bool:
    """``x`` is a ``torch.Tensor`` (which has no ``__array_namespace__``)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def torch_is_compiling() -> bool:
    """``torch.compile`` is tracing the caller (torch loaded and compiling)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()
