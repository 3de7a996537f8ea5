"""Every public name of ``numsoft.torch`` against the ``entmax`` package on the inputs
users hand it: int64, float16, bfloat16, float32 and float64 tensors, 1-D to 4-D with
each ``dim``, non-contiguous and empty tensors.

Each case must give equal results (dtype, shape and values) or equal refusals. Two
documented departures are checked as such:

- where entmax fails on integer input inside its own arithmetic (a float result it
  cannot write into an integer tensor), or computes a wrong one (its bisection maps make
  α and the budget tensors of the input's dtype: α = 1.5 becomes 1, and every entry
  gets the same mass), numsoft.torch gives what entmax gives for the same values as
  floats (torch's default dtype);
- half-precision tensors are computed in float32 and rounded once: they are compared
  with entmax's float32 result rounded to the half dtype (entmax's own half arithmetic
  rounds at every step).
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
entmax = pytest.importorskip("entmax")

import numsoft.torch as nt  # noqa: E402

MAPS = {
    "sparsemax": (),
    "entmax15": (),
    "entmax_bisect": (1.5,),
    "sparsemax_bisect": (),
    "normmax_bisect": (2.0,),
    "budget_bisect": (2,),
}
LOSSES = ["sparsemax_loss", "entmax15_loss", "entmax_bisect_loss", "sparsemax_bisect_loss",
          "normmax_bisect_loss"]  # fmt: skip
DTYPES = [torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64]
SHAPES = [(5,), (3, 5), (2, 3, 5), (2, 2, 3, 4), (0, 5), (3, 0)]
HALF = (torch.float16, torch.bfloat16)
#: entmax's own failures on integer input (its arithmetic, not a refusal of the input)
INTEGER_FAULTS = ("can't be cast to the desired output type", "expected scalar type")


def tensor(shape, dtype, contiguous=True):
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.int64:
        x = torch.randint(-3, 4, shape, generator=gen)
    else:
        x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    if not contiguous:  # the same values, through a transposed view
        x = x.transpose(0, -1).contiguous().transpose(0, -1)
        assert x.dim() < 2 or x.numel() == 0 or not x.is_contiguous()
    return x


def outcome(func, *args, **kwargs):
    try:
        return func(*args, **kwargs), None
    except Exception as exc:  # an error is an outcome to compare
        return None, exc


def assert_same_outcome(ours, theirs, call_entmax_on, x, entmax_wrong_on_integers=False):
    (y1, e1), (y2, e2) = ours, theirs
    faulted = e2 is not None and any(s in str(e2) for s in INTEGER_FAULTS)
    if x.dtype == torch.int64 and (faulted or entmax_wrong_on_integers):
        y2, e2 = outcome(call_entmax_on, x.to(torch.get_default_dtype()))
    if e2 is not None:
        assert e1 is not None, f"entmax refuses ({type(e2).__name__}: {e2}); numsoft computed"
        assert any(name in str(e1) for name in ("X", "dim", "target")), str(e1)
        return
    assert e1 is None, f"numsoft refused ({e1!r}); entmax computed"
    assert y1.dtype == y2.dtype and y1.shape == y2.shape
    if x.dtype in HALF:  # entmax's float32 result, rounded once
        y2 = call_entmax_on(x.float()).to(x.dtype)
        tol = {"rtol": 1e-2, "atol": 1e-2}
    else:
        tol = {"rtol": 1e-10, "atol": 1e-12} if y1.dtype == torch.float64 else {}
    torch.testing.assert_close(y1.float() if x.dtype in HALF else y1,
                               y2.float() if x.dtype in HALF else y2, **tol)  # fmt: skip


def map_cases():
    for name, dtype, shape in itertools.product(MAPS, DTYPES, SHAPES):
        for dim in range(-len(shape), len(shape)):
            yield pytest.param(name, dtype, shape, dim, id=f"{name}-{dtype}-{shape}-{dim}")


@pytest.mark.parametrize(("name", "dtype", "shape", "dim"), list(map_cases()))
def test_maps_give_entmax_results_or_refusals(name, dtype, shape, dim):
    args = MAPS[name]
    for contiguous in (True, False):
        x = tensor(shape, dtype, contiguous)
        ours = outcome(getattr(nt, name), x, *args, dim=dim)
        theirs = outcome(getattr(entmax, name), x, *args, dim=dim)
        assert_same_outcome(ours, theirs, lambda t: getattr(entmax, name)(t, *args, dim=dim), x,
                            entmax_wrong_on_integers=name.endswith("_bisect"))  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES + [(2, 3, 5)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", LOSSES)
def test_losses_give_entmax_results_or_refusals(name, dtype, shape):
    x = tensor(shape, dtype)
    target = torch.zeros(shape[:1] if len(shape) == 2 else shape[:-1], dtype=torch.int64)
    ours = outcome(getattr(nt, name), x, target)
    theirs = outcome(getattr(entmax, name), x, target)
    assert_same_outcome(ours, theirs, lambda t: getattr(entmax, name)(t, target), x)


def test_loss_module_refuses_3d_scores_as_entmax_does():
    x = tensor((2, 3, 5), torch.float32)
    target = torch.zeros(2, 3, dtype=torch.int64)
    with pytest.raises(ValueError, match="X: the losses take 2-D"):
        nt.SparsemaxLoss()(x, target)
    with pytest.raises(Exception):  # noqa: B017 (entmax's own error, whatever its type)
        entmax.SparsemaxLoss()(x, target)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", ["sparsemax", "entmax15", "entmax_bisect"])
def test_half_precision_with_gradients(name, dtype):
    x = tensor((4, 7), torch.float32)
    w = tensor((4, 7), torch.float32)
    xh = x.to(dtype).requires_grad_()
    y = getattr(nt, name)(xh)
    (y * w.to(dtype)).sum().backward()
    assert y.dtype == dtype and xh.grad.dtype == dtype
    xf = x.to(dtype).float().requires_grad_()  # the same values, in float32
    (getattr(entmax, name)(xf) * w.to(dtype).float()).sum().backward()
    torch.testing.assert_close(xh.grad.float(), xf.grad, rtol=2e-2, atol=2e-2)


def test_a_half_model_runs():
    layer = torch.nn.Sequential(torch.nn.Linear(6, 5), nt.Entmax15(dim=-1)).half()
    y = layer(torch.randn(3, 6).half())
    assert y.dtype == torch.float16
    torch.testing.assert_close(y.float().sum(-1), torch.ones(3), rtol=0, atol=4e-3)


def test_integer_tensors_give_float_results():
    x = torch.tensor([2, 2, 2])
    for name in ("sparsemax", "entmax15"):
        y = getattr(nt, name)(x)
        assert y.dtype == torch.get_default_dtype()
        torch.testing.assert_close(y, torch.full((3,), 1 / 3))


@pytest.mark.parametrize(
    ("module", "name", "args"),
    [
        ("activations", "SparsemaxFunction", (-1, None)),
        ("activations", "Entmax15Function", (0, None)),
        ("root_finding", "EntmaxBisectFunction", (1.3, -1, 50, True)),
        ("root_finding", "SparsemaxBisectFunction", (-1, 50, True)),
        ("root_finding", "NormmaxBisectFunction", (2.5, -1, 50)),
        ("root_finding", "BudgetBisectFunction", (2, -1, 50)),
    ],
)
def test_function_classes_apply_as_entmax(module, name, args):
    ours = getattr(getattr(nt, module), name)
    theirs = getattr(getattr(entmax, module), name)
    x = tensor((4, 6), torch.float64)
    w = tensor((4, 6), torch.float64) + 1
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    y1, y2 = ours.apply(x1, *args), theirs.apply(x2, *args)
    torch.testing.assert_close(y1, y2, rtol=1e-10, atol=1e-12)
    (y1 * w).sum().backward()
    (y2 * w).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "name",
    [
        "SparsemaxLossFunction",
        "Entmax15LossFunction",
        "SparsemaxBisectLossFunction",
        "EntmaxBisectLossFunction",
        "NormmaxBisectLossFunction",
    ],  # fmt: skip
)
def test_loss_function_classes_apply_as_entmax(name):
    x = tensor((4, 6), torch.float64)
    target = torch.tensor([0, 3, 5, 1])
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    l1 = getattr(nt.losses, name).apply(x1, target)
    l2 = getattr(entmax.losses, name).apply(x2, target)
    torch.testing.assert_close(l1, l2, rtol=1e-10, atol=1e-12)
    l1.sum().backward()
    l2.sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-8, atol=1e-10)


def test_module_paths_and_version_of_entmax():
    for module in ("activations", "losses", "root_finding"):
        theirs = getattr(entmax, module)
        ours = getattr(nt, module)
        own = {
            n
            for n, v in vars(theirs).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == theirs.__name__
        }
        assert own <= set(vars(ours)), own - set(vars(ours))
    assert nt.__version__ == entmax.__version__ == "1.3"
