"""Python glue shared by the variant wrappers: argument checks, docstrings, dispatch.

Every variant goes through the core front door (``numsoft.frontdoor``: ``prepare`` and
``run_rowwise``), so ``axis``, ``out``, ``dtype``, ``where`` and ``temperature`` behave
exactly as for ``softmax``; masked entries reach the kernels as ``-inf``, which every
variant kernel treats as excluded. The kernels and their drivers are in
``numsoft.cpu.variants``.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from .. import core
from .._docstrings import filled
from ..cpu.rows import driver_for, path_constants
from ..cpu.variants.driver import (
    variant_backward_columns,
    variant_backward_rows,
    variant_columns,
    variant_rows,
)
from ..frontdoor.arguments import Request, as_input_array
from ..frontdoor.prepare import prepare
from ..frontdoor.run import run_backward, run_rowwise
from ..vocabulary import BY_CODE, ENDS_IN_SOFTMAX, INDEX_ORDER, THREE_PASS_STORE

#: Parameter array of the variants that take none.
NO_PARAMS = np.zeros(1)

#: The common parameters of SPEC §1 as documented for ``softmax``, less ``algorithm``
#: (variants pick their own pass structure).
_COMMON = core._COMMON[: core._COMMON.index("    algorithm :")].strip("\n")


#: The ``target`` parameter of the variants that have a CUDA kernel.
_TARGET = """
    target : str, optional
        ``"cpu"`` (default) or ``"cuda"``: where to compute (as for ``softmax``): device
        arrays always run on the GPU and their results stay there; host arrays with
        ``"cuda"`` are copied in and out."""


def doc(extra: str = "", target: bool = False):
    """Insert the common parameters (and ``extra`` ones) at ``{common}`` in a docstring.

    ``target=True`` documents the ``target`` argument of the variants that run on the GPU.
    """

    return filled("common", _COMMON + extra + (_TARGET if target else ""))


# ---------------------------------------------------------------- scalar arguments


def real_arg(func: str, name: str, value) -> float:
    """``value`` as a float; TypeError naming the argument if it is not a real number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{func}: {name} must be a real number, got {type(value).__name__}")
    return float(value)


def int_arg(func: str, name: str, value) -> int:
    """``value`` as an int; TypeError naming the argument if it is not an integer."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{func}: {name} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{func}: {name} must be an integer, got {type(value).__name__}") from None


def bool_arg(func: str, name: str, value) -> bool:
    """``value`` as a bool; TypeError naming the argument if it is not a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{func}: {name} must be a bool, got {type(value).__name__}")
    return bool(value)


def real_vector_arg(func: str, name: str, value) -> np.ndarray:
    """``value`` as a 1-D float64 array; TypeError naming the argument otherwise."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{func}: {name} must be a sequence of real numbers") from None
    if arr.ndim != 1:
        raise TypeError(f"{func}: {name} must be a 1-D sequence, got shape {arr.shape}")
    return arr


def rows_along(func: str, x, axis) -> tuple[np.ndarray, tuple[int, ...]]:
    """``x`` as C-contiguous rows along one int ``axis``, in its compute dtype (float32
    for float16/float32, else float64), and the shape they come from (``axis`` moved
    last); the errors name ``func`` and the argument."""
    a = as_input_array(x, "x")
    if a.ndim == 0:
        raise ValueError(f"{func}: x must have at least one axis, got a 0-d array")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{func}: axis must be an int, got {axis!r}")
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"{func}: axis {axis} is out of bounds for a {a.ndim}-d x")
    compute = np.dtype(np.float32) if a.dtype in (np.float16, np.float32) else np.dtype(np.float64)
    z = np.moveaxis(a, axis, -1)
    return np.ascontiguousarray(z.reshape(-1, z.shape[-1]), dtype=compute), z.shape


# ---------------------------------------------------------------- dispatch


def run_variant(x, req: Request, code: int, params=NO_PARAMS, *, target="cpu", seed=0):
    """Run variant ``code`` (``numsoft.vocabulary``) on every row of ``x``; return it.

    On the CPU, or on the GPU for ``target="cuda"`` or device input (``seed``: the
    CPU's Gumbel noise). ``params`` is the parameter array, or a function of the
    normalized length that returns it (for parameters checked against the row length,
    like top-k's k). A row with no unmasked entry
    gives the variant's ``fill`` (``numsoft.vocabulary.VARIANTS``).
    """
    if (target != "cpu" or type(x) is not np.ndarray) and (gpu := core._cuda_backend(x, target)):
        return gpu.variant(x, req, code, params)
    p = prepare(x, req, index_order=code in INDEX_ORDER)
    if callable(params):
        params = params(p.layout.n)
    args = (np.asarray(params, dtype=np.float64), p.inv_t, np.uint64(seed))
    # The variants that end in a softmax take the call's pass structure ("auto"); for
    # the others the constants are never read: one value gives all calls one path.
    if code in ENDS_IN_SOFTMAX:
        constants = path_constants(p.code, n=p.layout.n, itemsize=p.compute.itemsize)
    else:
        constants = path_constants(THREE_PASS_STORE)
    driver, rows = driver_for(
        variant_rows, variant_columns, p.layout.shape3, VARIANT=code, **constants
    )

    def apply(src3, target3):
        if rows:
            driver(src3[:, :, 0], target3[:, :, 0], *args)
        else:
            driver(src3, target3, *args)

    return run_rowwise(p, apply, BY_CODE[code].fill)


def run_variant_backward(a, dy, axis, code: int) -> np.ndarray:
    """The backward pass of variant ``code``: dx from (``a``, dy), ``a`` = y or x.

    Same broadcasting, layout and dtype rules as ``softmax_backward``.
    """
    drivers = (variant_backward_rows, variant_backward_columns)
    return run_backward(a, dy, axis, BY_CODE[code].backward, drivers, VARIANT=code)
