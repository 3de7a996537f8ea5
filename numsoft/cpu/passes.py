"""Single passes over one row, shared by every pass structure and variant.

Each function reads (and possibly writes) one 1-D row once; the docstring states the
traffic per element. Pass structures (``three_pass``, ``two_pass``, ``online``) are
compositions of these passes, and variants reuse them instead of re-deriving loops.

Elementwise arithmetic stays in the row's dtype: constants are made with
``x.dtype.type`` so that float32 rows are not silently promoted to float64 (which
would halve the vector width).

Sums are blocked: each block of ``SUM_BLOCK`` elements is summed in the row's dtype
(LLVM vectorizes that reduction into 4 vector accumulators of 16 float32 lanes, so
each lane adds only 8 terms and the block's relative error stays within ~15 ulp), and
the block sums are added into a float64 total. A float32 sum over a whole long row
would lose the 2e-6 relative accuracy the contract promises (error grows with the row
length); a float64 accumulator per element costs twice the time (a float32→float64
convert and half-width adds per element: 0.35 vs 0.17 ns/element measured, one thread).

Every reduction here is vectorized with several independent accumulators (the max via
``simd.fmax``, the sums by LLVM's reassociation), so none is latency-bound.

The passes a short row uses (``row_max``, ``exp_to_block`` and the other ``*_block``
helpers) are inlined at the Numba IR level (``inline="always"``): a call
between jitted functions that passes arrays costs tens of nanoseconds (argument
handling and reference counts), which at 128 float32 per row was as much as the row's
vector work. With the drivers' reference-free row views (``simd.borrowed_row``) a
short row's softmax is one function with no reference counting.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload

from ._jit import kernel
from .expfast import exp_nonpositive
from .paths import STREAM_OUTPUT
from .simd import (
    BLOCK,
    STREAM_ALIGN,
    STREAM_BLOCK,
    block_array,
    fmax,
    prefetch_range,
    stream_block_array,
    stream_store,
)

#: Elements summed in the row's dtype before the block sum is added in float64.
SUM_BLOCK = BLOCK

#: An output pass that re-reads what a statistics pass has just read, beyond the cache,
#: walks its range in pieces of this many bytes, the last piece first (each piece
#: forwards): the end of the range, read last, is still in the cache when the output pass
#: begins (``last_piece``; docs/pass-structures.md, "Last read first").
LAST_READ_FIRST_BYTES = 1 << 18


@kernel(inline="always")
def last_piece(lo, hi, step):
    """Start of the last of the pieces lo, lo + step, … of [lo, hi): an output pass runs
    ``for p in range(last_piece(lo, hi, step), lo - 1, -step)`` over [p, min(p + step,
    hi)). Every piece starts ``step`` elements (a multiple of a cache line) after the
    previous one, so the pieces share ``lo``'s alignment."""
    return lo + (hi - lo - 1) // step * step


@kernel(inline="always")  # Numba-IR inlining: module docstring
def row_max(x):
    """Maximum of a non-empty row, NaN if the row holds a NaN. One read per element.

    Vectorized with four interleaved vector accumulators (``simd.fmax``). Callers also
    detect NaN through the sum pass, where ``exp(NaN)`` poisons the sum.
    """
    m = x[0]
    for i in range(x.size):  # from 0: n iterations, whole vectors (n - 1 left a tail)
        m = fmax(m, x[i])
    return m


@kernel(inline="always")  # Numba-IR inlining: module docstring
def _block_sum_exp(x, m, inv_t):
    """Σ exp((x - m)·inv_t) over one block, accumulated in the row's dtype."""
    s = x.dtype.type(0.0)
    for i in range(x.size):
        s += exp_nonpositive((x[i] - m) * inv_t)
    return s


@kernel(inline="always")  # Numba-IR inlining: module docstring
def short_row_sum_exp(x, m, inv_t):
    """``row_sum_exp`` of a row of at most ``SUM_BLOCK`` elements: one block."""
    return np.float64(_block_sum_exp(x, m, inv_t))


@kernel
def row_sum_exp(x, m, inv_t):
    """Σ exp((x - m)·inv_t) as a float64. One read per element.

    Blocked: ``SUM_BLOCK`` elements in the row's dtype, block sums added in float64.
    """
    if x.size <= SUM_BLOCK:  # short rows: no block views (each costs two atomic refcounts)
        return short_row_sum_exp(x, m, inv_t)
    s = 0.0
    for lo in range(0, x.size, SUM_BLOCK):
        s += _block_sum_exp(x[lo : lo + SUM_BLOCK], m, inv_t)
    return s


