"""Fused operations (SPEC §5) against naive NumPy references written here.

The references compute the definitions directly in extended precision (np.longdouble
or float64): the full softmax, the loss as −Σ target·log_softmax, the full score
matrix of attention. Gradients are checked against central finite differences of
those references.
"""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numsoft

DTYPES = [np.float32, np.float64]
rng = np.random.default_rng(20240805)

#: Relative tolerance of the fused results against the extended-precision references.
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


# ---------------------------------------------------------------- references


def ref_log_softmax(x, axis=-1):
    xl = np.asarray(x, dtype=np.longdouble)
    m = np.max(xl, axis=axis, keepdims=True)
    return xl - m - np.log(np.sum(np.exp(xl - m), axis=axis, keepdims=True))


def ref_topk(x, k, axis=-1):
    """Probabilities at the k largest logits, ties by lowest index (stable sort)."""
    order = np.argsort(-np.asarray(x, dtype=np.float64), axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(np.exp(ref_log_softmax(x, axis)), idx, axis=axis), idx


def ref_ce_rows(x, labels, eps=0.0, z=0.0, ignore_index=-100, axis=-1):
    """Per-row loss −Σ_j t_j·log p_j + z·lse², t = (1−ε)·onehot + ε/C; and lse.

    Ignored rows get loss 0. Classes with t_j = 0 are left out of the sum (so a −inf
    logit there does not make 0·(−inf)).
    """
    xl = np.moveaxis(np.asarray(x, dtype=np.longdouble), axis, -1)
    n_classes = xl.shape[-1]
    valid = labels != ignore_index
    onehot = np.arange(n_classes) == np.where(valid, labels, 0)[..., None]
    target = (1 - eps) * onehot + eps / n_classes
    logp = ref_log_softmax(xl)
    with np.errstate(invalid="ignore"):
        terms = np.where(target > 0, -target * logp, 0)
    m = xl.max(-1)
    lse = m + np.log(np.exp(xl - m[..., None]).sum(-1))
    loss = terms.sum(-1) + z * lse**2
    return np.where(valid, loss, 0), lse


def ref_ce(x, labels, reduction="mean", **kw):
    loss, _ = ref_ce_rows(x, labels, **kw)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / np.count_nonzero(labels != kw.get("ignore_index", -100))


def fd_grad(f, x, h=1e-6):
    """Central finite differences of the scalar function f at x, in long double."""
    x = np.array(x, dtype=np.longdouble)
    g = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + h
        up = f(x)
        x[idx] = old - h
        down = f(x)
        x[idx] = old
        g[idx] = (up - down) / (2 * h)
    return g


def ref_attention(q, k, v, scale, mask=None, causal=False):
    """The full score matrix, masked, softmax, times v; rows with no key give 0."""
    s = np.einsum("...id,...jd->...ij", q.astype(np.float64), k.astype(np.float64)) * scale
    allowed = np.ones(s.shape, dtype=bool)
    if mask is not None:
        allowed = allowed & mask
    if causal:
        allowed = allowed & np.tril(np.ones(s.shape[-2:], dtype=bool))
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0))
    den = e.sum(-1, keepdims=True)
    p = np.divide(e, den, out=np.zeros_like(e), where=den > 0)
    return p @ v.astype(np.float64)


def assert_close(actual, expected, dtype, scale=1.0):
    rtol = RTOL[np.dtype(dtype)]
    np.testing.assert_allclose(
        np.asarray(actual, dtype=np.longdouble), expected, rtol=rtol, atol=rtol * scale
    )


