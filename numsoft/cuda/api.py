"""The CUDA front door: ``softmax``, ``log_softmax``, ``logsumexp`` on the GPU.

Same arguments, defaults and errors as the CPU functions (``numsoft.core``): argument
checking reuses ``numsoft._frontend``. Two kinds of input:

- device arrays (Numba, CuPy, torch CUDA: ``__cuda_array_interface__``; simulator
  arrays): the kernels read them in place through a strided ``(outer, n, inner)`` view
  and the result is a new device array (or ``out=``, a device array). A temporary
  device copy is made only for a dtype other than the compute dtype, a ``where`` mask,
  or a layout that has no such view (e.g. ``axis=(0, 2)``).
- host arrays: copied to the device and the result copied back (a NumPy array), with
  ``out=``, dtype and mask handling shared with the CPU path (``run_rowwise``).

``logsumexp`` with ``b=`` or ``return_sign=True`` on a device array computes through
the host path (the weights are combined on the host) and returns device arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .._frontend import (
    broadcast_where,
    check_arguments,
    check_logsumexp_flags,
    check_out_matches,
    check_real_dtype,
    normalize_axes,
    plan_layout,
    prepare,
    run_logsumexp,
    run_rowwise,
)
from ..vocabulary import INDEX_ORDER
from .auto import device_algorithm
from .memory import (
    as_device,
    empty_like_layout,
    extent,
    is_device_array,
    restride,
    shadow,
    view_like,
)
from .rows import apply_mask, fill_empty_rows, logsumexp_rows, softmax_rows
from .variants import DEVICE_VARIANTS, variant_rows

__all__ = ["softmax", "log_softmax", "logsumexp"]


def require_device() -> None:
    """Raise a clear RuntimeError when no CUDA device (nor the simulator) is available."""
    if not cuda.is_available():
        raise RuntimeError(
            "target='cuda': no CUDA device is available (numba.cuda.is_available() is "
            "False); use target='cpu', or set NUMBA_ENABLE_CUDASIM=1 for the CUDA simulator"
        )


def softmax(x, axis=-1, *, out=None, dtype=None, where=None, temperature=1.0, algorithm="auto"):
    """``numsoft.softmax`` on the GPU (see ``numsoft.core.softmax``)."""
    return _softmax(x, axis, out, dtype, where, temperature, algorithm, log_output=False)


def log_softmax(x, axis=-1, *, out=None, dtype=None, where=None, temperature=1.0, algorithm="auto"):
    """``numsoft.log_softmax`` on the GPU (see ``numsoft.core.log_softmax``)."""
    return _softmax(x, axis, out, dtype, where, temperature, algorithm, log_output=True)


def logsumexp(
    x, axis=-1, *, b=None, keepdims=False, return_sign=False, out=None, dtype=None,
    where=None, temperature=1.0, algorithm="auto",
):  # fmt: skip
    """``numsoft.logsumexp`` on the GPU (see ``numsoft.core.logsumexp``)."""
    require_device()
    check_logsumexp_flags(keepdims, return_sign)
    args = (axis, b, keepdims, return_sign, out, dtype, where, temperature, algorithm)
    if not is_device_array(x):
        return _host_logsumexp(x, *args)
    dev = as_device(x)
    if b is not None or return_sign:
        return _device_logsumexp_via_host(dev, *args)
    return _device_logsumexp(dev, *args)


# ---------------------------------------------------------------- host arrays


def _softmax(x, axis, out, dtype, where, temperature, algorithm, log_output):
    # run_rows validates ``algorithm`` before the first launch, so look its code up there.
    def rows(src3, target3, inv_t, bound, in_place):
        algo = device_algorithm(algorithm)
        softmax_rows(src3, target3, algo, inv_t, log_output, bound, in_place)

    fill = -np.inf if log_output else 0.0
    return run_rows(x, axis, out, dtype, where, temperature, algorithm, rows, fill)


def variant(x, axis, out, dtype, where, temperature, code, params, fill=0.0):
    """A row-local variant (``numsoft.vocabulary``) on the GPU.

    ``params``: the variant's parameter array, or a function of the row length that
    returns it (``topk_softmax`` checks k against the length). Same argument handling
    as ``softmax``; the variant picks its own pass structure.
    """
    if code not in DEVICE_VARIANTS:
        raise NotImplementedError(f"variant code {code} has no CUDA kernel")
    if callable(params):
        shape = tuple(as_device(x).shape) if is_device_array(x) else np.shape(x)
        params = params(math.prod(shape[a] for a in normalize_axes(axis, len(shape))))

    def rows(src3, target3, inv_t, bound, in_place):
        variant_rows(src3, target3, code, np.asarray(params, dtype=np.float64), inv_t, bound)

    return run_rows(x, axis, out, dtype, where, temperature, "auto", rows, fill,
                    index_order=code in INDEX_ORDER)  # fmt: skip


def run_rows(x, axis, out, dtype, where, temperature, algorithm, rows, fill, index_order=False):
    """Normalize every row of ``x`` on the GPU with ``rows(src3, target3, inv_t, bound,
    in_place)``; masked entries reach it as -inf and rows with none unmasked get ``fill``.
    ``index_order``: rows in C index order (``_frontend.plan_layout``).
    """
    require_device()
    if is_device_array(x):
        return _device_rows(as_device(x), axis, out, dtype, where, temperature, algorithm,
                            rows, fill, index_order)  # fmt: skip
    p = prepare(x, axis, dtype, where, temperature, algorithm, index_order=index_order)

    def apply(src3, target3):
        d_x = cuda.to_device(np.ascontiguousarray(src3))
        d_y = cuda.device_array(d_x.shape, dtype=d_x.dtype)
        rows(d_x, d_y, p.inv_t, p.bound, False)
        target3[...] = d_y.copy_to_host()

    return run_rowwise(p, out, apply, fill)


def _host_logsumexp(x, axis, b, keepdims, return_sign, out, dtype, where, temperature,
                    algorithm):  # fmt: skip
    def row_smooth_max(p, src3, buf):
        d_out = cuda.device_array(buf.shape, dtype=p.compute)
        d_x = cuda.to_device(np.ascontiguousarray(src3))
        t = p.compute.type(p.t)
        logsumexp_rows(d_x, d_out, device_algorithm(algorithm), p.inv_t, t, p.bound)
        d_out.copy_to_host(buf)

    return run_logsumexp(
        x, axis, b, keepdims, return_sign, out, dtype, where, temperature, algorithm,
        row_smooth_max=row_smooth_max,
    )  # fmt: skip


# ---------------------------------------------------------------- device arrays


class _DeviceCall:
    """A device call's validated arguments (the device counterpart of ``Prepared``)."""

    def __init__(self, dev, axis, dtype, where, temperature, algorithm, index_order=False):
        check_real_dtype(dev.dtype)  # as ``as_input_array`` does for host arrays
        args = check_arguments(dev.dtype, dev.ndim, axis, dtype, temperature, algorithm)
        self.dev = dev
        self.compute, self.result, self.t = args.compute, args.result, args.t
        self.inv_t, self.bound, self.axes = args.inv_t, args.bound, args.axes
        if is_device_array(where):
            where = as_device(where).copy_to_host()
        self.mask = broadcast_where(where, dev.shape)
        self.shadow = shadow(dev)
        self.layout, view = plan_layout(self.shadow, self.axes, index_order=index_order)
        self.algo = device_algorithm(algorithm)
        self.src3 = None
        if view is not None and dev.dtype == self.compute and self.mask is None:
            self.src3 = view_like(dev, view, self.shadow)
        self.src_is_temp = self.src3 is None

    def make_source(self):
        """Build the compute-dtype, masked, contiguous source when the input can't be used."""
        if not self.src_is_temp:
            return
        layout = self.layout
        buf, full = empty_like_layout(self.dev.shape, layout.perm, self.compute)
        full[...] = self.dev  # device-side copy and dtype conversion
        if self.mask is not None:
            keep, keep_full = layout.empty3(np.bool_)
            np.copyto(keep_full, self.mask)
            apply_mask(buf.reshape(buf.size), cuda.to_device(keep.reshape(-1)))
        self.src3 = buf.reshape(layout.shape3)
        self.src_full = full

    def empty_rows(self):
        """(outer, inner) device flags of the rows with no unmasked entry, or None."""
        if self.mask is None:
            return None
        empty = ~np.any(self.mask, axis=self.axes)
        kept = self.layout.kept
        order = [sorted(kept).index(ax) for ax in kept]
        empty = np.ascontiguousarray(np.transpose(empty, order))
        if not empty.any():
            return None
        outer, _, inner = self.layout.shape3
        return cuda.to_device(empty.reshape(outer, inner))


