"""Core functions against the extended-precision oracle: algorithm × dtype × axis × layout."""

import numpy as np
import pytest
import scipy.special as sps

import numsoft
import oracle
from oracle import ALGORITHMS, assert_close_log, assert_close_prob

DTYPES = [np.float32, np.float64]
rng = np.random.default_rng(1234)
BASE = rng.normal(scale=3.0, size=(4, 5, 37))


def layouts(a):
    """The same values in several memory layouts."""
    yield "C", np.ascontiguousarray(a)
    yield "F", np.asfortranarray(a)
    yield "reversed", np.ascontiguousarray(a[::-1, :, ::-1])[::-1, :, ::-1]
    big = np.zeros((a.shape[0], 2 * a.shape[1], a.shape[2] + 3), dtype=a.dtype)
    big[:, ::2, 1:-2] = a
    yield "strided", big[:, ::2, 1:-2]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1, (0, 2), None])
def test_softmax_family_matches_oracle(algorithm, dtype, axis):
    x0 = BASE.astype(dtype)
    ref_p = oracle.softmax(x0, axis)
    ref_l = oracle.log_softmax(x0, axis)
    ref_lse = oracle.logsumexp(x0, axis)
    for name, x in layouts(x0):
        np.testing.assert_array_equal(x, x0)
        y = numsoft.softmax(x, axis=axis, algorithm=algorithm)
        assert y.dtype == dtype and y.shape == x.shape, name
        assert_close_prob(y, ref_p, dtype)
        assert_close_log(numsoft.log_softmax(x, axis=axis, algorithm=algorithm), ref_l, dtype)
        lse = numsoft.logsumexp(x, axis=axis, algorithm=algorithm)
        assert np.shape(lse) == np.shape(ref_lse)
        assert_close_log(np.asarray(lse), ref_lse, dtype)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_long_rows_and_wide_range(algorithm, dtype):
    # Long rows, large offsets (beyond the two-pass split's bound in float32) and a
    # spread of magnitudes so that small probabilities are checked too.
    x = rng.normal(scale=4.0, size=(3, 5000)).astype(dtype)
    x[1] += dtype(3.0e4)
    x[2] -= dtype(1.0e6)
    assert_close_prob(numsoft.softmax(x, algorithm=algorithm), oracle.softmax(x), dtype)
    assert_close_log(numsoft.logsumexp(x, algorithm=algorithm), oracle.logsumexp(x), dtype)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_agrees_with_scipy(algorithm):
    x = rng.normal(size=(6, 50))
    np.testing.assert_allclose(
        numsoft.softmax(x, axis=0, algorithm=algorithm), sps.softmax(x, axis=0), rtol=1e-13
    )
    np.testing.assert_allclose(
        numsoft.log_softmax(x, algorithm=algorithm), sps.log_softmax(x, axis=-1), atol=1e-13
    )
    np.testing.assert_allclose(
        numsoft.logsumexp(x, axis=(0, 1), algorithm=algorithm), sps.logsumexp(x), rtol=1e-14
    )


@pytest.mark.parametrize("algorithm", ["two-pass", "online"])
@pytest.mark.parametrize("temperature", [0.05, 0.7, 3.0])
def test_temperature(algorithm, temperature):
    x = rng.normal(size=(4, 9))
    kw = dict(temperature=temperature, algorithm=algorithm)
    assert_close_prob(numsoft.softmax(x, **kw), oracle.softmax(x, -1, temperature), np.float64)
    assert_close_log(
        numsoft.log_softmax(x, **kw), oracle.log_softmax(x, -1, temperature), np.float64
    )
    assert_close_log(numsoft.logsumexp(x, **kw), oracle.logsumexp(x, -1, temperature), np.float64)


def test_small_temperature_is_max_and_does_not_overflow():
    x = np.array([[1.0, 3.0, 2.0], [1e30, -1e30, 0.0]])
    np.testing.assert_allclose(numsoft.logsumexp(x, temperature=1e-300), [3.0, 1e30])
    np.testing.assert_array_equal(numsoft.softmax(x, temperature=1e-300), [[0, 1, 0], [1, 0, 0]])


