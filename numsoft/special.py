"""``scipy.special``'s softmax, log_softmax and logsumexp, on numsoft's kernels.

``from numsoft import special`` replaces ``from scipy import special`` for these three
names: the same signatures (positional order included), defaults (``axis=None``: over
every axis) and result types (a 0-d result is a NumPy scalar; float16 input gives
float16, integers float64). Real input runs on numsoft's kernels; complex input (which
``scipy.special.logsumexp`` accepts) takes NumPy's passes, as SciPy does.

SciPy's array-API switch is followed too: with the environment variable
``SCIPY_ARRAY_API`` set (to any non-empty value, as SciPy reads it), a torch tensor or
an ``array_api_strict`` array comes back as an array of its own library, with SciPy's
result dtypes there (integers give the library's default float), and a Dask array as a
lazy Dask array (``numsoft.dask``); unset, every input is read with ``np.asarray`` and
a NumPy result comes back, as from SciPy.

Where the main API differs (``numsoft.softmax`` defaults to ``axis=-1``, as PyTorch,
and takes ``b``, ``keepdims`` and ``return_sign`` by keyword only), this module follows
SciPy. ``np.longdouble`` input is computed in float64 and returned as longdouble.
"""

from __future__ import annotations

import functools
import inspect
import os

import numpy as np
from numpy.typing import ArrayLike

from . import core
from ._array_kinds import is_array_api_host, is_dask_array, is_device_array
from .route import signature_of
from .route.array_api import memory_for

__all__ = ["softmax", "log_softmax", "logsumexp"]


def array_api_mode() -> bool:
    """SciPy's array-API switch: ``SCIPY_ARRAY_API`` set to a non-empty value."""
    return bool(os.environ.get("SCIPY_ARRAY_API"))


def _follows_scipy(func):
    """``func`` with SciPy's treatment of other libraries' arrays (module docstring)."""

    first = next(iter(inspect.signature(func).parameters))  # x, or logsumexp's a

    @functools.wraps(func)
    def public(*args, **kwargs):
        x = args[0] if args else kwargs.get(first)
        if type(x) is np.ndarray or not array_api_mode():
            return func(*args, **kwargs)
        if is_device_array(x):
            raise TypeError(
                "numsoft.special computes on the host: call numsoft.softmax, "
                "numsoft.log_softmax or numsoft.logsumexp on device arrays"
            )
        if not is_array_api_host(x):  # Dask arrays, lists, scalars
            return func(*args, **kwargs)
        memory = memory_for(x)
        weights = signature_of(func).bind(*args, **kwargs).arguments.get("b")
        result = memory.call(public, x, args, kwargs)
        return _in_scipy_dtype(result, memory.xp, x, weights)

    return public


def _in_scipy_dtype(result, xp, x, b=None):
    """``result`` (arrays of ``xp``) in SciPy's array-API dtype for inputs ``x`` and ``b``
    (``scipy._lib._array_api.xp_result_type`` with ``force_floating``): their promoted
    type, at least floating; a real part of a complex result (``return_sign``'s
    magnitude) in the matching real dtype."""
    arrays = [a if hasattr(a, "dtype") else xp.asarray(a) for a in (x, b) if a is not None]
    try:  # the library's promotion, a Python float forcing a floating result
        dtype = xp.result_type(*arrays, 1.0)
    except TypeError:  # promotion of integers with floats undefined: the floats and
        floating = ("real floating", "complex floating")  # the default float
        default = xp.__array_namespace_info__().default_dtypes()["real floating"]
        dtype = xp.result_type(*[a for a in arrays if xp.isdtype(a.dtype, floating)], default)
    complex_input = xp.isdtype(dtype, "complex floating")
    real = xp.real(xp.empty(0, dtype=dtype)).dtype if complex_input else dtype

    def cast(r):
        want = dtype if xp.isdtype(r.dtype, "complex floating") else real
        return r if r.dtype == want else xp.astype(r, want)

    return tuple(cast(r) for r in result) if isinstance(result, tuple) else cast(result)


def _as_array(x):
    """``x`` as this module computes on it: a Dask array stays lazy in array-API mode
    (NumPy's functions dispatch to Dask's), anything else is read with ``np.asarray``."""
    return x if array_api_mode() and is_dask_array(x) else np.asarray(x)


def _result_dtype(*arrays: np.ndarray) -> np.dtype:
    """SciPy's result dtype: the inputs' float type (integers and bool: float64)."""
    dt = np.result_type(*arrays)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _kernel_dtype(result: np.dtype) -> np.dtype:
    """The dtype numsoft's kernels produce for ``result`` (longdouble: float64)."""
    return np.dtype(np.float64) if result.itemsize > 8 else result


def _as_result(value, result: np.dtype):
    """``value`` in ``result``'s dtype, a NumPy scalar when 0-d."""
    if is_dask_array(value):
        return value.astype(result, copy=False)
    value = np.asarray(value).astype(result, copy=False)
    return value[()] if value.ndim == 0 else value


def _at_least_1d(x: np.ndarray, axis) -> np.ndarray:
    """SciPy treats a 0-d input as one element along axis 0 (``axis=0``, ``axis=-1``)."""
    return x.reshape(1) if x.ndim == 0 and axis is not None else x


def _on_kernels(function, a: np.ndarray, axis, result: np.dtype):
    """A shape-preserving core ``function`` of real ``a`` with SciPy's conventions."""
    y = function(_at_least_1d(a, axis), axis=axis, dtype=_kernel_dtype(result))
    return _as_result(np.reshape(y, a.shape), result)


