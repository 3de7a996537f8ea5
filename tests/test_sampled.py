"""``sampled_cross_entropy`` (SPEC §10) against TensorFlow's formula for
``tf.nn.sampled_softmax_loss`` with given sampled values, written out in NumPy (float64
oracle), its gradients against torch autograd of the same formula, and the limit of
every class sampled with log q = 0 (``linear_cross_entropy``). Tolerances: float64
1e-12, float32 1e-5 relative.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy.special import logsumexp

import numsoft

RNG = np.random.default_rng(9)
N, D, V, S = 7, 5, 40, 12


def tf_sampled_loss(h, W, b, labels, sampled, log_q, true_log_q, remove=True):
    """Per row: the true logit first, the sampled logits after, hits masked."""
    t = (h * W[labels]).sum(1) + b[labels] - true_log_q
    s = h @ W[sampled].T + b[sampled] - log_q
    if remove:
        s = np.where(sampled[None, :] == labels[:, None], -np.inf, s)
    return logsumexp(np.concatenate([t[:, None], s], 1), axis=1) - t


def _problem(dtype=np.float64):
    h = RNG.normal(size=(N, D)).astype(dtype)
    W = RNG.normal(size=(V, D)).astype(dtype)
    b = RNG.normal(size=V).astype(dtype)
    labels = RNG.integers(0, V, N)
    sampled = RNG.integers(0, V, S)
    sampled[:2] = labels[:2]  # accidental hits
    sampled[5] = sampled[6]  # a repeat
    log_q = np.log(RNG.uniform(0.01, 1, S)).astype(dtype)
    true_log_q = np.log(RNG.uniform(0.01, 1, N)).astype(dtype)
    return h, W, b, labels, sampled, log_q, true_log_q


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("remove", [True, False])
def test_matches_tensorflows_formula(dtype, remove):
    h, W, b, labels, sampled, log_q, true_log_q = _problem(dtype)
    f64 = [np.asarray(a, np.float64) for a in (h, W, b)]
    want = tf_sampled_loss(
        *f64, labels, sampled, log_q.astype(float), true_log_q.astype(float), remove
    )
    got = numsoft.sampled_cross_entropy(
        h, W, labels, sampled, bias=b, sampled_log_q=log_q, true_log_q=true_log_q,
        remove_accidental_hits=remove, reduction="none",
    )  # fmt: skip
    assert got.dtype == dtype
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_every_class_sampled_is_linear_cross_entropy():
    h, W, b, labels, *_ = _problem()
    got = numsoft.sampled_cross_entropy(h, W, labels, np.arange(V), bias=b, return_grad=True)
    want = numsoft.linear_cross_entropy(h, W, labels, bias=b, return_grad=True)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


torch = pytest.importorskip("torch")


def test_gradients_equal_torch_autograd_of_the_formula():
    h, W, b, labels, sampled, log_q, true_log_q = _problem()
    labels[3] = -100
    ht, Wt, bt = (torch.tensor(a, requires_grad=True) for a in (h, W, b))
    lab = torch.tensor(labels).clamp(min=0)
    k = torch.tensor(sampled)
    t = (ht * Wt[lab]).sum(1) + bt[lab] - torch.tensor(true_log_q)
    s = ht @ Wt[k].T + bt[k] - torch.tensor(log_q)
    s = s.masked_fill(k[None, :] == lab[:, None], float("-inf"))
    target = torch.where(torch.tensor(labels) == -100, -100, 0)
    torch.nn.functional.cross_entropy(torch.cat([t[:, None], s], 1), target).backward()
    loss, dh, dW, db = numsoft.sampled_cross_entropy(
        h, W, labels, sampled, bias=b, sampled_log_q=log_q, true_log_q=true_log_q,
        return_grad=True,
    )  # fmt: skip
    for got, want in ((dh, ht.grad), (dW, Wt.grad), (db, bt.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-14)
    used = np.union1d(sampled, labels[labels >= 0])
    assert not dW[np.setdiff1d(np.arange(V), used)].any()  # only the rows used
    # numsoft's own autograd rule gives the same
    hn, Wn, bn = (torch.tensor(a, requires_grad=True) for a in (h, W, b))
    numsoft.sampled_cross_entropy(
        hn, Wn, torch.tensor(labels), torch.tensor(sampled), bias=bn,
        sampled_log_q=torch.tensor(log_q), true_log_q=torch.tensor(true_log_q),
    ).backward()  # fmt: skip
    torch.testing.assert_close(Wn.grad, Wt.grad)
    torch.testing.assert_close(hn.grad, ht.grad)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sampled": np.array([0, V])}, ValueError, "sampled"),
        ({"sampled": np.array([0.0, 1.0])}, TypeError, "sampled"),
        ({"labels": np.full(N, V)}, ValueError, "labels"),
        ({"sampled_log_q": np.zeros(3)}, ValueError, "sampled_log_q"),
        ({"true_log_q": np.zeros(3)}, ValueError, "true_log_q"),
        ({"W": np.zeros((V, D + 1))}, ValueError, "W"),
        ({"bias": np.zeros(3)}, ValueError, "bias"),
        ({"reduction": "avg"}, ValueError, "reduction"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    h, W, _, labels, sampled, *_ = _problem()
    args = {"h": h, "W": W, "labels": labels, "sampled": sampled, **kwargs}
    with pytest.raises(error, match=match):
        numsoft.sampled_cross_entropy(**args)


@numba.njit
def _user(h, W, labels, sampled, b, log_q):
    return numsoft.sampled_cross_entropy(
        h, W, labels, sampled, bias=b, sampled_log_q=log_q, reduction="sum", return_grad=True
    )


def test_inside_njit_with_the_options():
    h, W, b, labels, sampled, log_q, _ = _problem()
    got = _user(h, W, labels, sampled, b, log_q)
    want = numsoft.sampled_cross_entropy(
        h, W, labels, sampled, bias=b, sampled_log_q=log_q, reduction="sum", return_grad=True
    )
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