@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_keepdims_and_weights(keepdims):
    x = rng.normal(size=(3, 4, 5))
    b = rng.uniform(0.0, 2.0, size=(4, 5))
    b[0, 0] = 0.0
    for axis in [1, (0, 2), None]:
        ours = numsoft.logsumexp(x, axis=axis, b=b, keepdims=keepdims)
        ref = sps.logsumexp(x, axis=axis, b=b, keepdims=keepdims)
        np.testing.assert_allclose(ours, ref, rtol=1e-13)
        assert np.shape(ours) == np.shape(ref)


def test_logsumexp_signed_weights_match_scipy():
    x = rng.normal(size=(6, 8))
    b = rng.normal(size=(6, 8))
    for return_sign in (False, True):
        ours = numsoft.logsumexp(x, b=b, return_sign=return_sign)
        ref = sps.logsumexp(x, axis=-1, b=b, return_sign=return_sign)
        if return_sign:
            np.testing.assert_allclose(ours[0], ref[0], rtol=1e-12)
            np.testing.assert_array_equal(ours[1], ref[1])
        else:
            np.testing.assert_allclose(ours, ref, rtol=1e-12)
    # An exactly cancelling sum is -inf with sign 0.
    lse, sign = numsoft.logsumexp([1.0, 1.0], b=[1.0, -1.0], return_sign=True)
    assert lse == -np.inf and sign == 0


def test_logsumexp_weights_with_special_values_warn_nothing():
    # Excluded (b = 0) inf entries and all-zero weights: SciPy's results, no warning.
    x = np.array([[1.0, np.inf], [1.0, 2.0], [np.inf, -np.inf]])
    b = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, -1.0]])
    with np.errstate(all="raise"):
        lse, sign = numsoft.logsumexp(x, b=b, return_sign=True)
    ref, ref_sign = sps.logsumexp(x, axis=-1, b=b, return_sign=True)
    np.testing.assert_array_equal(lse, ref)
    np.testing.assert_array_equal(sign, ref_sign)


def test_full_reduction_returns_scalar_like_scipy():
    x = rng.normal(size=(3, 4))
    r = numsoft.logsumexp(x, axis=None)
    assert np.ndim(r) == 0
    np.testing.assert_allclose(r, sps.logsumexp(x), rtol=1e-14)


def test_backward_matches_jacobian():
    x = rng.normal(size=(3, 4, 6))
    dy = rng.normal(size=x.shape)
    for axis in (-1, 1):
        y = numsoft.softmax(x, axis=axis)
        ym, dym = np.moveaxis(y, axis, -1), np.moveaxis(dy, axis, -1)
        jac = (
            np.einsum("...i,ij->...ij", ym, np.eye(ym.shape[-1]))
            - ym[..., :, None] * ym[..., None, :]
        )
        ref = np.moveaxis(np.einsum("...ij,...j->...i", jac, dym), -1, axis)
        np.testing.assert_allclose(numsoft.softmax_backward(y, dy, axis=axis), ref, atol=1e-14)
        ylog = numsoft.log_softmax(x, axis=axis)
        ref_log = dy - np.exp(ylog) * dy.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(
            numsoft.log_softmax_backward(ylog, dy, axis=axis), ref_log, atol=1e-14
        )