@_follows_scipy
def softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = None):
    """``exp(x) / Σ exp(x)`` along ``axis`` (default: every axis), as ``scipy.special.softmax``.

    Parameters
    ----------
    x : array_like
        Input array (real or complex).
    axis : int, tuple of int or None, optional
        Axis or axes normalized together; None (default) means all of them.

    Returns
    -------
    ndarray or scalar
        Same shape as ``x``; sums to 1 along ``axis``.

    Examples
    --------
    >>> import numpy as np
    >>> from numsoft import special
    >>> special.softmax(np.array([[1.0, 2.0], [3.0, 4.0]])).round(4)
    array([[0.0321, 0.0871],
           [0.2369, 0.6439]])
    >>> special.softmax(np.array([1.0, 2.0]), 0).round(4)
    array([0.2689, 0.7311])
    """
    a = _as_array(x)
    result = _result_dtype(a)
    if result.kind == "c":
        e = np.exp(a - np.max(a.real, axis=axis, keepdims=True))
        return _as_result(e / np.sum(e, axis=axis, keepdims=True), result)
    return _on_kernels(core.softmax, a, axis, result)


@_follows_scipy
def log_softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = None):
    """``x - logsumexp(x)`` along ``axis`` (default: every axis), as ``scipy.special.log_softmax``.

    Parameters
    ----------
    x : array_like
        Input array (real or complex).
    axis : int, tuple of int or None, optional
        Axis or axes normalized together; None (default) means all of them.

    Returns
    -------
    ndarray or scalar
        Same shape as ``x``; ``exp`` of it sums to 1 along ``axis``.

    Examples
    --------
    >>> import numpy as np
    >>> from numsoft import special
    >>> special.log_softmax(np.array([0.0, 1000.0]))
    array([-1000.,     0.])
    """
    a = _as_array(x)
    result = _result_dtype(a)
    if result.kind == "c":
        return _as_result(a - logsumexp(a, axis=axis, keepdims=True), result)
    return _on_kernels(core.log_softmax, a, axis, result)


@_follows_scipy
def logsumexp(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    b: ArrayLike | None = None,
    keepdims: bool = False,
    return_sign: bool = False,
):
    """``log Σ b·exp(a)`` along ``axis`` (default: every axis), as ``scipy.special.logsumexp``.

    Parameters
    ----------
    a : array_like
        Input array (real or complex).
    axis : int, tuple of int or None, optional
        Axis or axes summed over; None (default) means all of them.
    b : array_like, optional
        Weights broadcast together with ``a``; may be negative (then see
        ``return_sign``) or complex. Entries with ``b == 0`` are excluded.
    keepdims : bool, optional
        Keep the reduced axes with length 1.
    return_sign : bool, optional
        Also return the sign of the sum (a complex phase for complex input); without
        it a negative sum gives NaN.

    Returns
    -------
    res : ndarray or scalar
        ``log |Σ b·exp(a)|`` (complex input: the complex log, imaginary part in
        (-π, π]).
    sgn : ndarray or scalar
        Only with ``return_sign=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from numsoft import special
    >>> float(special.logsumexp(np.arange(10)))
    9.45862974442671
    >>> special.logsumexp([1, 2], None, [1, -1], False, True)
    (np.float64(1.5413248546129181), np.float64(-1.0))
    """
    arrays = [_as_array(a)] + ([] if b is None else [_as_array(b)])
    result = _result_dtype(*arrays)
    if result.kind == "c":
        return _complex_logsumexp(
            *arrays, axis=axis, keepdims=keepdims, return_sign=return_sign, result=result
        )
    x = _at_least_1d(arrays[0], axis)
    w = None if b is None else _at_least_1d(arrays[1], axis)
    out = core.logsumexp(
        x, axis=axis, b=w, keepdims=keepdims, return_sign=return_sign, dtype=_kernel_dtype(result)
    )
    if return_sign:
        return _as_result(out[0], result), _as_result(out[1], result)
    return _as_result(out, result)


def _complex_logsumexp(a, b=None, *, axis, keepdims, return_sign, result):
    """Complex ``log Σ b·exp(a)``: the largest real part factored out, NumPy's passes."""
    if b is not None:
        a, b = np.broadcast_arrays(a, b)
        a = np.where(b == 0, -np.inf, a)  # a zero weight removes its term, inf or NaN
    a = a.astype(result, copy=False)
    if a.ndim == 0:
        a = a.reshape(1)
        b = None if b is None else b.reshape(1)
    if a.size == 0:
        shape = np.sum(a.real, axis=axis, keepdims=keepdims).shape
        out = np.full(shape, -np.inf, dtype=result)
        return (
            (_as_result(out, result), _as_result(np.zeros(shape, result), result))
            if return_sign
            else _as_result(out, result)
        )
    top = np.max(a.real, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)  # infinite terms: the direct sum decides
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = np.exp(a - top)
        if b is not None:
            terms = terms * b
        total = np.sum(terms, axis=axis, keepdims=True)
        magnitude = np.abs(total)
        out = np.log(magnitude) + top
    if not keepdims:
        axes = tuple(range(a.ndim)) if axis is None else axis
        out, total, magnitude = (np.squeeze(v, axis=axes) for v in (out, total, magnitude))
    with np.errstate(invalid="ignore"):
        phase = np.where(magnitude > 0, total / np.where(magnitude > 0, magnitude, 1), 0)
    if return_sign:
        return _as_result(out, result.type(0).real.dtype), _as_result(phase, result)
    angle = _wrap_angle(np.angle(total))
    return _as_result(out + 1j * angle, result)


def _wrap_angle(theta: np.ndarray) -> np.ndarray:
    """Angles in (-π, π] (``np.angle`` gives [-π, π])."""
    return np.where(theta == -np.pi, np.pi, theta)