@kernel
def in_place(x, y):
    """True when y is x (same first element and strides): the write passes then loop
    over one array. LLVM vectorizes a loop that reads x and writes y only after a
    run-time check that they do not overlap, and an in-place call fails that check
    and ran the scalar loop, 12× slower; with one array there is nothing to check.
    The loop helpers are inlined at the Numba IR level (``inline="always"``) so that
    LLVM sees the very same pointer twice (a call boundary would hide it)."""
    return x.ctypes.data == y.ctypes.data and x.strides == y.strides


def part(v, lo, hi):
    """v[lo:hi] for an array, v itself for a scalar: a parameter of an elementwise loop
    cut into pieces (``streamed``). Jit-only, resolved at compile time."""
    raise NotImplementedError


@overload(part, inline="always")
def _part_overload(v, lo, hi):
    if isinstance(v, types.Array):
        return lambda v, lo, hi: v[lo:hi]
    return lambda v, lo, hi: v


# The elementwise output loops run over y.size (= x.size): in ``streamed`` y is the
# stack block, whose constant size lets LLVM drop the loop's remainder and checks.
@kernel(inline="always")  # Numba-IR inlining: see in_place
def _exp_scaled(x, y, m, inv_t, scale):
    for i in range(y.size):
        y[i] = exp_nonpositive((x[i] - m) * inv_t) * scale


@kernel(inline="always")  # Numba-IR inlining: module docstring
def streamed(fill, x, y, a, b, c):
    """``fill(x, y, a, b, c)``, an elementwise output loop, with y written by streaming
    (non-temporal) stores: ``STREAM_BLOCK`` elements at a time into a stack block, then
    stored around the cache. An ordinary store reads its line from memory before it
    writes it; beyond the cache that read is a third of an output pass's traffic.

    ``a``, ``b``, ``c`` are scalars or arrays of one element per element of y (the
    column kernels' per-column statistics), which go to each piece of the loop as their
    same piece (``part``). Same values as ``fill(x, y, ...)``; y must not be x. Rows
    that are short, not element-aligned or not unit-stride take the plain loop. The
    streaming stores are weakly ordered: the driver that runs the pass calls
    ``simd.store_fence()`` once it is done with its rows (a fence per row cost 6-11 %
    on rows of 4096 float32).
    """
    n = y.size
    addr = y.ctypes.data
    if n < STREAM_BLOCK or addr % y.itemsize != 0 or y.strides[0] != y.itemsize:
        fill(x, y, a, b, c)
        return
    head = (-addr) % STREAM_ALIGN // y.itemsize  # elements up to the first aligned one
    end = head + (n - head) // STREAM_BLOCK * STREAM_BLOCK
    fill(x[:head], y[:head], part(a, 0, head), part(b, 0, head), part(c, 0, head))
    block = stream_block_array(y[0])
    for lo in range(head, end, STREAM_BLOCK):
        hi = lo + STREAM_BLOCK
        fill(x[lo:hi], block, part(a, lo, hi), part(b, lo, hi), part(c, lo, hi))
        stream_store(y, lo, block)
    fill(x[end:], y[end:], part(a, end, n), part(b, end, n), part(c, end, n))


@kernel(inline="always")  # Numba-IR inlining: see in_place
def write_elementwise(fill, x, y, a, b, c):
    """``fill(x, y, a, b, c)``, an elementwise output loop, as every output pass runs
    it: over the one array when y is x (``in_place``), with streaming stores under
    ``STREAM_OUTPUT`` (``streamed``), else as it is."""
    if in_place(x, y):
        fill(y, y, a, b, c)
    elif STREAM_OUTPUT:
        streamed(fill, x, y, a, b, c)
    else:
        fill(x, y, a, b, c)


@kernel
def write_exp_scaled(x, y, m, inv_t, scale):
    """y = exp((x - m)·inv_t)·scale. One read, one write per element; y may be x.

    With ``STREAM_OUTPUT``, y (when not x) is written by streaming stores.
    """
    write_elementwise(_exp_scaled, x, y, m, inv_t, scale)