def test_backward_against_finite_differences():
    x = rng.normal(size=7)
    dy = rng.normal(size=7)
    eps = 1e-6
    fd = np.array(
        [
            (numsoft.softmax(x + eps * e) @ dy - numsoft.softmax(x - eps * e) @ dy) / (2 * eps)
            for e in np.eye(7)
        ]
    )
    np.testing.assert_allclose(numsoft.softmax_backward(numsoft.softmax(x), dy), fd, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# (96, 100) and (3, 5000) are past SERIAL_MAX_ELEMENTS: the parallel drivers; along
# axis 0, (96, 100) is one column block (the serial twin) and (3, 5000) several.
@pytest.mark.parametrize("shape", [(3, 5), (40, 50), (7,), (2, 3, 4), (96, 100), (3, 5000)])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("t", [1.0, 0.3])
def test_default_call_fast_path_gives_the_general_paths_bits(dtype, shape, axis, t):
    # frontdoor.arguments.default_call_shape skips the general argument handling for default
    # calls (a float temperature included); the same temperature as a NumPy scalar
    # takes the general path, with the same kernels.
    x = np.random.default_rng(3).normal(size=shape).astype(dtype)
    fast = numsoft.frontdoor.arguments.default_call_shape
    assert fast(x, axis, None, None, None, t, "auto") is not None
    assert fast(x, axis, None, None, None, np.float64(t), "auto") is None
    for f in (numsoft.softmax, numsoft.log_softmax):
        want = f(x, axis=axis, temperature=np.float64(t))
        np.testing.assert_array_equal(f(x, axis=axis, temperature=t), want)
        out = np.empty_like(x)  # out= takes the fast path too (issue 23: no slower)
        assert fast(x, axis, out, None, None, t, "auto")
        assert f(x, axis=axis, out=out, temperature=t) is out
        np.testing.assert_array_equal(out, want)
        inplace = x.copy()
        assert f(inplace, axis=axis, out=inplace, temperature=t) is inplace
        np.testing.assert_array_equal(inplace, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_spelling_of_a_default_call_takes_the_fast_path(dtype):
    # dtype= naming x's own dtype (scikit-learn's inplace softmax passes X.dtype), an
    # explicit "auto", a positive axis, an int temperature, out=x: the same fast path,
    # the same bits as the bare call; another dtype, a string, or a bool temperature
    # take the general path.
    x = np.random.default_rng(5).normal(size=(4, 8)).astype(dtype)
    fast = numsoft.frontdoor.arguments.default_call_shape
    for spelled in (x.dtype, dtype, np.dtype(dtype)):
        assert fast(x, 1, x, spelled, None, 1.0, "auto") == (4, 8, 1)
    assert fast(x, 1, None, None, None, 1, "auto") == (4, 8, 1)
    other = np.float64 if dtype == np.float32 else np.float32
    for slow in ((other, 1.0), (np.dtype(dtype).name, 1.0), (None, True)):
        assert fast(x, 1, None, slow[0], None, slow[1], "auto") is None
    want = numsoft.softmax(x)
    inplace = x.copy()
    got = numsoft.softmax(inplace, axis=1, out=inplace, dtype=inplace.dtype, algorithm="auto")
    assert got is inplace
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(numsoft.softmax(x, temperature=2), numsoft.softmax(x / 2.0))
    np.testing.assert_array_equal(numsoft.logsumexp(x, 1, dtype=dtype), numsoft.logsumexp(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (7,), (2, 3, 4), (64, 100), (3, 5000)])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("t", [1.0, 0.3])
def test_logsumexp_fast_path_gives_the_general_paths_bits(dtype, shape, axis, keepdims, t):
    # A default logsumexp call runs its cached plan (frontdoor.run._default_logsumexp); the
    # same temperature as a NumPy scalar takes the general path: same values, shape,
    # dtype, type.
    x = np.random.default_rng(5).normal(size=shape).astype(dtype)
    x.flat[0] = 0.0  # a row whose logsumexp is refined near 0 when the rest is tiny
    x.flat[1:3] = -40.0
    shape3 = numsoft.frontdoor.arguments.default_call_shape(x, axis, None, None, None, 1.0, "auto")
    assert numsoft.cpu.rows.default_logsumexp_plan(x.dtype, shape3) is not None
    want = numsoft.logsumexp(x, axis=axis, keepdims=keepdims, temperature=np.float64(t))
    got = numsoft.logsumexp(x, axis=axis, keepdims=keepdims, temperature=t)
    assert type(got) is type(want) and np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_default_call_fast_path_leaves_overlapping_out_to_the_general_path():
    buf = np.random.default_rng(4).normal(size=13)
    x, out = buf[:12].reshape(3, 4), buf[1:].reshape(3, 4)  # shifted by one element
    fast = numsoft.frontdoor.arguments.default_call_shape
    assert fast(x, -1, out, None, None, 1.0, "auto") is None
    assert fast(x, -1, x, None, None, 1.0, "auto") is not None
    want = numsoft.softmax(x.copy())
    numsoft.softmax(x, out=out)
    np.testing.assert_array_equal(out, want)
