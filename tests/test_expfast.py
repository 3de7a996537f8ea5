"""Accuracy, special values and vectorization of numsoft.cpu.expfast and logfast.

Oracles: float32 results are checked against float64 ``np.exp``; float64 results against
``np.exp`` in ``np.longdouble`` (x86 80-bit, 11 extra bits).
"""

from __future__ import annotations

import re
import warnings

import numba
import numpy as np
import pytest

from numsoft.cpu._jit import JIT_OPTIONS
from numsoft.cpu.expfast import (
    EXTEXP_MAX_ABS_F32,
    EXTEXP_MAX_ABS_F64,
    NONPOSITIVE_X_MAX,
    exp_fast,
    exp_nonpositive,
    exp_reduce,
    extexp_max_abs,
    ldexp_fast,
    ldexp_nonpositive,
)
from numsoft.cpu.logfast import log_fast

# The wrappers use the kernel options but no disk cache: Numba's cache does not notice
# changes in inlined callees, so a cached wrapper could keep testing an old expfast.
jit = numba.njit(cache=False, **JIT_OPTIONS)


@jit
def exp_loop(x, y):
    for i in range(x.size):
        y[i] = exp_fast(x[i])


@jit
def exp_nonpositive_loop(x, y):
    for i in range(x.size):
        y[i] = exp_nonpositive(x[i])


#: Each exponential, its test loop, and the largest x its contract covers.
EXPS = {
    "exp_fast": (exp_loop, np.inf),
    "exp_nonpositive": (exp_nonpositive_loop, NONPOSITIVE_X_MAX),
}


@jit
def ldexp_loop(p, k, y):
    for i in range(p.size):
        y[i] = ldexp_fast(p[i], k[i])


@jit
def reduce_loop(x, p, n):
    for i in range(x.size):
        p[i], n[i] = exp_reduce(x[i])


@jit
def sum_exp(x, m):
    s = x.dtype.type(0.0)
    for i in range(x.size):
        s += exp_fast(x[i] - m)
    return s


@jit
def exp_scalar(x):
    return exp_fast(x)


DTYPES = [np.float32, np.float64]
# Measured 0.91 (f32, exhaustive) / 0.92 (f64) ulp with FMA; the contract is 2 / 4 ulp.
# 1.5 leaves room for targets where llvm.fmuladd is not fused.
ULP_BOUND = 1.5
#: exp_nonpositive's float32 degree-5 polynomial: 1.91 ulp measured over every float32 in
#: [-104, 43], subnormal results within 1.35 smallest subnormals (expfast.exp_nonpositive).
NONPOSITIVE_F32_BOUNDS = (2.0, 1.5)


def _bounds(dt, name):
    """(normal, subnormal) error bounds of exponential ``name`` in dtype ``dt``, in ulp."""
    if name == "exp_nonpositive" and dt == np.float32:
        return NONPOSITIVE_F32_BOUNDS
    return ULP_BOUND, 1.0


P_RANGE = (0.7069, 1.4145)


def _exp(x, name="exp_fast"):
    y = np.empty_like(x)
    EXPS[name][0](x, y)
    return y


def _oracle(x):
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(over="ignore", under="ignore"):
        return np.exp(x.astype(wide))


def _ulp(ref, dt):
    """ulp of ``dt`` at |ref| (fixed at the smallest subnormal below the normal range)."""
    fi = np.finfo(dt)
    _, e = np.frexp(ref)
    e = np.where(ref != 0, e.astype(np.int64) - 1, fi.minexp)
    e = np.maximum(e, fi.minexp) - fi.nmant
    return np.ldexp(np.ones_like(ref), e.astype(np.int32))


def _ulp_err(y, ref, dt):
    return np.abs(y.astype(ref.dtype) - ref) / _ulp(ref, dt)


