"""Gradient rules: the vector–Jacobian product of every differentiable public function.

A rule says which arguments of a public function a gradient can flow into (``wrt``),
how to run the forward pass so that the backward pass recomputes nothing (``forward``:
the output, and what else to keep), and the backward pass itself (``backward``): NumPy
arrays in and out, numsoft's backward kernels where they exist. The array-type router
(``numsoft.route.autograd``) turns a rule into a torch operator for tensors that
require grad; the rules know nothing of torch.

Each rule is attached to its public function as ``func.gradient``; a public function
whose result has no useful gradient carries a ``NotDifferentiable`` with the reason.
For a function of ``z = x / temperature`` the rule gives ``∂/∂z`` and ``for_logits``
adds the chain to ``x`` and ``temperature`` and the mask of ``where=``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import core, fused, variants
from .cpu.variants.scaled import ADAPTIVE_POLY
from .fused import divergences, fenchel_young
from .variants import bisect, sampling

__all__ = ["Rule", "NotDifferentiable", "RULES"]


def _plain_forward(func, args: dict):
    return func(**args), ()


@dataclass(frozen=True)
class Rule:
    """How a public function is differentiated (see the module docstring).

    ``backward(args, y, dy, saved, needs)`` returns ``{name: gradient}`` for the names in
    ``needs`` (a subset of ``wrt``), each broadcastable to its argument;
    ``refuse(args)`` names what makes a call not differentiable, or returns None;
    ``scalars`` are the ``wrt`` arguments the function takes as Python numbers.
    """

    wrt: tuple[str, ...]
    backward: Callable
    forward: Callable = _plain_forward
    refuse: Callable | None = None
    scalars: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class NotDifferentiable:
    """A public function whose result numsoft does not differentiate, and why."""

    reason: str


# ---------------------------------------------------------------- shared pieces


def axes_of(axis, ndim: int) -> tuple[int, ...]:
    """``axis`` (int, tuple or None) as a tuple of non-negative axes of an ``ndim`` array."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % ndim for a in axis) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()


