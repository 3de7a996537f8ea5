"""The front door's one ``prepare``: a call's arguments checked and its input laid out
as the kernels' source, for host and device arrays alike.

Where the input's memory lives (``memory_of``) supplies only the views and copies:
``cpu.memory.HOST`` for NumPy arrays and array-likes, ``cuda.memory.DEVICE`` for device
arrays. Other libraries' arrays never reach here: the router (``numsoft.route``) has
converted them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._array_kinds import is_device_array
from ..cpu.memory import HOST
from .arguments import (
    Request,
    algorithm_code,
    as_input_array,
    broadcast_where,
    check_arguments,
    unmask,
)
from .layout import Layout, plan_layout


def memory_of(x):
    """Where ``x``'s data lives: ``cuda.memory.DEVICE`` for a device array, else
    ``cpu.memory.HOST``. The CUDA backend is imported only when a device array arrives
    (numba-cuda is an optional dependency)."""
    if type(x) is not np.ndarray and is_device_array(x):
        from ..cuda.memory import DEVICE  # lazily: numba-cuda is optional

        return DEVICE
    return HOST


@dataclass
class Prepared:
    """A call's validated arguments and its kernel-ready source: what ``prepare``
    hands to a backend, for host and device arrays alike."""

    a: object  # the input as given (after asarray; a device array on the device)
    memory: object  # where ``a`` lives: ``cpu.memory.HOST`` or ``cuda.memory.DEVICE``
    out: object  # the caller's ``out`` (unchecked: its shape depends on the function)
    layout: Layout
    src3: object  # read-only compute-dtype 3-D source (a view of ``a`` or of scratch)
    scratch: object  # our own writable temp behind src3, if src3 is not ``a``
    compute: np.dtype
    result: np.dtype
    mask: np.ndarray | None  # on the host, broadcast to ``a``'s shape
    inv_t: np.floating
    t: float
    algorithm: str  # the caller's name
    code: int  # its CPU code (``"auto"`` resolved for this shape)
    bound: np.floating

    def empty_rows(self) -> np.ndarray | None:
        """``(outer, 1, inner)`` flags of the rows with no unmasked entry, or None."""
        if self.mask is None:
            return None
        layout = self.layout
        empty = ~np.any(self.mask, axis=layout.axes, keepdims=True)
        if not empty.any():
            return None
        outer, _, inner = layout.shape3
        return np.transpose(empty, layout.perm).reshape(outer, 1, inner)


def prepare(
    x, req: Request, *, extra_dtype=None, index_order=False, exp_output=False, reduction=False
) -> Prepared:
    """Validate the common arguments (SPEC §1) and build the kernels' source view.

    The one argument handling of every backend: the input's memory (``memory_of``)
    supplies only the views and copies. ``index_order``: rows in C index order (see
    ``plan_layout``); ``exp_output``: the call's output pass exponentiates, as
    softmax's does; ``reduction``: it has no output pass, as logsumexp
    (``auto.choose_algorithm``).
    """
    memory = memory_of(x)
    x, where = unmask(x, req.where)
    a = as_input_array(x, memory=memory)
    if where is not None:
        where = memory.host_mask(where)
    in_dtype = a.dtype if extra_dtype is None else np.result_type(a.dtype, extra_dtype)
    args = check_arguments(in_dtype, a.ndim, req.axis, req.dtype, req.temperature, req.algorithm)
    compute = args.compute
    mask = broadcast_where(where, a.shape)
    planned = memory.plan_view(a)
    layout, view = plan_layout(planned, args.axes, index_order=index_order)
    outer, n, inner = layout.shape3
    code = algorithm_code(
        req.algorithm,
        n,
        compute.itemsize,
        outer * inner,
        columns=inner > 1,
        exp_output=exp_output,
        reduction=reduction,
    )
    src3, scratch = memory.source(a, planned, layout, view, compute, mask)
    return Prepared(
        a,
        memory,
        req.out,
        layout,
        src3,
        scratch,
        compute,
        args.result,
        mask,
        args.inv_t,
        args.t,
        req.algorithm,
        code,
        args.bound,
    )