def _finite_bit_patterns(dt, n):
    """``n`` floats evenly spaced in bit pattern over all finite values of ``dt``."""
    it = np.uint32 if dt == np.float32 else np.uint64
    top = np.array(np.finfo(dt).max, dt).view(it)
    mags = np.linspace(0, int(top), n // 2, dtype=np.float64).astype(it)
    mags = np.minimum(mags, top).view(dt)
    return np.concatenate([mags, -mags])


def _sweep(dt):
    """2**20 points over the interesting range plus bit patterns over all finite floats."""
    lo, hi = (-104.0, 89.0) if dt == np.float32 else (-746.0, 710.0)
    fi = np.finfo(dt)
    s = np.longdouble(fi.smallest_subnormal)
    sub_lo, sub_hi = np.log(s / 2), np.log(np.longdouble(fi.tiny))  # subnormal outputs
    rng = np.random.default_rng(1234)
    parts = [
        np.linspace(lo, hi, 1 << 18),
        rng.uniform(lo, hi, 1 << 17),
        rng.uniform(-1.0, 1.0, 1 << 17),
        np.linspace(sub_lo, sub_hi, 1 << 17),
        _finite_bit_patterns(dt, 1 << 18),
    ]
    return np.concatenate([p.astype(dt) for p in parts])


@pytest.mark.parametrize("name", EXPS)
@pytest.mark.parametrize("dt", DTYPES)
def test_exp_ulp_dense_sweep(dt, name):
    x = _sweep(dt)
    x = x[x <= EXPS[name][1]]
    y = _exp(x, name)
    assert y.dtype == dt
    ref = _oracle(x)
    fi = np.finfo(dt)
    big = ref >= np.asarray(fi.max, ref.dtype) * (1 + fi.eps)  # surely overflows
    assert np.all(np.isposinf(y[big])) and (name == "exp_fast" or not big.any())
    ok = ref <= np.asarray(fi.max, ref.dtype) * (1 - fi.eps)  # surely finite
    err = _ulp_err(y[ok], ref[ok], dt)
    normal = ref[ok] >= fi.tiny
    assert normal.sum() > 400_000
    bound, subnormal_bound = _bounds(dt, name)
    assert err[normal].max() <= bound
    # Gradual underflow: subnormal (and 0) results within one smallest subnormal.
    assert (~normal).sum() > 100_000
    assert err[~normal].max() <= subnormal_bound


@pytest.mark.parametrize("dt", DTYPES)
def test_exp_special_values(dt):
    fi = np.finfo(dt)
    s = fi.smallest_subnormal
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, s, -s, fi.max, -fi.max, 1.0], dt)
    y = _exp(x)
    assert y[0] == 0 and not np.signbit(y[0])
    assert np.isposinf(y[1])
    assert np.isnan(y[2])
    assert np.all(y[3:7] == 1)
    assert np.isposinf(y[7])
    assert y[8] == 0
    assert _ulp_err(y[9:], _oracle(x[9:]), dt).max() <= ULP_BOUND
    # Python-level call (boxes to a Python float) agrees with the jitted loop.
    assert exp_fast(x[9]) == y[9]


@pytest.mark.parametrize("dt", DTYPES)
def test_exp_nonpositive_special_values(dt):
    """The values softmax feeds it (x - max): -inf for excluded entries, NaN, 0; and the
    top of its domain, NONPOSITIVE_X_MAX (above it the value is unspecified)."""
    fi = np.finfo(dt)
    s = fi.smallest_subnormal
    x = np.array([-np.inf, np.nan, 0.0, -0.0, -s, -fi.max, NONPOSITIVE_X_MAX], dt)
    y = _exp(x, "exp_nonpositive")
    assert y[0] == 0 and not np.signbit(y[0])
    assert np.isnan(y[1])
    assert np.all(y[2:5] == 1)
    assert y[5] == 0
    assert y[6] == _exp(x[6:7])[0]  # e**43, exactly exp_fast's value
    assert exp_nonpositive(x[6]) == y[6]


@pytest.mark.parametrize("dt", DTYPES)
def test_exp_overflow_threshold(dt):
    fi = np.finfo(dt)
    x_of = np.log(np.longdouble(fi.max))  # exp(x) > max above this
    below = dt(x_of)
    below = below if below < x_of else np.nextafter(below, dt(0))
    above = np.nextafter(below, dt(np.inf))
    y = _exp(np.array([below, above], dt))
    assert np.isfinite(y[0]) and y[0] > fi.max * dt(0.99)
    assert np.isposinf(y[1])


