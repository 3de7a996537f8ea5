"""The front door to the CUDA backend: ``softmax``, ``log_softmax``, ``logsumexp`` and the
row-local variants on the GPU.

Argument handling is the front door's, as on the CPU (``prepare.prepare``,
``run.run_rowwise``, ``run.run_logsumexp``): the same checks in the same order, the
same errors, ``out``, dtype and mask rules. What is left here is calling the kernels
(``numsoft.cuda``) and moving data to them. Where the input lives decides the memory
(``prepare.memory_of``):

- device arrays (Numba, CuPy, torch CUDA: ``__cuda_array_interface__``; simulator
  arrays) are read in place through a strided ``(outer, n, inner)`` view and the
  result is a device array (``cuda.memory.DEVICE``). A temporary device copy is made
  only for a dtype other than the compute dtype, a ``where`` mask, or a layout that
  has no such view (e.g. ``axis=(0, 2)``).
- host arrays: the kernels' source is copied to the device and their output back into
  the host result (``on_device``).

``logsumexp`` with ``b=`` or ``return_sign=True`` on a device array computes through
the host path (the weights are combined on the host) and returns device arrays.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..cuda.auto import device_algorithm
from ..cuda.groups import logsumexp_groups, softmax_groups
from ..cuda.memory import DEVICE, as_device, is_device_array
from ..cuda.rows import logsumexp_rows, softmax_rows
from ..cuda.variants import variant_rows
from ..vocabulary import BY_CODE, CUDA_VARIANTS, INDEX_ORDER
from .arguments import Request, check_out
from .prepare import prepare
from .run import run_logsumexp, run_rowwise

__all__ = ["softmax", "log_softmax", "logsumexp", "groups_apply", "groups_logsumexp"]


def require_device() -> None:
    """Raise a clear RuntimeError when no CUDA device (nor the simulator) is available."""
    if not cuda.is_available():
        raise RuntimeError(
            "target='cuda': no CUDA device is available (numba.cuda.is_available() is "
            "False); use target='cpu', or set NUMBA_ENABLE_CUDASIM=1 for the CUDA simulator"
        )


def softmax(x, axis=-1, *, out=None, dtype=None, where=None, temperature=1.0, algorithm="auto"):
    """``numsoft.softmax`` on the GPU (see ``numsoft.core.softmax``)."""
    return _softmax(x, Request(axis, out, dtype, where, temperature, algorithm), False)


def log_softmax(x, axis=-1, *, out=None, dtype=None, where=None, temperature=1.0, algorithm="auto"):
    """``numsoft.log_softmax`` on the GPU (see ``numsoft.core.log_softmax``)."""
    return _softmax(x, Request(axis, out, dtype, where, temperature, algorithm), True)


def logsumexp(
    x,
    axis=-1,
    *,
    b=None,
    keepdims=False,
    return_sign=False,
    out=None,
    dtype=None,
    where=None,
    temperature=1.0,
    algorithm="auto",
):
    """``numsoft.logsumexp`` on the GPU (see ``numsoft.core.logsumexp``)."""
    require_device()
    req = Request(axis, out, dtype, where, temperature, algorithm)
    if is_device_array(x) and (b is not None or return_sign):
        return _logsumexp_via_host(as_device(x), req, b, keepdims, return_sign)
    return run_logsumexp(x, req, b, keepdims, return_sign, row_smooth_max=_smooth_max)


def variant(x, req: Request, code: int, params):
    """A row-local variant (``numsoft.vocabulary``) on the GPU.

    ``params``: the variant's parameter array, or a function of the row length that
    returns it (``topk_softmax`` checks k against the length). Same argument handling
    as ``softmax``; the variant picks its own pass structure.
    """
    if code not in CUDA_VARIANTS:
        raise NotImplementedError(f"variant code {code} has no CUDA kernel")
    require_device()
    p = prepare(x, req, index_order=code in INDEX_ORDER)
    params = np.asarray(params(p.layout.n) if callable(params) else params, dtype=np.float64)

    def rows(src3, target3, in_place):
        variant_rows(src3, target3, code, params, p.inv_t, p.bound)

    return run_rowwise(p, on_device(p, rows), BY_CODE[code].fill)


def groups_apply(p, offsets: np.ndarray, log_output: bool):
    """``apply(src3, target3)`` for ``run_rowwise``: softmax (or log_softmax) of each
    group ``offsets`` gives along the middle axis, by the device group kernels
    (``numsoft.groups``' segment functions on a device array)."""
    require_device()
    algo, d_offsets = device_algorithm(p.algorithm), cuda.to_device(offsets)

    def groups(src3, target3, in_place):
        softmax_groups(src3, target3, d_offsets, algo, p.inv_t, log_output, p.bound)

    return on_device(p, groups)


def groups_logsumexp(p, offsets: np.ndarray) -> np.ndarray:
    """t·logsumexp of each group, ``(outer, count, inner)`` on the host, by the device
    group kernels."""
    require_device()
    outer, _, inner = p.layout.shape3
    out3 = cuda.device_array((outer, offsets.size - 1, inner), dtype=p.compute)
    algo, t = device_algorithm(p.algorithm), p.compute.type(p.t)
    src3 = p.src3 if p.memory is DEVICE else cuda.to_device(np.ascontiguousarray(p.src3))
    logsumexp_groups(src3, cuda.to_device(offsets), out3, algo, p.inv_t, t, p.bound)
    return out3.copy_to_host()


# ---------------------------------------------------------------- kernels on the call's data


def on_device(p, kernel):
    """``apply(src3, target)`` for the front door: ``kernel(src3, target, in_place)``
    on the GPU, given the call's arrays when they are device arrays, else device copies
    of them (the source copied in, the target copied back)."""
    if p.memory is DEVICE:
        return lambda src3, target: kernel(src3, target, DEVICE.overlaps(target, src3))

    def apply(src3, target):
        d_target = cuda.device_array(target.shape, dtype=target.dtype)
        kernel(cuda.to_device(np.ascontiguousarray(src3)), d_target, False)
        target[...] = d_target.copy_to_host()

    return apply


def _softmax(x, req: Request, log_output: bool):
    require_device()
    p = prepare(x, req)
    algo = device_algorithm(p.algorithm)

    def rows(src3, target3, in_place):
        softmax_rows(src3, target3, algo, p.inv_t, log_output, p.bound, in_place)

    return run_rowwise(p, on_device(p, rows), -np.inf if log_output else 0.0)


def _smooth_max(p, src3, buf) -> None:
    """``run_logsumexp``'s per-row t·log Σ exp(x/t), by the device kernels."""
    algo, t = device_algorithm(p.algorithm), p.compute.type(p.t)

    def rows(d_src3, d_buf, in_place):
        logsumexp_rows(d_src3, d_buf, algo, p.inv_t, t, p.bound)

    on_device(p, rows)(src3, buf)


def _logsumexp_via_host(dev, req: Request, b, keepdims, return_sign):
    """Weighted or signed logsumexp of a device array: computed from host copies, the
    results returned as device arrays (``out``, if given, a device array)."""
    if is_device_array(b):
        b = as_device(b).copy_to_host()
    host_req = req._replace(out=None, where=DEVICE.host_mask(req.where))
    host = run_logsumexp(dev.copy_to_host(), host_req, b, keepdims, return_sign, _smooth_max)
    lse, sign = host if return_sign else (host, None)
    lse = np.asarray(lse)
    res = check_out(req.out, lse.shape, lse.dtype, DEVICE)
    if res is None:
        res = cuda.to_device(lse)
    else:
        res[...] = cuda.to_device(lse)
    if return_sign:
        return res, cuda.to_device(np.asarray(sign))
    return res