@kernel(inline="always")  # Numba-IR inlining: see in_place
def _shifted(x, y, m, inv_t, shift):
    for i in range(y.size):
        y[i] = (x[i] - m) * inv_t - shift


@kernel(inline="always")  # Numba-IR inlining: module docstring
def shifted_row(x, y, m, inv_t, shift):
    """y = (x - m)·inv_t - shift (the log-domain output). One read, one write; y may be x."""
    if in_place(x, y):
        _shifted(y, y, m, inv_t, shift)
    else:
        _shifted(x, y, m, inv_t, shift)


@kernel
def write_shifted(x, y, m, inv_t, shift):
    """y = (x - m)·inv_t - shift, as ``shifted_row``, as a function of its own (long rows:
    the call is no cost); with ``STREAM_OUTPUT``, y (when not x) is written by
    streaming stores."""
    write_elementwise(_shifted, x, y, m, inv_t, shift)


@kernel
def _copy(src, dst):
    for i in range(src.size):
        dst[i] = src[i]


@kernel(inline="always")  # Numba-IR inlining: module docstring
def row_sum(x):
    """Σ x in the row's dtype. One read per element."""
    s = x.dtype.type(0.0)
    for i in range(x.size):
        s += x[i]
    return s


@kernel(inline="always")  # Numba-IR inlining: module docstring
def exp_to_block(x, b, m, inv_t):
    """b = exp((x - m)·inv_t) into a stack block of x's size, returning Σ b in the row's
    dtype. One read of x, one write and one re-read (in L1) of b per element.

    The values go through the contiguous stack block (``simd.block_array``, in L1):
    the sum loop then vectorizes the same way, hence rounds the same way, whatever the
    output's strides or aliasing with x (LLVM vectorizes a loop that writes y only
    when it can rule out overlap), so ``out=`` of any layout and in-place give
    identical results.

    The sum is taken in the same loop as the exponentials, not by a second loop over b:
    20 % less time per row of 64-512 float32 (rows of 128: 65.6 → 53.1 ns, one thread), the
    loads and adds of a second loop and its separate horizontal reduction gone.
    """
    s = x.dtype.type(0.0)
    for i in range(x.size):
        e = exp_nonpositive((x[i] - m) * inv_t)
        b[i] = e
        s += e
    return s


@kernel(inline="always")  # Numba-IR inlining: module docstring
def shifted_to_block(x, b, m, inv_t):
    """b = (x - m)·inv_t into a stack block of x's size, returning Σ exp(b) in the row's
    dtype (as ``exp_to_block``, in one loop)."""
    s = x.dtype.type(0.0)
    for i in range(x.size):
        d = (x[i] - m) * inv_t
        b[i] = d
        s += exp_nonpositive(d)
    return s


@kernel(inline="always")  # Numba-IR inlining: module docstring
def scale_from_block(b, y, scale):
    """y = b·scale from a stack block. One read (L1), one write per element."""
    for i in range(b.size):
        y[i] = b[i] * scale


@kernel(inline="always")  # Numba-IR inlining: module docstring
def shift_from_block(b, y, shift):
    """y = b - shift from a stack block. One read (L1), one write per element."""
    for i in range(b.size):
        y[i] = b[i] - shift


@kernel(inline="always")  # Numba-IR inlining: module docstring
def _store_and_sum(x, y, m, inv_t, to_block, ahead=None):
    """y = what ``to_block`` writes, one ``SUM_BLOCK`` at a time, returning the float64
    total of its block sums (``exp_to_block``, ``shifted_to_block``). A unit-stride y
    that is not x is written by ``to_block`` itself; any other y (in place, strided, or
    a row of one block) through a stack block and a copy, with the same sums.
    With a row ``ahead`` (the next row a driver will take), each block also prefetches
    the same elements of it (``simd.prefetch_range``), so that its reads from memory
    overlap this pass's arithmetic.

    ``to_block`` is a kernel, a compile-time choice: each caller compiles one pass only.
    """
    buf = block_array(x.dtype.type(0.0))
    if x.size <= SUM_BLOCK:  # short rows: no block views
        b = buf[: x.size]
        s = np.float64(to_block(x, b, m, inv_t))
        _copy(b, y)
        return s
    s = 0.0
    # A unit-stride y that is not x is written in the loop itself: the block's copy cost
    # 0.02-0.03 of the 0.15 ms of this pass on one row of 2^20 float32 (two threads).
    direct = y.strides[0] == y.itemsize and not in_place(x, y)
    for lo in range(0, x.size, SUM_BLOCK):
        hi = min(lo + SUM_BLOCK, x.size)
        if ahead is not None:
            prefetch_range(ahead, lo, hi)
        if direct:
            s += to_block(x[lo:hi], y[lo:hi], m, inv_t)
        else:
            b = buf[: hi - lo]
            s += to_block(x[lo:hi], b, m, inv_t)
            _copy(b, y[lo:hi])
    return s