def row_sum(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Σ over the normalized axes, kept as length-1 axes (float64 accumulation)."""
    return np.sum(a, axis=axes, keepdims=True, dtype=np.float64).astype(a.dtype, copy=False)


def for_logits(dz_of, extra_wrt: tuple[str, ...] = (), scalars: tuple[str, ...] = ()):
    """A rule for a map of ``z = x / temperature`` with the common arguments, from
    ``dz_of(args, y, dy, saved, needs)`` → ``(∂/∂z, {other gradients})``.

    Masked entries (``where=False``) get no upstream gradient and no gradient; the
    temperature's gradient is ``-Σ ∂/∂z · z / t``.
    """

    def backward(args, y, dy, saved, needs):
        where = args.get("where")
        if where is not None:
            dy = np.where(where, dy, 0)
        dz, grads = dz_of(args, y, dy, saved, needs)
        if where is not None:
            dz = np.where(where, dz, 0)
        t = args["temperature"]
        grads["x"] = dz if t == 1 else dz / t
        if "temperature" in needs:
            z = np.asarray(args["x"], dtype=dz.dtype) / t
            if where is not None:
                z = np.where(where, z, 0)
            grads["temperature"] = -np.sum(dz * z, dtype=np.float64) / t
        return grads

    return Rule(("x", "temperature", *extra_wrt), backward, scalars=("temperature", *scalars))


def _z(args, dtype) -> np.ndarray:
    """``x / temperature`` in ``dtype``, masked entries at -inf."""
    z = np.asarray(args["x"], dtype=dtype) / dtype.type(args["temperature"])
    where = args.get("where")
    return z if where is None else np.where(where, z, -np.inf).astype(dtype, copy=False)


def _by_output(backward):
    """``dz_of`` for a map whose backward kernel takes (y, dy, axis)."""
    return lambda args, y, dy, saved, needs: (backward(y, dy, args["axis"]), {})


# ---------------------------------------------------------------- variants' ∂/∂z


def _stablemax_dz(args, y, dy, saved, needs):
    return variants.stablemax_backward(_z(args, y.dtype), dy, args["axis"]), {}


def _log_stablemax_dz(args, y, dy, saved, needs):
    # log p = log s(z) - log Σ s(z), s'/s = 1/(1 + |z|): dz = (dy - p·Σdy) / (1 + |z|).
    z = _z(args, y.dtype)
    axes = axes_of(args["axis"], y.ndim)
    p = np.exp(y)
    return (dy - p * row_sum(dy, axes)) / (1 + np.abs(z)), {}


def _softplus_l1_dz(args, y, dy, saved, needs):
    # p = sp(z)/Σsp, sp' = sigmoid: dz = sigmoid(z)/Σsp · (dy - Σ dy·p).
    z = _z(args, y.dtype)
    axes = axes_of(args["axis"], y.ndim)
    total = row_sum(np.logaddexp(0, z), axes)
    sig = np.exp(-np.logaddexp(0, -z))
    return sig / total * (dy - row_sum(dy * y, axes)), {}


def _softpick_dz(args, y, dy, saved, needs):
    # p = relu(e^z - 1)/(Σ|e^z - 1| + eps): dz = e^z/D · ([z > 0]·dy - sign(z)·Σ dy·p),
    # evaluated with m = max(z, 0) as the forward pass is.
    z = _z(args, y.dtype)
    axes = axes_of(args["axis"], y.ndim)
    m = np.maximum(np.max(z, axis=axes, keepdims=True), 0)
    e = np.exp(z - m)
    inside = z > -np.inf  # -inf entries (and masked ones) are left out, as in the kernel
    denom = row_sum(np.where(inside, np.abs(e - np.exp(-m)), 0), axes) + args["eps"] * np.exp(-m)
    grad = e / denom * ((z > 0) * dy - np.sign(z) * row_sum(dy * y, axes))
    return np.where(inside, grad, 0), {}


def _softmax_of_z(args, dtype) -> np.ndarray:
    """softmax(z) of the call (its mask and temperature), in ``dtype``."""
    p = core.softmax(
        args["x"], axis=args["axis"], where=args.get("where"), temperature=args["temperature"]
    )
    return np.asarray(p, dtype=dtype)


def _share(mask: np.ndarray, axes) -> np.ndarray:
    """``mask`` as weights summing to 1 per row where it holds (a tie's subgradient)."""
    m = mask.astype(np.float64)
    count = np.sum(m, axis=axes, keepdims=True)
    return np.divide(m, count, out=np.zeros_like(m), where=count > 0)


def _sa_softmax_dz(args, y, dy, saved, needs):
    # y = a ⊙ p, p = softmax(z): dz = (∂a/∂z)ᵀ(dy ⊙ p) + p ⊙ (u − Σ p·u), u = dy ⊙ a.
    # Plain: a = z. Normalized: a = (z − lo)/(hi − lo) with lo = min(z_min, 0) and
    # hi = max(z_max, 0) over the included entries, whose min and max entries (shared
    # among ties) carry the range's derivative.
    axes = axes_of(args["axis"], y.ndim)
    z = _z(args, y.dtype)
    p = _softmax_of_z(args, y.dtype)
    v = dy * p
    if not args["normalized"]:
        a = np.where(p > 0, z, 0)
        first = v
    else:
        lo = np.minimum(np.min(np.where(z == -np.inf, np.inf, z), axis=axes, keepdims=True), 0)
        hi = np.maximum(np.max(z, axis=axes, keepdims=True), 0)
        span = hi - lo
        inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)
        a = np.where(p > 0, (z - lo) * inv, 0)
        low = _share((z == lo) & (lo < 0), axes)
        high = _share((z == hi) & (hi > 0), axes)
        first = inv * (v - low * row_sum(v, axes) - row_sum(v * a, axes) * (high - low))
    u = dy * a
    return (first + p * (u - row_sum(p * u, axes))).astype(y.dtype, copy=False), {}


def _adaptive_softmax_dz(args, y, dy, saved, needs):
    # y = softmax(β·z), β = poly(H) where H > 0.5 and poly(H) > 1 (else 1), H the entropy
    # of p = softmax(z): dz = β·y ⊙ (dy − Σ y·dy) + c·poly′(H)·∂H/∂z with
    # c = Σ dy·y·(z − Σ y·z) (= ⟨dy, ∂y/∂β⟩) and ∂H/∂z = −p ⊙ (log p + H).
    axes = axes_of(args["axis"], y.ndim)
    z = _z(args, y.dtype)
    p = _softmax_of_z(args, y.dtype)
    log_p = np.log(np.where(p > 0, p, 1))
    entropy = -row_sum(p * log_p, axes)
    poly = np.polyval(ADAPTIVE_POLY, entropy)
    active = (entropy > 0.5) & (poly > 1)
    beta = np.where(active, poly, 1)
    zy = np.where(y > 0, z, 0)
    c = row_sum(dy * y * (zy - row_sum(y * zy, axes)), axes)
    slope = np.where(active, c * np.polyval(np.polyder(ADAPTIVE_POLY), entropy), 0)
    dz = beta * y * (dy - row_sum(y * dy, axes)) - slope * p * (log_p + entropy)
    return dz.astype(y.dtype, copy=False), {}


def _row_count(args, shape, axes):
    where = args.get("where")
    if where is None:
        return np.full((1,) * len(shape), math.prod(shape[a] for a in axes), np.float64)
    mask = np.broadcast_to(np.asarray(where, dtype=bool), shape)
    return np.sum(mask, axis=axes, keepdims=True, dtype=np.float64)


def _ssmax_dz(args, y, dy, saved, needs):
    # y = softmax(s·log(n)·z): dz = s·log n · g, ds = Σ g·log n·z, g = softmax_backward.
    axes = axes_of(args["axis"], y.ndim)
    log_n = np.log(np.maximum(_row_count(args, y.shape, axes), 1)).astype(y.dtype)
    g = core.softmax_backward(y, dy, args["axis"])
    grads = {}
    if "s" in needs:
        z = np.asarray(args["x"], dtype=y.dtype) / args["temperature"]
        if args.get("where") is not None:
            z = np.where(args["where"], z, 0)
        grads["s"] = np.sum(np.where(g != 0, g * log_n * z, 0), dtype=np.float64)
    return args["s"] * log_n * g, grads


def _sigmoid_attention_dz(args, y, dy, saved, needs):
    return dy * y * (1 - y), {}


def _gumbel_dz(args, y, dy, saved, needs):
    # hard=True: the straight-through estimator, the soft sample's gradient (saved)
    soft = saved[0] if saved else y
    return core.softmax_backward(soft, dy, args["axis"]) / args["tau"], {}


def _gumbel_forward(func, args: dict):
    """With ``hard=True``, the one-hot sample and the soft sample of the same noise (one
    seed for both: the noise depends on the seed and the values alone)."""
    if not args["hard"]:
        return func(**args), ()
    seeded = {**args, "seed": sampling.seed_value(args["seed"])}
    return func(**seeded), (func(**{**seeded, "hard": False}),)


def _multimax_dz(args, y, dy, saved, needs):
    # y = softmax(σ(z)): dz = σ'(z)·softmax_backward(y, dy) (SPEC §4's σ).
    z = _z(args, y.dtype)
    b0, b1, b2, b3 = (float(v) for v in args["ranges"])
    t0, t1, t2, t3 = (float(v) for v in args["ts"])
    slope = 1 - t0 * (z < b0) + t1 * (z > b1) - 2 * t2 * np.maximum(b2 - z, 0)
    slope = slope + 2 * t3 * np.maximum(z - b3, 0)
    return np.where(np.isfinite(z), slope, 0) * core.softmax_backward(y, dy, args["axis"]), {}


def _entmax_dz(args, y, dy, saved, needs):
    alpha = args["alpha"]
    axis = args["axis"]
    dz = bisect.entmax_input_gradient(y, dy, alpha, axes_of(axis, y.ndim))
    if alpha in (1.0, 2.0) or "alpha" not in needs:  # softmax and sparsemax: no α gradient
        return dz, {}
    return dz, {"alpha": np.sum(bisect.entmax_alpha_gradient(y, dy, alpha, axes_of(axis, y.ndim)))}


# ---------------------------------------------------------------- logsumexp


def _logsumexp_backward(args, y, dy, saved, needs):
    """lse = t·log Σ b·e^(x/t): ∂/∂x = w, ∂/∂b = t·e^(x/t - lse/t), ∂/∂t = (lse - Σ w·x)/t,
    with w = b·e^(x/t - lse/t) (the weights of softmax(x/t + log b))."""
    x = np.asarray(args["x"])
    dtype = np.result_type(y, np.float32)
    axes = axes_of(args["axis"], x.ndim)
    t = args["temperature"]
    lse = np.asarray(y, dtype=dtype)
    up = np.asarray(dy, dtype=dtype)
    if not args["keepdims"]:
        lse = np.expand_dims(lse, axes)
        up = np.expand_dims(up, axes)
    e = np.exp(x.astype(dtype, copy=False) / dtype.type(t) - lse / dtype.type(t))
    where = args.get("where")
    if where is not None:
        e = np.where(where, e, 0)
    b = args.get("b")
    w = e if b is None else e * np.asarray(b, dtype=dtype)
    grads = {"x": up * w}
    if "b" in needs:
        grads["b"] = up * (t * e)
    if "temperature" in needs:
        wx = row_sum(np.where(w != 0, w * x, 0), axes)
        grads["temperature"] = np.sum(up * (lse - wx) / t, dtype=np.float64)
    return grads


def _logsumexp_refuse(args):
    return "return_sign=True (the sign has no gradient)" if args["return_sign"] else None


# ---------------------------------------------------------------- losses


def _loss_forward(func, args: dict):
    """The loss with its gradient of the same row visit (``return_grad=True``)."""
    loss, *grads = func(**{**args, "return_grad": True})
    return loss, tuple(grads)


def _loss_refuse(args):
    if args.get("return_lse"):
        return "return_lse=True (a tuple output)"
    if args.get("return_grad"):
        return "return_grad=True (the gradient is what autograd computes)"
    return None


def _chain_rows(grad: np.ndarray, dy: np.ndarray, axis: int) -> np.ndarray:
    """``grad`` (of Σ loss) times the upstream gradient of each row's loss."""
    dy = np.asarray(dy)
    return grad * (dy if dy.ndim == 0 else np.expand_dims(dy, axis % grad.ndim))


def _cross_entropy_backward(args, y, dy, saved, needs):
    grads = {"logits": _chain_rows(saved[0], dy, args["axis"])}
    if "labels" in needs:  # probability targets: ∂ℓ/∂q_j = −(1 − ε)·log p_j per row
        logits = np.asarray(args["logits"], dtype=saved[0].dtype)
        rows = logits.size // max(logits.shape[args["axis"]], 1) if logits.ndim else 0
        w = 1.0 / rows if args["reduction"] == "mean" and rows else 1.0
        where = args.get("where")
        log_p = core.log_softmax(logits, axis=args["axis"], where=where)
        if where is not None:  # the targets of a class left out are not read
            log_p = np.where(where, log_p, 0)
        g = log_p * -(w * (1.0 - args["label_smoothing"]))
        grads["labels"] = _chain_rows(g, dy, args["axis"])
    return grads


def _margin_backward(args, y, dy, saved, needs):
    return {"cos_logits": _chain_rows(saved[0], dy, args["axis"])}


def _divergence_rule(with_grads) -> Rule:
    """The rule of a divergence between two arrays of logits of ``z = x / temperature``:
    the student's gradient from the forward pass, the teacher's (and the temperature's,
    which needs both) from one more run of the kernels."""

    def backward(args, y, dy, saved, needs):
        axis = args["axis"]
        gs = _chain_rows(saved[0], dy, axis)
        grads = {"student_logits": gs}
        if needs & {"teacher_logits", "temperature"}:
            _, _, gt = with_grads(args, (False, True))
            gt = _chain_rows(gt, dy, axis)
            grads["teacher_logits"] = gt
        if "temperature" in needs:
            s = np.asarray(args["student_logits"], dtype=gs.dtype)
            t = np.asarray(args["teacher_logits"], dtype=gs.dtype)
            dot = np.sum(gs * s, dtype=np.float64) + np.sum(gt * t, dtype=np.float64)
            grads["temperature"] = -dot / args["temperature"]
        return grads

    return Rule(
        ("student_logits", "teacher_logits", "temperature"),
        backward,
        forward=_loss_forward,
        refuse=_loss_refuse,
        scalars=("temperature",),
    )


def _kl_div_with_grads(args, grads):
    return divergences.kl_div_with_grads(
        args["student_logits"],
        args["teacher_logits"],
        args["axis"],
        args["where"],
        args["temperature"],
        args["reverse"],
        args["reduction"],
        grads,
    )


def _jsd_with_grads(args, grads):
    return divergences.jsd_with_grads(
        args["student_logits"],
        args["teacher_logits"],
        args["beta"],
        args["axis"],
        args["where"],
        args["temperature"],
        args["reduction"],
        grads,
    )


def _fenchel_young_backward(args, y, dy, saved, needs):
    return {"x": _chain_rows(saved[0], dy, args["axis"])}


def _linear_cross_entropy_backward(args, y, dy, saved, needs):
    up = float(dy)
    grads = {"h": saved[0] * up, "W": saved[1] * up}
    if len(saved) > 2:
        grads["bias"] = saved[2] * up
    return grads


def _linear_cross_entropy_refuse(args):
    if args["reduction"] == "none":
        return (
            'reduction="none" (its weight gradient needs each row\'s upstream gradient; '
            'use "sum" or "mean")'
        )
    return _loss_refuse(args)


# ---------------------------------------------------------------- bisection maps


def _bisect_rule(name: str):
    def backward(args, y, dy, saved, needs):
        return getattr(bisect, f"{name}_backward")(args, y, dy, needs)

    return backward


# ---------------------------------------------------------------- the table

_SOFTMAX = for_logits(_by_output(core.softmax_backward))

RULES: dict[Callable, Rule | NotDifferentiable] = {
    core.softmax: _SOFTMAX,
    core.log_softmax: for_logits(_by_output(core.log_softmax_backward)),
    core.logsumexp: Rule(
        ("x", "b", "temperature"),
        _logsumexp_backward,
        refuse=_logsumexp_refuse,
        scalars=("temperature",),
    ),
    variants.sparsemax: for_logits(_by_output(variants.sparsemax_backward)),
    variants.entmax15: for_logits(_by_output(variants.entmax15_backward)),
    variants.entmax: for_logits(_entmax_dz, ("alpha",), ("alpha",)),
    variants.stablemax: for_logits(_stablemax_dz),
    variants.log_stablemax: for_logits(_log_stablemax_dz),
    variants.softpick: for_logits(_softpick_dz),
    variants.ssmax: for_logits(_ssmax_dz, ("s",), ("s",)),
    variants.softplus_l1: for_logits(_softplus_l1_dz),
    variants.sigmoid_attention: for_logits(_sigmoid_attention_dz),
    variants.topk_softmax: _SOFTMAX,
    variants.multimax: for_logits(_multimax_dz),
    variants.sa_softmax: for_logits(_sa_softmax_dz),
    variants.adaptive_softmax: for_logits(_adaptive_softmax_dz),
    variants.gumbel_softmax: Rule(
        _SOFTMAX.wrt,
        for_logits(_gumbel_dz).backward,
        forward=_gumbel_forward,
        scalars=_SOFTMAX.scalars,
    ),
    fused.sampled_cross_entropy: Rule(
        ("h", "W", "bias"),
        _linear_cross_entropy_backward,
        forward=_loss_forward,
        refuse=_linear_cross_entropy_refuse,
    ),
    fused.margin_cross_entropy: Rule(
        ("cos_logits",),
        _margin_backward,
        forward=_loss_forward,
        refuse=_loss_refuse,
    ),
    fused.kl_div: _divergence_rule(_kl_div_with_grads),
    fused.jsd: _divergence_rule(_jsd_with_grads),
    fused.cross_entropy: Rule(
        ("logits", "labels"),
        _cross_entropy_backward,
        forward=_loss_forward,
        refuse=_loss_refuse,
    ),
    fused.linear_cross_entropy: Rule(
        ("h", "W", "bias"),
        _linear_cross_entropy_backward,
        forward=_loss_forward,
        refuse=_linear_cross_entropy_refuse,
    ),
    bisect.entmax_bisect: Rule(("x", "alpha"), _bisect_rule("entmax_bisect")),
    bisect.normmax_bisect: Rule(("x",), _bisect_rule("normmax_bisect")),
    bisect.budget_bisect: Rule(("x",), _bisect_rule("budget_bisect")),
    core.softmax_backward: NotDifferentiable("a backward pass (double backward is not built)"),
    core.log_softmax_backward: NotDifferentiable("a backward pass (double backward is not built)"),
    variants.rowmax_pot: NotDifferentiable(
        "its weights are powers of two of rounded logits: the gradient is 0 almost everywhere"
    ),
    fused.softmax_topk: NotDifferentiable(
        "it returns indices; use topk_softmax, whose output is differentiable"
    ),
    fused.attention: NotDifferentiable(
        "no backward pass yet; torch.nn.functional.scaled_dot_product_attention has one"
    ),
}
for _loss in (
    fenchel_young.sparsemax_loss,
    fenchel_young.entmax15_loss,
    fenchel_young.entmax_bisect_loss,
):
    RULES[_loss] = Rule(
        ("x",),
        _fenchel_young_backward,
        forward=_loss_forward,
        refuse=_loss_refuse,
    )
for _backward in (
    variants.sparsemax_backward,
    variants.entmax15_backward,
    variants.stablemax_backward,
):
    RULES[_backward] = RULES[core.softmax_backward]

for _func, _rule in RULES.items():
    _func.gradient = _rule
