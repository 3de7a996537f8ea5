"""``numba.extending.overload`` entry points: the variants inside ``@njit`` code (SPEC §6).

Same support as the core functions (``numsoft._overloads``, whose argument checks are
reused here): C-contiguous float32/float64 arrays of 1–3 dimensions, an integer
``axis``, ``out``, ``where`` and the scalar keyword arguments; ``dtype=`` raises a
``TypeError`` naming the argument (``numsoft._overloads.misuse``). Variant parameters
are validated by the same functions as in the Python API (``*_params``, ``*_setup``),
and the same drivers run, so results agree exactly.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .._overloads import (
    _check_array,
    _check_backward,
    _check_out,
    _check_scalar_args,
    _check_where,
    _default_value,
    _inv_temperature,
    _is_absent,
    _reject,
    _split3,
    fill_masked_rows,
    mask_input,
    misuse,
)
from ..cpu._jit import kernel, read_only_array
from ..cpu.paths import specialize
from ..cpu.variants.driver import (
    variant_backward_columns,
    variant_backward_rows,
    variant_columns,
    variant_rows,
)
from ..vocabulary import (
    BY_CODE,
    ENTMAX,
    GUMBEL,
    MULTIMAX,
    PUBLIC_VARIANTS,
    SA_SOFTMAX,
    SIGMOID_ATTENTION,
    SOFTMAX,
    SOFTPICK,
    SPARSEMAX,
    SSMAX,
    STABLEMAX,
    THREE_PASS_STORE,
    TOPK,
)
from . import elementwise, sampling, scaled, sparse, stable, topk

# Inside @njit, numsoft runs in the caller's thread: bind the serial twins of the
# parallel drivers (see ``numsoft.cpu._jit.parallel_kernel``).
variant_rows, variant_columns = variant_rows.serial, variant_columns.serial
variant_backward_rows = variant_backward_rows.serial
variant_backward_columns = variant_backward_columns.serial

# ---------------------------------------------------------------- typing-time checks


def _check_common(func, x, axis, out, dtype, where, temperature):
    """The checks every variant shares."""
    _check_array(func, "x", x)
    _check_scalar_args(func, axis, temperature, "auto")
    _reject(func, dtype=dtype)
    _check_where(func, x, where)
    _check_out(func, x, out)


def _check_number(func: str, name: str, value) -> None:
    v = _default_value(value)
    if isinstance(v, (bool, types.Boolean)) or not isinstance(v, (int, float, types.Number)):
        raise misuse(func, f"{name} must be a number, got {value}")


def _check_integer(func: str, name: str, value) -> None:
    v = _default_value(value)
    if isinstance(v, (bool, types.Boolean)) or not isinstance(v, (int, types.Integer)):
        raise misuse(func, f"{name} must be an int, got {value}")


def _check_bool(func: str, name: str, value) -> None:
    if not isinstance(_default_value(value), (bool, types.Boolean)):
        raise misuse(func, f"{name} must be a bool, got {value}")


# ---------------------------------------------------------------- jitted helpers


def _out_or_new(x, out):
    """``out`` if given, else a new array like ``x`` (jit-only)."""
    raise NotImplementedError


@overload(_out_or_new)
def _out_or_new_overload(x, out):
    if _is_absent(out):
        return lambda x, out: np.empty_like(x)
    return lambda x, out: out


def _seed_or_draw(seed):
    """``seed`` as given, or one drawn from Numba's generator when None (jit-only)."""
    raise NotImplementedError


@overload(_seed_or_draw)
def _seed_or_draw_overload(seed):
    if _is_absent(seed):
        # Numba's own generator (seeded by np.random.seed inside @njit code).
        return lambda seed: np.random.randint(0, 2**62)  # noqa: NPY002

    def impl(seed):
        if seed < 0:
            raise ValueError("gumbel_softmax: seed must be in [0, 2**64)")
        return seed

    return impl


def _bias_args(bias):
    """(has_bias, bias as float) for sigmoid_attention's optional bias (jit-only)."""
    raise NotImplementedError


@overload(_bias_args)
def _bias_args_overload(bias):
    if _is_absent(bias):
        return lambda bias: (False, 0.0)
    return lambda bias: (True, float(bias))


# ``_run`` and ``_run_backward`` are real dispatchers, not inlined helpers, specialized
# per variant (``_runner``): every function that links a driver re-optimizes it, so
# the overloads of one variant call one compiled (and cached) entry per array type.
# Callers pass plain int64 / uint64 / float64 scalars so that they share that entry.


