"""torch tensors met while ``torch.compile`` traces: a numsoft call as operators in
the graph.

Dynamo cannot trace into a numsoft call (its arguments are resolved in Python:
signature binding, array-type routing), and a Python function is not a value a graph
can hold. So the call becomes ``entry("numsoft.core:softmax", *args, **kwargs)``, a
function Dynamo puts in the graph as it is (``allow_in_graph``, the public function
named by a string); when the graph is traced further (AOTAutograd, with fake tensors)
and when it runs, ``entry`` binds the arguments and calls two
``torch.library.custom_op`` operators shared by every public function:

- ``numsoft::forward(Tensor[] arrays, str spec) -> Tensor[]``: the function (with a
  gradient rule: its forward pass, the output and what the backward pass reuses);
  its fake implementation runs the function on stand-in arrays of the same shapes
  (ones; zeros for labels) to learn the outputs' shapes and dtypes;
- ``numsoft::backward(Tensor[] saved, Tensor dy, str spec) -> Tensor[]``: the rule's
  backward pass, registered as the forward operator's autograd formula.

``spec`` holds the function's key, the arrays' names and the other arguments (Python
literals); a call with others (a ``Generator`` seed) is a ``TypeError`` that says so.
A call with ``out=`` is a graph break: it runs eagerly, outside the graph.
"""

from __future__ import annotations

import ast

import numpy as np
import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from . import public_function
from .array_api import memory_for, signature_of
from .autograd import run_backward, run_forward, split


def call(func, x, args, kwargs):
    """``func(*args, **kwargs)`` as a node of the traced graph; with ``out=``, a graph
    break (the operators write no argument)."""
    if kwargs.get("out") is not None:
        return _eager(func, x, args, kwargs)
    return entry(f"{func.__wrapped__.__module__}:{func.__name__}", *args, **kwargs)


@torch.compiler.disable
def _eager(func, x, args, kwargs):
    return memory_for(x).call(func, x, args, kwargs)


def _entry(key: str, *args, **kwargs):
    func = public_function(key)
    names, options, arrays, recorded = split(func, signature_of(func).bind(*args, **kwargs))
    outputs = torch.ops.numsoft.forward(arrays, _spec(key, names, options, recorded))
    if recorded:
        return outputs[0]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


entry = torch._dynamo.allow_in_graph(_entry)


def _spec(key: str, names, options, recorded: bool) -> str:
    plain = {}
    for name, value in options.items():
        if isinstance(value, np.dtype) or (isinstance(value, type) and value.__module__ == "numpy"):
            value = np.dtype(value).name
        plain[name] = value
    spec = repr((key, names, plain, recorded))
    try:
        ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        raise TypeError(
            f"numsoft.{key.split(':')[1]} in a torch.compile graph takes tensors, numbers, "
            f"strings and tuples; got {plain}"
        ) from None
    return spec


def _read(spec: str):
    key, names, options, recorded = ast.literal_eval(spec)
    return public_function(key), names, options, recorded


def _forward(arrays, spec: str) -> list[torch.Tensor]:
    func, names, options, recorded = _read(spec)
    y, saved = run_forward(func, names, options, arrays, recorded)
    return [*y, *saved] if isinstance(y, tuple) else [y, *saved]


@torch.library.custom_op("numsoft::forward", mutates_args=())
def forward(arrays: list[torch.Tensor], spec: str) -> list[torch.Tensor]:
    """The public function of ``spec`` on ``arrays``: [output, *what backward reuses], or
    its outputs where autograd does not record the call."""
    return _forward(arrays, spec)


@forward.register_fake
def _(arrays, spec):
    # Real arrays of the same shapes, computed for their outputs' shapes: ones (a valid
    # temperature, α, weight or mask), zeros for integers (a valid label).
    with unset_fake_temporarily():
        stand_ins = [
            torch.full(tuple(int(n) for n in t.shape), 0 if _integral(t) else 1, dtype=t.dtype)
            for t in arrays
        ]
        outputs = [(o.shape, o.dtype) for o in _forward(stand_ins, spec)]
    return [arrays[0].new_empty(shape, dtype=dtype) for shape, dtype in outputs]


def _integral(t: torch.Tensor) -> bool:
    return not (t.dtype.is_floating_point or t.dtype == torch.bool)


def _setup(ctx, inputs, output):
    arrays, spec = inputs
    ctx.spec = spec
    ctx.needs = [t.requires_grad for t in arrays]
    ctx.save_for_backward(*arrays, *output)


def _forward_backward(ctx, grads):
    dy = grads[0]
    flags = ",".join("1" if n else "0" for n in ctx.needs)
    dx = torch.ops.numsoft.backward(list(ctx.saved_tensors), dy, f"{flags}|{ctx.spec}")
    return [g if need else None for g, need in zip(dx, ctx.needs, strict=True)], None


forward.register_autograd(_forward_backward, setup_context=_setup)


def _backward_call(saved, spec):
    flags, spec = spec.split("|", 1)
    func, names, options, _ = _read(spec)
    needs = [f == "1" for f in flags.split(",")]
    arrays = saved[: len(names)]
    y, *kept = saved[len(names) :]
    return func, names, options, arrays, y, kept, needs


@torch.library.custom_op("numsoft::backward", mutates_args=())
def backward(saved: list[torch.Tensor], dy: torch.Tensor, spec: str) -> list[torch.Tensor]:
    """The gradient of each array of the forward call (zeros where none is needed)."""
    func, names, options, arrays, y, kept, needs = _backward_call(saved, spec)
    grads = run_backward(func, names, options, arrays, y, kept, dy, needs)
    return [torch.zeros_like(t) if g is None else g for g, t in zip(grads, arrays, strict=True)]


@backward.register_fake
def _(saved, dy, spec):
    func, names, options, arrays, y, kept, needs = _backward_call(saved, spec)
    return [torch.empty_like(t) for t in arrays]
