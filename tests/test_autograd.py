"""torch autograd through numsoft (``numsoft.route.autograd``, ``numsoft.gradients``):
``torch.autograd.gradcheck`` in float64 for every differentiable public function and
loss; the same inside ``torch.compile`` graphs; the errors for what is not
differentiable."""

from __future__ import annotations

import numpy as np
import pytest

import numsoft
from numsoft.variants import bisect

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)


def _t(shape, scale=1.0, grad=True):
    return torch.tensor(RNG.standard_normal(shape) * scale, requires_grad=grad)


def _labels(n, c):
    return torch.tensor(RNG.integers(0, c, n))


def _scalar(v):
    return torch.tensor(v, dtype=torch.float64, requires_grad=True)


MASK = torch.tensor(RNG.random((3, 5)) > 0.3)
MASK[:, 0] = True

# name -> (function of the tensors, tensors). Shapes are small: gradcheck differentiates
# numerically, one forward call per input element.
CASES = {
    "softmax": (lambda x, t: numsoft.softmax(x, temperature=t), (_t((3, 5)), _scalar(0.7))),
    "softmax_axis0_where": (
        lambda x: numsoft.softmax(x, axis=0, where=MASK.T),
        (_t((5, 3)),),
    ),
    "log_softmax": (lambda x, t: numsoft.log_softmax(x, temperature=t), (_t((3, 5)), _scalar(1.3))),
    "log_softmax_where": (  # masked entries are -inf: finite differences need them out
        lambda x: numsoft.log_softmax(x, where=MASK).masked_fill(~MASK, 0),
        (_t((3, 5)),),
    ),
    "logsumexp": (
        lambda x, b, t: numsoft.logsumexp(x, axis=1, b=b, temperature=t),
        (_t((3, 5)), torch.rand(3, 5, dtype=torch.float64, requires_grad=True), _scalar(0.8)),
    ),
    "logsumexp_keepdims_none": (
        lambda x: numsoft.logsumexp(x, axis=None, keepdims=True),
        (_t((2, 3, 2)),),
    ),
    "sparsemax": (lambda x, t: numsoft.sparsemax(x, temperature=t), (_t((3, 6)), _scalar(0.5))),
    "entmax15": (lambda x: numsoft.entmax15(x, axis=0), (_t((6, 3)),)),
    "entmax": (lambda x, a: numsoft.entmax(x, alpha=a), (_t((3, 6)), _scalar(1.3))),
    "stablemax": (lambda x: numsoft.stablemax(x), (_t((3, 5), 3.0),)),
    "log_stablemax": (lambda x: numsoft.log_stablemax(x, temperature=2.0), (_t((3, 5), 3.0),)),
    "softpick": (lambda x, t: numsoft.softpick(x, temperature=t), (_t((3, 5)), _scalar(1.1))),
    "softpick_where": (lambda x: numsoft.softpick(x, where=MASK), (_t((3, 5)),)),
    "ssmax": (lambda x, s: numsoft.ssmax(x, s=s, where=MASK), (_t((3, 5)), _scalar(0.9))),
    "softplus_l1": (lambda x: numsoft.softplus_l1(x), (_t((3, 5)),)),
    "sigmoid_attention": (lambda x: numsoft.sigmoid_attention(x), (_t((3, 5)),)),
    "topk_softmax": (lambda x: numsoft.topk_softmax(x, 3), (_t((3, 6)),)),
    "sa_softmax": (lambda x, t: numsoft.sa_softmax(x, temperature=t), (_t((3, 5)), _scalar(1.3))),
    "sa_softmax_normalized_where": (
        lambda x: numsoft.sa_softmax(x, normalized=True, where=MASK),
        (_t((3, 5)),),
    ),
    "sa_softmax_normalized_axis0": (
        lambda x: numsoft.sa_softmax(x + 0.5, normalized=True, axis=0),
        (_t((5, 3)),),
    ),
    "adaptive_softmax": (  # high-entropy rows (β = poly(H) > 1) and low-entropy ones
        lambda x, t: numsoft.adaptive_softmax(
            x * torch.tensor([[0.2], [0.5], [4.0]]), temperature=t
        ),
        (_t((3, 8)), _scalar(1.1)),
    ),
    "multimax": (
        lambda x: numsoft.multimax(x, (-1.0, 1.0, -0.5, 0.5), (0.5, 0.3, 0.2, 0.1)),
        (_t((3, 6), 2.0),),
    ),
    "gumbel_softmax": (lambda x: numsoft.gumbel_softmax(x, tau=0.7, seed=3), (_t((3, 5)),)),
    "cross_entropy": (
        lambda x: numsoft.cross_entropy(x, _LAB, label_smoothing=0.1, z_loss=0.01),
        (_t((4, 5)),),
    ),
    "cross_entropy_none_axis0": (
        lambda x: numsoft.cross_entropy(x.T, _LAB, axis=0, reduction="none"),
        (_t((4, 5)),),
    ),
    "cross_entropy_probabilities": (
        lambda x, q: numsoft.cross_entropy(x, q, axis=1, label_smoothing=0.1, reduction="sum"),
        (_t((2, 5, 3)), torch.rand(2, 5, 3, dtype=torch.float64, requires_grad=True)),
    ),
    "cross_entropy_where": (
        lambda x: numsoft.cross_entropy(x, _LAB, where=_CE_MASK, label_smoothing=0.2),
        (_t((4, 5)),),
    ),
    "cross_entropy_probabilities_where": (
        lambda x, q: numsoft.cross_entropy(x, q, where=_CE_MASK, label_smoothing=0.1),
        (_t((4, 5)), torch.rand(4, 5, dtype=torch.float64, requires_grad=True)),
    ),
    "margin_cross_entropy_where": (
        lambda c: numsoft.margin_cross_entropy(c.tanh(), _LAB, where=_CE_MASK, scale=8.0),
        (_t((4, 5)),),
    ),
    "sampled_cross_entropy": (
        lambda h, w, b: numsoft.sampled_cross_entropy(
            h, w, _LAB, torch.tensor([0, 2, 2, 4]), bias=b, reduction="sum"
        ),
        (_t((4, 3)), _t((5, 3)), _t((5,))),
    ),
    "margin_cross_entropy": (
        lambda c: numsoft.margin_cross_entropy(c.tanh(), _LAB, margin1=1.2, margin3=0.1, scale=8.0),
        (_t((4, 5)),),
    ),
    "kl_div": (
        lambda s, t, T: numsoft.kl_div(s, t, temperature=T),
        (_t((3, 5)), _t((3, 5), 2.0), _scalar(1.3)),
    ),
    "kl_div_reverse_none_axis0": (
        lambda s, t: numsoft.kl_div(s, t, axis=0, reverse=True, reduction="none"),
        (_t((5, 3)), _t((5, 3))),
    ),
    "jsd": (
        lambda s, t, T: numsoft.jsd(s, t, beta=0.3, temperature=T, reduction="sum"),
        (_t((3, 5)), _t((3, 5), 2.0), _scalar(0.8)),
    ),
    "jsd_end_point": (
        lambda s, t: numsoft.jsd(s, t, beta=1.0, reduction="mean"),
        (_t((3, 5)), _t((3, 5))),
    ),
    "linear_cross_entropy": (
        lambda h, w, b: numsoft.linear_cross_entropy(h, w, _LAB, bias=b, reduction="sum"),
        (_t((4, 3)), _t((5, 3)), _t((5,))),
    ),
    "sparsemax_loss": (lambda x: numsoft.sparsemax_loss(x, _LAB), (_t((4, 5)),)),
    "entmax15_loss": (lambda x: numsoft.entmax15_loss(x, _LAB, reduction="sum"), (_t((4, 5)),)),
    "entmax_bisect_loss": (
        lambda x: numsoft.entmax_bisect_loss(x, _LAB, alpha=1.7, reduction="none"),
        (_t((4, 5)),),
    ),
    "entmax_bisect_rows": (
        lambda x, a: bisect.entmax_bisect(x, a),
        (_t((3, 5)), (1.2 + torch.rand(3, 1, dtype=torch.float64)).requires_grad_()),
    ),
    "normmax_bisect": (lambda x: bisect.normmax_bisect(x, 3.0), (_t((3, 5)),)),
    "budget_bisect": (lambda x: bisect.budget_bisect(x, 2.0, axis=0), (_t((5, 3)),)),
    # numsoft.torch's losses that hold p* constant (the others are numsoft's, above)
    "torch_sparsemax_bisect_loss": (lambda x: _nt().sparsemax_bisect_loss(x, _LAB), (_t((4, 5)),)),
    "torch_normmax_bisect_loss": (lambda x: _nt().normmax_bisect_loss(x, _LAB, 3.0), (_t((4, 5)),)),
    "torch_entmax_bisect_loss_rows": (
        lambda x: _nt().entmax_bisect_loss(x, _LAB, torch.tensor([1.2, 1.5, 2.0, 0.8])),
        (_t((4, 5)),),
    ),
}
_LAB = _labels(4, 5)
_CE_MASK = torch.tensor(RNG.random((4, 5)) > 0.4)  # the classes kept, each label among them
_CE_MASK[torch.arange(4), _LAB] = True


