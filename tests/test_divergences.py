"""Losses between two distributions (SPEC §10): ``kl_div``, ``jsd`` and ``cross_entropy``
with probability targets.

Oracles: SciPy's ``rel_entr`` and ``log_softmax`` in float64 (``np.longdouble`` where
the float64 answer itself loses digits), torch's ``F.kl_div`` / ``F.cross_entropy`` and
TRL's ``generalized_jsd_loss`` written out in torch. Tolerances: float64 1e-12
relative, float32 2e-5 relative to the float64 oracle (sums over up to 4096 classes).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import log_softmax, rel_entr, softmax

import numsoft

RNG = np.random.default_rng(11)
TOL = {np.float64: 1e-12, np.float32: 2e-5}


def _pair(shape, scale=2.0, dtype=np.float64):
    s = RNG.normal(size=shape) * scale
    t = RNG.normal(size=shape) * scale
    return s.astype(dtype), t.astype(dtype)


def _kl_rows(s, t, T=1.0, reverse=False, axis=-1):
    """KL(p_t ‖ p_s) per row (reverse: KL(p_s ‖ p_t)), float64."""
    ps = softmax(np.asarray(s, np.float64) / T, axis=axis)
    pt = softmax(np.asarray(t, np.float64) / T, axis=axis)
    p, q = (ps, pt) if reverse else (pt, ps)
    return rel_entr(p, q).sum(axis=axis)


def _jsd_rows(s, t, beta, T=1.0):
    if beta == 0:
        return _kl_rows(s, t, T)
    if beta == 1:
        return _kl_rows(s, t, T, reverse=True)
    ps, pt = softmax(s / T, axis=-1), softmax(t / T, axis=-1)
    m = beta * pt + (1 - beta) * ps
    return beta * rel_entr(pt, m).sum(-1) + (1 - beta) * rel_entr(ps, m).sum(-1)


def _close(got, want, dtype, scale=1.0):
    tol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


# ---------------------------------------------------------------- the oracle


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 1500, 4096])
@pytest.mark.parametrize("reverse", [False, True])
def test_kl_div_matches_the_float64_oracle(dtype, n, reverse):
    s, t = _pair((5, n), dtype=dtype)
    want = _kl_rows(s, t, 1.7, reverse)
    got = numsoft.kl_div(s, t, temperature=1.7, reverse=reverse, reduction="none")
    assert got.dtype == dtype and got.shape == (5,)
    _close(got, want, dtype)
    _close(numsoft.kl_div(s, t, temperature=1.7, reverse=reverse), want.mean(), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_jsd_matches_the_float64_oracle(dtype, beta):
    s, t = _pair((6, 300), dtype=dtype)
    want = _jsd_rows(s.astype(np.float64), t.astype(np.float64), beta, 0.8)
    got = numsoft.jsd(s, t, beta=beta, temperature=0.8, reduction="none")
    _close(got, want, dtype)


def test_close_distributions_keep_their_digits():
    # KL of a small perturbation is O(δ²); it must not drown in the O(1) terms.
    s = RNG.normal(size=(3, 2000))
    t = s + 1e-4 * RNG.normal(size=s.shape)
    ls = log_softmax(s.astype(np.longdouble), axis=-1)
    lt = log_softmax(t.astype(np.longdouble), axis=-1)
    want = (np.exp(lt) * (lt - ls)).sum(-1).astype(np.float64)
    got = numsoft.kl_div(s, t, reduction="none")
    np.testing.assert_allclose(got, want, rtol=1e-6)
    s32, t32 = s.astype(np.float32), t.astype(np.float32)
    got32 = numsoft.kl_div(s32, t32, reduction="none")
    np.testing.assert_allclose(got32, _kl_rows(s32, t32), rtol=0.05, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("eps", [0.0, 0.2])
def test_probability_targets_match_the_oracle(dtype, eps):
    x = (RNG.normal(size=(4, 9)) * 3).astype(dtype)
    q = RNG.dirichlet(np.ones(9) * 0.3, size=4)
    q[0] = np.eye(9)[3]  # a one-hot row: the label's cross-entropy
    q = q.astype(dtype)
    qs = (1 - eps) * q.astype(np.float64) + eps / 9
    want = -(qs * log_softmax(x.astype(np.float64), axis=-1)).sum(-1)
    got = numsoft.cross_entropy(x, q, label_smoothing=eps, reduction="none")
    _close(got, want, dtype, 10)
    lab = numsoft.cross_entropy(x[:1], np.array([3]), label_smoothing=eps, reduction="none")
    _close(got[:1], lab, dtype, 10)


# ---------------------------------------------------------------- the peers


torch = pytest.importorskip("torch")
F = torch.nn.functional


def _trl_jsd(s, t, beta, T):
    """TRL's ``generalized_jsd_loss`` (reduction "batchmean", no labels), in torch."""
    sl, tl = F.log_softmax(s / T, dim=-1), F.log_softmax(t / T, dim=-1)
    if beta == 0:
        j = F.kl_div(sl, tl, reduction="none", log_target=True)
    elif beta == 1:
        j = F.kl_div(tl, sl, reduction="none", log_target=True)
    else:
        b = torch.tensor(beta, dtype=sl.dtype)
        mix = torch.logsumexp(torch.stack([sl + torch.log(1 - b), tl + torch.log(b)]), dim=0)
        kt = F.kl_div(mix, tl, reduction="none", log_target=True)
        ks = F.kl_div(mix, sl, reduction="none", log_target=True)
        j = b * kt + (1 - b) * ks
    return j.sum() / (j.shape[0] * j.shape[1])


