"""``numba.extending.overload`` entry points: the public functions inside ``@njit`` code.

Inside a user's jitted function, ``numsoft.softmax(x, axis=0)`` resolves here (SPEC §6).
Supported there: C-contiguous float32/float64 arrays of 1–3 dimensions, an integer
``axis``, ``out``, and the scalar keyword arguments. Anything else raises a plain
``TypeError`` (``misuse``) whose message names the argument and what to do; an axis
out of range raises ``AxisError`` while the caller is typed when it is a constant, at
run time otherwise, naming the axis and the number of dimensions as the Python API
does. The implementations call the same drivers as the Python API, so results agree
exactly.
"""

from __future__ import annotations

import math

import numpy as np
from numba import literally, types
from numba.extending import overload, register_jitable

from . import core
from ._linked import linked
from .cpu._jit import kernel, read_only_array
from .cpu.backward import backward_columns, backward_rows
from .cpu.by_address import (
    logsumexp_blocks_at,
    logsumexp_row_at,
    logsumexp_rows_at,
    softmax_blocks_at,
    softmax_row_at,
    softmax_rows_at,
)
from .cpu.paths import specialize
from .cpu.rows import path_constants
from .vocabulary import ALGORITHM_NAMES, ALGORITHMS, THREE_PASS_STORE

# Inside @njit, numsoft runs in the caller's thread (one span of all rows or column
# blocks, never a parallel region): it may sit in the user's own prange loop, and the
# user's function may be cache=True (see numsoft.cpu._jit.parallel_kernel). The kernels
# are chosen while the user's function is typed, from the argument types (see
# ``_algorithm_code`` and ``_geometry``), so it compiles only the paths it can run.


def _is_absent(arg) -> bool:
    return arg is None or isinstance(arg, (types.NoneType, types.Omitted))


def _default_value(arg):
    """The Python value of an argument left at its default (Numba passes it as is)."""
    return arg.value if isinstance(arg, types.Omitted) else arg


def misuse(func: str, message: str) -> TypeError:
    """The error for an argument numsoft cannot take inside ``@njit``.

    A plain ``TypeError``, which Numba passes on as it is: a ``TypingError`` raised
    here reached the user inside some 20 lines of Numba's overload report, numsoft's
    message in the middle.
    """
    return TypeError(f"numsoft.{func} inside @njit: {message}")


def _array_problem(arr) -> str | None:
    """What keeps ``arr`` (a Numba type) from being a kernel's array, or None."""
    if not isinstance(arr, types.Array):
        return "not an array"
    if arr.dtype not in (types.float32, types.float64):
        return f"dtype {arr.dtype}: convert with x.astype(np.float64)"
    if not 1 <= arr.ndim <= 3:
        return f"{arr.ndim} dimensions: reshape it"
    if arr.layout != "C":
        return (
            "not C-contiguous (a slice such as a[:, j] or a transpose): pass "
            "np.ascontiguousarray(x), or call numsoft outside @njit, where any "
            "layout works"
        )
    return None


def _check_array(func: str, name: str, arr) -> None:
    problem = _array_problem(arr)
    if problem is not None:
        raise misuse(
            func,
            f"{name} must be a C-contiguous float32 or float64 array of 1 "
            f"to 3 dimensions; got {arr}, {problem}",
        )


def _check_scalar_args(func: str, axis, temperature, algorithm) -> None:
    if not isinstance(_default_value(axis), (int, types.Integer)):
        raise misuse(func, f"axis must be an int, got {axis}")
    if not isinstance(_default_value(temperature), (float, int, types.Number)):
        raise misuse(func, f"temperature must be a number, got {temperature}")
    if not isinstance(_default_value(algorithm), (str, types.UnicodeType, types.StringLiteral)):
        raise misuse(func, f"algorithm must be a string, got {algorithm}")


def _check_target(func: str, target) -> None:
    value = _default_value(target)
    if isinstance(target, types.StringLiteral):
        value = target.literal_value
    if isinstance(value, str) and value != "cpu":
        raise misuse(func, f"target must be 'cpu' there, got {value!r}")
    if not isinstance(value, (str, types.UnicodeType)):
        raise misuse(func, f"target must be a string, got {target}")