# ---------------------------------------------------------------- softmax_topk


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_matches_reference(dtype):
    # 2500 per row: two full blocks of the blocked online normalizer and a partial one.
    x = (3 * rng.standard_normal((6, 2500))).astype(dtype)
    x[2, :1500] = -np.inf  # a block of only -inf (masked) entries, then a mixed one
    x[3] += dtype(1000)
    for k in (1, 7):
        values, indices = numsoft.softmax_topk(x, k)
        ref_v, ref_i = ref_topk(x, k)
        assert values.dtype == dtype and indices.dtype == np.int64
        assert values.shape == indices.shape == (6, k)
        np.testing.assert_array_equal(indices, ref_i)
        assert_close(values, ref_v, dtype, scale=0.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_other_axes_and_layouts(dtype):
    x0 = rng.standard_normal((4, 37, 5)).astype(dtype)
    for x in (x0, np.asfortranarray(x0), x0[::-1, :, ::-1]):
        for axis in (0, 1):
            values, indices = numsoft.softmax_topk(x, 3, axis=axis)
            ref_v, ref_i = ref_topk(x, 3, axis=axis)
            np.testing.assert_array_equal(indices, ref_i)
            assert_close(values, ref_v, dtype, scale=0.0)
    values, indices = numsoft.softmax_topk(x0, 4, axis=None)
    ref_v, ref_i = ref_topk(x0.ravel(), 4)
    np.testing.assert_array_equal(indices, ref_i)
    assert_close(values, ref_v, dtype, scale=0.0)


def test_topk_ties_lowest_index_first():
    x = rng.integers(0, 4, size=(5, 3000)).astype(np.float64)  # thousands of ties
    for view in (x, x[:, ::-1]):
        values, indices = numsoft.softmax_topk(view, 50)
        ref_v, ref_i = ref_topk(view, 50)
        np.testing.assert_array_equal(indices, ref_i)
        assert_close(values, ref_v, np.float64, scale=0.0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-3, 3), min_size=1, max_size=40),
    st.integers(1, 40),
)
def test_topk_property_sorted_and_stable(items, k):
    x = np.array(items, dtype=np.float64)
    k = min(k, x.size)
    values, indices = numsoft.softmax_topk(x, k)
    ref_v, ref_i = ref_topk(x, k)
    np.testing.assert_array_equal(indices, ref_i)
    assert np.all(np.diff(values) <= 0)
    assert_close(values, ref_v, np.float64, scale=0.0)