@kernel
def _run(x, y, axis, temperature, params, seed):
    """Validate shape/temperature and run variant ``VARIANT`` on x into y; returns y."""
    _, outer, n, inner = _split3(x.shape, axis)
    if y.shape != x.shape:
        raise ValueError("out has the wrong shape")
    inv_t = _inv_temperature(x, temperature)
    if x.size > 0:
        xr = read_only_array(x)
        if inner == 1:
            variant_rows(xr.reshape((outer, n)), y.reshape((outer, n)), params, inv_t, seed)
        else:
            variant_columns(
                xr.reshape((outer, n, inner)), y.reshape((outer, n, inner)), params, inv_t, seed
            )
    return y


def _runner(code: int):
    """``_run`` for variant ``code``. The variants that end in a softmax use
    three-pass-store ("auto" on one thread) in its general form (any row length), with
    ordinary stores (the output is the caller's or new)."""
    return specialize(
        _run,
        VARIANT=code,
        ALGORITHM=THREE_PASS_STORE,
        LOG_OUTPUT=False,
        SHORT_ROWS=False,
        INLINE_ROWS=False,
        STREAM_OUTPUT=False,
    )


@register_jitable(inline="always")
def _call(run, x, out, where, axis, temperature, params, seed):
    """``run`` with plain-typed scalars (literals and omitted defaults converted), on
    ``x`` masked by ``where``, a fully masked row set to 0 (the table's fill of every
    variant with an overload of its own; the others call ``_call_fill``)."""
    return _call_fill(run, x, out, where, axis, temperature, params, seed, 0.0)


@register_jitable(inline="always")
def _call_fill(run, x, out, where, axis, temperature, params, seed, fill):
    """``_call`` with the output ``fill`` of a fully masked row."""
    y = run(
        mask_input(x, where),
        _out_or_new(x, out),
        np.int64(axis),
        np.float64(temperature),
        params,
        np.uint64(seed),
    )
    fill_masked_rows(y, where, axis, fill)
    return y


@register_jitable
def _axis_length(x, axis):
    return _split3(x.shape, axis)[2]


# ---------------------------------------------------------------- variants without parameters


