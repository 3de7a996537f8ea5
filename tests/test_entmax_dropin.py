"""``numsoft.torch`` against the ``entmax`` package (version 1.3): every name, the same
results and gradients, and a small model that trains to the same losses."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
entmax = pytest.importorskip("entmax")

import numsoft.torch as nt  # noqa: E402

GEN = torch.Generator().manual_seed(5)
X = torch.randn(6, 9, dtype=torch.float64, generator=GEN) * 2
W = torch.randn(6, 9, dtype=torch.float64, generator=GEN)
TARGET = torch.randint(0, 9, (6,), generator=GEN)
ALPHAS = torch.rand(6, 1, dtype=torch.float64, generator=GEN) + 1.1


def test_every_name_of_entmax():
    public = {n for n in vars(entmax) if not n.startswith("_")}
    public -= {"activations", "losses", "root_finding"}  # its modules
    assert set(nt.__all__) == public


MAPS = {
    "sparsemax": ((), {"dim": 0, "k": 2}),
    "entmax15": ((), {"k": 3}),
    "sparsemax_bisect": ((), {}),
    "entmax_bisect": ((1.3,), {}),
    "entmax_bisect_below_one": ((0.7,), {"n_iter": 30, "ensure_sum_one": False}),
    "entmax_bisect_above_two": ((2.5,), {}),
    "entmax_bisect_per_row": ((ALPHAS,), {}),
    "normmax_bisect": ((3.0,), {"dim": 0}),
    "budget_bisect": ((3,), {}),
}


@pytest.mark.parametrize("case", MAPS)
def test_maps_and_their_gradients_match_entmax(case):
    name = case.replace("_below_one", "").replace("_above_two", "").replace("_per_row", "")
    args, kwargs = MAPS[case]
    x1, x2 = X.clone().requires_grad_(), X.clone().requires_grad_()
    y1 = getattr(nt, name)(x1, *args, **kwargs)
    y2 = getattr(entmax, name)(x2, *args, **kwargs)
    torch.testing.assert_close(y1, y2, rtol=1e-10, atol=1e-12)
    (y1 * W).sum().backward()
    (y2 * W).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-8, atol=1e-10)


def test_gradient_in_alpha_matches_entmax():
    a1 = ALPHAS.clone().requires_grad_()
    (nt.entmax_bisect(X, a1) * W).sum().backward()
    # entmax's own, row by row (its α broadcasts the same way)
    for i in range(6):
        a = ALPHAS[i : i + 1].clone().requires_grad_()
        (entmax.entmax_bisect(X[i : i + 1], a) * W[i : i + 1]).sum().backward()
        torch.testing.assert_close(a1.grad[i], a.grad[0], rtol=1e-8, atol=1e-10)


LOSSES = ["sparsemax_loss", "entmax15_loss", "sparsemax_bisect_loss", "entmax_bisect_loss",
          "normmax_bisect_loss"]  # fmt: skip


@pytest.mark.parametrize("name", LOSSES)
def test_losses_match_entmax(name):
    x1, x2 = X.clone().requires_grad_(), X.clone().requires_grad_()
    l1 = getattr(nt, name)(x1, TARGET)
    l2 = getattr(entmax, name)(x2, TARGET)
    torch.testing.assert_close(l1, l2, rtol=1e-10, atol=1e-12)
    (l1 * torch.arange(6.0)).sum().backward()
    (l2 * torch.arange(6.0)).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "module", ["SparsemaxLoss", "Entmax15Loss", "EntmaxBisectLoss", "NormmaxBisectLoss"]
)
@pytest.mark.parametrize("reduction", ["elementwise_mean", "sum", "none"])
def test_loss_modules_reduce_as_entmax(module, reduction):
    target = TARGET.clone()
    target[0] = 4
    ours = getattr(nt, module)(ignore_index=4, reduction=reduction)(X, target)
    theirs = getattr(entmax, module)(ignore_index=4, reduction=reduction)(X, target)
    torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


def _train(lib, steps=5):
    """A classifier head with 1.5-entmax attention pooling, trained by entmax15 loss."""
    torch.manual_seed(0)
    tokens = torch.randn(32, 10, 8)
    labels = torch.randint(0, 5, (32,))
    score = torch.nn.Linear(8, 1)
    head = torch.nn.Linear(8, 5)
    opt = torch.optim.SGD([*score.parameters(), *head.parameters()], lr=0.5)
    loss_fn = lib.Entmax15Loss(k=None)
    losses = []
    for _ in range(steps):
        weights = lib.entmax15(score(tokens).squeeze(-1), dim=-1)  # (32, 10)
        pooled = (weights.unsqueeze(-1) * tokens).sum(1)
        loss = loss_fn(head(pooled), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_a_model_trains_as_with_entmax():
    ours, theirs = _train(nt), _train(entmax)
    assert ours[-1] < ours[0]
    assert ours == pytest.approx(theirs, rel=1e-5)