@pytest.mark.parametrize("name", EXPS)
@pytest.mark.parametrize("dt", DTYPES)
def test_exp_underflow_threshold(dt, name):
    fi = np.finfo(dt)
    s = fi.smallest_subnormal
    ln_s = np.log(np.longdouble(s))
    ln_half_s = np.log(np.longdouble(s) / 2)  # below this exp(x) rounds to +0
    x = np.array([ln_s, ln_half_s - 1e-3, ln_half_s - 1, -1e4], dt)
    y = _exp(x, name)
    assert y[0] == s
    assert np.all(y[1:] == 0)
    # Just above the smallest normal, results are normal and accurate.
    xt = np.array(np.log(np.longdouble(fi.tiny)), dt)
    xt = np.nextafter(xt, dt(0))
    yt = _exp(np.array([xt]), name)
    assert yt[0] >= fi.tiny
    assert _ulp_err(yt, _oracle(np.array([xt])), dt).max() <= _bounds(dt, name)[0]


@pytest.mark.parametrize("dt", DTYPES)
def test_exp_keeps_dtype(dt):
    ty = numba.from_dtype(np.dtype(dt))
    for fn in (exp_scalar, exp_fast, exp_nonpositive, ldexp_fast):
        args = (ty,) * (2 if fn is ldexp_fast else 1)
        fn.compile(args)
        assert [s.return_type for s in fn.nopython_signatures if s.args == args] == [ty]
    exp_reduce.compile((ty,))
    (sig,) = [s for s in exp_reduce.nopython_signatures if s.args == (ty,)]
    assert sig.return_type == numba.types.UniTuple(ty, 2)


def _kernel_bodies(dispatcher, sig):
    """LLVM IR of the compiled function itself (not the CPython wrapper)."""
    ir = dispatcher.inspect_llvm(sig)
    blocks = re.findall(r"^define [^\n]*\n.*?^}", ir, re.S | re.M)
    return "\n".join(b for b in blocks if "cpython" not in b.split("\n")[0])


@pytest.mark.parametrize("dt", DTYPES)
def test_loops_vectorize(dt):
    x = np.linspace(-3, 3, 64).astype(dt)
    exp_loop(x, np.empty_like(x))
    exp_nonpositive_loop(x, np.empty_like(x))
    sum_exp(x, dt(1.0))
    scalar = "float" if dt == np.float32 else "double"
    for fn in (exp_loop, exp_nonpositive_loop, sum_exp):
        (sig,) = [s for s in fn.signatures if s[0].dtype == numba.from_dtype(np.dtype(dt))]
        body = _kernel_bodies(fn, sig)
        assert re.search(rf"<(\d+) x {scalar}>", body), "no vector code"
        assert not re.search(r"@(llvm\.)?exp(f|\.f32|\.f64)?\(", body), "calls exp"
        if dt == np.float32:
            assert "double" not in body, "float32 promoted to float64"


@pytest.mark.parametrize("dt", DTYPES)
def test_sum_exp_reduction(dt):
    x = np.random.default_rng(5).normal(0, 4, 10_001).astype(dt)
    m = x.max()
    s = sum_exp(x, m)
    ref = np.exp(x.astype(np.float64) - np.float64(m)).sum()
    tol = 1e-5 if dt == np.float32 else 1e-13
    assert abs(s - ref) <= tol * ref


@jit
def ldexp_nonpositive_loop(p, k, y):
    for i in range(p.size):
        y[i] = ldexp_nonpositive(p[i], k[i])


@pytest.mark.parametrize("dt", DTYPES)
def test_ldexp_nonpositive_matches_numpy(dt):
    """Correctly rounded (== np.ldexp) for p in exp_reduce's range and any k <= 62:
    every rounding into the subnormals, and 0 far below them; NaN k gives 0."""
    fi = np.finfo(dt)
    rng = np.random.default_rng(3)
    n = 1 << 16
    p = rng.uniform(*P_RANGE, n).astype(dt)
    k = rng.integers(fi.minexp - fi.nmant - 80, 63, n)
    sub = np.arange(fi.minexp - fi.nmant - 3, fi.minexp + 2)  # around the subnormals
    p = np.concatenate([p, np.full(sub.size, 1.5, dt), np.full(sub.size, 0.75, dt), [1.0, 1.0]])
    k = np.concatenate([k, sub, sub, [-1e30, 62]]).astype(dt)
    y = np.empty_like(p)
    ldexp_nonpositive_loop(p, k, y)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(y, np.ldexp(p, k.astype(np.int64)))
    ldexp_nonpositive_loop(np.ones(1, dt), np.array([np.nan], dt), y[:1])
    assert y[0] == 0


