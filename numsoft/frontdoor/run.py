"""The front door's runners: a prepared call through its backend's kernels, and what
every function shares around them (``out``, dtype rounding, copy-back, fully masked
rows; logsumexp's weights and signs; the backward passes' pairs of inputs).

``run_softmax`` and ``run_logsumexp_cpu`` first try the default-call fast path
(``arguments.default_call_shape``): a cached plan of the CPU drivers
(``cpu.rows.default_softmax_plan``), without the general handling.
"""

from __future__ import annotations

import numpy as np

from ..cpu import rows as cpu_rows
from ..cpu.logsumexp_numpy import refine_near_zero, weighted_smooth_max
from ..cpu.memory import HOST, copy3, read_only, source3
from .arguments import (
    Request,
    as_input_array,
    broadcast_pair,
    check_logsumexp_flags,
    check_out,
    default_call_shape,
    fast_inv_t,
    normalize_axes,
    resolve_dtypes,
    unmask,
)
from .layout import Layout, plan_layout
from .prepare import Prepared, prepare


def writable_target(memory, out, x, layout: Layout, compute, fresh: bool = False):
    """A 3-D view of ``out`` the kernel may write directly, or None.

    Writing directly needs the compute dtype, a view (no copy) and no partial overlap
    with ``x``: in-place (``out is x``) is fine because every kernel reads an element
    before it writes it, but a shifted overlap would read already-written values.
    ``fresh``: ``out`` was just allocated here (sharing nothing), so the overlap check
    is skipped.
    """
    if out is None or out.dtype != compute:
        return None
    view = memory.view3(out, layout)
    if view is None:
        return None
    if fresh or out is x or not memory.overlaps(out, x) or memory.same_view(out, x):
        return view
    return None


def run_rowwise(p: Prepared, apply, masked_row_fill: float):
    """Run a shape-preserving row operation and return its result (honouring ``out``).

    ``apply(src3, target3)`` runs the kernels on the 3-D source and target views
    (``target3`` may be ``src3`` itself). Every softmax-like function, core or variant,
    on either backend, goes through here, so ``out``, dtype rounding and masks behave
    the same for all.
    """
    memory, a, layout = p.memory, p.a, p.layout
    res = check_out(p.out, a.shape, p.result, memory)
    fresh = res is None
    if fresh:
        res = memory.new_result(layout, p.result)
    if a.size == 0:
        return res
    target = writable_target(memory, res, a, layout, p.compute, fresh)
    copy_back = target is None
    if copy_back:
        target = p.scratch if p.scratch is not None else memory.empty(layout.shape3, p.compute)
    apply(p.src3, target)
    if p.mask is not None and (empty := p.empty_rows()) is not None:
        # A row with no unmasked entry is all -inf in the source, which the kernels
        # turn into NaN (SciPy's rule); a fully masked row is defined by SPEC §1.
        memory.fill_rows(target, empty, masked_row_fill)
    if copy_back:
        memory.copy_back(res, target, layout)
    return memory.as_result(res, p.result) if fresh else res


def run_softmax(x, axis, out, dtype, where, temperature, algorithm, log_output: bool):
    """softmax / log_softmax through the drivers; returns the result array."""
    shape3 = default_call_shape(x, axis, out, dtype, where, temperature, algorithm)
    plan = None
    if shape3 is not None:
        plan = cpu_rows.default_softmax_plan(x.dtype, log_output, shape3, fresh=out is None)
    if plan is not None:
        driver, tasks, one = plan
        view = shape3 if shape3[2] > 1 else shape3[:2]  # the rows drivers take 2-D views
        y = np.empty_like(x) if out is None else out
        driver(read_only(x.reshape(view)), y.reshape(view), tasks, fast_inv_t(temperature, one))
        return y
    req = Request(axis, out, dtype, where, temperature, algorithm)
    p = prepare(x, req, exp_output=not log_output)

    def apply(src3, target3):
        # writing into the caller's ``out`` (not a new array or scratch) may stream
        fresh = out is None or not np.may_share_memory(target3, out)
        cpu_rows.run_softmax(src3, target3, p.code, log_output, p.inv_t, fresh)

    return run_rowwise(p, apply, -np.inf if log_output else 0.0)


def smooth_max(p: Prepared, src3: np.ndarray, buf: np.ndarray) -> None:
    """buf[o, j] = t·log Σ exp(x/t) of each row of ``src3`` (``n > 0``, ``buf`` not
    empty): the CPU drivers, then the near-zero refinement."""
    cpu_rows.run_logsumexp(src3, buf, p.code, p.inv_t)
    refine_near_zero(src3, buf, p.inv_t, p.t)


def run_logsumexp_cpu(x, req: Request, b, keepdims, return_sign):
    """``numsoft.logsumexp`` on the CPU: a default call (as ``default_call_shape``, no
    ``b``, ``out`` or ``return_sign``) runs its cached plan; any other goes through
    ``run_logsumexp``."""
    if b is None and return_sign is False and req.out is None and type(keepdims) is bool:
        shape3 = default_call_shape(x, *req)  # its parameters are Request's fields
        plan = None if shape3 is None else cpu_rows.default_logsumexp_plan(x.dtype, shape3)
        if plan is not None:
            return _default_logsumexp(x, req, keepdims, shape3, plan)
    return run_logsumexp(x, req, b, keepdims, return_sign)


