"""torch autograd for numsoft's public functions: tensors that require grad.

A torch CPU tensor that requires grad (in grad mode) reaches here from
``route.array_api``. The public function's gradient rule (``func.gradient``, set by
``numsoft.gradients``) gives the arguments a gradient flows into, the forward pass
(the output, and whatever the backward pass reuses: a loss's gradient from the same
row visit) and the backward pass, on NumPy views of the tensors (no copy).
The forward output is saved for the backward pass, never recomputed.

In eager mode the rule runs as a ``torch.autograd.Function``: its dispatch costs
about 5 µs a call here, against about 45 µs for a ``torch.library.custom_op``, four
times a small softmax. Inside ``torch.compile`` the same passes run as the custom
operators of ``route.compiled``, which a compiled graph can hold.

Double backward (``create_graph=True``) raises: numsoft's backward passes are not
themselves recorded.
"""

from __future__ import annotations

import numpy as np
import torch

from .dlpack import exportable, read_host

#: The dtypes a gradient flows through (numsoft's kernels compute in these).
GRAD_DTYPES = (torch.float32, torch.float64)


def call(func, bound):
    """``func`` on the bound arguments ``bound`` (some tensors require grad): a tensor
    whose ``grad_fn`` runs the function's backward pass."""
    names, options, arrays, _ = split(func, bound)
    return _Eager.apply(func, names, options, *arrays)


def split(func, bound) -> tuple[tuple[str, ...], dict, list, bool]:
    """(the names of the tensor arguments, the other arguments, the tensors, whether
    autograd records the call), after the checks that a recorded call can be
    differentiated."""
    bound.apply_defaults()
    args = dict(bound.arguments)
    tensors = {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}
    options = {k: v for k, v in args.items() if k not in tensors}
    parts = (tuple(tensors), options, list(tensors.values()))
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors.values())):
        return (*parts, False)
    name = func.__name__
    rule = getattr(func, "gradient", None)
    if rule is None or hasattr(rule, "reason"):
        why = rule.reason if rule is not None else "it has no gradient rule"
        raise TypeError(f"numsoft.{name} is not differentiable: {why}; pass detached tensors")
    if args.get("out") is not None:
        raise TypeError(f"numsoft.{name}: out= does not take part in autograd; leave it out")
    for key, t in tensors.items():
        if not t.requires_grad:
            continue
        if key not in rule.wrt:
            raise TypeError(
                f"numsoft.{name}: {key} requires grad, but numsoft gives no gradient for "
                f"it (the differentiable arguments: {', '.join(rule.wrt)})"
            )
        if t.dtype not in GRAD_DTYPES:
            raise TypeError(
                f"numsoft.{name}: {key} requires grad with dtype {t.dtype}; numsoft "
                f"differentiates float32 and float64 tensors"
            )
    if rule.refuse is not None and (why := rule.refuse(options)):
        raise TypeError(f"numsoft.{name} is not differentiable with {why}")
    return (*parts, True)


# ---------------------------------------------------------------- the shared passes


def numpy_args(func, names, options, arrays) -> dict:
    """The call's arguments with each tensor as a NumPy view (a one-element tensor in
    an argument the function takes as a number, as that number)."""
    scalars = getattr(func.gradient, "scalars", ())
    args = dict(options)
    for key, t in zip(names, arrays, strict=True):
        a = view(t, key)
        if key in scalars:
            if a.size != 1:
                raise TypeError(
                    f"numsoft.{func.__name__}: {key} must be a number or a one-element "
                    f"tensor, got shape {tuple(a.shape)}"
                )
            a = float(a.reshape(()))
        args[key] = a
    return args


def view(t: torch.Tensor, name: str) -> np.ndarray:
    """A NumPy view of a CPU tensor: torch's own ``numpy()`` (a third of DLPack's cost
    per call), DLPack's rules where it refuses (a dtype NumPy lacks)."""
    try:
        return t.detach().numpy()
    except (RuntimeError, TypeError):
        return read_host(t.detach(), name)


def as_tensor(a) -> torch.Tensor:
    """A NumPy result as a tensor (no copy where DLPack allows)."""
    a = np.asarray(a)
    return torch.from_numpy(exportable(a)) if a.ndim else torch.tensor(a)


def run_forward(func, names, options, arrays, recorded=True) -> tuple:
    """(output, the tensors the backward pass reuses): the rule's forward pass where
    autograd records the call, else the function's plain one (whose output may be a
    tuple, and which keeps nothing)."""
    args = numpy_args(func, names, options, arrays)
    if not recorded:
        y = func(**args)
        return (tuple(map(as_tensor, y)) if isinstance(y, tuple) else as_tensor(y)), []
    y, saved = func.gradient.forward(func, args)
    return as_tensor(y), [as_tensor(s) for s in saved]


def run_backward(func, names, options, arrays, y, saved, dy, needs) -> list:
    """The gradient of each array argument (None where not needed), shaped like it."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"numsoft.{func.__name__}: double backward (create_graph=True) is not "
            f"supported; numsoft's backward passes are not recorded by autograd"
        )
    args = numpy_args(func, names, options, arrays)
    grads = func.gradient.backward(
        args,
        view(y, "y"),
        view(dy, "dy"),
        tuple(view(s, "saved") for s in saved),
        {k for k, need in zip(names, needs, strict=True) if need},
    )
    return [
        _fit(grads[k], t) if need and grads.get(k) is not None else None
        for k, t, need in zip(names, arrays, needs, strict=True)
    ]


def _fit(grad, like: torch.Tensor) -> torch.Tensor:
    """``grad`` summed over the axes ``like`` was broadcast along, in ``like``'s dtype."""
    g = as_tensor(grad)
    if g.shape != like.shape:
        g = g.expand(torch.broadcast_shapes(g.shape, like.shape)).sum_to_size(like.shape)
    return g.to(like.dtype)


# ---------------------------------------------------------------- eager mode


class _Eager(torch.autograd.Function):
    """The rule as an ``autograd.Function`` (eager mode)."""

    @staticmethod
    def forward(ctx, func, names, options, *arrays):
        y, saved = run_forward(func, names, options, arrays)
        ctx.call = (func, names, options, len(saved))
        ctx.save_for_backward(*arrays, y, *saved)
        return y

    @staticmethod
    def backward(ctx, dy):
        func, names, options, n_saved = ctx.call
        tensors = ctx.saved_tensors
        arrays = tensors[: len(names)]
        y = tensors[len(names)]
        saved = tensors[len(names) + 1 :]
        needs = ctx.needs_input_grad[3:]
        grads = run_backward(func, names, options, arrays, y, saved, dy, needs)
        return (None, None, None, *grads)
