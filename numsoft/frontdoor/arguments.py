"""The front door's argument checks: every argument a caller can pass, checked and
normalized once, before any kernel runs; errors name the offending argument.

``check_arguments`` holds the checks every backend shares (the CPU, the GPU and Dask
call it, so one bad argument raises the same error on each); ``default_call_shape``
tells the calls that may skip the general handling (the default-call fast path).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import NamedTuple

import numpy as np

from .._array_kinds import is_array_api_host, is_dask_array, is_device_array, library_of
from ..cpu.auto import choose_algorithm
from ..cpu.expfast import EXTEXP_MAX_ABS_F32, EXTEXP_MAX_ABS_F64
from ..cpu.memory import HOST, may_overlap
from ..vocabulary import ALGORITHM_NAMES, ALGORITHMS


class Request(NamedTuple):
    """The common arguments of a call (SPEC §1) as the caller gave them."""

    axis: object = -1
    out: object = None
    dtype: object = None
    where: object = None
    temperature: object = 1.0
    algorithm: str = "auto"


def as_input_array(x, name: str = "x", memory=HOST):
    """``x`` as an array of ``memory`` (``np.asarray`` on the host), rejecting dtypes
    that have no meaningful softmax."""
    if memory is HOST and type(x) is not np.ndarray:
        reject_other_library(x, name)
    try:
        a = memory.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be array-like of real numbers: {exc}") from None
    check_real_dtype(a.dtype, name)
    return a


def reject_other_library(value, name: str) -> None:
    """A ``TypeError`` for another library's array (Dask, torch, a device array) as
    argument ``name`` of a call on NumPy data: reading it would copy it, or compute a
    Dask graph, behind the caller's back."""
    if is_dask_array(value) or is_array_api_host(value) or is_device_array(value):
        raise TypeError(
            f"{name} is a {library_of(value)} array but the input is "
            f"NumPy's: pass arrays of one library"
        )


def check_real_dtype(dtype: np.dtype, name: str = "x") -> None:
    """``dtype`` (of a host or device array) holds real numbers."""
    if dtype.kind == "c":
        raise TypeError(f"{name}: complex input is not supported (dtype {dtype})")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {dtype}")


def resolve_dtypes(in_dtype: np.dtype, dtype) -> tuple[np.dtype, np.dtype]:
    """(compute dtype, result dtype) following SPEC §1.

    Default: float64 for bool/int and float64 input, float32 for float16/float32 input.
    ``dtype=float16`` computes in float32 and rounds the result once at the end;
    ``np.longdouble`` input is computed and returned in float64 (kernels are float32 and
    float64 only).
    """
    try:
        return _RESOLVED[in_dtype, dtype]
    except (KeyError, TypeError):  # TypeError: an unhashable dtype argument
        pass
    resolved = _resolve_dtypes(in_dtype, dtype)
    with contextlib.suppress(TypeError):
        _RESOLVED[in_dtype, dtype] = resolved
    return resolved


_RESOLVED: dict = {}  # resolve_dtypes by (input dtype, dtype argument): a call's lookup


def _resolve_dtypes(in_dtype: np.dtype, dtype) -> tuple[np.dtype, np.dtype]:
    if dtype is None:
        if in_dtype.kind == "f" and in_dtype.itemsize <= 4:
            result = np.dtype(np.float32)
        else:
            result = np.dtype(np.float64)
    else:
        try:
            result = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"dtype: {dtype!r} is not a NumPy dtype") from None
        if result not in (np.float16, np.float32, np.float64):
            raise TypeError(f"dtype must be float16, float32 or float64, got {result}")
    compute = np.dtype(np.float64) if result == np.float64 else np.dtype(np.float32)
    return compute, result


def check_temperature(temperature) -> float:
    """Validate ``temperature`` (a positive, finite real number)."""
    plain = type(temperature) is float or type(temperature) is int  # fast common case
    if not plain and (isinstance(temperature, bool) or not isinstance(temperature, numbers.Real)):
        raise TypeError(f"temperature must be a real number, got {type(temperature).__name__}")
    t = float(temperature)
    if not (t > 0.0 and math.isfinite(t)):
        raise ValueError(f"temperature must be positive and finite, got {temperature!r}")
    return t