def test_topk_special_values():
    x = np.array(
        [
            [1.0, np.nan, 2.0, 0.0],  # NaN → NaN values; NaN ranks first
            [1.0, np.inf, 2.0, np.inf],  # the +inf entries share the mass
            [-np.inf, -np.inf, -np.inf, -np.inf],  # only -inf → NaN
            [-np.inf, 0.0, -np.inf, 0.0],  # -inf entries have probability 0
        ]
    )
    values, indices = numsoft.softmax_topk(x, 3)
    assert np.isnan(values[0]).all() and indices[0, 0] == 1
    np.testing.assert_array_equal(values[1], [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(indices[1], [1, 3, 2])
    assert np.isnan(values[2]).all()
    np.testing.assert_array_equal(indices[2], [0, 1, 2])
    np.testing.assert_array_equal(values[3], [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(indices[3], [1, 3, 0])


def test_topk_dtypes_and_input_untouched():
    x = np.array([[3, 1, 2]], dtype=np.int32)
    values, indices = numsoft.softmax_topk(x, 2)
    assert values.dtype == np.float64
    np.testing.assert_array_equal(indices, [[0, 2]])
    h = np.array([0.5, 1.5, -1.0], dtype=np.float16)
    h.flags.writeable = False
    values, _ = numsoft.softmax_topk(h, 1)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(h, np.array([0.5, 1.5, -1.0], dtype=np.float16))


@pytest.mark.parametrize("k", [0, 4, -1])
def test_topk_k_out_of_range(k):
    with pytest.raises(ValueError, match="k"):
        numsoft.softmax_topk(np.zeros((2, 3)), k)


def test_topk_bad_arguments():
    with pytest.raises(TypeError, match="k"):
        numsoft.softmax_topk(np.zeros(3), 1.5)
    with pytest.raises(TypeError, match="k"):
        numsoft.softmax_topk(np.zeros(3), True)
    with pytest.raises(TypeError, match="axis"):
        numsoft.softmax_topk(np.zeros((2, 3)), 1, axis=(0, 1))
    with pytest.raises(ValueError, match="k"):
        numsoft.softmax_topk(np.zeros((2, 0)), 1)
    with pytest.raises(TypeError, match="complex"):
        numsoft.softmax_topk(np.zeros(3, dtype=complex), 1)


# ---------------------------------------------------------------- cross_entropy


def _labels(shape, n_classes, ignore_every=5, ignore_index=-100):
    labels = rng.integers(0, n_classes, size=shape)
    labels.flat[::ignore_every] = ignore_index
    return labels


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps,z", [(0.0, 0.0), (0.1, 0.0), (0.0, 1e-3), (0.2, 1e-2)])
def test_cross_entropy_matches_reference(dtype, eps, z):
    x = (2 * rng.standard_normal((9, 1500))).astype(dtype)  # rows span two blocks
    x[4] += dtype(200.0)
    labels = _labels(9, 1500)
    kw = dict(label_smoothing=eps, z_loss=z)
    rows, lse = ref_ce_rows(x, labels, eps, z)
    for reduction in ("mean", "sum", "none"):
        loss = numsoft.cross_entropy(x, labels, reduction=reduction, **kw)
        expected = ref_ce(x, labels, reduction, eps=eps, z=z)
        assert np.asarray(loss).dtype == dtype
        assert np.shape(loss) == np.shape(expected)
        assert_close(loss, expected, dtype)
    _, got_lse = numsoft.cross_entropy(x, labels, reduction="none", return_lse=True, **kw)
    assert_close(got_lse, lse, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_class_axis_and_layouts(dtype):
    x0 = rng.standard_normal((3, 40, 5)).astype(dtype)  # PyTorch (N, C, d) layout
    labels = _labels((3, 5), 40, ignore_every=4)
    expected = ref_ce(x0, labels, "none", eps=0.1, z=1e-3, axis=1)
    for x in (x0, np.asfortranarray(x0), np.moveaxis(np.moveaxis(x0, 1, -1).copy(), -1, 1)):
        loss, grad = numsoft.cross_entropy(x, labels, axis=1, label_smoothing=0.1, z_loss=1e-3,
                                           reduction="none", return_grad=True)  # fmt: skip
        assert loss.shape == (3, 5) and grad.shape == x0.shape
        assert_close(loss, expected, dtype)
        _, grad_rows = numsoft.cross_entropy(np.moveaxis(x, 1, -1), labels,
                                             label_smoothing=0.1, z_loss=1e-3, reduction="none",
                                             return_grad=True)  # fmt: skip
        rtol = RTOL[np.dtype(dtype)]
        np.testing.assert_allclose(np.moveaxis(grad, 1, -1), grad_rows, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradient_finite_differences(reduction):
    x = 2 * rng.standard_normal((4, 6))
    labels = np.array([1, -100, 5, 0])
    kw = dict(eps=0.2, z=0.05)
    _, grad = numsoft.cross_entropy(x, labels, label_smoothing=0.2, z_loss=0.05,
                                    reduction=reduction, return_grad=True)  # fmt: skip
    # "none" returns the gradient of the sum of the per-row losses.
    red = "sum" if reduction == "none" else reduction
    expected = fd_grad(lambda xx: ref_ce(xx, labels, red, **kw), x)
    np.testing.assert_allclose(grad, expected.astype(np.float64), rtol=1e-7, atol=1e-9)
    assert np.all(grad[1] == 0.0)  # the ignored row


def test_cross_entropy_gradient_float32():
    x = rng.standard_normal((5, 30)).astype(np.float32)
    labels = np.array([3, 29, 0, 7, 12])
    _, grad = numsoft.cross_entropy(x, labels, label_smoothing=0.1, z_loss=1e-2,
                                    return_grad=True)  # fmt: skip
    expected = fd_grad(lambda xx: ref_ce(xx, labels, eps=0.1, z=1e-2), x)
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, expected.astype(np.float64), rtol=1e-5, atol=1e-7)


def test_cross_entropy_ignore_index():
    x = rng.standard_normal((4, 7))
    labels = np.array([-1, 2, -1, 6])
    loss = numsoft.cross_entropy(x, labels, ignore_index=-1, reduction="none")
    np.testing.assert_array_equal(loss[[0, 2]], 0.0)
    assert_close(numsoft.cross_entropy(x, labels, ignore_index=-1),
                 ref_ce(x, labels, ignore_index=-1), np.float64)  # fmt: skip
    # All rows ignored: "mean" is 0/0 = NaN (PyTorch), "sum" is 0, gradients are 0.
    all_ignored = np.full(4, -100)
    mean, grad = numsoft.cross_entropy(x, all_ignored, return_grad=True)
    assert np.isnan(mean)
    np.testing.assert_array_equal(grad, 0.0)
    assert numsoft.cross_entropy(x, all_ignored, reduction="sum") == 0.0


@pytest.mark.parametrize("bad", [7, -1, 100])
def test_cross_entropy_labels_out_of_range(bad):
    x = np.zeros((3, 7))
    with pytest.raises(ValueError, match="labels"):
        numsoft.cross_entropy(x, np.array([0, bad, 1]))


def test_cross_entropy_bad_arguments():
    x = np.zeros((3, 7))
    with pytest.raises(TypeError, match="labels"):
        numsoft.cross_entropy(x, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="labels"):
        numsoft.cross_entropy(x, np.array([0, 1]))
    with pytest.raises(ValueError, match="label_smoothing"):
        numsoft.cross_entropy(x, np.array([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="z_loss"):
        numsoft.cross_entropy(x, np.array([0, 1, 2]), z_loss=-1.0)
    with pytest.raises(ValueError, match="reduction"):
        numsoft.cross_entropy(x, np.array([0, 1, 2]), reduction="avg")
    with pytest.raises(TypeError, match="axis"):
        numsoft.cross_entropy(x, np.array([0, 1, 2]), axis=None)


def test_cross_entropy_special_values():
    x = np.array([[0.0, -np.inf, 1.0], [0.0, np.nan, 1.0], [-np.inf, -np.inf, -np.inf]])
    loss, grad = numsoft.cross_entropy(x, np.array([0, 0, 0]), reduction="none",
                                       return_grad=True)  # fmt: skip
    expected, _ = ref_ce_rows(x[:1], np.array([0]))
    assert_close(loss[0], expected[0], np.float64)
    assert grad[0, 1] == 0.0 and np.isfinite(grad[0]).all()  # -inf class: probability 0
    assert np.isnan(loss[1]) and np.isnan(grad[1]).all()
    assert not np.isfinite(loss[2]) and np.isnan(grad[2]).all()
    # A label on a -inf class costs +inf.
    assert numsoft.cross_entropy(x[:1], np.array([1])) == np.inf


def test_cross_entropy_dtypes_and_empty():
    labels = np.array([2, 0], dtype=np.uint8)
    ints = np.array([[1, 2, 3], [0, 5, 1]], dtype=np.int16)
    loss = numsoft.cross_entropy(ints, labels)
    assert isinstance(loss, np.float64)
    assert_close(loss, ref_ce(ints, labels), np.float64)
    half = ints.astype(np.float16)
    assert numsoft.cross_entropy(half, labels).dtype == np.float32
    assert np.isnan(numsoft.cross_entropy(np.zeros((0, 4)), np.zeros(0, dtype=int)))
    loss, lse = numsoft.cross_entropy(np.zeros((2, 0)), np.full(2, -100), reduction="none",
                                      return_lse=True)  # fmt: skip
    np.testing.assert_array_equal(loss, 0.0)
    np.testing.assert_array_equal(lse, -np.inf)


def test_cross_entropy_one_row():
    x = np.array([1.0, 2.0, 3.0])
    loss, lse = numsoft.cross_entropy(x, 2, return_lse=True, reduction="none")
    assert np.ndim(loss) == 0 and np.ndim(lse) == 0
    assert_close(loss, -ref_log_softmax(x)[2], np.float64)


# ---------------------------------------------------------------- linear_cross_entropy


def ref_linear_ce(h, W, labels, bias=None, reduction="mean", **kw):
    logits = np.asarray(h, np.longdouble) @ np.asarray(W, np.longdouble).T
    if bias is not None:
        logits = logits + bias
    return ref_ce(logits, labels, reduction, **kw)


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_cross_entropy_matches_reference(dtype):
    n, dim, vocab = 37, 8, 1000
    h = rng.standard_normal((n, dim)).astype(dtype)
    W = (0.5 * rng.standard_normal((vocab, dim))).astype(dtype)
    bias = rng.standard_normal(vocab).astype(dtype)
    labels = _labels(n, vocab, ignore_every=6)
    kw = dict(label_smoothing=0.1, z_loss=1e-3)
    ref_kw = dict(eps=0.1, z=1e-3)
    for reduction in ("mean", "sum", "none"):
        for chunk in (300, None):  # 300: an uneven last chunk
            loss = numsoft.linear_cross_entropy(h, W, labels, bias=bias, chunk_size=chunk,
                                                reduction=reduction, **kw)  # fmt: skip
            expected = ref_linear_ce(h, W, labels, bias, reduction, **ref_kw)
            assert np.asarray(loss).dtype == dtype
            assert_close(loss, expected, dtype)
    _, lse = numsoft.linear_cross_entropy(h, W, labels, chunk_size=128, return_lse=True)
    _, ref_lse = ref_ce_rows(h.astype(np.longdouble) @ W.astype(np.longdouble).T, labels)
    assert_close(lse, ref_lse, dtype)


@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_cross_entropy_gradients_finite_differences(with_bias):
    n, dim, vocab = 4, 3, 11
    h = rng.standard_normal((n, dim))
    W = rng.standard_normal((vocab, dim))
    bias = rng.standard_normal(vocab) if with_bias else None
    labels = np.array([10, -100, 0, 4])
    kw = dict(eps=0.2, z=0.05)
    out = numsoft.linear_cross_entropy(h, W, labels, bias=bias, chunk_size=4, label_smoothing=0.2,
                                       z_loss=0.05, return_grad=True)  # fmt: skip
    assert len(out) == (4 if with_bias else 3)
    loss, dh, dW = out[:3]
    assert_close(loss, ref_linear_ce(h, W, labels, bias, **kw), np.float64)
    fd = dict(rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        dh, fd_grad(lambda hh: ref_linear_ce(hh, W, labels, bias, **kw), h).astype(float), **fd
    )
    np.testing.assert_allclose(
        dW, fd_grad(lambda ww: ref_linear_ce(h, ww, labels, bias, **kw), W).astype(float), **fd
    )
    if with_bias:
        expected = fd_grad(lambda bb: ref_linear_ce(h, W, labels, bb, **kw), bias)
        np.testing.assert_allclose(out[3], expected.astype(float), **fd)


def test_linear_cross_entropy_gradients_float32_match_cross_entropy():
    h = rng.standard_normal((2, 3, 16)).astype(np.float32)  # leading row dimensions
    W = (0.3 * rng.standard_normal((500, 16))).astype(np.float32)
    labels = _labels((2, 3), 500, ignore_every=4)
    loss, dh, dW = numsoft.linear_cross_entropy(h, W, labels, chunk_size=97, reduction="none",
                                                return_grad=True)  # fmt: skip
    assert loss.shape == (2, 3) and dh.shape == h.shape and dW.shape == W.shape
    h64, W64 = h.reshape(-1, 16).astype(np.float64), W.astype(np.float64)
    expected = fd_grad(lambda hh: ref_linear_ce(hh, W64, labels.ravel(), reduction="sum"), h64)
    np.testing.assert_allclose(dh.reshape(-1, 16), expected.astype(float), rtol=1e-4, atol=1e-6)
    _, g = numsoft.cross_entropy(h64 @ W64.T, labels.ravel(), reduction="sum", return_grad=True)
    np.testing.assert_allclose(dW, g.T @ h64, rtol=1e-4, atol=1e-6)


def test_linear_cross_entropy_excluded_classes():
    h = rng.standard_normal((5, 4))
    W = rng.standard_normal((20, 4))
    bias = np.zeros(20)
    bias[:8] = -np.inf  # the first chunk is fully excluded
    labels = rng.integers(8, 20, size=5)
    loss, dh, dW, dbias = numsoft.linear_cross_entropy(h, W, labels, bias=bias, chunk_size=8,
                                                       return_grad=True)  # fmt: skip
    assert_close(loss, ref_linear_ce(h[:, :], W[8:], labels - 8), np.float64)
    np.testing.assert_array_equal(dW[:8], 0.0)
    np.testing.assert_array_equal(dbias[:8], 0.0)
    assert np.isfinite(dh).all()


def test_linear_cross_entropy_degenerate_shapes():
    W = rng.standard_normal((5, 3))
    loss, dh, dW = numsoft.linear_cross_entropy(np.zeros((0, 3)), W, np.zeros(0, dtype=int),
                                                reduction="sum", return_grad=True)  # fmt: skip
    assert loss == 0.0 and dh.shape == (0, 3)
    np.testing.assert_array_equal(dW, 0.0)
    # D = 0: every logit is 0, so the loss is log V.
    loss = numsoft.linear_cross_entropy(np.ones((2, 0)), np.ones((4, 0)), np.array([1, 2]))
    assert_close(loss, np.log(np.longdouble(4)), np.float64)


def test_linear_cross_entropy_bad_arguments():
    h, W = np.zeros((3, 4)), np.zeros((6, 4))
    labels = np.array([0, 1, 2])
    with pytest.raises(ValueError, match="labels"):
        numsoft.linear_cross_entropy(h, W, np.array([0, 6, 1]))
    with pytest.raises(ValueError, match="labels"):
        numsoft.linear_cross_entropy(h, W, np.array([0, 1]))
    with pytest.raises(ValueError, match="W"):
        numsoft.linear_cross_entropy(h, np.zeros((6, 5)), labels)
    with pytest.raises(ValueError, match="bias"):
        numsoft.linear_cross_entropy(h, W, labels, bias=np.zeros(5))
    with pytest.raises(ValueError, match="chunk_size"):
        numsoft.linear_cross_entropy(h, W, labels, chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size"):
        numsoft.linear_cross_entropy(h, W, labels, chunk_size=2.0)
    with pytest.raises(TypeError, match="labels"):
        numsoft.linear_cross_entropy(h, W, labels.astype(float))


# ---------------------------------------------------------------- attention


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_reference(dtype, causal):
    # Broadcast batch/head dimensions; 70 queries and 300 keys are not multiples of the
    # query block (64) and key block (128).
    q = rng.standard_normal((2, 3, 70, 16)).astype(dtype)
    k = rng.standard_normal((3, 300, 16)).astype(dtype)
    v = rng.standard_normal((1, 300, 8)).astype(dtype)
    mask = rng.random((2, 1, 70, 300)) > 0.3
    mask[0, 0, 5] = False  # a fully masked query row → 0
    out = numsoft.attention(q, k, v, mask=mask, causal=causal)
    assert out.shape == (2, 3, 70, 8) and out.dtype == dtype
    assert_close(out, ref_attention(q, k, v, 0.25, mask, causal), dtype)
    np.testing.assert_array_equal(out[0, :, 5], 0.0)


@pytest.mark.parametrize("lq,lk", [(5, 9), (9, 5), (130, 130)])
def test_attention_causal_and_mask_shapes(lq, lk):
    q = rng.standard_normal((2, lq, 4))
    k = rng.standard_normal((2, lk, 4))
    v = rng.standard_normal((2, lk, 3))
    for mask in (None, rng.random(lk) > 0.2, rng.random((lq, 1)) > 0.2, np.ones((1, 1), bool)):
        got = numsoft.attention(q, k, v, mask=mask, causal=True, scale=0.7)
        assert_close(got, ref_attention(q, k, v, 0.7, mask, causal=True), np.float64)


def test_attention_default_scale_and_degenerate_shapes():
    q = rng.standard_normal((3, 9))
    k = rng.standard_normal((4, 9))
    v = rng.standard_normal((4, 2))
    assert_close(numsoft.attention(q, k, v), ref_attention(q, k, v, 1 / 3), np.float64)
    np.testing.assert_array_equal(numsoft.attention(q, k[:0], v[:0]), np.zeros((3, 2)))
    assert numsoft.attention(q[:0], k, v).shape == (0, 2)


def test_attention_nan_and_float16():
    q = rng.standard_normal((4, 3))
    k = rng.standard_normal((6, 3))
    q[1, 0] = np.nan  # reaches output row 1 only
    out = numsoft.attention(q, k, k)
    assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2, 3]]).all()
    k[2, 1] = np.nan  # a NaN key reaches every query that sees it
    out = numsoft.attention(q, k, k, causal=True)
    assert np.isfinite(out[0]).all() and np.isnan(out[2:]).all()
    half = rng.standard_normal((2, 5, 4)).astype(np.float16)
    out = numsoft.attention(half, half, half)
    assert out.dtype == np.float32
    expected = ref_attention(half, half, half, 0.5)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_attention_bad_arguments():
    q, k, v = np.zeros((2, 3, 4)), np.zeros((2, 5, 4)), np.zeros((2, 5, 6))
    with pytest.raises(ValueError, match="k"):
        numsoft.attention(q, np.zeros((2, 5, 3)), v)
    with pytest.raises(ValueError, match="v"):
        numsoft.attention(q, k, np.zeros((2, 4, 6)))
    with pytest.raises(ValueError, match="batch"):
        numsoft.attention(q, np.zeros((3, 5, 4)), np.zeros((3, 5, 6)))
    with pytest.raises(TypeError, match="mask"):
        numsoft.attention(q, k, v, mask=np.ones((3, 5)))
    with pytest.raises(ValueError, match="mask"):
        numsoft.attention(q, k, v, mask=np.ones((3, 4), bool))
    with pytest.raises(TypeError, match="causal"):
        numsoft.attention(q, k, v, causal=1)
    with pytest.raises(ValueError, match="scale"):
        numsoft.attention(q, k, v, scale=np.inf)
    with pytest.raises(ValueError, match="q"):
        numsoft.attention(np.zeros(4), k, v)


# ---------------------------------------------------------------- inside @njit


@numba.njit
def _fused_in_njit(x, labels, h, W, bias, q, k, v, mask):
    top = numsoft.softmax_topk(x, 3, axis=0)
    ce = numsoft.cross_entropy(x, labels, label_smoothing=0.1, z_loss=1e-3, return_grad=True)
    ce_rows = numsoft.cross_entropy(x, labels, reduction="none", return_lse=True)
    lce = numsoft.linear_cross_entropy(h, W, labels, bias=bias, chunk_size=4, return_grad=True)
    att = numsoft.attention(q, k, v, mask=mask, causal=True)
    return top, ce, ce_rows, lce, att


def _assert_same_outputs(got, want, dtype):
    assert len(got) == len(want)
    rtol = RTOL[np.dtype(dtype)]
    for a, b in zip(got, want):
        if np.ndim(a):  # Numba returns scalars as Python floats
            assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def test_njit_matches_python_api():
    # Compiling the njit entry points costs seconds each, so this runs them once, in
    # float64; test_njit_float32_other_axes covers float32 and the column drivers.
    x = rng.standard_normal((6, 7))
    labels = np.array([0, 1, 2, -100, 6, 3])
    h = rng.standard_normal((6, 3))
    W = rng.standard_normal((7, 3))
    bias = rng.standard_normal(7)
    q = rng.standard_normal((2, 5, 4))
    k = rng.standard_normal((1, 6, 4))
    v = rng.standard_normal((2, 6, 3))
    mask = rng.random((5, 6)) > 0.2
    top, ce, ce_rows, lce, att = _fused_in_njit(x, labels, h, W, bias, q, k, v, mask)
    _assert_same_outputs(top, numsoft.softmax_topk(x, 3, axis=0), np.float64)
    _assert_same_outputs(
        ce,
        numsoft.cross_entropy(x, labels, label_smoothing=0.1, z_loss=1e-3, return_grad=True),
        np.float64,
    )
    _assert_same_outputs(
        ce_rows, numsoft.cross_entropy(x, labels, reduction="none", return_lse=True), np.float64
    )
    _assert_same_outputs(
        lce,
        numsoft.linear_cross_entropy(h, W, labels, bias=bias, chunk_size=4, return_grad=True),
        np.float64,
    )
    _assert_same_outputs((att,), (numsoft.attention(q, k, v, mask=mask, causal=True),), np.float64)


@numba.njit
def _topk_and_ce_in_njit(x, labels):
    top = numsoft.softmax_topk(x, 2, axis=1)
    ce = numsoft.cross_entropy(x, labels, axis=1, reduction="sum", return_grad=True)
    return top, ce


def test_njit_float32_other_axes():
    x = rng.standard_normal((3, 8, 5)).astype(np.float32)
    labels = rng.integers(0, 8, size=(3, 5))
    top, ce = _topk_and_ce_in_njit(x, labels)
    _assert_same_outputs(top, numsoft.softmax_topk(x, 2, axis=1), np.float32)
    _assert_same_outputs(
        ce,
        numsoft.cross_entropy(x, labels, axis=1, reduction="sum", return_grad=True),
        np.float32,
    )


def test_njit_errors():
    @numba.njit
    def runtime_reduction(x, labels, reduction):
        return numsoft.cross_entropy(x, labels, reduction=reduction)

    @numba.njit
    def float_labels(x):
        return numsoft.cross_entropy(x, x[:, 0])

    @numba.njit
    def bad_label(x, labels):
        return numsoft.cross_entropy(x, labels)

    x = np.zeros((2, 3))
    with pytest.raises(TypeError, match="^numsoft.cross_entropy inside @njit: reduction"):
        runtime_reduction(x, np.array([0, 1]), "sum")
    with pytest.raises(TypeError, match="^numsoft.cross_entropy inside @njit: labels"):
        float_labels(x)
    with pytest.raises(ValueError, match="labels"):
        bad_label(x, np.array([0, 3]))


def test_linear_cross_entropy_inside_njit_without_scipy_says_what_to_install():
    # Numba's np.dot binds SciPy's BLAS; numsoft does not depend on SciPy. In an
    # install without it (simulated: SciPy unimportable), the error is numsoft's own,
    # at typing time, naming the install; attention needs no BLAS and runs.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        sys.modules["scipy"] = None  # as in an install without SciPy
        import numba, numpy as np, numsoft
        @numba.njit
        def loss(h, W, labels):
            return numsoft.linear_cross_entropy(h, W, labels)
        try:
            loss(np.ones((2, 3)), np.ones((4, 3)), np.array([0, 1]))
        except Exception as exc:
            print(type(exc).__name__, str(exc).splitlines()[0])
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert "numsoft.linear_cross_entropy inside @njit" in line and "pip install scipy" in line


# ---------------------------------------------------------------- Fenchel–Young losses


def _fy_reference(x, labels, alpha, ignore_index=-100):
    """Ω(p) + ⟨p − e_y, x⟩ per row, p from the independent references (float64)."""
    from _variant_refs import ref_entmax, ref_sparsemax

    out = np.zeros(len(x))
    for i, (row, y) in enumerate(zip(x, labels, strict=True)):
        if y == ignore_index:
            continue
        p = ref_sparsemax(row) if alpha == 2.0 else ref_entmax(row, alpha)
        omega = (1 - np.sum(p**alpha)) / (alpha * (alpha - 1))
        out[i] = omega + p @ row - row[y]
    return out


FY_LOSSES = [
    ("sparsemax_loss", 2.0, ()),
    ("entmax15_loss", 1.5, ()),
    ("entmax_bisect_loss", 1.3, (1.3,)),
]


@pytest.mark.parametrize(("name", "alpha", "extra"), FY_LOSSES)
def test_fenchel_young_losses_match_the_reference(name, alpha, extra):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 9)) * 2
    labels = rng.integers(0, 9, 6)
    labels[2] = -100
    func = getattr(numsoft, name)
    ref = _fy_reference(x, labels, alpha)
    rows = func(x, labels, *extra, reduction="none")
    np.testing.assert_allclose(rows, ref, rtol=1e-9, atol=1e-12)
    assert rows[2] == 0
    np.testing.assert_allclose(func(x, labels, *extra), ref.sum() / 5, rtol=1e-9)
    np.testing.assert_allclose(func(x, labels, *extra, reduction="sum"), ref.sum(), rtol=1e-9)
    # the class axis first, float32: the same losses to float32's precision
    np.testing.assert_allclose(
        func(x.T.astype(np.float32), labels, *extra, axis=0, reduction="none"), ref, atol=2e-5
    )


def test_entmax_bisect_loss_inside_njit_takes_alpha_and_n_iter():
    """(tests/test_njit_defaults.py calls every loss inside @njit with its defaults.)"""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 7))
    labels = rng.integers(0, 7, 5)

    @numba.njit
    def jitted(x, labels):
        return numsoft.entmax_bisect_loss(x, labels, 1.3, 30, reduction="sum", return_grad=True)

    loss, grad = jitted(x, labels)
    want_loss, want_grad = numsoft.entmax_bisect_loss(
        x, labels, 1.3, 30, reduction="sum", return_grad=True
    )
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-15)


def test_fenchel_young_losses_reject_bad_arguments():
    x = np.zeros((2, 3))
    with pytest.raises(ValueError, match="reduction must be one of"):
        numsoft.sparsemax_loss(x, np.array([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match="labels must lie in"):
        numsoft.entmax15_loss(x, np.array([0, 3]))
    with pytest.raises(ValueError, match="alpha must be a finite number > 1"):
        numsoft.entmax_bisect_loss(x, np.array([0, 1]), alpha=1.0)