@register_jitable
def _runtime_target(target):
    # A non-literal string is only known at run time.
    if target != "cpu":
        raise ValueError("target must be 'cpu' inside @njit")


#: What to do instead of an argument that ``@njit`` code cannot take.
_INSTEAD = {
    "dtype": "convert x before the call (x.astype(np.float64))",
    "b": "add np.log(b) to x before the call, or call numsoft.logsumexp outside @njit",
}


def _reject(func: str, **args) -> None:
    for name, value in args.items():
        if not _is_absent(value):
            raise misuse(func, f"{name}= is not supported there: {_INSTEAD[name]}")


def _check_where(func: str, x, where) -> None:
    if _is_absent(where):
        return
    if not (
        isinstance(where, types.Array) and where.dtype == types.boolean and where.ndim == x.ndim
    ):
        raise misuse(func, f"where must be a boolean array with the shape of x, got {where}")


def mask_input(x, where):
    """``x`` with the entries where ``where`` is False set to -inf (a new C-contiguous
    array), as the Python API reads a masked input; ``x`` itself without a ``where``
    (jit-only)."""
    raise NotImplementedError


@overload(mask_input)
def _mask_input_overload(x, where):
    if _is_absent(where):
        return lambda x, where: x

    def impl(x, where):
        if where.shape != x.shape:
            raise ValueError("where must have the shape of x")
        xm = np.empty(x.shape, dtype=x.dtype)
        src, keep, dst = (
            x.reshape(x.size),
            np.ascontiguousarray(where).reshape(x.size),
            xm.reshape(x.size),
        )
        for i in range(x.size):
            dst[i] = src[i] if keep[i] else -np.inf
        return xm

    return impl


def fill_masked_rows(y, where, axis, fill):
    """Set the rows along ``axis`` of ``y`` with no True entry in ``where`` to ``fill``
    (SPEC §1's value of a fully masked row; the kernels give NaN for a row of -inf);
    nothing without a ``where`` (jit-only)."""
    raise NotImplementedError


@overload(fill_masked_rows)
def _fill_masked_rows_overload(y, where, axis, fill):
    if _is_absent(where):
        return lambda y, where, axis, fill: None

    def impl(y, where, axis, fill):
        _, outer, n, inner = _split3(y.shape, axis)
        keep = np.ascontiguousarray(where).reshape((outer, n, inner))
        y3 = y.reshape((outer, n, inner))
        for o in range(outer):
            for i in range(inner):
                if not keep[o, :, i].any():
                    y3[o, :, i] = fill

    return impl


def _check_out(func: str, x, out) -> None:
    if _is_absent(out):
        return
    if not (isinstance(out, types.Array) and out.dtype == x.dtype and out.layout == "C"):
        raise misuse(func, f"out must be a C-contiguous array of dtype {x.dtype}, got {out}")


def _literal(arg):
    """The compile-time value of an argument (a literal or a default), else None."""
    if isinstance(arg, types.Literal):
        return arg.literal_value
    value = _default_value(arg)
    return None if isinstance(value, types.Type) else value


def _algorithm_code(algorithm) -> int | str | None:
    """The pass structure's code, known while typing; None asks for ``literally``; the
    error message for a name that is not an algorithm.

    ``"auto"`` is three-pass-store, the built-in rule's pick for rows in cache
    (``numsoft.cpu.auto``): inside ``@njit`` numsoft runs on one thread, and a path per
    shape class would compile every branch.
    """
    name = _literal(algorithm)
    if name is None:
        return None
    if name not in ALGORITHMS:
        # Raised when the call runs, as for the Python API (a typing error here would
        # make Numba retype without the literal and ask for it again).
        return f"algorithm must be one of {ALGORITHMS}, got {name!r}"
    return THREE_PASS_STORE if name == "auto" else ALGORITHM_NAMES.index(name)


#: Which drivers a call may need (``_geometry``).
ROWS, COLUMNS, EITHER = range(3)


def _geometry(x, axis) -> int:
    """``ROWS`` for the last axis, ``COLUMNS`` for another, ``EITHER`` when ``axis`` is
    known only at run time (both drivers are compiled; the shape picks one). A constant
    axis out of range raises now, before anything compiles."""
    ax = _literal(axis)
    if ax is None:
        return EITHER
    if not -x.ndim <= ax < x.ndim:
        raise np.exceptions.AxisError(ax, x.ndim)  # NumPy's message, as the Python API
    return ROWS if ax % x.ndim == x.ndim - 1 else COLUMNS


