"""The front door: argument normalization shared by every public function.

Everything a caller can pass (``x``, ``axis``, ``dtype``, ``out``, ``where``,
``temperature``, ``algorithm``) is checked and normalized here, once, before any
kernel runs; errors name the offending argument. The kernels only ever see arrays of
the compute dtype viewed as ``(rows, n)`` or ``(outer, n, inner)``, with the
normalized axes flattened into ``n``.

Layout policy: for the normalized axes to become one axis of a view, they must be
adjacent with compatible strides. We try the array's own axis order, then the order of
decreasing strides (so Fortran-ordered input needs no copy); only when neither works
(e.g. ``axis=(0, 2)``) is the input copied.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._array_kinds import is_array_api_host, is_dask_array, is_device_array, library_of
from .cpu import rows as cpu_rows
from .cpu.auto import choose_algorithm
from .cpu.backward import backward_columns, backward_rows
from .cpu.expfast import EXTEXP_MAX_ABS_F32, EXTEXP_MAX_ABS_F64
from .cpu.memory import HOST, copy3, may_overlap, read_only, source3
from .vocabulary import ALGORITHM_NAMES, ALGORITHMS

# ---------------------------------------------------------------- scalar arguments


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
    ``algorithm``) in one order: the CPU (``prepare``), the GPU (``numsoft.cuda.api``)
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


# ---------------------------------------------------------------- layout


def _try_view3(a: np.ndarray, perm: tuple[int, ...], shape3: tuple[int, int, int]):
    try:
        return np.reshape(a.transpose(perm), shape3, copy=False)
    except ValueError:
        return None


@dataclass(frozen=True)
class Layout:
    """How an array of ``shape`` maps onto the kernels' ``(outer, n, inner)`` view.

    ``perm`` orders the axes so the normalized ones are adjacent; ``shape3`` is the
    3-D shape after that permutation. ``kept`` lists the non-normalized axes in
    ``perm`` order (the axes of a reduction's result).
    """

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    perm: tuple[int, ...]
    shape3: tuple[int, int, int]

    @property
    def n(self) -> int:
        return self.shape3[1]

    @functools.cached_property
    def natural(self) -> bool:
        """The axes are in their natural order (a C-ordered array's own layout)."""
        return self.perm == tuple(range(len(self.perm)))

    @functools.cached_property
    def kept(self) -> tuple[int, ...]:
        return tuple(ax for ax in self.perm if ax not in self.axes)

    @functools.cached_property
    def reduced(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(shape, axis order) that turn a reduction's ``(outer, inner)`` buffer into
        its result: reshape to the kept axes in ``perm`` order, then transpose."""
        return tuple(self.shape[ax] for ax in self.kept), tuple(np.argsort(self.kept))

    @functools.cached_property
    def reduced_natural(self) -> bool:
        """Whether a C-ordered reduction result is the ``(outer, inner)`` buffer itself
        (the kept axes keep their order)."""
        order = self.reduced[1]
        return order == tuple(range(len(order)))

    def view3(self, a: np.ndarray) -> np.ndarray | None:
        """The 3-D view of ``a`` (shaped like the input), or None if it needs a copy."""
        return _try_view3(a, self.perm, self.shape3)

    def empty3(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """A new C-ordered 3-D buffer and the array of ``shape`` it is a view of."""
        buf = np.empty(self.shape3, dtype=dtype)
        permuted = buf.reshape([self.shape[ax] for ax in self.perm])
        return buf, permuted.transpose(np.argsort(self.perm))

    def reduced_empty(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """A 2-D ``(outer, inner)`` buffer and the reduction result it is a view of."""
        buf = np.empty((self.shape3[0], self.shape3[2]), dtype=dtype)
        kept_shape, order = self.reduced  # kept axes in perm order → original order
        return buf, buf.reshape(kept_shape).transpose(order)


def _split_shape(shape, perm, axes) -> tuple[int, int, int] | None:
    """(outer, n, inner) if ``axes`` are adjacent in ``perm``, else None."""
    pos = [perm.index(ax) for ax in axes]
    if axes and max(pos) - min(pos) + 1 != len(axes):
        return None
    first = min(pos) if axes else len(perm)
    last = max(pos) + 1 if axes else len(perm)
    size = [shape[ax] for ax in perm]
    return (math.prod(size[:first]), math.prod(size[first:last]), math.prod(size[last:]))


@functools.lru_cache(maxsize=1024)
def _natural_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> Layout | None:
    """The layout of a C-ordered array of ``shape`` in its natural axis order, if the
    normalized axes are adjacent there (memoized: a small call's dispatch is a lookup)."""
    natural = tuple(range(len(shape)))
    shape3 = _split_shape(shape, natural, axes)
    return None if shape3 is None else Layout(shape, axes, natural, shape3)


def plan_layout(
    a: np.ndarray, axes: tuple[int, ...], *, index_order: bool = False
) -> tuple[Layout, np.ndarray | None]:
    """Choose the layout for ``a`` and return it with ``a``'s 3-D view (None: copy).

    ``index_order=True`` keeps the axes in their natural order, so every row lists its
    entries in C index order whatever the memory layout: for the variants whose result
    depends on that order (top-k's ties, Gumbel noise; ``vocabulary.INDEX_ORDER``).
    """
    if a.flags.c_contiguous:  # the common case, fast: the natural order is a view
        layout = _natural_layout(a.shape, axes)
        if layout is not None:
            return layout, a.reshape(layout.shape3)
    natural = tuple(range(a.ndim))
    by_stride = (
        natural
        if index_order
        else tuple(sorted(natural, key=lambda ax: (a.shape[ax] == 1, -abs(a.strides[ax]), ax)))
    )
    # The memory order is taken only for a C-contiguous view (one the kernels read as is,
    # e.g. a Fortran array, normalized axis in the middle). Other views are copied
    # (``kernel_ready``), and then in the natural order: a stride-0 (broadcast) axis must
    # not move the normalized axis to the middle.
    fallback = None
    for perm in dict.fromkeys((natural, by_stride)):
        shape3 = _split_shape(a.shape, perm, axes)
        if shape3 is None:
            continue
        view = _try_view3(a, perm, shape3)
        if view is not None and (perm == natural or view.flags.c_contiguous):
            return Layout(a.shape, axes, perm, shape3), view
        if fallback is None:
            fallback = Layout(a.shape, axes, perm, shape3), None
    if fallback is not None:
        return fallback
    perm = tuple(ax for ax in natural if ax not in axes) + axes
    return Layout(a.shape, axes, perm, _split_shape(a.shape, perm, axes)), None


# ---------------------------------------------------------------- where the data lives


def memory_of(x):
    """Where ``x``'s data lives, and so how a call on it runs: the one place that tells
    array types apart (``_array_kinds`` holds the tests).

    ``cpu.memory.HOST`` (NumPy arrays and array-likes) and ``cuda.memory.DEVICE``
    (device arrays) carry the memory methods ``prepare`` works with. A Dask array gets
    ``numsoft.dask.DASK`` and another library's host array (torch, ``array_api_strict``)
    an ``_array_api.ArrayApiHost``: those only route the call (``call``). Each backend
    is imported only when its first array arrives.
    """
    if type(x) is np.ndarray:
        return HOST
    if is_device_array(x):
        from .cuda.memory import DEVICE

        return DEVICE
    if is_dask_array(x):
        from .dask import DASK

        return DASK
    if is_array_api_host(x):
        from ._array_api import memory_for

        return memory_for(x)
    return HOST


def follows_input_type(func):
    """``func`` (a public function of the NumPy API, its array input first, passed by
    position or by name) for any array type: the result is of the input's type
    (``memory_of(x).call(public, x, args, kwargs)``, ``args`` holding ``x`` when it was
    passed by position).

    A NumPy array goes straight to ``func``; a device array runs on the GPU and comes
    back as the caller's array type; a Dask array builds a lazy graph
    (``numsoft.dask.route``); a torch tensor or another array-API library's host array
    is read without a copy and returned in its namespace (``_array_api``).
    """

    first = next(iter(inspect.signature(func).parameters))  # x, y, logits, q, ...

    @functools.wraps(func)
    def public(*args, **kwargs):
        x = args[0] if args else kwargs.get(first)
        if type(x) is np.ndarray:
            return func(*args, **kwargs)
        return memory_of(x).call(public, x, args, kwargs)

    return public


@functools.cache
def signature_of(func) -> inspect.Signature:
    """``func``'s signature, for calls that bind their arguments by name."""
    return inspect.signature(func)


# ---------------------------------------------------------------- out


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


def writable_target(memory, out, x, layout: Layout, compute, fresh: bool = False):
    """A 3-D view of ``out`` the kernel may write directly, or None.

    Writing directly needs the compute dtype, a view (no copy) and no partial overlap
    with ``x``: in-place (``out is x``) is fine because every kernel reads an element
    before it writes it, but a shifted overlap would read already-written values.
    ``fresh``: ``out`` was just allocated here (sharing nothing), so the overlap check
    is skipped.
    """
    if out is None or out.dtype != compute:
        return None
    view = memory.view3(out, layout)
    if view is None:
        return None
    if fresh or out is x or not memory.overlaps(out, x) or memory.same_view(out, x):
        return view
    return None


# ---------------------------------------------------------------- dispatch


class Request(NamedTuple):
    """The common arguments of a call (SPEC §1) as the caller gave them."""

    axis: object = -1
    out: object = None
    dtype: object = None
    where: object = None
    temperature: object = 1.0
    algorithm: str = "auto"


@dataclass
class Prepared:
    """A call's validated arguments and its kernel-ready source: what ``prepare``
    hands to a backend, for host and device arrays alike."""

    a: object  # the input as given (after asarray; a device array on the device)
    memory: object  # where ``a`` lives: ``cpu.memory.HOST`` or ``cuda.memory.DEVICE``
    out: object  # the caller's ``out`` (unchecked: its shape depends on the function)
    layout: Layout
    src3: object  # read-only compute-dtype 3-D source (a view of ``a`` or of scratch)
    scratch: object  # our own writable temp behind src3, if src3 is not ``a``
    compute: np.dtype
    result: np.dtype
    mask: np.ndarray | None  # on the host, broadcast to ``a``'s shape
    inv_t: np.floating
    t: float
    algorithm: str  # the caller's name
    code: int  # its CPU code (``"auto"`` resolved for this shape)
    bound: np.floating

    def empty_rows(self) -> np.ndarray | None:
        """``(outer, 1, inner)`` flags of the rows with no unmasked entry, or None."""
        if self.mask is None:
            return None
        layout = self.layout
        empty = ~np.any(self.mask, axis=layout.axes, keepdims=True)
        if not empty.any():
            return None
        outer, _, inner = layout.shape3
        return np.transpose(empty, layout.perm).reshape(outer, 1, inner)


def prepare(
    x, req: Request, *, extra_dtype=None, index_order=False, exp_output=False, reduction=False
) -> Prepared:
    """Validate the common arguments (SPEC §1) and build the kernels' source view.

    The one argument handling of every backend: the input's memory (``memory_of``)
    supplies only the views and copies. ``index_order``: rows in C index order (see
    ``plan_layout``); ``exp_output``: the call's output pass exponentiates, as
    softmax's does; ``reduction``: it has no output pass, as logsumexp
    (``auto.choose_algorithm``).
    """
    memory = HOST if type(x) is np.ndarray else memory_of(x)
    x, where = unmask(x, req.where)
    a = as_input_array(x, memory=memory)
    if where is not None:
        where = memory.host_mask(where)
    in_dtype = a.dtype if extra_dtype is None else np.result_type(a.dtype, extra_dtype)
    args = check_arguments(in_dtype, a.ndim, req.axis, req.dtype, req.temperature, req.algorithm)
    compute = args.compute
    mask = broadcast_where(where, a.shape)
    planned = memory.plan_view(a)
    layout, view = plan_layout(planned, args.axes, index_order=index_order)
    outer, n, inner = layout.shape3
    code = algorithm_code(
        req.algorithm,
        n,
        compute.itemsize,
        outer * inner,
        columns=inner > 1,
        exp_output=exp_output,
        reduction=reduction,
    )
    src3, scratch = memory.source(a, planned, layout, view, compute, mask)
    return Prepared(
        a,
        memory,
        req.out,
        layout,
        src3,
        scratch,
        compute,
        args.result,
        mask,
        args.inv_t,
        args.t,
        req.algorithm,
        code,
        args.bound,
    )


def run_rowwise(p: Prepared, apply, masked_row_fill: float):
    """Run a shape-preserving row operation and return its result (honouring ``out``).

    ``apply(src3, target3)`` runs the kernels on the 3-D source and target views
    (``target3`` may be ``src3`` itself). Every softmax-like function, core or variant,
    on either backend, goes through here, so ``out``, dtype rounding and masks behave
    the same for all.
    """
    memory, a, layout = p.memory, p.a, p.layout
    res = check_out(p.out, a.shape, p.result, memory)
    fresh = res is None
    if fresh:
        res = memory.new_result(layout, p.result)
    if a.size == 0:
        return res
    target = writable_target(memory, res, a, layout, p.compute, fresh)
    copy_back = target is None
    if copy_back:
        target = p.scratch if p.scratch is not None else memory.empty(layout.shape3, p.compute)
    apply(p.src3, target)
    if p.mask is not None and (empty := p.empty_rows()) is not None:
        # A row with no unmasked entry is all -inf in the source, which the kernels
        # turn into NaN (SciPy's rule); a fully masked row is defined by SPEC §1.
        memory.fill_rows(target, empty, masked_row_fill)
    if copy_back:
        memory.copy_back(res, target, layout)
    return memory.as_result(res, p.result) if fresh else res


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
    ``temperature`` that is a positive finite ``float`` (``fast_inv_t``), every other
    argument at its default. It runs the kernels that the general path would, on the
    same array types.
    """
    if (
        type(x) is not np.ndarray
        or type(axis) is not int
        or dtype is not None
        or where is not None
        or type(temperature) is not float
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


def run_softmax(x, axis, out, dtype, where, temperature, algorithm, log_output: bool):
    """softmax / log_softmax through the drivers; returns the result array."""
    shape3 = default_call_shape(x, axis, out, dtype, where, temperature, algorithm)
    plan = None
    if shape3 is not None:
        plan = cpu_rows.default_softmax_plan(x.dtype, log_output, shape3, fresh=out is None)
    if plan is not None:
        driver, tasks, one = plan
        view = shape3 if shape3[2] > 1 else shape3[:2]  # the rows drivers take 2-D views
        y = np.empty_like(x) if out is None else out
        driver(read_only(x.reshape(view)), y.reshape(view), tasks, fast_inv_t(temperature, one))
        return y
    req = Request(axis, out, dtype, where, temperature, algorithm)
    p = prepare(x, req, exp_output=not log_output)

    def apply(src3, target3):
        # writing into the caller's ``out`` (not a new array or scratch) may stream
        fresh = out is None or not np.may_share_memory(target3, out)
        cpu_rows.run_softmax(src3, target3, p.code, log_output, p.inv_t, fresh)

    return run_rowwise(p, apply, -np.inf if log_output else 0.0)


def smooth_max(p: Prepared, src3: np.ndarray, buf: np.ndarray) -> None:
    """buf[o, j] = t·log Σ exp(x/t) of each row of ``src3`` (``n > 0``, ``buf`` not
    empty): the CPU drivers, then the near-zero refinement."""
    cpu_rows.run_logsumexp(src3, buf, p.code, p.inv_t)
    _refine_near_zero(src3, buf, p.inv_t, p.t)


def run_logsumexp_cpu(x, req: Request, b, keepdims, return_sign):
    """``numsoft.logsumexp`` on the CPU: a default call (as ``default_call_shape``, no
    ``b``, ``out`` or ``return_sign``) runs its cached plan; any other goes through
    ``run_logsumexp``."""
    if b is None and return_sign is False and req.out is None and type(keepdims) is bool:
        shape3 = default_call_shape(x, *req)  # its parameters are Request's fields
        plan = None if shape3 is None else cpu_rows.default_logsumexp_plan(x.dtype, shape3)
        if plan is not None:
            return _default_logsumexp(x, req, keepdims, shape3, plan)
    return run_logsumexp(x, req, b, keepdims, return_sign)


def _default_logsumexp(x, req: Request, keepdims, shape3, plan):
    """A default logsumexp call through ``plan`` (``cpu.rows.default_logsumexp_plan``):
    the same drivers and refinement as the general path, without its argument
    handling (18 → 11 µs on (200, 10) float64)."""
    driver, tasks, one = plan
    inv_t = fast_inv_t(req.temperature, one)
    outer, n, inner = shape3
    x3 = read_only(x.reshape(shape3))
    lse = np.empty((outer, inner), x.dtype)
    if inner == 1:  # the rows drivers take the rows views, as run_softmax's fast path
        driver(x3[:, :, 0], lse[:, 0], tasks, inv_t)
    else:
        driver(x3, lse, tasks, inv_t)
    _refine_near_zero(x3, lse, inv_t, req.temperature)
    ax = req.axis % x.ndim
    res = lse.reshape(x.shape[:ax] + ((1,) if keepdims else ()) + x.shape[ax + 1 :])
    return res if res.ndim else res[()]


def _refine_near_zero(src3: np.ndarray, lse: np.ndarray, inv_t, t: float) -> None:
    """Recompute the rows whose logsumexp is below 1 in magnitude to full relative
    accuracy (SciPy gh-18295): ``m + log1p(Σ_{other} exp(z - m))``, one maximum taken
    out of the sum.

    ``m + log(Σ exp(z - m))`` is accurate to an ulp of ``max(|m|, 1)``: relative
    accuracy is lost only when the result is near 0 (``logsumexp([0, -40])`` is
    4.2e-18, not 0), which needs ``|result| < 1``. Those rows (typically few: a result
    near 0 means the row is already nearly normalized) take NumPy's passes.
    """
    near = np.abs(lse) < 1
    if not near.any():
        return
    o, j = np.nonzero(near)
    z = src3[o, :, j].astype(np.float64) * np.float64(inv_t)  # (rows, n)
    top = np.argmax(z, axis=1)
    m = z[np.arange(z.shape[0]), top]
    z[np.arange(z.shape[0]), top] = -np.inf  # the one maximum contributes exactly 1
    rest = np.exp(z - m[:, None]).sum(axis=1)
    lse[o, j] = t * (m + np.log1p(rest))


def _weighted_smooth_max(p: Prepared, b: np.ndarray):
    """(t·log |Σ b·exp(x/t)|, sign of the sum) per row, as SciPy computes it.

    The largest ``z = x/t`` among the weighted entries (``b != 0``, unmasked) is
    factored out and the signed terms ``b·exp(z - max)`` are summed in float64, so
    weights that cancel give exactly ``-inf`` with sign 0 and a weight's log is never
    added to a large ``x`` (where float rounding absorbed it). NaN in ``b`` gives NaN.
    NumPy's passes, not the kernels: SciPy's speed, for the rarer weighted call.
    """
    if p.mask is not None:
        b = np.where(p.mask, b, 0)  # masked entries weigh nothing
    b3 = copy3(b, p.layout, p.compute)[0]
    z3 = p.src3 if p.t == 1.0 else p.src3 * p.inv_t
    active = b3 != 0
    top = np.max(z3, axis=1, where=active, initial=-np.inf, keepdims=True)
    top[~np.isfinite(top)] = 0  # ±inf or no entry: exp(z) itself, as SciPy
    terms = np.zeros(z3.shape, dtype=p.compute)
    np.exp(z3 - top, out=terms, where=active)
    total = np.sum(b3 * terms, axis=1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lse = p.t * (np.log(np.abs(total)) + top[:, 0, :])
    return lse.astype(p.compute), np.sign(total).astype(p.compute)


def check_logsumexp_flags(keepdims, return_sign) -> None:
    """``keepdims`` and ``return_sign`` are bools (both backends check them here)."""
    for name, flag in (("keepdims", keepdims), ("return_sign", return_sign)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"logsumexp: {name} must be a bool, got {type(flag).__name__}")


def run_logsumexp(x, req: Request, b, keepdims, return_sign, row_smooth_max=smooth_max):
    """logsumexp of ``x`` under ``req`` (SciPy-compatible ``b``/``return_sign``).

    ``row_smooth_max(p, src3, buf)`` writes the per-row t·log Σ exp(x/t) into the
    ``(outer, inner)`` array ``buf`` (the CPU drivers by default; the CUDA backend
    passes its own); everything around it is shared. ``b`` and ``return_sign`` are
    computed on the host (NumPy's passes): a device array reaches here without them.
    """
    check_logsumexp_flags(keepdims, return_sign)
    bb = None
    if b is not None:
        bb = as_input_array(b, "b")
        x, where = unmask(x, req.where)
        x = as_input_array(x)
        shape = broadcast_pair("x", x, "b", bb)  # together, as in SciPy and JAX
        x, bb = np.broadcast_to(x, shape), np.broadcast_to(bb, shape)
        req = req._replace(where=where)
    p = prepare(x, req, extra_dtype=None if bb is None else bb.dtype, reduction=True)
    memory, layout, axes = p.memory, p.layout, p.layout.axes
    shape = p.a.shape
    res = check_out(
        p.out,
        tuple(1 if ax in axes else shape[ax] for ax in range(len(shape)))
        if keepdims
        else tuple(shape[ax] for ax in sorted(layout.kept)),
        p.result,
        memory,
    )
    outer, n, inner = layout.shape3
    # The kernels write ``out`` itself when its memory is the (outer, inner) buffer:
    # out= then costs no more than a fresh result.
    direct = None
    if res is not None and bb is None and p.result == p.compute and not memory.overlaps(res, p.a):
        direct = memory.reduced_buffer(res, layout)
    sign = None
    if bb is not None:
        lse, sign = _weighted_smooth_max(p, bb)
    else:
        lse = direct if direct is not None else memory.empty((outer, inner), p.compute)
        if lse.size and n == 0:
            memory.assign(lse, np.full(lse.shape, -np.inf, p.compute))
        elif lse.size:
            row_smooth_max(p, p.src3, lse)
    if sign is None and return_sign:
        sign = np.where(lse > -np.inf, 1.0, 0.0).astype(p.compute)
        sign[np.isnan(lse)] = np.nan
    elif sign is not None and not return_sign:
        lse[sign < 0] = np.nan  # a negative sum has no real logarithm (as SciPy)
    if direct is None:
        value = memory.reduced_view(lse, layout, keepdims)
        if res is None:
            res = memory.as_result(value, p.result)
        else:
            memory.assign(res, value)
    if return_sign:
        return res, HOST.as_result(HOST.reduced_view(sign, layout, keepdims), p.result)
    return res


#: The (rows, columns) drivers of softmax_backward and log_softmax_backward.
BACKWARD_DRIVERS = (backward_rows, backward_columns)


def run_backward(a, dy, axis, a_name: str, drivers, **constants) -> np.ndarray:
    """dx of a backward pass from (``a``, dy), ``a`` being what the pass reads (y, y_log
    or x; ``a_name`` in errors): the two broadcast together, laid out and converted as
    the forward functions' inputs, then the ``(rows, columns)`` ``drivers``
    specialized to ``constants`` (softmax's and log_softmax's, or a variant's)."""
    aa = as_input_array(a, a_name)
    dya = as_input_array(dy, "dy")
    shape = broadcast_pair(a_name, aa, "dy", dya)
    compute, result = resolve_dtypes(np.result_type(aa.dtype, dya.dtype), None)
    aa, dya = np.broadcast_to(aa, shape), np.broadcast_to(dya, shape)
    layout, view = plan_layout(aa, normalize_axes(axis, len(shape)))
    a3 = source3(aa, layout, view, compute)
    dy3 = source3(dya, layout, layout.view3(dya), compute)
    dx3, dx = layout.empty3(compute)
    if dx3.size == 0:
        return dx.astype(result, copy=False)
    driver, by_rows = cpu_rows.driver_for(*drivers, dx3.shape, **constants)
    if by_rows:
        driver(a3[:, :, 0], dy3[:, :, 0], dx3[:, :, 0])
    else:
        driver(a3, dy3, dx3)
    return dx.astype(result, copy=False)
