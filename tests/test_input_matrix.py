"""The bad-input matrix of issue 11, over every public function.

Each public function is described once (``FUNCS``): how to call it with everything but
its main array fixed, the name its errors must use for that array, and whether it takes
the common arguments of SPEC §1. The tests then cross that table with

- non-real inputs (complex, object, str, ragged lists) → ``TypeError`` naming the argument;
- real inputs in every other form (int, bool, list, float16, big-endian, read-only,
  Fortran, strided, reversed, stride-0 broadcast, 0-d) → the same result as on the plain
  float array, and the input left unmodified;
- bad common arguments (``out``, ``where``, ``axis``, ``temperature``, ``dtype``) and bad
  function parameters (``alpha``, ``k``, ``tau``, ...) → ``TypeError``/``ValueError``
  naming the argument, raised by numsoft and not by Numba's type inference;
- edge values (NaN, ±1e30, denormals, empty and length-1 axes) → the reference result.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
from _variant_refs import apply_rows, ref_softmax
from scipy.special import log_softmax as scipy_log_softmax
from test_variants import CASES, RANGES, TS

import numsoft

RNG = np.random.default_rng(11)
#: Small integer-valued logits, so int, bool and float16 conversions are exact.
X = RNG.integers(-3, 4, size=(3, 5)).astype(np.float64)
DY = np.cos(np.arange(X.size, dtype=np.float64)).reshape(X.shape)
W = RNG.normal(size=(4, X.shape[1]))
LABELS = np.array([0, 2, 1])


@dataclass(frozen=True)
class Fn:
    """A public function seen as ``call(x, **kwargs)`` of its main array."""

    name: str
    call: object
    arg: str = "x"  # the main array's name in error messages
    common: bool = False  # takes axis/out/dtype/where/temperature (SPEC §1)
    ref: object = None  # float64 row reference, for value checks
    fill: float = 0.0  # output of a fully masked row
    elementwise: bool = False  # a NaN stays in its own entry


def _dy_like(a):
    """DY where it fits ``a``'s shape, else 1 (a ragged or 0-d ``a`` has no DY shape)."""
    try:
        return np.broadcast_to(DY, np.shape(a))
    except ValueError:
        return 1.0


def _backward(func):
    return lambda a, **kw: func(a, _dy_like(a), **kw)


def _rows(x):
    return len(x) if isinstance(x, list) else np.shape(x)[0]


def _log_ref(z):
    return scipy_log_softmax(z)


FUNCS = [
    Fn("softmax", numsoft.softmax, common=True, ref=ref_softmax),
    Fn("log_softmax", numsoft.log_softmax, common=True, ref=_log_ref, fill=-np.inf),
    Fn("logsumexp", numsoft.logsumexp, common=True),
    *(
        Fn(c.name, c.func, common=True, ref=c.ref, fill=c.fill, elementwise=c.elementwise)
        for c in CASES
    ),
    Fn("gumbel_softmax", partial(numsoft.gumbel_softmax, seed=7), common=True),
    Fn("softmax_backward", _backward(numsoft.softmax_backward), arg="y"),
    Fn("log_softmax_backward", _backward(numsoft.log_softmax_backward), arg="y_log"),
    Fn("sparsemax_backward", _backward(numsoft.sparsemax_backward), arg="y"),
    Fn("entmax15_backward", _backward(numsoft.entmax15_backward), arg="y"),
    Fn("stablemax_backward", _backward(numsoft.stablemax_backward), arg="x"),
    Fn("softmax_topk", lambda x, **kw: numsoft.softmax_topk(x, 2, **kw)[0]),
    Fn(
        "cross_entropy",
        lambda x, **kw: numsoft.cross_entropy(x, LABELS[: _rows(x)], reduction="none"),
        arg="logits",
    ),
    Fn(
        "linear_cross_entropy",
        lambda x, **kw: numsoft.linear_cross_entropy(
            x, W, LABELS[: _rows(x)], reduction="none"
        ),  # fmt: skip
        arg="h",
    ),
    Fn("attention", lambda x, **kw: numsoft.attention(x, W, W), arg="q"),
]
COMMON = [f for f in FUNCS if f.common]
WITH_REF = [f for f in FUNCS if f.ref is not None]
#: topk_softmax keeps k = 3 entries: shorter rows are its documented ValueError.
NEEDS_3 = ("topk_softmax",)