@kernel
def store_exp_and_sum(x, y, m, inv_t, ahead=None):
    """y = exp((x - m)·inv_t), returning Σ y (float64, blocked as ``row_sum_exp``).

    One read, one write per element (plus a copy within L1 where y is x, strided or
    one block long); y may be x.
    """
    return _store_and_sum(x, y, m, inv_t, exp_to_block, ahead)


@kernel
def store_shifted_and_sum_exp(x, y, m, inv_t, ahead=None):
    """y = (x - m)·inv_t, returning Σ exp(y) (float64, blocked as ``row_sum_exp``).

    One read, one write per element (plus a copy within L1 where y is x, strided or
    one block long); y may be x.
    """
    return _store_and_sum(x, y, m, inv_t, shifted_to_block, ahead)


@kernel
def scale_inplace(y, scale):
    """y *= scale. One read, one write per element."""
    for i in range(y.size):
        y[i] *= scale


@kernel
def shift_inplace(y, shift):
    """y -= shift. One read, one write per element."""
    for i in range(y.size):
        y[i] -= shift


@kernel
def is_finite(v):
    """``math.isfinite(v)`` that survives ``SAFE_FASTMATH``.

    Numba lowers ``math.isfinite(v)`` as ``v - v`` compared with itself; under the
    ``reassoc``/``nsz`` flags LLVM may cancel ``(a + b) - (a + b)`` to 0, so the test
    returns True for a NaN or infinite ``v`` that is a sum. Comparisons cannot be
    rewritten that way.
    """
    return v == v and abs(v) != math.inf


@kernel
def is_regular(m, s):
    """True when the (max, sum) statistics describe a finite row.

    A row with NaN, a +inf entry, or only -inf entries fails this test and goes to the
    special-value path (``special_row_*``), so the fast passes never need a branch.
    """
    return is_finite(m) and is_finite(s)


@kernel
def _count_nan_posinf(x):
    """(has NaN, number of +inf entries). One read per element; slow path only."""
    has_nan = False
    n_inf = 0
    for i in range(x.size):
        v = x[i]
        if v != v:
            has_nan = True
        elif v == math.inf:
            n_inf += 1
    return has_nan, n_inf


@kernel
def special_row_logsumexp(x):
    """logsumexp of a row that contains NaN, +inf, or only -inf (SPEC §1)."""
    has_nan, n_inf = _count_nan_posinf(x)
    if has_nan:
        return math.nan
    if n_inf > 0:
        return math.inf
    return -math.inf


@kernel
def special_row_write(x, y, log_output):
    """softmax/log_softmax of a row that contains NaN, +inf, or only -inf (SPEC §1).

    NaN anywhere gives an all-NaN row; k entries equal to +inf share the mass equally
    (the limit as they grow together); a row of only -inf gives NaN, like SciPy.
    """
    has_nan, n_inf = _count_nan_posinf(x)
    if has_nan or n_inf == 0:
        nan = x.dtype.type(math.nan)
        for i in range(x.size):
            y[i] = nan
    else:
        write_posinf_share(x, y, n_inf, log_output)


@kernel
def write_posinf_share(x, y, n_inf, log_output):
    """The limit output of a row with ``n_inf`` entries equal to +inf (SPEC §1).

    y = 1/n_inf (log: -log n_inf) at the +inf entries of x, 0 (log: -inf) elsewhere.
    ``n_inf`` counts the whole row, which may be longer than the piece x (Dask chunks).
    One read, one write per element; y may be x.
    """
    if log_output:
        hit = x.dtype.type(-math.log(n_inf))
        miss = x.dtype.type(-math.inf)
    else:
        hit = x.dtype.type(1.0 / n_inf)
        miss = x.dtype.type(0.0)
    for i in range(x.size):
        y[i] = hit if x[i] == math.inf else miss