@kernel
def _raise_axis_error(axis, ndim):
    # NumPy's AxisError formats "axis 3 is out of bounds for array of dimension 2" from
    # the two integers, which Numba passes as they are: building that string in jitted
    # code (str() of ints, concatenation) added 1.3 s to every caller's compile.
    raise np.exceptions.AxisError(axis, ndim)


@kernel  # cached: a caller links it instead of compiling it (so are the two below)
def _split3(shape, axis):
    """(axis, outer, n, inner) for a normalized single axis of ``shape``."""
    ndim = len(shape)
    ax = axis + ndim if axis < 0 else axis
    if ax < 0 or ax >= ndim:
        _raise_axis_error(axis, ndim)
    outer = 1
    inner = 1
    for i in range(ndim):
        if i < ax:
            outer *= shape[i]
        elif i > ax:
            inner *= shape[i]
    return ax, outer, shape[ax], inner


@kernel
def _inv_temperature(x, temperature):
    if not (temperature > 0.0 and np.isfinite(temperature)):
        raise ValueError("temperature must be positive and finite")
    return x.dtype.type(1.0 / temperature)


def _known_inverse_temperature(temperature) -> float | None:
    """1/t for a temperature known while typing and valid (the default, an integer
    literal): the implementation then holds it as a constant, with nothing to check or
    divide when the call runs; None otherwise (``_inv_temperature`` runs)."""
    t = _literal(temperature)
    if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < math.inf:
        return 1.0 / t
    return None


def _softmax_overload(func: str, log_output: bool):
    def typer(
        x,
        axis=-1,
        out=None,
        dtype=None,
        where=None,
        temperature=1.0,
        algorithm="auto",
        target="cpu",
    ):
        _check_array(func, "x", x)
        _check_scalar_args(func, axis, temperature, algorithm)
        _check_target(func, target)
        _reject(func, dtype=dtype)
        _check_where(func, x, where)
        _check_out(func, x, out)
        code = _algorithm_code(algorithm)
        if code is None:  # the pass structure picks the kernel: type it as a constant

            def retype(
                x,
                axis=-1,
                out=None,
                dtype=None,
                where=None,
                temperature=1.0,
                algorithm="auto",
                target="cpu",
            ):
                return literally(algorithm)

            return retype
        if isinstance(code, str):

            def bad_algorithm(
                x,
                axis=-1,
                out=None,
                dtype=None,
                where=None,
                temperature=1.0,
                algorithm="auto",
                target="cpu",
            ):
                raise ValueError(code)

            return bad_algorithm
        has_out = not _is_absent(out)
        geometry = _geometry(x, axis)
        one_row = x.ndim == 1
        target_unknown = _literal(target) is None
        known_inv_t = _known_inverse_temperature(temperature)
        masked = not _is_absent(where)
        # numsoft's compiled kernels, called by address (numsoft._linked): the serial
        # span of the drivers, or for a 1-D x the row kernel alone, for rows of any
        # length (no separate short-row kernel).
        constants = path_constants(code, log_output)
        fill = -np.inf if log_output else 0.0
        row = linked(softmax_row_at, **constants)
        rows = linked(softmax_rows_at, **constants)
        blocks = linked(softmax_blocks_at, **constants)

        def impl(
            x,
            axis=-1,
            out=None,
            dtype=None,
            where=None,
            temperature=1.0,
            algorithm="auto",
            target="cpu",
        ):
            if target_unknown:  # pruned when typing has checked it (no string code)
                _runtime_target(target)
            # Tests of constants (closure variables) first: Numba prunes the branches a
            # call cannot take before it types them, so a plain call compiles no more.
            if one_row and geometry != EITHER:
                outer, n, inner = 1, x.shape[0], 1  # the axis was checked while typing
            else:
                _, outer, n, inner = _split3(x.shape, axis)
            y = out if has_out else np.empty_like(x)
            if has_out and y.shape != x.shape:
                raise ValueError("out has the wrong shape")
            if known_inv_t is not None:
                inv_t = x.dtype.type(known_inv_t)
            else:
                inv_t = _inv_temperature(x, temperature)
            if x.size > 0:
                xm = mask_input(x, where) if masked else x
                if one_row:
                    row(xm, y, n, inv_t)
                elif geometry == ROWS or (geometry == EITHER and inner == 1):
                    rows(xm, y, outer, n * inner, inv_t)
                else:
                    blocks(xm, y, outer, n, inner, inv_t)
                if masked:
                    fill_masked_rows(y, where, axis, fill)
            return y

        return impl

    return typer


