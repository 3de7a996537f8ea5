"""entmax's ``torch.autograd.Function`` classes, made from numsoft.torch's functions.

entmax exposes each map and loss as a ``Function`` too (``SparsemaxFunction.apply(X,
dim, k)``, ...), which code written against it calls or subclasses. Here each one runs
the drop-in function of the same name: ``forward`` records that function's own
autograd graph (numsoft's backward pass, with the forward output saved), and
``backward`` runs it with ``torch.autograd.grad``. Nothing is computed twice.
"""

from __future__ import annotations

import inspect

import torch


def autograd_function(name: str, func, **defaults) -> type[torch.autograd.Function]:
    """A ``Function`` subclass whose ``apply(*args)`` is ``func(*args)`` with ``func``'s
    parameters in order, the trailing ones defaulting to ``defaults``."""
    params = list(inspect.signature(func).parameters)

    def forward(ctx, *args):
        given = dict(zip(params, args, strict=False))  # the trailing ones may be left out
        for key, value in defaults.items():
            given.setdefault(key, value)
        with torch.enable_grad():
            inputs = {
                k: v.detach().requires_grad_(v.requires_grad)
                for k, v in given.items()
                if isinstance(v, torch.Tensor) and v.is_floating_point()
            }
            result = func(**{**given, **inputs})
        ctx.differentiable = [(params.index(k), t) for k, t in inputs.items() if t.requires_grad]
        ctx.result = result
        ctx.count = len(args)
        return result.detach()

    def backward(ctx, grad):
        grads = [None] * ctx.count
        if ctx.differentiable and ctx.result.requires_grad:
            positions, tensors = zip(*ctx.differentiable, strict=True)
            found = torch.autograd.grad(ctx.result, tensors, grad, allow_unused=True)
            for i, g in zip(positions, found, strict=True):
                grads[i] = g
        return tuple(grads)

    doc = f"``{func.__name__}`` as entmax's ``{name}``: ``{name}.apply(...)``."
    return type(
        name,
        (torch.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward), "__doc__": doc},
    )
