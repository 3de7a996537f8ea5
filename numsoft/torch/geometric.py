"""A drop-in for PyG's ``torch_geometric.utils.softmax``: the softmax of graph
attention over each node's incoming edges, by numsoft's group kernels, with autograd.

    from numsoft.torch.geometric import softmax   # instead of torch_geometric.utils

``softmax(src, index=None, ptr=None, num_nodes=None, dim=0)`` takes PyG's arguments
with PyG's meaning: the edges' groups by the target node ``index`` (any order;
``num_nodes`` groups, default ``index.max() + 1``) or by CSR offsets ``ptr``, along
``dim``. The forward pass is ``numsoft.groups.segment_softmax``, the backward pass
``segment_softmax_backward``. Differences from PyG: each group sums to 1 within
rounding (PyG adds 1e-16 to every sum), ``ptr`` works along any ``dim`` (PyG's needs
torch-scatter there), and tensors must be on the CPU.
"""

from __future__ import annotations

import numpy as np
import torch

from ..groups import segment_softmax, segment_softmax_backward

__all__ = ["softmax"]


def _host(t: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise TypeError(f"{name}: numsoft.torch.geometric runs on CPU tensors, got {t.device}")
    return t


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A float tensor's values as NumPy, half precision widened to float32."""
    t = t.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


class _SegmentSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, src, groups, dim):
        y = torch.from_numpy(segment_softmax(_numpy(src), axis=dim, **groups))
        ctx.groups, ctx.dim = groups, dim
        ctx.save_for_backward(y)
        return y.to(src.dtype)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        dx = segment_softmax_backward(y.numpy(), _numpy(grad), axis=ctx.dim, **ctx.groups)
        return torch.from_numpy(dx).to(grad.dtype), None, None


def softmax(
    src: torch.Tensor,
    index: torch.Tensor | None = None,
    ptr: torch.Tensor | None = None,
    num_nodes: int | None = None,
    dim: int = 0,
) -> torch.Tensor:
    """Softmax of ``src`` within each group of entries along ``dim``, the groups given
    by ``index`` (a group per target node) or by the CSR offsets ``ptr``, as PyG's
    ``torch_geometric.utils.softmax``.

    Parameters
    ----------
    src : torch.Tensor
        The scores, e.g. ``(edges, heads)``; float (half precision is computed in
        float32 and returned in its own dtype). Gradients flow to it.
    index : torch.Tensor, optional
        The group of each entry along ``dim`` (integers, any order).
    ptr : torch.Tensor, optional
        CSR offsets of the groups along ``dim``; used instead of ``index`` when given.
    num_nodes : int, optional
        The number of groups with ``index`` (default: ``index.max() + 1``).
    dim : int, optional
        The grouped dimension (default 0).

    Returns
    -------
    torch.Tensor
        ``src``'s shape and dtype; each group sums to 1.

    Examples
    --------
    >>> import torch
    >>> from numsoft.torch.geometric import softmax
    >>> scores = torch.tensor([0.0, 1.0, 2.0, 2.0, 2.0], requires_grad=True)
    >>> softmax(scores, torch.tensor([0, 0, 1, 1, 1]))
    tensor([0.2689, 0.7311, 0.3333, 0.3333, 0.3333], grad_fn=<_SegmentSoftmaxBackward>)
    >>> softmax(scores, ptr=torch.tensor([0, 2, 5])).detach()
    tensor([0.2689, 0.7311, 0.3333, 0.3333, 0.3333])
    """
    _host(src, "src")
    if not src.is_floating_point():
        raise TypeError(f"src: expected a floating-point tensor, got {src.dtype}")
    if not -max(src.dim(), 1) <= dim < max(src.dim(), 1):
        raise IndexError(f"dim: {dim} is out of range for src of {src.dim()} dimensions")
    dim %= max(src.dim(), 1)
    if ptr is not None:
        groups = {"offsets": _host(ptr, "ptr").numpy()}
    elif index is not None:
        ids = _host(index, "index").numpy()
        count = num_nodes if num_nodes is not None else (int(ids.max()) + 1 if ids.size else 0)
        groups = {"segment_ids": ids, "num_segments": count}
    else:
        raise NotImplementedError("softmax: give index or ptr (as PyG requires)")
    return _SegmentSoftmax.apply(src, groups, dim)
