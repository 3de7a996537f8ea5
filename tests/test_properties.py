"""Hypothesis properties: simplex, shift invariance, agreement of all pass structures."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import numsoft
import oracle
from oracle import ALGORITHMS

finite = st.floats(-80.0, 80.0, allow_nan=False, width=64)
arrays = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64]),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9),
    elements=finite,
)
settings.register_profile("numsoft", max_examples=60, deadline=None)
settings.load_profile("numsoft")


def an_axis(data, ndim):
    return data.draw(st.sampled_from([None, *range(-ndim, ndim)]), label="axis")


def a_layout(data, x):
    kind = data.draw(st.sampled_from(["C", "F", "reversed"]), label="layout")
    if kind == "F":
        return np.asfortranarray(x)
    if kind == "reversed":
        return np.ascontiguousarray(x[::-1])[::-1]
    return x


@given(arrays, st.data())
def test_all_algorithms_agree_and_sum_to_one(x, data):
    axis = an_axis(data, x.ndim)
    x = a_layout(data, x)
    rtol = oracle.RTOL[x.dtype]
    ref = oracle.softmax(x, axis)
    results = [numsoft.softmax(x, axis=axis, algorithm=a) for a in ALGORITHMS]
    for y in results:
        oracle.assert_close_prob(y, ref, x.dtype)
        sums = np.sum(y, axis=axis, dtype=np.float64)
        np.testing.assert_allclose(sums, 1.0, rtol=rtol * 10)
        assert (y >= 0).all()


@given(arrays, st.integers(-1000, 1000), st.data())
def test_shift_invariance(x, shift, data):
    # Logits on a 2^-12 grid plus an integer shift are exact in float64, so the shifted
    # row has exactly the same gaps x - max and must give the same probabilities.
    axis = an_axis(data, x.ndim)
    algorithm = data.draw(st.sampled_from(ALGORITHMS), label="algorithm")
    grid = np.round(x.astype(np.float64) * 4096) / 4096
    y = numsoft.softmax(grid, axis=axis, algorithm=algorithm)
    y_shifted = numsoft.softmax(grid + shift, axis=axis, algorithm=algorithm)
    oracle.assert_close_prob(y_shifted, y, np.float64)


@given(arrays, st.data())
def test_log_softmax_is_log_of_softmax_and_lse_consistent(x, data):
    axis = an_axis(data, x.ndim)
    algorithm = data.draw(st.sampled_from(ALGORITHMS), label="algorithm")
    y = numsoft.softmax(x, axis=axis, algorithm=algorithm).astype(np.float64)
    ly = numsoft.log_softmax(x, axis=axis, algorithm=algorithm).astype(np.float64)
    keep = numsoft.logsumexp(x, axis=axis, keepdims=True, algorithm=algorithm)
    tol = 1e-5 if x.dtype == np.float32 else 1e-12
    pos = y > 1e-30
    np.testing.assert_allclose(ly[pos], np.log(y[pos]), atol=tol, rtol=tol)
    np.testing.assert_allclose(ly, x - keep, atol=tol * (1 + np.abs(x).max()))


@given(arrays, st.data())
def test_monotone_in_each_logit(x, data):
    # Raising one logit never lowers its probability and never raises the others'.
    axis = -1
    i = data.draw(st.integers(0, x.shape[-1] - 1), label="i")
    algorithm = data.draw(st.sampled_from(ALGORITHMS), label="algorithm")
    bumped = x.copy()
    bumped[..., i] += x.dtype.type(1.0)
    y0 = numsoft.softmax(x, axis=axis, algorithm=algorithm)
    y1 = numsoft.softmax(bumped, axis=axis, algorithm=algorithm)
    slack = 4 * oracle.RTOL[x.dtype]
    assert (y1[..., i] >= y0[..., i] * (1 - slack)).all()
    others = np.ones(x.shape[-1], bool)
    others[i] = False
    assert (y1[..., others] <= y0[..., others] * (1 + slack) + 1e-37).all()
