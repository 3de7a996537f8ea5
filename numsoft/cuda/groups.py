"""Kernels and drivers over groups of any length (SPEC §9) on the device: the CUDA
twins of ``numsoft.cpu.groups``.

Group ``g`` of an ``(outer, n, inner)`` view is ``x3[o, offsets[g]:offsets[g + 1], j]``,
a row of its own length: one row group of threads per ``(o, g, j)``, each thread a
strided slice of it, with the row kernels' statistics, merges and output pass
(``rows.row_stats``, ``passes.write_row``). So a group has §1's numerics exactly as a
row of the same values has on the device. The launch geometry is the rows' for the
mean group length (``launch.plan``), never split (a group's statistics come from one
block). Global traffic as the rows': online and two-pass 2 reads + 1 write per
element, three-pass 3 reads + 1 write; ``offsets`` is read twice per group.
"""

from __future__ import annotations

from numba import cuda, types

from . import launch
from ._jit import array3, device, kernel
from .passes import row_logsumexp, write_row
from .reduce import SLOTS
from .rows import row_stats

_OFFSETS = types.Array(types.int64, 1, "A")


@device
def this_group(x3, offsets):
    """(o, g, j, active) of the group of this thread's row group."""
    count = offsets.size - 1
    inner = x3.shape[2]
    r = cuda.blockIdx.x * cuda.blockDim.y + cuda.threadIdx.y
    active = r < x3.shape[0] * count * inner
    if not active:
        r = 0
    o = r // (count * inner)
    rest = r - o * count * inner
    g = rest // inner
    return o, g, rest - g * inner, active


@device
def group_lane(x3, offsets, group):
    """This thread's elements of ``group``: ``(o, j, start, stop, step)`` as the rows'
    lanes (none for an inactive group)."""
    o, g, j, active = group
    stop = offsets[g + 1] if active else 0
    return o, j, offsets[g] + cuda.threadIdx.x, stop, cuda.blockDim.x


@kernel(lambda ft: (array3(ft), array3(ft), _OFFSETS, types.int64, ft, types.boolean, ft))
def segment_softmax_kernel(x3, y3, offsets, algo, inv_t, log_output, bound):
    """y3 = softmax (or log_softmax) of every group of x3; ``y3`` may be ``x3``."""
    buf = cuda.shared.array(0, x3.dtype)
    lane = group_lane(x3, offsets, this_group(x3, offsets))
    kind, stats = row_stats(buf, x3, lane, algo, inv_t, bound)
    write_row(x3, y3, lane, kind, stats, inv_t, log_output)


@kernel(lambda ft: (array3(ft), _OFFSETS, array3(ft), types.int64, ft, ft, ft))
def segment_logsumexp_kernel(x3, offsets, out3, algo, inv_t, t, bound):
    """out3[o, g, j] = t·log Σ exp(x3[o, group g, j]·inv_t) (-inf for an empty group)."""
    buf = cuda.shared.array(0, x3.dtype)
    group = this_group(x3, offsets)
    kind, stats = row_stats(buf, x3, group_lane(x3, offsets, group), algo, inv_t, bound)
    o, g, j, active = group
    if active and cuda.threadIdx.x == 0:
        out3[o, g, j] = row_logsumexp(kind, stats, inv_t, x3) * t


# ---------------------------------------------------------------- host drivers


def _config(x3, count: int):
    outer, n, inner = x3.shape
    rows = outer * count * inner
    p = launch.plan(rows, max(1, n // max(count, 1)), inner, split=False)
    return (p.grid(rows), (p.lanes, p.groups), 0, p.shared_bytes(SLOTS, x3.dtype.itemsize))


def softmax_groups(x3, y3, offsets, algo, inv_t, log_output, bound):
    """Driver: y3 = softmax (or log_softmax) of every group of the device view x3
    (``offsets``: a device int64 array; scalars of the compute dtype)."""
    segment_softmax_kernel[_config(x3, offsets.size - 1)](
        x3, y3, offsets, algo, inv_t, log_output, bound
    )


def logsumexp_groups(x3, offsets, out3, algo, inv_t, t, bound):
    """Driver: out3[o, g, j] = t·logsumexp of every group (``out3``: (outer, count, inner))."""
    segment_logsumexp_kernel[_config(x3, offsets.size - 1)](
        x3, offsets, out3, algo, inv_t, t, bound
    )