def _ldexp(p, k):
    y = np.empty_like(p)
    ldexp_loop(p, k.astype(p.dtype), y)
    return y


@pytest.mark.parametrize("dt", DTYPES)
def test_ldexp_matches_numpy(dt):
    """Correctly rounded (== np.ldexp) for normal |p| in [2**-A, 2**A] and any k."""
    a, kmax = (100, 400) if dt == np.float32 else (960, 3000)
    rng = np.random.default_rng(7)
    n = 1 << 16
    p = (rng.uniform(1, 2, n) * np.exp2(rng.integers(-a, a, n))).astype(dt)
    p *= rng.choice(np.array([-1, 1], dt), n)
    k = rng.integers(-kmax, kmax, n)
    # exercise every rounding into the subnormal range of 1.x * 2**k
    fi = np.finfo(dt)
    sub = np.arange(fi.minexp - fi.nmant - 3, fi.minexp + 2)
    p = np.concatenate([p, np.full(sub.size, 1.5, dt), np.full(sub.size, 1.75, dt)])
    k = np.concatenate([k, sub, sub])
    with np.errstate(all="ignore"):
        ref = np.ldexp(p, k)
    y = _ldexp(p, k)
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(ref))


@pytest.mark.parametrize("dt", DTYPES)
def test_ldexp_extremes(dt):
    fi = np.finfo(dt)
    emax, emin, s = fi.maxexp, fi.minexp, fi.smallest_subnormal
    a = 100 if dt == np.float32 else 960  # |log2 p| covered by the ldexp_fast contract
    cases = [
        (1.0, emin - fi.nmant, s),
        (1.0, emin - fi.nmant - 1, 0.0),  # exactly half the smallest subnormal: ties to 0
        (1.5, emin - fi.nmant - 1, s),
        (1.0, emax - 1, np.ldexp(dt(1), emax - 1)),
        (1.0, emax, np.inf),
        (0.75, emax, np.ldexp(dt(0.75), emax)),  # largest binade, finite
        (-1.0, 1e30, -np.inf),
        (1.0, -1e30, 0.0),
        (-1.0, -1e30, -0.0),
        (1.0, np.inf, np.inf),
        (1.0, -np.inf, 0.0),
        (2.0**a, -10 * emax, 0.0),
        (2.0**-a, 10 * emax, np.inf),
        (s, 1, 2 * s),
        (s, 2 * fi.nmant, np.ldexp(s, 2 * fi.nmant)),
        (0.0, 1e30, 0.0),
        (-0.0, -1e30, -0.0),
        (np.inf, -1e30, np.inf),
        (-np.inf, 1e30, -np.inf),
    ]
    p = np.array([c[0] for c in cases], dt)
    k = np.array([c[1] for c in cases], dt)
    want = np.array([c[2] for c in cases], dt)
    y = _ldexp(p, k)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want))
    nan = _ldexp(np.array([np.nan, np.nan, 1.0], dt), np.array([0, -1e30, np.nan]))
    assert np.isnan(nan[:2]).all() and np.isfinite(nan[2])


# ln 2 split for the reference reduction: n*_LN2_HI is exact in long double for
# |n| < 2**31, and the tail error times 2**25 is below 2**-60.
_LN2_HI = np.longdouble(float.fromhex("0x1.62e42fefp-1"))
_LN2_LO = np.longdouble(float.fromhex("0x1.473de6af278edp-34"))