def inverse_temperature(t: float, compute: np.dtype):
    """1/t as a scalar of ``compute``; ValueError when it rounds to inf in that dtype."""
    inv = 1.0 / t
    if inv >= _ROUNDS_TO_INF[compute.itemsize]:
        raise ValueError(f"temperature {t!r} is too small for {compute} arithmetic")
    return compute.type(inv)


#: The smallest float64 that rounds to inf in float32 (max + half an ulp), and inf.
_ROUNDS_TO_INF = {4: 2.0**128 - 2.0**103, 8: math.inf}


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Sorted tuple of non-negative axes; ``None`` means all axes."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, fast
        return (axis % ndim,)
    items = axis if isinstance(axis, tuple) else (axis,)
    axes = []
    for ax in items:
        if isinstance(ax, bool) or not isinstance(ax, numbers.Integral):
            raise TypeError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(
                f"axis {ax} is out of bounds for array of dimension {ndim}"
            )
        axes.append(int(ax) % ndim)
    if len(set(axes)) != len(axes):
        raise ValueError(f"axis contains a repeated axis: {axis!r}")
    return tuple(sorted(axes))


def check_algorithm(algorithm) -> None:
    """``algorithm`` is one of ``ALGORITHMS``."""
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")


def algorithm_code(
    algorithm: str,
    n: int,
    itemsize: int,
    rows: int = 1,
    columns: bool = False,
    exp_output: bool = False,
    reduction: bool = False,
) -> int:
    """Integer code of ``algorithm`` for the drivers; ``"auto"`` picks by shape
    (``columns``: the normalized axis is not the last one), by whether the output
    pass exponentiates (``exp_output``: softmax) and whether there is one
    (``reduction``: logsumexp has none)."""
    check_algorithm(algorithm)
    if algorithm == "auto":
        return choose_algorithm(
            n, itemsize, rows, columns=columns, exp_output=exp_output, reduction=reduction
        )
    return ALGORITHM_NAMES.index(algorithm)


class Arguments(NamedTuple):
    """The scalar arguments of a call, checked (``check_arguments``). A named tuple:
    a frozen dataclass took 0.7 µs to build, a twentieth of a small call."""

    compute: np.dtype  # the kernels' dtype
    result: np.dtype
    t: float  # temperature
    inv_t: np.floating  # 1 / t in the compute dtype
    bound: np.floating  # the two-pass domain (``extexp_bound``)
    axes: tuple[int, ...]  # normalized, sorted


def check_arguments(
    in_dtype: np.dtype, ndim: int, axis, dtype, temperature, algorithm
) -> Arguments:
    """Check the arguments every backend shares (``dtype``, ``temperature``, ``axis``,
    ``algorithm``) in one order: the CPU (``prepare``), the GPU (``frontdoor.gpu``)
    and Dask (``numsoft.dask``) all call this, so the same bad argument raises the same
    error on each. Each has checked its input's dtype first (``check_real_dtype``)."""
    compute, result = resolve_dtypes(in_dtype, dtype)
    t = check_temperature(temperature)
    inv_t = inverse_temperature(t, compute)
    axes = normalize_axes(axis, ndim)
    check_algorithm(algorithm)
    return Arguments(compute, result, t, inv_t, extexp_bound(compute), axes)


def extexp_bound(compute: np.dtype):
    """Largest |z| the two-pass (M, E) split handles, as a scalar of ``compute``."""
    return _EXTEXP_BOUNDS[compute.itemsize]


_EXTEXP_BOUNDS = {4: np.float32(EXTEXP_MAX_ABS_F32), 8: np.float64(EXTEXP_MAX_ABS_F64)}


def unmask(x, where):
    """``(data, where)`` of a ``np.ma.MaskedArray`` ``x``: its masked entries are
    excluded as ``where=False`` entries are (SciPy's logsumexp honours the mask too);
    any other ``x`` is returned as it is."""
    if not isinstance(x, np.ma.MaskedArray):
        return x, where
    valid = ~np.ma.getmaskarray(x)
    if where is not None:
        valid = valid & broadcast_where(where, valid.shape)
    return x.data, valid


