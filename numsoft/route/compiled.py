"""torch tensors met while ``torch.compile`` traces: the call runs outside the graph.

``torch.compile`` cannot trace a numsoft call (its arguments are resolved in Python),
so the call is a graph break: it runs eagerly, through ``route.array_api`` (and
``route.autograd`` for gradients), and the graph resumes after it.
"""

from __future__ import annotations

import torch

from .array_api import memory_for


@torch.compiler.disable
def call(func, x, args, kwargs):
    """``func(*args, **kwargs)`` on torch tensors, outside the traced graph."""
    return memory_for(x).call(func, x, args, kwargs)
