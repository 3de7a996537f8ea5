"""``margin_cross_entropy`` (SPEC §10): ArcFace, CosFace and SphereFace margins against
Paddle's definition written out in NumPy (float64 oracle), the gradient against torch
autograd of the same formula, and the edges (the clip at |cos θ| = 1, ignored rows,
layouts, bad input). Tolerances: float64 1e-12, float32 1e-5 relative to the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax

import numsoft

RNG = np.random.default_rng(5)
MARGINS = {"arcface": (1.0, 0.5, 0.0), "cosface": (1.0, 0.0, 0.35), "sphereface": (1.35, 0.0, 0.0)}


def paddle_margin_ce(cos, labels, m1, m2, m3, s):
    """Paddle's ``margin_cross_entropy`` reference per row, with cos θ clipped."""
    onehot = np.eye(cos.shape[-1])[labels]
    theta = m1 * np.arccos(np.clip(cos, -1, 1)) + m2
    logits = (cos + onehot * (np.cos(theta) - m3 - cos)) * s
    return -(onehot * log_softmax(logits, axis=-1)).sum(-1)


def _cosines(shape, dtype=np.float64):
    return np.tanh(RNG.normal(size=shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(MARGINS))
def test_margins_match_paddles_definition(dtype, name):
    m1, m2, m3 = MARGINS[name]
    cos = _cosines((7, 300), dtype)
    labels = RNG.integers(0, 300, 7)
    want = paddle_margin_ce(cos.astype(np.float64), labels, m1, m2, m3, 30.0)
    got = numsoft.margin_cross_entropy(
        cos, labels, margin1=m1, margin2=m2, margin3=m3, scale=30.0, reduction="none"
    )
    assert got.dtype == dtype
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        numsoft.margin_cross_entropy(cos, labels, margin1=m1, margin2=m2, margin3=m3, scale=30.0),
        want.mean(),
        rtol=tol,
    )


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(MARGINS))
def test_the_gradient_equals_torch_autograd_of_the_formula(name):
    m1, m2, m3 = MARGINS[name]
    cos = _cosines((5, 2, 11))
    labels = RNG.integers(0, 11, (5, 2))
    labels[0, 1] = -100
    c = torch.tensor(cos, requires_grad=True)
    onehot = torch.nn.functional.one_hot(torch.tensor(labels).clamp(min=0), 11).double()
    theta = torch.acos(c.clamp(-1, 1)) * m1 + m2
    logits = (c + onehot * (torch.cos(theta) - m3 - c)) * 20.0
    torch.nn.functional.cross_entropy(
        logits.reshape(-1, 11), torch.tensor(labels).reshape(-1), ignore_index=-100
    ).backward()
    kw = dict(margin1=m1, margin2=m2, margin3=m3, scale=20.0)
    loss, grad = numsoft.margin_cross_entropy(cos, labels, return_grad=True, **kw)
    np.testing.assert_allclose(grad, c.grad.numpy(), rtol=1e-10, atol=1e-14)
    # the same through numsoft's own autograd rule, and the class axis in the middle
    ct = torch.tensor(np.moveaxis(cos, -1, 1).copy(), requires_grad=True)
    numsoft.margin_cross_entropy(ct, torch.tensor(labels), axis=1, **kw).backward()
    np.testing.assert_allclose(np.moveaxis(ct.grad.numpy(), 1, -1), c.grad.numpy(), rtol=1e-10)


def test_the_gradient_is_finite_at_the_clip():
    cos = _cosines((3, 6))
    labels = np.array([0, 1, 2])
    cos[0, 0], cos[1, 1], cos[2, 2] = 1.0, -1.0, 1.0 + 1e-12  # the last: rounding
    loss, grad = numsoft.margin_cross_entropy(cos, labels, return_grad=True)
    assert np.isfinite(loss) and np.isfinite(grad).all()
    assert grad[0, 0] == 0 and grad[1, 1] == 0 and grad[2, 2] == 0  # the clip's flat side
    np.testing.assert_allclose(
        numsoft.margin_cross_entropy(cos, labels, reduction="none"),
        paddle_margin_ce(cos, labels, 1.0, 0.5, 0.0, 64.0),
        rtol=1e-12,
        atol=1e-13,  # lse − s·φ of logits near 64: absolute rounding
    )


def test_module_ignored_rows_and_one_class():
    from numsoft.torch.loss_modules import MarginCrossEntropyLoss

    cos = _cosines((4, 5))
    labels = np.array([1, -100, 3, 0])
    module = MarginCrossEntropyLoss(margin1=1.0, margin2=0.0, margin3=0.35, scale=16.0)
    got = module(torch.tensor(cos), torch.tensor(labels))
    keep = labels != -100
    want = paddle_margin_ce(cos[keep], labels[keep], 1.0, 0.0, 0.35, 16.0).mean()
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    assert numsoft.margin_cross_entropy(cos[:, :1], np.zeros(4, int), reduction="sum") == 0.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"cos_logits": np.full((2, 3), 1.01)}, ValueError, "cos_logits"),
        ({"scale": 0.0}, ValueError, "scale"),
        ({"scale": "big"}, TypeError, "scale"),
        ({"margin2": np.inf}, ValueError, "margin2"),
        ({"labels": np.array([0, 3])}, ValueError, "labels"),
        ({"labels": np.array([0.0, 1.0])}, TypeError, "labels"),
        ({"reduction": "avg"}, ValueError, "reduction"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    args = {"cos_logits": _cosines((2, 3)), "labels": np.array([0, 1]), **kwargs}
    with pytest.raises(error, match=match):
        numsoft.margin_cross_entropy(**args)