def broadcast_where(where, shape: tuple[int, ...]) -> np.ndarray | None:
    """``where`` as a boolean array broadcast to ``shape`` (or None)."""
    if where is None:
        return None
    if type(where) is not np.ndarray:
        reject_other_library(where, "where")
    mask = np.asarray(where)
    if mask.dtype != np.bool_:
        raise TypeError(f"where must be a boolean array, got dtype {mask.dtype}")
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(
            f"where of shape {mask.shape} is not broadcastable to x of shape {shape}"
        ) from None


def broadcast_pair(a_name: str, a, b_name: str, b) -> tuple[int, ...]:
    """The shape arrays ``a`` and ``b`` broadcast to together, or a ``ValueError``
    naming both (``x`` and ``b``, ``y`` and ``dy``)."""
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(
            f"{a_name} of shape {a.shape} and {b_name} of shape {b.shape} do not broadcast"
        ) from None


def check_out_matches(out, shape: tuple[int, ...], result_dtype: np.dtype) -> None:
    """``out`` (a host or device array) has the result's shape and dtype exactly."""
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    if out.dtype != result_dtype:
        raise TypeError(f"out has dtype {out.dtype}, expected {result_dtype}")


def check_out(out, shape: tuple[int, ...], result_dtype: np.dtype, memory=HOST):
    """Validate a caller's ``out`` (an array of ``memory``; shape and dtype must match
    the result exactly); None when absent."""
    if out is None:
        return None
    out = memory.as_out(out)
    check_out_matches(out, shape, result_dtype)
    memory.check_writable(out)
    return out


def check_logsumexp_flags(keepdims, return_sign) -> None:
    """``keepdims`` and ``return_sign`` are bools (both backends check them here)."""
    for name, flag in (("keepdims", keepdims), ("return_sign", return_sign)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"logsumexp: {name} must be a bool, got {type(flag).__name__}")


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def default_call_shape(x, axis, out, dtype, where, temperature, algorithm):
    """``(outer, n, inner)`` when a call may skip the general argument handling, else
    None.

    The fast path of default calls, where Python-level dispatch is a large part of the
    cost up to ~10^5 elements (the general path's ``prepare`` and ``run_rowwise`` took
    ~5 µs, 11 → 6 µs for a row of 4096 float32): a non-empty C-contiguous
    float32/float64 ``ndarray`` normalized along one axis (``inner`` > 1 for any but
    the last: the column kernels), ``out`` absent or a writable C-contiguous array of
    ``x``'s shape and dtype that is ``x`` itself or shares no memory with it, a
    ``temperature`` that is a positive finite ``float`` or ``int`` (``fast_inv_t``),
    ``dtype`` absent or naming ``x``'s own dtype (``x.dtype``, ``np.float64``: the
    result dtype the call gives anyway, as scikit-learn spells its in-place softmax),
    every other argument at its default. It runs the kernels that the general path
    would, on the same array types.
    """
    if (
        type(x) is not np.ndarray
        or type(axis) is not int
        or (dtype is not None and dtype is not x.dtype and dtype is not x.dtype.type)
        or where is not None
        or (type(temperature) is not float and type(temperature) is not int)
        or not 0.0 < temperature < math.inf  # (NaN too): the general path raises
        or type(algorithm) is not str
        or algorithm != "auto"
        or x.dtype not in _KERNEL_DTYPES  # native byte order only (">f8" is not float64)
        or not x.flags.c_contiguous
        or x.size == 0
        or not -x.ndim <= axis < x.ndim  # (and ndim 0): the general path raises AxisError
    ):
        return None
    if out is not None:  # else the general path copies or raises
        if type(out) is not np.ndarray or out.dtype != x.dtype or out.shape != x.shape:
            return None
        flags = out.flags
        if not (flags.c_contiguous and flags.writeable):
            return None
        if out is not x and may_overlap(out, x):
            return None
    shape = x.shape
    ax = axis % x.ndim
    return (math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1 :]))


def fast_inv_t(temperature: float, one):
    """1/t for a fast-path call: ``one`` (the plan's 1 in the compute dtype) at t = 1,
    else ``inverse_temperature``'s (the general path's value and error)."""
    return one if temperature == 1.0 else inverse_temperature(temperature, one.dtype)