# prefer_literal: type a literal axis (or algorithm) as its value first, so that the
# typing function can select the one driver it needs (``_geometry``).
overload(core.softmax, prefer_literal=True)(_softmax_overload("softmax", log_output=False))
overload(core.log_softmax, prefer_literal=True)(_softmax_overload("log_softmax", log_output=True))


@register_jitable
def _keep_shape2(lse, shape, ax):
    return lse.reshape((1 if ax == 0 else shape[0], 1 if ax == 1 else shape[1]))


@register_jitable
def _keep_shape3(lse, shape, ax):
    return lse.reshape(
        (1 if ax == 0 else shape[0], 1 if ax == 1 else shape[1], 1 if ax == 2 else shape[2])
    )


@register_jitable
def _drop_shape3(lse, shape, ax):
    if ax == 0:
        return lse.reshape((shape[1], shape[2]))
    if ax == 1:
        return lse.reshape((shape[0], shape[2]))
    return lse.reshape((shape[0], shape[1]))


#: (ndim, keepdims) → how the (outer, inner) result takes the reduction's shape.
_RESULT_SHAPERS = {
    (1, True): register_jitable(lambda lse, shape, ax: lse.reshape((1,))),
    (1, False): register_jitable(lambda lse, shape, ax: lse[0, 0]),
    (2, True): _keep_shape2,
    (2, False): register_jitable(lambda lse, shape, ax: lse.reshape((lse.size,))),
    (3, True): _keep_shape3,
    (3, False): _drop_shape3,
}