def _check_device_out(out, shape, dtype):
    if out is None:
        return None
    if not is_device_array(out):
        raise TypeError(
            f"out must be a device array when x is on the device, got {type(out).__name__}"
        )
    out = as_device(out)
    check_out_matches(out, shape, dtype)
    return out


def _overlaps(a, b) -> bool:
    (a0, a1), (b0, b1) = extent(a), extent(b)
    return a0 < b1 and b0 < a1


def _same_view(a, b) -> bool:
    return extent(a) == extent(b) and tuple(a.strides) == tuple(b.strides)


def _device_rows(dev, axis, out, dtype, where, temperature, algorithm, rows, fill, index_order):
    call = _DeviceCall(dev, axis, dtype, where, temperature, algorithm, index_order)
    layout, compute = call.layout, call.compute
    res = _check_device_out(out, dev.shape, call.result)
    if res is None:
        _, res = empty_like_layout(dev.shape, layout.perm, call.result)
    if dev.size == 0:
        return res
    target3 = None
    if res.dtype == compute:
        sh = shadow(res)
        view = layout.view3(sh)
        if view is not None:
            target3 = view_like(res, view, sh)
        if target3 is not None and _overlaps(res, dev) and not _same_view(res, dev):
            target3 = None  # a shifted overlap would read already-written entries
    call.make_source()
    copy_back = target3 is None
    if copy_back:
        if call.src_is_temp:
            target3, target_full = call.src3, call.src_full
        else:
            buf, target_full = empty_like_layout(dev.shape, layout.perm, compute)
            target3 = buf.reshape(layout.shape3)
    in_place = _overlaps(target3, call.src3)
    rows(call.src3, target3, call.inv_t, call.bound, in_place)
    empty = call.empty_rows()
    if empty is not None:
        fill_empty_rows(target3, empty, compute.type(fill))
    if copy_back:
        res[...] = target_full
    return res