def ids(fns):
    return [f.name for f in fns]


def assert_raised_by_numsoft(excinfo, name):
    """The error names the argument and comes from numsoft's checks, not Numba."""
    assert name in str(excinfo.value), f"message does not name {name!r}: {excinfo.value}"
    assert not type(excinfo.value).__module__.startswith("numba"), repr(excinfo.value)


def call_quietly(fn, x, **kwargs):
    """Call ``fn``, failing on any warning (SPEC §1: no RuntimeWarning, ever)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn.call(x, **kwargs)


# ---------------------------------------------------------------- non-real input

NON_REAL = {
    "complex": X.astype(complex),
    "object": np.array([[object(), 1.0]], dtype=object),
    "str": np.array([["a", "b"]]),
    "ragged": [[1.0, 2.0], [3.0]],
}


@pytest.mark.parametrize("kind", list(NON_REAL))
@pytest.mark.parametrize("fn", FUNCS, ids=ids(FUNCS))
def test_non_real_input_is_a_type_error_naming_the_argument(fn, kind):
    with pytest.raises(TypeError) as excinfo:
        fn.call(NON_REAL[kind])
    assert_raised_by_numsoft(excinfo, fn.arg)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: numsoft.softmax_backward(X, DY.astype(complex)), "dy"),
        (lambda: numsoft.stablemax_backward(X, np.array([["a"] * 5] * 3)), "dy"),
        (lambda: numsoft.logsumexp(X, b=np.ones(5, complex)), "b"),
        (lambda: numsoft.cross_entropy(X, LABELS.astype(float)), "labels"),
        (lambda: numsoft.cross_entropy(X, LABELS.astype(complex)), "labels"),
        (lambda: numsoft.linear_cross_entropy(X, W.astype(complex), LABELS), "W"),
        (lambda: numsoft.linear_cross_entropy(X, W, LABELS, bias=np.array(["a"] * 4)), "bias"),
        (lambda: numsoft.attention(X, W.astype(object), W), "k"),
        (lambda: numsoft.attention(X, W, W.astype(complex)), "v"),
    ],
)
def test_non_real_second_operand_is_a_type_error_naming_it(call, name):
    with pytest.raises(TypeError) as excinfo:
        call()
    assert_raised_by_numsoft(excinfo, name)


# ---------------------------------------------------------------- real input, any form


def _strided(a):
    wide = np.repeat(a, 2, axis=-1)
    return wide[..., ::2]


def _reversed(a):
    return np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]


def _read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


#: (input, the plain array it stands for): every form holds the values of ``X``
#: (``bool`` the values of X > 0).
FORMS = {
    "int64": (X.astype(np.int64), X),
    "int8": (X.astype(np.int8), X),
    "uint16": ((X + 3).astype(np.uint16), X + 3),
    "bool": (X > 0, (X > 0).astype(np.float64)),
    "list": (X.tolist(), X),
    "float16": (X.astype(np.float16), X.astype(np.float32)),
    "big-endian": (X.astype(">f8"), X),
    "big-endian-f4": (X.astype(">f4"), X.astype(np.float32)),
    "read-only": (_read_only(X), X),
    "fortran": (np.asfortranarray(X), X),
    "strided": (_strided(X), X),
    "reversed": (_reversed(X), X),
    "broadcast": (np.broadcast_to(X[1], X.shape), np.broadcast_to(X[1], X.shape).copy()),
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("fn", FUNCS, ids=ids(FUNCS))
def test_every_real_form_gives_the_plain_result_and_is_not_modified(fn, form):
    x, plain = FORMS[form]
    before = np.array(x, copy=True)
    got = call_quietly(fn, x)
    want = call_quietly(fn, plain)
    assert got.dtype == want.dtype, "the result dtype follows SPEC §1's promotion rule"
    rtol = 1e-12 if want.dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300)
    np.testing.assert_array_equal(np.asarray(x), before)


@pytest.mark.parametrize("fn", [f for f in COMMON if f.name not in NEEDS_3], ids=lambda f: f.name)
def test_zero_d_and_python_scalars(fn):
    # A 0-d array is one row of one entry under axis=None (NumPy and SciPy's convention);
    # with an integer axis it has no axis to normalize over.
    for scalar in (2.5, np.float64(2.5), np.array(2.5)):
        got = call_quietly(fn, scalar, axis=None)
        want = call_quietly(fn, np.array([2.5]), axis=None)
        assert got.shape == ()
        np.testing.assert_allclose(got, np.reshape(want, ()), rtol=1e-15)
        with pytest.raises(np.exceptions.AxisError) as excinfo:
            fn.call(scalar)
        assert_raised_by_numsoft(excinfo, "axis")


# ---------------------------------------------------------------- common arguments

BAD_COMMON = [
    ({"axis": 2}, np.exceptions.AxisError, "axis"),
    ({"axis": -3}, np.exceptions.AxisError, "axis"),
    ({"axis": (0, 0)}, ValueError, "axis"),
    ({"axis": (1, -1)}, ValueError, "axis"),
    ({"axis": 1.0}, TypeError, "axis"),
    ({"axis": "0"}, TypeError, "axis"),
    ({"temperature": 0.0}, ValueError, "temperature"),
    ({"temperature": -1.0}, ValueError, "temperature"),
    ({"temperature": np.inf}, ValueError, "temperature"),
    ({"temperature": np.nan}, ValueError, "temperature"),
    ({"temperature": "1"}, TypeError, "temperature"),
    ({"temperature": None}, TypeError, "temperature"),
    ({"temperature": 1e-300, "dtype": np.float32}, ValueError, "temperature"),
    ({"dtype": np.int32}, TypeError, "dtype"),
    ({"dtype": complex}, TypeError, "dtype"),
    ({"dtype": "notadtype"}, TypeError, "dtype"),
    ({"where": np.ones(X.shape)}, TypeError, "where"),
    ({"where": np.ones((2, 5), bool)}, ValueError, "where"),
    ({"where": [[True, False]]}, ValueError, "where"),
    ({"out": np.zeros((7,))}, ValueError, "out"),
    ({"out": "out"}, TypeError, "out"),
]


@pytest.mark.parametrize("kwargs, exc, name", BAD_COMMON, ids=lambda v: str(v)[:40])
@pytest.mark.parametrize("fn", COMMON, ids=ids(COMMON))
def test_bad_common_argument_names_it(fn, kwargs, exc, name):
    with pytest.raises(exc) as excinfo:
        fn.call(X, **kwargs)
    assert_raised_by_numsoft(excinfo, name)


@pytest.mark.parametrize("fn", COMMON, ids=ids(COMMON))
def test_out_of_wrong_dtype_or_read_only(fn):
    want = fn.call(X)
    with pytest.raises(TypeError) as excinfo:
        fn.call(X, out=np.empty(want.shape, np.float32))
    assert_raised_by_numsoft(excinfo, "out")
    ro = np.empty(want.shape)
    ro.flags.writeable = False
    with pytest.raises(ValueError) as excinfo:
        fn.call(X, out=ro)
    assert_raised_by_numsoft(excinfo, "out")


NON_REDUCING = [f for f in COMMON if f.name != "logsumexp"]


@pytest.mark.parametrize("fn", NON_REDUCING, ids=ids(NON_REDUCING))
def test_out_overlapping_x_or_identical_to_it(fn):
    want = fn.call(X)
    buf = np.zeros(X.size + 1)
    x, out = buf[:-1].reshape(X.shape), buf[1:].reshape(X.shape)  # shifted by one entry
    x[...] = X
    assert fn.call(x, out=out) is out
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-300)
    inplace = X.copy()
    assert fn.call(inplace, out=inplace) is inplace
    np.testing.assert_allclose(inplace, want, rtol=1e-13, atol=1e-300)


# ---------------------------------------------------------------- function parameters

BAD_PARAMETERS = [
    (lambda: numsoft.entmax(X, alpha=0.5), ValueError, "alpha"),
    (lambda: numsoft.entmax(X, alpha=np.nan), ValueError, "alpha"),
    (lambda: numsoft.entmax(X, alpha="1.5"), TypeError, "alpha"),
    (lambda: numsoft.entmax(X, n_iter=0), ValueError, "n_iter"),
    (lambda: numsoft.entmax(X, n_iter=2.5), TypeError, "n_iter"),
    (lambda: numsoft.topk_softmax(X, 0), ValueError, "k"),
    (lambda: numsoft.topk_softmax(X, -1), ValueError, "k"),
    (lambda: numsoft.topk_softmax(X, 6), ValueError, "k"),
    (lambda: numsoft.topk_softmax(X, 2.0), TypeError, "k"),
    (lambda: numsoft.topk_softmax(X, True), TypeError, "k"),
    (lambda: numsoft.softmax_topk(X, 0), ValueError, "k"),
    (lambda: numsoft.softmax_topk(X, 6), ValueError, "k"),
    (lambda: numsoft.softmax_topk(X, -2), ValueError, "k"),
    (lambda: numsoft.softmax_topk(X, "2"), TypeError, "k"),
    (lambda: numsoft.softmax_topk(X, 2, axis=(0, 1)), TypeError, "axis"),
    (lambda: numsoft.gumbel_softmax(X, tau=0.0), ValueError, "tau"),
    (lambda: numsoft.gumbel_softmax(X, tau=-1.0), ValueError, "tau"),
    (lambda: numsoft.gumbel_softmax(X, tau=np.inf), ValueError, "tau"),
    (lambda: numsoft.gumbel_softmax(X, tau="1"), TypeError, "tau"),
    (lambda: numsoft.gumbel_softmax(X, hard="yes"), TypeError, "hard"),
    (lambda: numsoft.gumbel_softmax(X, seed=-1), ValueError, "seed"),
    (lambda: numsoft.gumbel_softmax(X, seed=2.5), TypeError, "seed"),
    (lambda: numsoft.ssmax(X, s=0.0), ValueError, "s must"),
    (lambda: numsoft.ssmax(X, s=np.nan), ValueError, "s must"),
    (lambda: numsoft.ssmax(X, s=[1.0]), TypeError, "s must"),
    (lambda: numsoft.softpick(X, eps=-1e-6), ValueError, "eps"),
    (lambda: numsoft.softpick(X, eps=np.inf), ValueError, "eps"),
    (lambda: numsoft.sa_softmax(X, normalized=1), TypeError, "normalized"),
    (lambda: numsoft.multimax(X, RANGES[:3], TS), ValueError, "ranges"),
    (lambda: numsoft.multimax(X, RANGES, TS + (1.0,)), ValueError, "ts"),
    (lambda: numsoft.multimax(X, [[1.0] * 4], TS), TypeError, "ranges"),
    (lambda: numsoft.multimax(X, RANGES, ("a",) * 4), TypeError, "ts"),
    (lambda: numsoft.multimax(X, (np.nan, 1.0, -2.0, 2.0), TS), ValueError, "ranges"),
    (lambda: numsoft.sigmoid_attention(X, bias=np.inf), ValueError, "bias"),
    (lambda: numsoft.sigmoid_attention(X, bias="0"), TypeError, "bias"),
    (lambda: numsoft.logsumexp(X, b=np.ones(4)), ValueError, "b"),
    (lambda: numsoft.logsumexp(X, keepdims="yes"), TypeError, "keepdims"),
    (lambda: numsoft.logsumexp(X, return_sign=1), TypeError, "return_sign"),
    (lambda: numsoft.softmax(X, algorithm="fast"), ValueError, "algorithm"),
    (lambda: numsoft.softmax(X, target="tpu"), ValueError, "target"),
    (lambda: numsoft.softmax_backward(X, np.ones((3, 4))), ValueError, "dy"),
    (lambda: numsoft.sparsemax_backward(X, np.ones((2, 5))), ValueError, "dy"),
    (lambda: numsoft.cross_entropy(X, np.array([0, 5, 1])), ValueError, "labels"),
    (lambda: numsoft.cross_entropy(X, np.array([0, -3, 1])), ValueError, "labels"),
    (lambda: numsoft.cross_entropy(X, np.array([0, 1])), ValueError, "labels"),
    (lambda: numsoft.cross_entropy(X, LABELS, label_smoothing=1.5), ValueError, "label_smoothing"),
    (lambda: numsoft.cross_entropy(X, LABELS, z_loss=-1.0), ValueError, "z_loss"),
    (lambda: numsoft.cross_entropy(X, LABELS, reduction="avg"), ValueError, "reduction"),
    (lambda: numsoft.cross_entropy(X, LABELS, ignore_index=1.5), TypeError, "ignore_index"),
    (lambda: numsoft.cross_entropy(X, LABELS, axis=(0, 1)), TypeError, "axis"),
    (lambda: numsoft.linear_cross_entropy(X, W[:, :3], LABELS), ValueError, "W"),
    (lambda: numsoft.linear_cross_entropy(X, W, LABELS, bias=np.ones(3)), ValueError, "bias"),
    (lambda: numsoft.linear_cross_entropy(X, W, LABELS, chunk_size=0), ValueError, "chunk_size"),
    (lambda: numsoft.linear_cross_entropy(X, W, LABELS, chunk_size=1.5), TypeError, "chunk_size"),
    (lambda: numsoft.linear_cross_entropy(X, W, np.array([0, 9, 1])), ValueError, "labels"),
    (lambda: numsoft.attention(X, W[:, :3], W), ValueError, "k"),
    (lambda: numsoft.attention(X, W, W[:3]), ValueError, "v"),
    (lambda: numsoft.attention(X, W, W, scale=np.nan), ValueError, "scale"),
    (lambda: numsoft.attention(X, W, W, scale="1"), TypeError, "scale"),
    (lambda: numsoft.attention(X, W, W, mask=np.ones((3, 4))), TypeError, "mask"),
    (lambda: numsoft.attention(X, W, W, mask=np.ones((2, 4), bool)), ValueError, "mask"),
    (lambda: numsoft.attention(X, W, W, causal="yes"), TypeError, "causal"),
    (lambda: numsoft.attention(np.ones(5), W, W), ValueError, "q"),
]


@pytest.mark.parametrize("call, exc, name", BAD_PARAMETERS)
def test_bad_parameter_names_it(call, exc, name):
    with pytest.raises(exc) as excinfo:
        call()
    assert_raised_by_numsoft(excinfo, name)


# ---------------------------------------------------------------- edge values


def _tolerance(fn, dtype):
    case = next((c for c in CASES if c.name == fn.name), None)
    if case is not None:
        return case.tol[dtype]
    return (1e-13, 1e-300) if dtype == np.float64 else (2e-6, 1e-30)


EDGES = {
    "huge": np.array([[1e30, -1e30, 0.0, 5.0, 1e30], [-1e30, -1e30, -1e30, 3.0, -1e30]]),
    "denormal": np.array([[5e-324, 0.0, -5e-324, 1e-310, 2e-308]]),
    "length-1": np.array([[1.0], [-1e30], [0.0]]),
}


def _expected(fn, x):
    with np.errstate(all="ignore"):
        return apply_rows(fn.ref, x, fill=fn.fill)


@pytest.mark.parametrize("edge", list(EDGES))
@pytest.mark.parametrize("fn", WITH_REF, ids=ids(WITH_REF))
def test_edge_values_match_the_reference(fn, edge):
    x = EDGES[edge]
    if fn.name in NEEDS_3 and x.shape[-1] < 3:
        pytest.skip("k = 3 > the row length is topk_softmax's documented ValueError")
    want = _expected(fn, x)
    got = call_quietly(fn, x)
    if not np.all(np.isfinite(want) | (want == fn.fill)):
        # The direct reference overflows (softpick's e^1e30): the result must still
        # be a finite, normalized answer, not NaN.
        assert np.all(np.isfinite(got) | (got == fn.fill)), got
        return
    rtol, atol = _tolerance(fn, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("fn", WITH_REF, ids=ids(WITH_REF))
def test_nan_poisons_its_row_only(fn):
    x = X.copy()
    x[1, 2] = np.nan
    got = call_quietly(fn, x)
    if fn.elementwise:
        assert np.isnan(got[1, 2]) and not np.isnan(np.delete(got[1], 2)).any()
    else:
        assert np.isnan(got[1]).all()
    np.testing.assert_allclose(got[[0, 2]], _expected(fn, X)[[0, 2]], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", FUNCS, ids=ids(FUNCS))
def test_empty_arrays(fn):
    if fn.name in ("attention", "linear_cross_entropy"):
        x = np.empty((0, X.shape[1]))  # the feature axis must match the operands
    elif fn.name in ("softmax_topk", "cross_entropy", *NEEDS_3):
        pytest.skip("an empty class axis has no top-k and no label to pick")
    else:
        x = np.empty((3, 0))
    got = call_quietly(fn, x)
    want_shape = {"logsumexp": (3,), "cross_entropy": (0,), "linear_cross_entropy": (0,)}
    assert got.shape == want_shape.get(fn.name, x.shape)
    if fn.name == "logsumexp":
        assert np.all(got == -np.inf)