@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_jsd_equals_trl_and_its_gradient(beta):
    s, t = _pair((2, 3, 40))
    st_ = torch.tensor(s, requires_grad=True)
    want = _trl_jsd(st_, torch.tensor(t), beta, 2.0)
    want.backward()
    loss, grad = numsoft.jsd(s, t, beta=beta, temperature=2.0, return_grad=True)
    np.testing.assert_allclose(loss, want.item(), rtol=1e-12)
    np.testing.assert_allclose(grad, st_.grad.numpy(), rtol=1e-10, atol=1e-15)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")  # torch's note
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "mean", "none"])
def test_kl_div_equals_torch(reduction):
    s, t = _pair((6, 50))
    st_ = torch.tensor(s, requires_grad=True)
    ls, lt = F.log_softmax(st_, -1), F.log_softmax(torch.tensor(t), -1)
    want = F.kl_div(ls, lt, reduction=reduction, log_target=True)
    if reduction == "none":  # torch's is per entry; numsoft's per row
        want = want.sum(-1)
    want.sum().backward()
    loss, grad = numsoft.kl_div(s, t, reduction=reduction, return_grad=True)
    np.testing.assert_allclose(loss, want.detach().numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grad, st_.grad.numpy(), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_probability_targets_equal_torch_on_the_class_axis_1(reduction, eps):
    x = RNG.normal(size=(3, 7, 4))  # torch's (N, C, d) layout
    q = softmax(RNG.normal(size=(3, 7, 4)), axis=1)
    xt = torch.tensor(x, requires_grad=True)
    qt = torch.tensor(q, requires_grad=True)
    want = F.cross_entropy(xt, qt, label_smoothing=eps, reduction=reduction)
    want.sum().backward()
    loss, grad = numsoft.cross_entropy(
        x, q, axis=1, label_smoothing=eps, reduction=reduction, return_grad=True
    )
    np.testing.assert_allclose(loss, want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-10, atol=1e-15)
    xn = torch.tensor(x, requires_grad=True)
    qn = torch.tensor(q, requires_grad=True)
    numsoft.cross_entropy(xn, qn, axis=1, label_smoothing=eps, reduction=reduction).sum().backward()
    torch.testing.assert_close(qn.grad, qt.grad)
    torch.testing.assert_close(xn.grad, xt.grad)


def test_tensors_in_tensors_out_in_float32():
    s, t = _pair((4, 33), dtype=np.float32)
    got = numsoft.jsd(torch.from_numpy(s), torch.from_numpy(t))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_allclose(got.item(), _jsd_rows(s, t, 0.5).mean(), rtol=2e-5)


# ---------------------------------------------------------------- edges


def test_excluded_classes_and_rows_without_a_distribution():
    inf = np.inf
    s = np.array([[0.0, 1.0, -inf], [0.0, -inf, 1.0], [np.nan, 0.0, 0.0], [-inf, -inf, -inf]])
    t = np.array([[0.0, 2.0, -inf], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    got = numsoft.kl_div(s, t, reduction="none")
    np.testing.assert_allclose(got[0], _kl_rows(s[0, :2], t[0, :2]), rtol=1e-12)
    assert got[1] == inf  # the teacher puts mass where the student has none
    assert np.isnan(got[2]) and np.isnan(got[3])
    _, grad = numsoft.kl_div(s, t, reduction="sum", return_grad=True)
    assert np.isfinite(grad[0]).all() and grad[0, 2] == 0
    assert np.isnan(grad[2:]).all()
    j = numsoft.jsd(s, t, reduction="none")
    assert np.isfinite(j[:2]).all() and np.isnan(j[2:]).all()  # m > 0 wherever p_t > 0
    q = np.array([[0.5, 0.5, 0.0]] * 4)  # no mass on the -inf class: 0·log 0 = 0
    ce = numsoft.cross_entropy(s[:1], q[:1], reduction="none")
    np.testing.assert_allclose(ce, -(q[0, :2] * log_softmax(s[0, :2])).sum(), rtol=1e-12)


def test_empty_and_single_class_rows():
    assert numsoft.kl_div(np.ones((3, 1)), np.zeros((3, 1))) == 0.0
    assert numsoft.jsd(np.ones((3, 1)), np.zeros((3, 1)), reduction="sum") == 0.0
    assert numsoft.kl_div(np.empty((0, 4)), np.empty((0, 4)), reduction="none").shape == (0,)
    assert np.isnan(numsoft.kl_div(np.empty((0, 4)), np.empty((0, 4))))
    assert np.isnan(numsoft.kl_div(np.empty((2, 0)), np.empty((2, 0)), reduction="none")).all()


def test_any_layout_any_dtype_and_the_input_unchanged():
    s, t = _pair((5, 4, 6))
    want = _kl_rows(s, t, axis=1)  # classes along axis 1
    s_ro, t_f = s.copy(), np.asfortranarray(t)
    s_ro.flags.writeable = False
    got, grad = numsoft.kl_div(s_ro, t_f, axis=1, reduction="none", return_grad=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert grad.shape == s.shape
    np.testing.assert_allclose(grad, softmax(s, axis=1) - softmax(t, axis=1), atol=1e-15)
    np.testing.assert_array_equal(s_ro, s)
    np.testing.assert_array_equal(t_f, t)
    half = numsoft.jsd(s[..., ::2].astype(np.float16), t[..., ::2].astype(np.float16))
    assert half.dtype == np.float32
    ints = numsoft.kl_div(np.arange(6).reshape(2, 3), np.ones((2, 3), dtype=bool))
    np.testing.assert_allclose(ints, _kl_rows(np.arange(6.0).reshape(2, 3), np.ones((2, 3))).mean())


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda s, t: numsoft.kl_div(s, t[:, :3]), ValueError, "teacher_logits has shape"),
        (lambda s, t: numsoft.kl_div(s, t, temperature=0), ValueError, "temperature"),
        (lambda s, t: numsoft.kl_div(s, t, reduction="avg"), ValueError, "reduction"),
        (lambda s, t: numsoft.kl_div(s, t, reverse=1), TypeError, "reverse"),
        (lambda s, t: numsoft.kl_div(s, t, axis=2), ValueError, "axis"),
        (lambda s, t: numsoft.kl_div(s, t.astype(complex)), TypeError, "teacher_logits"),
        (lambda s, t: numsoft.jsd(s, t, beta=1.5), ValueError, "beta"),
        (lambda s, t: numsoft.jsd(s, t, beta="half"), TypeError, "beta"),
        (lambda s, t: numsoft.cross_entropy(s, -softmax(t, -1)), ValueError, "negative"),
        (lambda s, t: numsoft.cross_entropy(s, softmax(t, -1), z_loss=0.1), TypeError, "z_loss"),
        (lambda s, t: numsoft.cross_entropy(s, t[:, 0]), TypeError, "labels"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    s, t = _pair((3, 4))
    with pytest.raises(error, match=match):
        call(s, t)


def test_targets_that_do_not_sum_to_one_are_taken_as_given():
    x = RNG.normal(size=(2, 5))
    q = np.full((2, 5), 0.5)  # sums to 2.5, as torch computes it
    want = -(q * log_softmax(x, axis=-1)).sum(-1)
    np.testing.assert_allclose(numsoft.cross_entropy(x, q, reduction="none"), want, rtol=1e-12)


# ---------------------------------------------------------------- properties


_rows = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(1, 40)),
    elements=st.floats(-30, 30),
)


@settings(max_examples=40, deadline=None)
@given(_rows, st.floats(0.05, 0.95), st.floats(-50, 50))
def test_divergence_properties(s, beta, shift):
    t = np.roll(s, 1, axis=-1) * 0.5
    kl = numsoft.kl_div(s, t, reduction="none")
    assert (kl >= -1e-12).all()
    np.testing.assert_allclose(numsoft.kl_div(s + shift, t, reduction="none"), kl, atol=1e-9)
    j = numsoft.jsd(s, t, beta=beta, reduction="none")
    assert (j >= -1e-12).all()
    # the entropy of the mixture's weights bounds the generalized JSD
    assert (j <= -(beta * np.log(beta) + (1 - beta) * np.log(1 - beta)) + 1e-9).all()
    swapped = numsoft.jsd(t, s, beta=1 - beta, reduction="none")
    np.testing.assert_allclose(swapped, j, rtol=1e-9, atol=1e-12)
    assert (numsoft.kl_div(s, s, reduction="none") == 0).all()


# ---------------------------------------------------------------- inside @njit


@numba.njit
def _user_losses(s, t):
    a = numsoft.kl_div(s, t, temperature=2.0, reverse=True, reduction="none")
    b, g = numsoft.jsd(s, t, beta=0.3, reduction="sum", return_grad=True)
    return a, b, g


@numba.njit
def _user_soft_targets(x, q):
    return numsoft.cross_entropy(x, q, label_smoothing=0.1, reduction="none", return_grad=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_probability_targets_inside_njit(dtype):
    x = RNG.normal(size=(3, 2, 6)).astype(dtype)
    q = softmax(RNG.normal(size=(3, 2, 6)), axis=-1).astype(dtype)
    loss, grad = _user_soft_targets(x, q)
    want_loss, want_grad = numsoft.cross_entropy(
        x, q, label_smoothing=0.1, reduction="none", return_grad=True
    )
    np.testing.assert_array_equal(loss, want_loss)
    np.testing.assert_array_equal(grad, want_grad)
    with pytest.raises(ValueError, match="negative"):
        _user_soft_targets(x, -q)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inside_njit_the_options_agree_with_the_python_api(dtype):
    s, t = _pair((3, 2, 9), dtype=dtype)
    a, b, g = _user_losses(s, t)
    want_b, want_g = numsoft.jsd(s, t, beta=0.3, reduction="sum", return_grad=True)
    np.testing.assert_array_equal(
        a, numsoft.kl_div(s, t, temperature=2.0, reverse=True, reduction="none")
    )
    assert b == want_b
    np.testing.assert_array_equal(g, want_g)


# ---------------------------------------------------------------- torch modules


def test_the_torch_modules_are_the_functions_with_torchs_argument_order():
    from numsoft.torch.loss_modules import JSDLoss, KLDivLoss

    s, t = _pair((4, 12))
    st_ = torch.tensor(s, requires_grad=True)
    log_s = torch.log_softmax(st_, -1)
    log_t = torch.log_softmax(torch.tensor(t), -1)
    want = torch.nn.KLDivLoss(reduction="batchmean", log_target=True)(log_s, log_t)
    got = KLDivLoss()(st_, torch.tensor(t))  # logits where torch takes log-probabilities
    torch.testing.assert_close(got, want)
    got.backward()
    np.testing.assert_allclose(st_.grad.numpy(), (softmax(s, -1) - softmax(t, -1)) / 4, atol=1e-15)
    module = JSDLoss(beta=0.2, temperature=3.0, reduction="sum", dim=0)
    np.testing.assert_allclose(
        module(torch.tensor(s.T), torch.tensor(t.T)).item(), _jsd_rows(s, t, 0.2, 3.0).sum()
    )


def test_where_leaves_classes_out_of_both_distributions():
    s, t = _pair((4, 9))
    mask = RNG.random((4, 9)) > 0.4
    mask[:, 0] = True
    want = np.array([_kl_rows(s[i, mask[i]], t[i, mask[i]]) for i in range(4)])
    got, grad = numsoft.kl_div(s, t, where=mask, reduction="none", return_grad=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (grad[~mask] == 0).all()
    j = numsoft.jsd(s, t, beta=0.3, where=mask[0], reduction="none")  # broadcast over rows
    want_j = [_jsd_rows(s[i, mask[0]][None], t[i, mask[0]][None], 0.3)[0] for i in range(4)]
    np.testing.assert_allclose(j, want_j, rtol=1e-12)
    assert np.isnan(numsoft.kl_div(s, t, where=np.zeros(9, bool), reduction="none")).all()
    with pytest.raises(TypeError, match="where"):
        numsoft.kl_div(s, t, where=mask.astype(int))
    st_, tt = (torch.tensor(a, requires_grad=True) for a in (s, t))
    numsoft.jsd(st_, tt, where=torch.tensor(mask), temperature=1.5).backward()
    assert (st_.grad[torch.tensor(~mask)] == 0).all() and (tt.grad[torch.tensor(~mask)] == 0).all()