def _reduced_view(flat2, layout, keepdims):
    """The reduction result (original axis order) as a view of the ``(outer, inner)`` buffer.

    ``flat2`` is C-ordered over the kept axes in ``layout.perm`` order, like the CPU's
    ``Layout.reduced_empty``; reduced axes kept by ``keepdims`` get length 1.
    """
    kept = layout.kept
    itemsize = flat2.dtype.itemsize
    stride_of, step = {}, itemsize
    for ax in reversed(kept):
        stride_of[ax] = step
        step *= layout.shape[ax]
    shape, strides = [], []
    for ax in range(len(layout.shape)):
        if ax in stride_of:
            shape.append(layout.shape[ax])
            strides.append(stride_of[ax])
        elif keepdims:
            shape.append(1)
            strides.append(0)
    return restride(flat2, shape, strides)


def _device_logsumexp(dev, axis, b, keepdims, return_sign, out, dtype, where, temperature,
                      algorithm):  # fmt: skip
    call = _DeviceCall(dev, axis, dtype, where, temperature, algorithm)
    layout, compute = call.layout, call.compute
    outer, n, inner = layout.shape3
    flat2 = cuda.device_array((outer, inner), dtype=compute)
    lse = _reduced_view(flat2, layout, keepdims)
    res = _check_device_out(out, lse.shape, call.result)
    if flat2.size > 0:
        if n == 0:
            flat2[...] = np.full((outer, inner), -np.inf, dtype=compute)
        else:
            call.make_source()
            logsumexp_rows(
                call.src3, flat2, call.algo, call.inv_t, compute.type(call.t), call.bound
            )
    if res is None and call.result == compute:
        return lse
    if res is None:
        res = cuda.device_array(lse.shape, dtype=call.result)
    res[...] = lse
    return res


def _device_logsumexp_via_host(dev, axis, b, keepdims, return_sign, out, dtype, where,
                               temperature, algorithm):  # fmt: skip
    if is_device_array(b):
        b = as_device(b).copy_to_host()
    if is_device_array(where):
        where = as_device(where).copy_to_host()
    host = _host_logsumexp(dev.copy_to_host(), axis, b, keepdims, return_sign, None, dtype,
                           where, temperature, algorithm)  # fmt: skip
    lse, sign = host if return_sign else (host, None)
    lse = np.asarray(lse)
    res = _check_device_out(out, lse.shape, lse.dtype)
    if res is None:
        res = cuda.to_device(lse)
    else:
        res[...] = cuda.to_device(lse)
    if return_sign:
        return res, cuda.to_device(np.asarray(sign))
    return res