@pytest.mark.parametrize("dt", DTYPES)
def test_exp_reduce_identity(dt):
    bound = extexp_max_abs(dt)
    assert bound == (EXTEXP_MAX_ABS_F32 if dt == np.float32 else EXTEXP_MAX_ABS_F64)
    edge = dt(bound)
    while edge > bound:
        edge = np.nextafter(edge, dt(0))
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [
            np.linspace(-bound, bound, 1 << 18),
            rng.uniform(-bound, bound, 1 << 17),
            rng.uniform(-2, 2, 1 << 16),
            [edge, -edge, 0.0, -0.0],
        ]
    ).astype(dt)
    p = np.empty_like(x)
    n = np.empty_like(x)
    reduce_loop(x, p, n)
    assert np.all(n == np.rint(n))
    assert np.abs(n).max() <= np.rint(bound / np.log(2))
    assert P_RANGE[0] <= p.min() and p.max() <= P_RANGE[1]
    # p == e**(x - n ln 2), computed in long double
    nl = n.astype(np.longdouble)
    ref = np.exp((x.astype(np.longdouble) - nl * _LN2_HI) - nl * _LN2_LO)
    assert _ulp_err(p, ref, dt).max() <= ULP_BOUND
    # and p * 2**n == e**x where long double can hold e**x
    small = np.abs(x) < 11000
    with np.errstate(over="ignore", under="ignore"):
        full = np.ldexp(p[small].astype(np.longdouble), n[small].astype(np.int64))
        ref_full = np.exp(x[small].astype(np.longdouble))
    assert np.max(np.abs(full / ref_full - 1)) <= ULP_BOUND * np.finfo(dt).eps
    assert exp_reduce(x[0]) == (p[0], n[0])


def test_exp_reduce_nan():
    p = np.empty(1)
    n = np.empty(1)
    reduce_loop(np.array([np.nan]), p, n)
    assert np.isnan(p[0]) and np.isnan(n[0])


@pytest.mark.parametrize("dt", DTYPES)
def test_no_runtime_warnings(dt):
    fi = np.finfo(dt)
    x = np.array([np.inf, -np.inf, np.nan, fi.max, -fi.max, 1e4, -1e4, 0.0, 500.0], dt)
    k = np.array([1e30, -1e30, np.nan, 1e4, -1e4, 0, 1, np.inf, -np.inf], dt)
    out = np.empty_like(x)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        exp_loop(x, out)
        exp_nonpositive_loop(x, out)
        ldexp_loop(np.ones_like(x) * fi.max, k, out)
        ldexp_loop(np.ones_like(x) * fi.smallest_subnormal, k, out)
        reduce_loop(x, out, np.empty_like(x))
        sum_exp(x, dt(0))


@jit
def log_fast_loop(s, y):
    for i in range(s.size):
        y[i] = log_fast(s[i])


@pytest.mark.parametrize("dt", DTYPES)
def test_log_fast_accuracy_and_vectorization(dt):
    """Within 2 ulp of a long-double log over every binade of normal floats and densely
    over [1, 4097] (the row sums it is given); exact at powers of two near 1; the same
    dtype out, in vectors of that dtype."""
    fi = np.finfo(dt)
    rng = np.random.default_rng(13)
    s = np.concatenate([
        np.exp2(rng.uniform(fi.minexp, fi.maxexp, 1 << 18)),
        1.0 + rng.random(1 << 18) * 4096,
        np.nextafter(dt(1.0), np.array([0.0, 2.0], dt)),
        [fi.tiny, fi.max, np.sqrt(dt(2.0))],
    ]).astype(dt)  # fmt: skip
    y = np.empty_like(s)
    log_fast_loop(s, y)
    assert y.dtype == dt
    ref = np.log(s.astype(np.longdouble))
    ulp = np.spacing(np.abs(ref.astype(dt))).astype(np.longdouble)
    assert (np.abs(y - ref) / ulp).max() <= 2.0
    y1 = np.empty(3, dt)
    log_fast_loop(np.array([1.0, 2.0, 0.5], dt), y1)
    assert y1[0] == 0.0 and y1[1] == np.log(dt(2.0)) and y1[2] == -np.log(dt(2.0))
    sig = next(sg for sg in log_fast_loop.signatures if sg[0].dtype == numba.from_dtype(dt))
    vector = "float" if dt == np.float32 else "double"
    assert re.search(rf"<\d+ x {vector}>", _kernel_bodies(log_fast_loop, sig))
    assert not re.search(r"@(llvm\.)?logf?(\.f(32|64))?\(", _kernel_bodies(log_fast_loop, sig))