def _nt():
    import numsoft.torch

    return numsoft.torch


def test_every_public_function_says_whether_it_is_differentiable():
    """A new public function needs a gradient rule or the reason it has none."""
    assert all(hasattr(getattr(numsoft, name), "gradient") for name in numsoft.__all__)


@pytest.mark.parametrize("name", CASES)
def test_gradcheck(name):
    func, inputs = CASES[name]
    assert torch.autograd.gradcheck(func, inputs, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "logsumexp", "entmax15_loss", "entmax"])
def test_gradient_inside_torch_compile(name):
    """Under ``torch.compile`` a numsoft call is an operator in the graph (one graph:
    ``fullgraph``), traced forward and backward with fake tensors (``aot_eager``); the
    gradients are the eager ones."""
    torch._dynamo.reset()
    func, inputs = CASES[name]
    compiled = torch.compile(func, backend="aot_eager", fullgraph=True)
    eager_grads = torch.autograd.grad(func(*inputs).sum(), inputs)
    grads = torch.autograd.grad(compiled(*inputs).sum(), inputs)
    for g, e in zip(grads, eager_grads):
        torch.testing.assert_close(g, e)


def test_compiled_graphs_hold_calls_without_gradients():
    """Tuple outputs and functions with no gradient also run inside a full graph; a call
    with ``out=`` runs eagerly (a graph break)."""
    x = torch.tensor(RNG.standard_normal((3, 5)))
    full = torch.compile(
        lambda t: (numsoft.logsumexp(t, return_sign=True), numsoft.softmax_topk(t, 2)),
        backend="aot_eager",
        fullgraph=True,
    )
    (lse, sign), (values, index) = full(x)
    torch.testing.assert_close(lse, torch.logsumexp(x, -1))
    torch.testing.assert_close(index, torch.topk(x, 2).indices)
    out = torch.empty_like(x)
    assert torch.compile(lambda t: numsoft.softmax(t, out=out), backend="aot_eager")(x) is out


