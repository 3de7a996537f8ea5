"""Where numsoft follows SciPy's semantics at the edges (issue 19 items 4-12).

Weighted logsumexp (``b``), masked arrays, 0-d results, a subnormal range in
sa_softmax. Expected values come from the definitions (np.longdouble) or are stated by
SciPy's documentation; SciPy itself is the oracle only where its number is the spec.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import special

import numsoft
import oracle


def test_x_and_b_broadcast_together():
    # SciPy and JAX broadcast x against b: the sum runs over the broadcast shape.
    x, b = np.zeros((4, 1, 2, 1)), np.ones((3, 1, 5))
    got = numsoft.logsumexp(x, axis=None, b=b)
    assert got == pytest.approx(np.log(4 * 3 * 2 * 5), rel=1e-15)
    assert got == pytest.approx(special.logsumexp(x, axis=None, b=b), rel=1e-15)
    rows = numsoft.logsumexp(np.arange(3.0), b=np.ones((2, 3)))  # x broadcast to b
    np.testing.assert_allclose(rows, [special.logsumexp(np.arange(3.0))] * 2, rtol=1e-15)
    with pytest.raises(ValueError, match=r"x of shape \(3,\) and b of shape \(2,\)"):
        numsoft.logsumexp(np.zeros(3), b=np.ones(2))


@pytest.mark.parametrize("algorithm", oracle.ALGORITHMS)
def test_nan_weight_gives_nan(algorithm):
    got = numsoft.logsumexp([1.0, 2.0, 3.0], b=[1, np.nan, 1], algorithm=algorithm,
                            return_sign=True)  # fmt: skip
    assert np.isnan(got[0]) and np.isnan(got[1])
    # ... but a NaN weight under the mask is excluded with its entry
    masked = numsoft.logsumexp([1.0, 2.0, 3.0], b=[1, np.nan, 1],
                               where=np.array([True, False, True]))  # fmt: skip
    assert masked == pytest.approx(np.logaddexp(1.0, 3.0), rel=1e-15)


@pytest.mark.parametrize("algorithm", oracle.ALGORITHMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weights_that_cancel_exactly_give_minus_inf_and_sign_zero(algorithm, dtype):
    lse, sign = numsoft.logsumexp(np.zeros(3, dtype), b=np.array([1.0, 2.0, -3.0], dtype),
                                  return_sign=True, algorithm=algorithm)  # fmt: skip
    assert lse == -np.inf and sign == 0
    assert numsoft.logsumexp(np.zeros(3, dtype), b=np.array([1.0, 2.0, -3.0], dtype)) == -np.inf


@pytest.mark.parametrize("dtype, big", [(np.float32, 1e8), (np.float64, 1e16), (np.float64, 1e308)])
def test_signed_weights_at_large_x(dtype, big):
    # log(2 e^x - e^x) = x: adding log 2 to x first is absorbed by rounding at this |x|.
    lse, sign = numsoft.logsumexp(np.array([big, big], dtype), b=np.array([2, -1], dtype),
                                  return_sign=True)  # fmt: skip
    assert (lse, sign) == (dtype(big), 1)
    assert lse.dtype == dtype


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, 7, elements=st.floats(-30, 30)),
    # |b| from 1e-100: weights whose whole sum is subnormal in float64 (b ~ 1e-313)
    # keep only a few significant digits in any float64 algorithm, SciPy's included
    arrays(
        np.float64,
        7,
        elements=st.one_of(st.just(0.0), st.floats(1e-100, 3), st.floats(-3, -1e-100)),
    ),  # fmt: skip
)
def test_weighted_logsumexp_matches_the_definition(x, b):
    lse, sign = numsoft.logsumexp(x, b=b, return_sign=True)
    xl, bl = x.astype(np.longdouble), b.astype(np.longdouble)
    m = xl.max()
    exact = np.sum(bl * np.exp(xl - m))  # Σ b·e^x / e^m
    scale = np.sum(np.abs(bl) * np.exp(xl - m))  # what rounding errors are relative to
    got = sign * np.exp(np.longdouble(lse) - m) if sign != 0 else np.longdouble(0)
    # rounding of the sum, plus lse's own rounding (relative eps·|lse|), which exp()
    # turns into a relative error of the sum
    if sign == 0:  # an empty or exactly cancelling sum
        assert lse == -np.inf and abs(exact) <= 1e-14 * scale
        return
    assert abs(got - exact) <= (1e-14 + 4 * np.finfo(np.float64).eps * abs(lse)) * scale


def test_masked_array_input_honours_its_mask():
    x = np.ma.array([1.0, 2.0, 1e6], mask=[0, 0, 1])
    expected = np.logaddexp(1.0, 2.0)
    assert numsoft.logsumexp(x) == pytest.approx(expected, rel=1e-15)
    with np.errstate(over="ignore"):  # SciPy computes exp(1e6 - 2) under the mask
        assert numsoft.logsumexp(x) == pytest.approx(special.logsumexp(x), rel=1e-15)
    y = numsoft.softmax(x)
    np.testing.assert_allclose(y, [1 / (1 + np.e), np.e / (1 + np.e), 0.0], rtol=1e-15)
    # the mask combines with where=
    both = numsoft.logsumexp(x, where=np.array([False, True, True]))
    assert both == pytest.approx(2.0, rel=1e-15)
    # a variant goes through the same front door
    np.testing.assert_array_equal(numsoft.sparsemax(x) > 0, [False, True, False])


@pytest.mark.parametrize(
    "call",
    [
        lambda x: numsoft.softmax(x, axis=None),
        lambda x: numsoft.log_softmax(x, axis=None),
        lambda x: numsoft.logsumexp(x, axis=None),
        lambda x: numsoft.sparsemax(x, axis=None),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_d_results_are_numpy_scalars(call, dtype):
    # NumPy's ufuncs and reductions, and SciPy, return scalars for 0-d results.
    got = call(np.array(2.5, dtype))
    assert isinstance(got, np.generic) and got.dtype == dtype
    assert isinstance(numsoft.logsumexp(np.ones((2, 3), dtype), axis=None), np.generic)
    out = np.empty((), dtype)
    assert numsoft.softmax(np.array(2.5, dtype), axis=None, out=out) is out  # out= as given


@pytest.mark.parametrize("dtype, tiny", [(np.float32, 1.4e-45), (np.float64, 5e-324)])
def test_sa_softmax_normalized_on_a_subnormal_range(dtype, tiny):
    # (z - min(z_min, 0)) / (max(0, z_max) - min(z_min, 0)) = 1 for the one entry:
    # 1/range overflowed to inf.
    np.testing.assert_array_equal(
        numsoft.sa_softmax(np.array([tiny], dtype), normalized=True), [1.0]
    )
    x = np.array([4, 2, -2], dtype) * dtype(tiny)  # range 6·tiny: weights 1, 2/3, 0
    p = np.exp(x.astype(np.longdouble) - x.max())
    p /= p.sum()
    want = np.array([1.0, 4 / 6, 0.0]) * p
    np.testing.assert_allclose(numsoft.sa_softmax(x, normalized=True), want, rtol=1e-6)


@pytest.mark.parametrize("algorithm", oracle.ALGORITHMS)
def test_logsumexp_keeps_relative_accuracy_near_zero(algorithm):
    # Issue 19 item 8 (SciPy gh-18295): m + log(1 + tiny) rounded to m; log1p keeps it.
    got = numsoft.logsumexp([0.0, -40.0], algorithm=algorithm)
    assert got == pytest.approx(np.logaddexp(0.0, -40.0), rel=1e-15)
    got32 = numsoft.logsumexp(np.float32([0.0, -20.0]), algorithm=algorithm)
    assert got32 == pytest.approx(np.logaddexp(np.float32(0), np.float32(-20)), rel=1e-6)
    # the maximum itself may be far from 0: only the sum's rounding is avoided
    assert numsoft.logsumexp([1e-3, -40.0]) == pytest.approx(np.logaddexp(1e-3, -40.0), rel=1e-15)


@pytest.mark.parametrize(
    "call",
    [
        lambda: numsoft.logsumexp(np.float32([70000, 0]), dtype=np.float16),
        lambda: numsoft.log_softmax(np.float32([70000, 0]), dtype=np.float16),
        lambda: numsoft.logsumexp([-np.inf, 0.0], b=[np.inf, 1.0]),
    ],
)
def test_numpy_warnings_reach_the_caller(call):
    # Issue 19 item 9: overflow when rounding to float16, inf·0 of a weight: NumPy's
    # RuntimeWarning, as documented (README, docs/differences.md).
    with pytest.warns(RuntimeWarning):
        call()