def _default_logsumexp(x, req: Request, keepdims, shape3, plan):
    """A default logsumexp call through ``plan`` (``cpu.rows.default_logsumexp_plan``):
    the same drivers and refinement as the general path, without its argument
    handling (18 → 11 µs on (200, 10) float64)."""
    driver, tasks, one = plan
    inv_t = fast_inv_t(req.temperature, one)
    outer, n, inner = shape3
    x3 = read_only(x.reshape(shape3))
    lse = np.empty((outer, inner), x.dtype)
    if inner == 1:  # the rows drivers take the rows views, as run_softmax's fast path
        driver(x3[:, :, 0], lse[:, 0], tasks, inv_t)
    else:
        driver(x3, lse, tasks, inv_t)
    refine_near_zero(x3, lse, inv_t, req.temperature)
    ax = req.axis % x.ndim
    res = lse.reshape(x.shape[:ax] + ((1,) if keepdims else ()) + x.shape[ax + 1 :])
    return res if res.ndim else res[()]


def run_logsumexp(x, req: Request, b, keepdims, return_sign, row_smooth_max=smooth_max):
    """logsumexp of ``x`` under ``req`` (SciPy-compatible ``b``/``return_sign``).

    ``row_smooth_max(p, src3, buf)`` writes the per-row t·log Σ exp(x/t) into the
    ``(outer, inner)`` array ``buf`` (the CPU drivers by default; the CUDA backend
    passes its own); everything around it is shared. ``b`` and ``return_sign`` are
    computed on the host (NumPy's passes): a device array reaches here without them.
    """
    check_logsumexp_flags(keepdims, return_sign)
    bb = None
    if b is not None:
        bb = as_input_array(b, "b")
        x, where = unmask(x, req.where)
        x = as_input_array(x)
        shape = broadcast_pair("x", x, "b", bb)  # together, as in SciPy and JAX
        x, bb = np.broadcast_to(x, shape), np.broadcast_to(bb, shape)
        req = req._replace(where=where)
    p = prepare(x, req, extra_dtype=None if bb is None else bb.dtype, reduction=True)
    memory, layout, axes = p.memory, p.layout, p.layout.axes
    shape = p.a.shape
    res = check_out(
        p.out,
        tuple(1 if ax in axes else shape[ax] for ax in range(len(shape)))
        if keepdims
        else tuple(shape[ax] for ax in sorted(layout.kept)),
        p.result,
        memory,
    )
    outer, n, inner = layout.shape3
    # The kernels write ``out`` itself when its memory is the (outer, inner) buffer:
    # out= then costs no more than a fresh result.
    direct = None
    if res is not None and bb is None and p.result == p.compute and not memory.overlaps(res, p.a):
        direct = memory.reduced_buffer(res, layout)
    sign = None
    if bb is not None:
        if p.mask is not None:
            bb = np.where(p.mask, bb, 0)  # masked entries weigh nothing
        lse, sign = weighted_smooth_max(p.src3, copy3(bb, layout, p.compute)[0], p.inv_t, p.t)
    else:
        lse = direct if direct is not None else memory.empty((outer, inner), p.compute)
        if lse.size and n == 0:
            memory.assign(lse, np.full(lse.shape, -np.inf, p.compute))
        elif lse.size:
            row_smooth_max(p, p.src3, lse)
    if sign is None and return_sign:
        sign = np.where(lse > -np.inf, 1.0, 0.0).astype(p.compute)
        sign[np.isnan(lse)] = np.nan
    elif sign is not None and not return_sign:
        lse[sign < 0] = np.nan  # a negative sum has no real logarithm (as SciPy)
    if direct is None:
        value = memory.reduced_view(lse, layout, keepdims)
        if res is None:
            res = memory.as_result(value, p.result)
        else:
            memory.assign(res, value)
    if return_sign:
        return res, HOST.as_result(HOST.reduced_view(sign, layout, keepdims), p.result)
    return res


def run_backward(a, dy, axis, a_name: str, drivers, **constants) -> np.ndarray:
    """dx of a backward pass from (``a``, dy), ``a`` being what the pass reads (y, y_log
    or x; ``a_name`` in errors): the two broadcast together, laid out and converted as
    the forward functions' inputs, then the ``(rows, columns)`` ``drivers``
    specialized to ``constants`` (softmax's and log_softmax's, or a variant's)."""
    aa = as_input_array(a, a_name)
    dya = as_input_array(dy, "dy")
    shape = broadcast_pair(a_name, aa, "dy", dya)
    compute, result = resolve_dtypes(np.result_type(aa.dtype, dya.dtype), None)
    aa, dya = np.broadcast_to(aa, shape), np.broadcast_to(dya, shape)
    layout, view = plan_layout(aa, normalize_axes(axis, len(shape)))
    a3 = source3(aa, layout, view, compute)
    dy3 = source3(dya, layout, layout.view3(dya), compute)
    dx3, dx = layout.empty3(compute)
    if dx3.size == 0:
        return dx.astype(result, copy=False)
    driver, by_rows = cpu_rows.driver_for(*drivers, dx3.shape, **constants)
    if by_rows:
        driver(a3[:, :, 0], dy3[:, :, 0], dx3[:, :, 0])
    else:
        driver(a3, dy3, dx3)
    return dx.astype(result, copy=False)