def test_backward_reuses_the_forward_output(monkeypatch):
    """The backward pass reads the saved output: no forward kernel runs again."""
    x = _t((3, 5))
    y = numsoft.sparsemax(x)
    calls = []
    monkeypatch.setattr(numsoft.variants.sparse, "run_variant", lambda *a, **k: calls.append(a))
    y.backward(torch.ones_like(y))
    assert not calls and x.grad is not None


def test_float32_gradient_matches_float64():
    x64 = _t((4, 7))
    x32 = x64.detach().float().requires_grad_()
    w = torch.tensor(RNG.standard_normal((4, 7)))
    (numsoft.entmax15(x64) * w).sum().backward()
    (numsoft.entmax15(x32) * w.float()).sum().backward()
    assert x32.grad.dtype == torch.float32
    torch.testing.assert_close(x32.grad.double(), x64.grad, rtol=1e-4, atol=1e-5)


def test_no_grad_mode_returns_a_plain_tensor():
    x = _t((2, 3))
    with torch.no_grad():
        y = numsoft.softmax(x)
    assert y.grad_fn is None and not y.requires_grad


def test_double_backward_raises():
    x = _t((2, 3))
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(numsoft.softmax(x)[:, 0].sum(), x, create_graph=True)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x: numsoft.rowmax_pot(x), "rowmax_pot is not differentiable: its weights"),
        (lambda x: numsoft.attention(x, x, x), "attention is not differentiable"),
        (lambda x: numsoft.softmax(x, out=torch.empty(2, 3, dtype=x.dtype)), "out= does not"),
        (lambda x: numsoft.logsumexp(x, return_sign=True), "with return_sign=True"),
        (lambda x: numsoft.cross_entropy(x, torch.tensor([0, 1]), return_grad=True), "return_grad"),
        (lambda x: numsoft.softmax(x.to(torch.complex128)), "differentiates float32 and float64"),
        (lambda x: numsoft.ssmax(x, s=torch.ones(2, requires_grad=True)), "one-element tensor"),
    ],
)
def test_not_differentiable_calls_say_why(call, match):
    with pytest.raises(TypeError, match=match):
        call(_t((2, 3)))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_tensors_get_gradients_in_their_dtype(dtype):
    x = (torch.arange(12.0).reshape(3, 4) / 5).to(dtype)
    w = torch.linspace(-1, 1, 12).reshape(3, 4).to(dtype)
    xh, xf = x.clone().requires_grad_(), x.float().requires_grad_()
    y = numsoft.log_softmax(xh)
    (y * w).sum().backward()
    (torch.log_softmax(xf, -1) * w.float()).sum().backward()
    assert y.dtype == dtype and xh.grad.dtype == dtype
    torch.testing.assert_close(xh.grad, xf.grad.to(dtype), rtol=0, atol=0)


@pytest.mark.parametrize("seed", [0, None])
def test_hard_gumbel_softmax_passes_the_soft_samples_gradient_straight_through(seed):
    # torch.nn.functional.gumbel_softmax(hard=True): the forward value is one-hot, the
    # gradient is the soft sample's (of the same noise).
    x = _t((4, 6))
    w = torch.tensor(RNG.standard_normal((4, 6)))
    y = numsoft.gumbel_softmax(x, tau=0.5, hard=True, seed=seed, temperature=2.0)
    assert torch.equal(y.sum(-1), torch.ones(4, dtype=y.dtype)) and set(y.unique().tolist()) <= {
        0,
        1,
    }
    (y * w).sum().backward()
    if seed is not None:  # the soft sample of the same seed: its argmax is y's one-hot
        xs = x.detach().clone().requires_grad_()
        ys = numsoft.gumbel_softmax(xs, tau=0.5, seed=seed, temperature=2.0)
        assert torch.equal(ys.argmax(-1), y.argmax(-1))
        (ys * w).sum().backward()
        torch.testing.assert_close(x.grad, xs.grad)
    else:  # the gradient of a softmax: each row's sums to 0, and it is not 0
        torch.testing.assert_close(x.grad.sum(-1), torch.zeros(4, dtype=x.dtype))
        assert x.grad.abs().sum() > 0