def _plain_overload(func: str, code: int):
    def typer(x, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        _check_common(func, x, axis, out, dtype, where, temperature)
        run = _runner(code)
        fill = BY_CODE[code].fill

        def impl(x, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
            return _call_fill(run, x, out, where, axis, temperature, np.zeros(1), 0, fill)

        return impl

    return typer


_FAMILIES = {
    "elementwise": elementwise,
    "sampling": sampling,
    "scaled": scaled,
    "sparse": sparse,
    "stable": stable,
    "topk": topk,
}

for _v in PUBLIC_VARIANTS:
    if not _v.params:
        _func = getattr(_FAMILIES[_v.family], _v.name)
        overload(_func, inline="always")(_plain_overload(_v.name, _v.code))


# ---------------------------------------------------------------- variants with parameters


@overload(sparse.entmax, inline="always")
def _entmax_overload(
    x, alpha=1.5, n_iter=50, axis=-1, out=None, dtype=None, where=None, temperature=1.0
):
    _check_common("entmax", x, axis, out, dtype, where, temperature)
    _check_number("entmax", "alpha", alpha)
    _check_integer("entmax", "n_iter", n_iter)
    # alpha picks the variant at run time: softmax (1), sparsemax (2) or bisection.
    run_softmax, run_sparsemax, run_bisect = (_runner(c) for c in (SOFTMAX, SPARSEMAX, ENTMAX))

    def impl(x, alpha=1.5, n_iter=50, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        code, params = sparse.entmax_setup(float(alpha), n_iter)
        if code == SOFTMAX:
            return _call(run_softmax, x, out, where, axis, temperature, params, 0)
        if code == SPARSEMAX:
            return _call(run_sparsemax, x, out, where, axis, temperature, params, 0)
        return _call(run_bisect, x, out, where, axis, temperature, params, 0)

    return impl


@overload(stable.softpick, inline="always")
def _softpick_overload(x, eps=1e-6, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
    _check_common("softpick", x, axis, out, dtype, where, temperature)
    _check_number("softpick", "eps", eps)
    run = _runner(SOFTPICK)

    def impl(x, eps=1e-6, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        params = stable.softpick_params(float(eps))
        return _call(run, x, out, where, axis, temperature, params, 0)

    return impl


@overload(scaled.ssmax, inline="always")
def _ssmax_overload(x, s=1.0, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
    _check_common("ssmax", x, axis, out, dtype, where, temperature)
    _check_number("ssmax", "s", s)
    run = _runner(SSMAX)

    def impl(x, s=1.0, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        params = scaled.ssmax_params(float(s))
        return _call(run, x, out, where, axis, temperature, params, 0)

    return impl


@overload(scaled.sa_softmax, inline="always")
def _sa_softmax_overload(
    x, normalized=False, axis=-1, out=None, dtype=None, where=None, temperature=1.0
):
    _check_common("sa_softmax", x, axis, out, dtype, where, temperature)
    _check_bool("sa_softmax", "normalized", normalized)
    run = _runner(SA_SOFTMAX)

    def impl(x, normalized=False, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        params = scaled.sa_softmax_params(normalized)
        return _call(run, x, out, where, axis, temperature, params, 0)

    return impl


@overload(scaled.multimax, inline="always")
def _multimax_overload(x, ranges, ts, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
    func = "multimax"
    _check_common(func, x, axis, out, dtype, where, temperature)
    for name, value in (("ranges", ranges), ("ts", ts)):
        if not (
            (isinstance(value, types.UniTuple) and isinstance(value.dtype, types.Number))
            or (isinstance(value, types.Array) and value.ndim == 1)
        ):
            raise misuse(
                func, f"{name} must be a tuple of 4 numbers of one type or a 1-D array, got {value}"
            )
    run = _runner(MULTIMAX)

    def impl(x, ranges, ts, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        params = scaled.multimax_params(ranges, ts)
        return _call(run, x, out, where, axis, temperature, params, 0)

    return impl


@overload(elementwise.sigmoid_attention, inline="always")
def _sigmoid_attention_overload(
    x, bias=None, axis=-1, out=None, dtype=None, where=None, temperature=1.0
):
    func = "sigmoid_attention"
    _check_common(func, x, axis, out, dtype, where, temperature)
    if not _is_absent(bias):
        _check_number(func, "bias", bias)
    run = _runner(SIGMOID_ATTENTION)

    def impl(x, bias=None, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        has_bias, b = _bias_args(bias)
        params = elementwise.sigmoid_attention_params(has_bias, b)
        return _call(run, x, out, where, axis, temperature, params, 0)

    return impl


@overload(sampling.gumbel_softmax, inline="always")
def _gumbel_softmax_overload(
    x, tau=1.0, hard=False, seed=None, axis=-1, out=None, dtype=None, where=None, temperature=1.0
):
    func = "gumbel_softmax"
    _check_common(func, x, axis, out, dtype, where, temperature)
    _check_number(func, "tau", tau)
    _check_bool(func, "hard", hard)
    if not _is_absent(seed):
        _check_integer(func, "seed", seed)
    run = _runner(GUMBEL)

    def impl(
        x,
        tau=1.0,
        hard=False,
        seed=None,
        axis=-1,
        out=None,
        dtype=None,
        where=None,
        temperature=1.0,
    ):
        params = sampling.gumbel_params(float(tau), hard)
        return _call(run, x, out, where, axis, temperature, params, _seed_or_draw(seed))

    return impl


@overload(topk.topk_softmax, inline="always")
def _topk_softmax_overload(x, k, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
    _check_common("topk_softmax", x, axis, out, dtype, where, temperature)
    _check_integer("topk_softmax", "k", k)
    run = _runner(TOPK)

    def impl(x, k, axis=-1, out=None, dtype=None, where=None, temperature=1.0):
        params = topk.topk_params(k, _axis_length(x, axis))
        return _call(run, x, out, where, axis, temperature, params, 0)

    return impl


# ---------------------------------------------------------------- backward passes


@kernel
def _run_backward(a, dy, axis):
    if dy.shape != a.shape:
        raise ValueError("dy must have the shape of the first argument")
    _, outer, n, inner = _split3(a.shape, axis)
    dx = np.empty_like(a)
    if a.size > 0:
        ar, dyr = read_only_array(a), read_only_array(dy)
        if inner == 1:
            variant_backward_rows(
                ar.reshape((outer, n)), dyr.reshape((outer, n)), dx.reshape((outer, n))
            )
        else:
            variant_backward_columns(
                ar.reshape((outer, n, inner)),
                dyr.reshape((outer, n, inner)),
                dx.reshape((outer, n, inner)),
            )
    return dx


def _backward_of_output(func: str, code: int):
    def typer(y, dy, axis=-1):
        _check_backward(func, "y", y, dy, axis)
        run = specialize(_run_backward, VARIANT=code)
        return lambda y, dy, axis=-1: run(y, dy, np.int64(axis))

    return typer


for _v in PUBLIC_VARIANTS:
    if _v.backward == "y":  # (stablemax's reads x: its overload follows)
        _func = getattr(_FAMILIES[_v.family], f"{_v.name}_backward")
        overload(_func)(_backward_of_output(_func.__name__, _v.code))


@overload(stable.stablemax_backward, inline="always")
def _stablemax_backward_overload(x, dy, axis=-1):
    _check_backward("stablemax_backward", "x", x, dy, axis)
    run = specialize(_run_backward, VARIANT=STABLEMAX)
    return lambda x, dy, axis=-1: run(x, dy, np.int64(axis))