@overload(core.logsumexp, prefer_literal=True)
def _logsumexp_overload(
    x,
    axis=-1,
    b=None,
    keepdims=False,
    return_sign=False,
    out=None,
    dtype=None,
    where=None,
    temperature=1.0,
    algorithm="auto",
    target="cpu",
):
    func = "logsumexp"
    _check_array(func, "x", x)
    _check_scalar_args(func, axis, temperature, algorithm)
    _check_target(func, target)
    _reject(func, b=b, dtype=dtype)
    _check_where(func, x, where)
    if _default_value(return_sign) is not False:
        raise misuse(func, "return_sign= is not supported there")
    if isinstance(keepdims, types.BooleanLiteral):
        keep = keepdims.literal_value
    elif isinstance(_default_value(keepdims), bool):
        keep = _default_value(keepdims)
    elif isinstance(keepdims, types.Boolean):
        # The result's number of dimensions depends on keepdims, so it must be a
        # compile-time constant: ask Numba to retype with its literal value.
        def retype(
            x,
            axis=-1,
            b=None,
            keepdims=False,
            return_sign=False,
            out=None,
            dtype=None,
            where=None,
            temperature=1.0,
            algorithm="auto",
            target="cpu",
        ):
            return literally(keepdims)

        return retype
    else:
        raise misuse(func, f"keepdims must be a bool, got {keepdims}")
    code = _algorithm_code(algorithm)
    if code is None:  # the pass structure picks the kernel: type it as a constant

        def retype(
            x,
            axis=-1,
            b=None,
            keepdims=False,
            return_sign=False,
            out=None,
            dtype=None,
            where=None,
            temperature=1.0,
            algorithm="auto",
            target="cpu",
        ):
            return literally(algorithm)

        return retype
    if isinstance(code, str):

        def bad_algorithm(
            x,
            axis=-1,
            b=None,
            keepdims=False,
            return_sign=False,
            out=None,
            dtype=None,
            where=None,
            temperature=1.0,
            algorithm="auto",
            target="cpu",
        ):
            raise ValueError(code)

        return bad_algorithm
    if not _is_absent(out) and x.ndim == 1 and not keep:
        raise misuse(func, "out= needs an array result")
    _check_out(func, x, out)
    has_out = not _is_absent(out)
    geometry = _geometry(x, axis)
    target_unknown = _literal(target) is None
    known_inv_t = _known_inverse_temperature(temperature)
    masked = not _is_absent(where)
    constants = path_constants(code)  # numsoft's kernels by address, rows of any length
    if x.ndim == 1 and not keep:  # a scalar: the row kernel's result, nothing allocated
        row = linked(logsumexp_row_at, **constants)

        def scalar_impl(
            x,
            axis=-1,
            b=None,
            keepdims=False,
            return_sign=False,
            out=None,
            dtype=None,
            where=None,
            temperature=1.0,
            algorithm="auto",
            target="cpu",
        ):
            if target_unknown:  # pruned when typing has checked it (no string code)
                _runtime_target(target)
            if geometry == EITHER:  # else the axis was checked while typing
                _split3(x.shape, axis)
            n = x.shape[0]
            if known_inv_t is not None:
                inv_t = x.dtype.type(known_inv_t)
            else:
                inv_t = _inv_temperature(x, temperature)
            if n == 0:
                return x.dtype.type(-np.inf)
            # A fully masked row is a row of -inf: its logsumexp is -inf, as defined.
            return row(mask_input(x, where) if masked else x, n, inv_t)

        return scalar_impl
    shaper = _RESULT_SHAPERS[(x.ndim, keep)]
    rows = linked(logsumexp_rows_at, **constants)
    blocks = linked(logsumexp_blocks_at, **constants)

    def impl(
        x,
        axis=-1,
        b=None,
        keepdims=False,
        return_sign=False,
        out=None,
        dtype=None,
        where=None,
        temperature=1.0,
        algorithm="auto",
        target="cpu",
    ):
        if target_unknown:  # pruned when typing has checked it (no string code)
            _runtime_target(target)
        ax, outer, n, inner = _split3(x.shape, axis)
        if known_inv_t is not None:
            inv_t = x.dtype.type(known_inv_t)
        else:
            inv_t = _inv_temperature(x, temperature)
        lse = np.empty((outer, inner), dtype=x.dtype)
        if n == 0:
            lse[:] = -np.inf
        elif lse.size > 0:
            # A fully masked row is a row of -inf: its logsumexp is -inf, as defined.
            xm = mask_input(x, where) if masked else x
            if geometry == ROWS or (geometry == EITHER and inner == 1):
                rows(xm, lse, outer * inner, n, inv_t)
            else:
                blocks(xm, lse, outer, n, inner, inv_t)
        res = shaper(lse, x.shape, ax)
        if has_out:
            out[...] = res
            return out
        return res

    return impl


def _check_backward(func: str, name: str, a, dy, axis) -> None:
    """The arguments of a backward function (``a``, what it reads, named ``name``)."""
    _check_array(func, name, a)
    _check_array(func, "dy", dy)
    if dy.dtype != a.dtype or dy.ndim != a.ndim:
        raise misuse(func, f"dy must match {name} in dtype and ndim")
    _check_scalar_args(func, axis, 1.0, "auto")


def _backward_overload(func: str, log_input: bool):
    def typer(y, dy, axis=-1):
        _check_backward(func, "y", y, dy, axis)
        geometry = _geometry(y, axis)
        rows = specialize(backward_rows, LOG_OUTPUT=log_input).serial
        columns = specialize(backward_columns, LOG_OUTPUT=log_input).serial

        def impl(y, dy, axis=-1):
            if dy.shape != y.shape:
                raise ValueError("dy must have the shape of y")
            _, outer, n, inner = _split3(y.shape, axis)
            dx = np.empty_like(y)
            if y.size > 0:
                yr, dyr = read_only_array(y), read_only_array(dy)
                if geometry == ROWS or (geometry == EITHER and inner == 1):
                    rows(yr.reshape((outer, n)), dyr.reshape((outer, n)), dx.reshape((outer, n)))
                else:
                    columns(
                        yr.reshape((outer, n, inner)),
                        dyr.reshape((outer, n, inner)),
                        dx.reshape((outer, n, inner)),
                    )
            return dx

        return impl

    return typer


overload(core.softmax_backward, prefer_literal=True)(
    _backward_overload("softmax_backward", log_input=False)
)
overload(core.log_softmax_backward, prefer_literal=True)(
    _backward_overload("log_softmax_backward", log_input=True)
)
