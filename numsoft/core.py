"""The core public functions: softmax, log_softmax, logsumexp and their backward passes.

Each function is a thin, documented wrapper: the router (``numsoft.route``) hands
other array types to their converters, and the front door (``numsoft.frontdoor``)
validates and normalizes the arguments once and runs the CPU row kernels (or, for
``target="cuda"`` and device arrays, ``frontdoor.gpu``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._array_kinds import is_device_array
from ._docstrings import filled
from .cpu.backward import backward_columns, backward_rows
from .frontdoor.arguments import Request
from .frontdoor.run import run_backward, run_logsumexp_cpu, run_softmax
from .route import follows_input_type

TARGETS = ("cpu", "cuda")

#: The (rows, columns) drivers of softmax_backward and log_softmax_backward.
BACKWARD_DRIVERS = (backward_rows, backward_columns)

__all__ = ["softmax", "log_softmax", "logsumexp", "softmax_backward", "log_softmax_backward"]

_COMMON = """
    x : array_like
        Input logits. Integer and bool input is computed in float64. A Dask array, a
        torch tensor or another array library's array gives a result of its own type
        (a Dask array: lazily; a torch float16 or bfloat16 tensor: computed in float32,
        returned in its own dtype); see the docs page on array types.
    axis : int, tuple of int or None, optional
        Axis or axes normalized together (default ``-1``); ``None`` means all axes.
    out : ndarray, optional
        Preallocated result of the same shape and result dtype, of ``x``'s array type;
        may be ``x`` itself.
    dtype : dtype, optional
        Result dtype (float16, float32 or float64). Default: float32 for float16/float32
        input, float64 otherwise. float16 is computed in float32.
    where : array_like of bool, optional
        Mask broadcastable to ``x``; ``False`` entries are excluded from the
        normalization.
    temperature : float, optional
        Positive, finite; the function is applied to ``x / temperature``.
    algorithm : str, optional
        Pass structure: ``"auto"`` (default), ``"three-pass-reload"``,
        ``"three-pass-store"``, ``"two-pass"`` or ``"online"`` (see the docs page on
        pass structures). All give the same result within tolerance; ``"auto"`` picks
        by the input's size against the cache, the thread count and the vector width
        (three-pass-store or two-pass).
    target : str, optional
        ``"cpu"`` (default) or ``"cuda"``: where to compute. Device arrays
        (``__cuda_array_interface__``) always run on the GPU and their results stay
        there; host arrays with ``"cuda"`` are copied in and out (see ``docs/gpu.md``)."""


def _cuda_backend(x, target: str):
    """``numsoft.frontdoor.gpu`` when this call runs on the GPU, else None (SPEC §7).

    A call runs there with ``target="cuda"`` or when ``x`` is a device array
    (``__cuda_array_interface__``, or a Numba/simulator device array). The backend is
    imported only then, so ``import numsoft`` never loads numba-cuda. Callers skip
    asking for a NumPy ``x`` on the default target (the common call, a tenth of a
    microsecond saved).
    """
    if not isinstance(target, str) or target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if target == "cpu" and not is_device_array(x):
        return None
    try:
        from .frontdoor import gpu  # lazily: numba-cuda is optional
    except ImportError as exc:
        raise RuntimeError(
            "target='cuda' needs the numba-cuda package (pip install 'numba-cuda[cu13]', "
            f"or numsoft's [cuda] extra from a checkout: pip install '.[cuda]'): {exc}"
        ) from None
    return gpu


def _doc(extra: str):
    return filled("common", _COMMON.strip("\n") + extra)


@follows_input_type
@_doc("")
def softmax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
    target: str = "cpu",
) -> np.ndarray:
    """Softmax: ``exp(x_i) / Σ_j exp(x_j)`` along ``axis``.

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Probabilities of the same shape as ``x``. Masked entries are 0; a row with no
        unmasked entry is all 0.

    Notes
    -----
    Rows with NaN are all NaN. Entries equal to ``+inf`` share the whole mass equally
    (the limit as they grow together). A row of only ``-inf`` is NaN, as in SciPy.
    No floating-point warning is emitted for any of these.

    See Also
    --------
    log_softmax, logsumexp, scipy.special.softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.softmax(np.array([1.0, 2.0, 3.0]))
    array([0.09003057, 0.24472847, 0.66524096])
    >>> numsoft.softmax(np.array([[0.0, 0.0], [1.0, 1.0]]), axis=0)
    array([[0.26894142, 0.26894142],
           [0.73105858, 0.73105858]])
    >>> numsoft.softmax(np.array([1.0, 2.0, 3.0]), where=np.array([True, False, True]))
    array([0.11920292, 0.        , 0.88079708])
    """
    if (target != "cpu" or type(x) is not np.ndarray) and (gpu := _cuda_backend(x, target)):
        return gpu.softmax(
            x, axis, out=out, dtype=dtype, where=where, temperature=temperature, algorithm=algorithm
        )
    return run_softmax(x, axis, out, dtype, where, temperature, algorithm, log_output=False)


@follows_input_type
@_doc("")
def log_softmax(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
    target: str = "cpu",
) -> np.ndarray:
    """Log-softmax: ``x_i - logsumexp(x)`` along ``axis``, computed without log(exp).

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray
        Log-probabilities of the same shape as ``x``; ``-inf`` at masked entries and
        for rows with no unmasked entry.

    See Also
    --------
    softmax, logsumexp, scipy.special.log_softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.log_softmax(np.array([1.0, 2.0, 3.0]))
    array([-2.40760596, -1.40760596, -0.40760596])
    >>> numsoft.log_softmax(np.array([1000.0, 0.0]))
    array([    0., -1000.])
    """
    if (target != "cpu" or type(x) is not np.ndarray) and (gpu := _cuda_backend(x, target)):
        return gpu.log_softmax(
            x, axis, out=out, dtype=dtype, where=where, temperature=temperature, algorithm=algorithm
        )
    return run_softmax(x, axis, out, dtype, where, temperature, algorithm, log_output=True)


@follows_input_type
@_doc(
    """
    b : array_like, optional
        Weights broadcastable to ``x``: computes ``log Σ b·exp(x)``. Entries with
        ``b == 0`` are excluded; negative weights need ``return_sign`` for a
        negative sum (else NaN), as in SciPy.
    keepdims : bool, optional
        Keep the reduced axes as length-1 axes.
    return_sign : bool, optional
        Also return the sign of the sum (1, -1, or 0 for an empty/zero sum)."""
)
def logsumexp(
    x: ArrayLike,
    axis: int | tuple[int, ...] | None = -1,
    *,
    b: ArrayLike | None = None,
    keepdims: bool = False,
    return_sign: bool = False,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
    algorithm: str = "auto",
    target: str = "cpu",
):
    """``log Σ exp(x)`` along ``axis``, without overflow; ``t·logsumexp(x/t)`` with temperature.

    SciPy-compatible (``scipy.special.logsumexp``) in ``b``, ``keepdims`` and
    ``return_sign``; with ``temperature=t`` it is the smooth maximum ``t·log Σ exp(x/t)``
    (``t → 0`` gives ``max``).

    Parameters
    ----------
    {common}

    Returns
    -------
    ndarray or scalar
        The reduction; a NumPy scalar when every axis is reduced and ``keepdims`` is
        False. An empty or fully masked row gives ``-inf``; NaN in a row gives NaN;
        ``+inf`` gives ``+inf``.
    sign : ndarray or scalar
        Only with ``return_sign=True``.

    See Also
    --------
    softmax, scipy.special.logsumexp

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> float(numsoft.logsumexp(np.array([1000.0, 1000.0])))
    1000.6931471805599
    >>> numsoft.logsumexp(np.array([[0.0, 0.0], [1.0, 2.0]]), axis=1)
    array([0.69314718, 2.31326169])
    >>> float(numsoft.logsumexp(np.array([1.0, 2.0, 3.0]), temperature=0.01))
    3.0
    """
    if (target != "cpu" or type(x) is not np.ndarray) and (gpu := _cuda_backend(x, target)):
        return gpu.logsumexp(
            x,
            axis,
            b=b,
            keepdims=keepdims,
            return_sign=return_sign,
            out=out,
            dtype=dtype,
            where=where,
            temperature=temperature,
            algorithm=algorithm,
        )
    req = Request(axis, out, dtype, where, temperature, algorithm)
    return run_logsumexp_cpu(x, req, b, keepdims, return_sign)


@follows_input_type
def softmax_backward(y: ArrayLike, dy: ArrayLike, axis: int | tuple[int, ...] | None = -1):
    """Gradient through softmax: ``dx = y·(dy − Σ y·dy)`` along ``axis``.

    Parameters
    ----------
    y : array_like
        The softmax output.
    dy : array_like
        Upstream gradient, broadcastable with ``y``.
    axis : int, tuple of int or None, optional
        The axis (or axes) softmax normalized over.

    Returns
    -------
    ndarray
        ``dx``, the gradient with respect to softmax's input.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> y = numsoft.softmax(np.array([0.0, 0.0]))
    >>> numsoft.softmax_backward(y, np.array([1.0, 0.0]))
    array([ 0.25, -0.25])
    """
    return run_backward(y, dy, axis, "y", BACKWARD_DRIVERS, LOG_OUTPUT=False)


@follows_input_type
def log_softmax_backward(y_log: ArrayLike, dy: ArrayLike, axis: int | tuple[int, ...] | None = -1):
    """Gradient through log_softmax: ``dx = dy − exp(y_log)·Σ dy`` along ``axis``.

    Parameters
    ----------
    y_log : array_like
        The log_softmax output.
    dy : array_like
        Upstream gradient, broadcastable with ``y_log``.
    axis : int, tuple of int or None, optional
        The axis (or axes) log_softmax normalized over.

    Returns
    -------
    ndarray
        ``dx``, the gradient with respect to log_softmax's input.

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> y_log = numsoft.log_softmax(np.array([0.0, 0.0]))
    >>> numsoft.log_softmax_backward(y_log, np.array([1.0, 0.0]))
    array([ 0.5, -0.5])
    """
    return run_backward(y_log, dy, axis, "y_log", BACKWARD_DRIVERS, LOG_OUTPUT=True)
