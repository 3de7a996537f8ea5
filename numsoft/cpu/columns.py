"""Column-block kernels: normalize a middle axis in place, vectorized across columns.

For an ``(outer, n, inner)`` view with ``inner > 1`` (``axis=0`` on C-ordered data) the
elements of one normalized column are ``inner`` apart, but adjacent columns are adjacent
in memory. A task takes a block of ``COLUMN_BLOCK`` adjacent columns, ``xb = x3[o, :,
j0:j0 + w]``, and streams down its rows: every pass is a loop over rows ``k`` whose
inner loop over the ``w`` columns is contiguous and vectorizes, with one accumulator per
column (the columns are the vector lanes). Nothing is transposed or copied. Rows of a
block are ``inner`` elements apart (16 KiB for 4096 float32 columns: every row maps to
the same cache sets), so a narrow block does not stay in cache between passes however
small it is; wide blocks (``COLUMN_BLOCK``) make each pass stream long contiguous runs
instead. The tile-transpose scheme this replaces (gather 16 columns into a contiguous
tile, run the row kernel, scatter back) ran at 20–40× the copy time on 4096×4096
float32, almost all of it in the scalar gather/scatter.

The pass structures are those of the row kernels, per column:

- ``three-pass-reload``: column max; Σ exp; write exp(x - m)/Σ.
- ``three-pass-store``: column max; y = exp(x - m) with Σ; y *= 1/Σ.
- ``online``: per block of ``ROW_BLOCK`` rows, the block's column max, a rescale of the
  running sums where it grew, and the block's Σ exp; then the write pass.
- ``two-pass``: per-column (M, E) pairs updated branch-free per row (XNNPACK's per-lane
  update, with columns as lanes); then y = p·2^(n - E)/M. A block with a column outside
  the (M, E) split's domain falls back to ``online`` for the whole block.

Sums: each column adds ``ROW_BLOCK`` rows in the row dtype (≤ 15 ulp), then the partial
goes into a float64 per-column total, as in the row kernels. Columns that hold NaN,
+inf or only -inf take the row kernels' special-value path on a gathered copy of the
column (before any output is written, so in-place calls are safe).

Compile time: a first call compiles one block kernel per path, ``store_column_block``
or ``stats_column_block`` (``softmax_column_block`` is the switch between them), with
the small helpers inlined at the Numba IR level. Each helper compiled as a function of
its own cost about 0.1 s (a library of its own, optimized again inside every caller),
and nesting the store kernel inside the stats one cost 0.5 s of IR inlining; the first
call of ``softmax(x, axis=0)`` on 64×100 float32 took 4.9 s before and 2.2 s after
(``../shared/tools/coldstart.py``).

The online statistics (``column_online``, the pass of every out-of-cache ``axis=0``
call) sweep the columns once per four rows (``_block_max``, ``_add_exp_rows``), so the
per-column accumulators are loaded and stored once per four elements: 4096×4096,
``logsumexp(axis=0)``, 2 threads, 4.6–4.8 → 4.2 ms float32 and 11.1–11.4 → 9.6–9.7 ms
float64; the first call of that path compiles in 4.4 s instead of 3.8. Two rows per
sweep gained nothing, and the same sweeps in the store and write passes (≤ 7% on
64×100) cost a small call's first compile 0.5 s, so those keep one row per sweep.
"""

from __future__ import annotations

import math

import numpy as np

from ..vocabulary import ONLINE, THREE_PASS_STORE, TWO_PASS
from ._jit import kernel, read_only_array
from .expfast import exp_nonpositive, exp_reduce, ldexp_nonpositive
from .online import _rescale
from .passes import in_place, is_finite, is_regular, special_row_logsumexp, special_row_write
from .paths import ALGORITHM, LOG_OUTPUT
from .simd import BLOCK, as_unit_stride, block_array, fmax
from .two_pass import _EMPTY_EXPONENT, _clamped, _in_domain, _scale_down

#: Adjacent columns per task (512 float32 = 32 cache lines per row, the most the stack
#: accumulators hold). Measured on 4096×4096 float32, axis=0, 1 thread, time / copy
#: time (reload, store, two-pass, online): 64 columns 8.3, 6.5, 8.4, 8.0; 128 columns
#: 5.6, 5.9, 5.8, 6.2; 512 columns 4.4, 4.7, 5.4, 4.8.
COLUMN_BLOCK = 512

#: Rows summed per column in the row dtype before the partial goes into float64.
ROW_BLOCK = 16

assert COLUMN_BLOCK <= BLOCK  # the per-column accumulators are stack blocks


@kernel
def block_count(inner):
    """Number of column blocks per outer index."""
    return (inner + COLUMN_BLOCK - 1) // COLUMN_BLOCK


@kernel(inline="always")  # compile time: module docstring
def block_view(x3, task, per_outer):
    """(outer index, first column, the (n, w) view of block ``task``)."""
    o = task // per_outer
    j0 = (task % per_outer) * COLUMN_BLOCK
    return o, j0, x3[o, :, j0 : j0 + COLUMN_BLOCK]


@kernel(inline="always")  # compile time: module docstring
def row_of(xb, k):
    """Row ``k`` of a column block, typed contiguous (blocks have unit column stride)."""
    return as_unit_stride(xb[k])


# ---------------------------------------------------------------- statistics passes


@kernel(inline="always")  # compile time: module docstring
def _block_max(xb, k0, k1, bm):
    """bm[j] = max of xb[k0:k1, j] (NaN-propagating), four rows per sweep over the
    columns so that bm is loaded and stored once per four elements."""
    w = xb.shape[1]
    x0 = row_of(xb, k0)
    for j in range(w):
        bm[j] = x0[j]
    k = k0 + 1
    while k + 4 <= k1:
        x0, x1, x2, x3 = row_of(xb, k), row_of(xb, k + 1), row_of(xb, k + 2), row_of(xb, k + 3)
        for j in range(w):
            bm[j] = fmax(bm[j], fmax(fmax(x0[j], x1[j]), fmax(x2[j], x3[j])))
        k += 4
    for r in range(k, k1):
        x0 = row_of(xb, r)
        for j in range(w):
            bm[j] = fmax(bm[j], x0[j])


@kernel(inline="always")  # compile time: module docstring
def column_max(xb, cm):
    """cm[j] = max over rows of xb[:, j] (NaN-propagating). One read per element."""
    w = xb.shape[1]
    for j in range(w):
        cm[j] = row_of(xb, 0)[j]
    for k in range(1, xb.shape[0]):
        xr = row_of(xb, k)
        for j in range(w):
            cm[j] = fmax(cm[j], xr[j])


@kernel
def _add_exp_rows(xb, k0, k1, shift, inv_t, part, cs):
    """cs[j] += Σ_{k0 ≤ k < k1} exp((xb[k, j] - shift[j])·inv_t), via a row-dtype
    partial, four rows per sweep over the columns (as ``_block_max``)."""
    w = xb.shape[1]
    for j in range(w):
        part[j] = xb.dtype.type(0.0)
    k = k0
    while k + 4 <= k1:
        x0, x1, x2, x3 = row_of(xb, k), row_of(xb, k + 1), row_of(xb, k + 2), row_of(xb, k + 3)
        for j in range(w):
            b = shift[j]
            e01 = exp_nonpositive((x0[j] - b) * inv_t) + exp_nonpositive((x1[j] - b) * inv_t)
            e23 = exp_nonpositive((x2[j] - b) * inv_t) + exp_nonpositive((x3[j] - b) * inv_t)
            part[j] += e01 + e23
        k += 4
    for r in range(k, k1):
        x0 = row_of(xb, r)
        for j in range(w):
            part[j] += exp_nonpositive((x0[j] - shift[j]) * inv_t)
    for j in range(w):
        cs[j] += part[j]


@kernel
def column_sum_exp(xb, cm, inv_t, part, cs):
    """cs[j] = Σ_k exp((xr[j] - cm[j])·inv_t) as float64. One read per element."""
    for j in range(xb.shape[1]):
        cs[j] = 0.0
    for k0 in range(0, xb.shape[0], ROW_BLOCK):
        _add_exp_rows(xb, k0, min(k0 + ROW_BLOCK, xb.shape[0]), cm, inv_t, part, cs)


@kernel
def column_online(xb, inv_t, cm, cs, bm, part):
    """Online (m, d) per column, by blocks of ``ROW_BLOCK`` rows. One read per element.

    As ``online_stats``: a block of only -inf adds nothing, NaN poisons d.
    """
    w, n = xb.shape[1], xb.shape[0]
    for j in range(w):
        cm[j] = xb.dtype.type(-math.inf)
        cs[j] = 0.0
    for k0 in range(0, n, ROW_BLOCK):
        k1 = min(k0 + ROW_BLOCK, n)
        _block_max(xb, k0, k1, bm)
        for j in range(w):
            if bm[j] > cm[j]:
                cs[j] *= _rescale(cm[j], bm[j], inv_t)
                cm[j] = bm[j]
            # bm becomes the block's shift: cm, or 0 for a column of only -inf so far,
            # whose exp(-inf - 0) adds nothing where exp(-inf - cm) would be NaN
            bm[j] = cm[j] if cm[j] != -math.inf else xb.dtype.type(0.0)
        _add_exp_rows(xb, k0, k1, bm, inv_t, part, cs)


@kernel
def column_extexp(xb, inv_t, mant, expo, mant64, expo64):
    """Σ_k exp(xr[j]·inv_t) per column as float64 (M, E) pairs (``mant64``, ``expo64``).

    Per-column lane update as ``two_pass._lane_update`` in the row dtype over
    ``ROW_BLOCK`` rows, folded into float64 pairs. One read per element.
    """
    w, n = xb.shape[1], xb.shape[0]
    dt = xb.dtype.type
    for j in range(w):
        mant64[j] = 0.0
        expo64[j] = _EMPTY_EXPONENT
    for k0 in range(0, n, ROW_BLOCK):
        for j in range(w):
            mant[j] = dt(0.0)
            expo[j] = dt(_EMPTY_EXPONENT)
        for k in range(k0, min(k0 + ROW_BLOCK, n)):
            xr = row_of(xb, k)
            for j in range(w):
                p, ni = exp_reduce(_clamped(xr[j] * inv_t))
                e_old = expo[j]
                e = ni if ni > e_old else e_old
                mant[j] = _scale_down(mant[j], e_old - e) + _scale_down(p, ni - e)
                expo[j] = e
        for j in range(w):
            e_blk = np.float64(expo[j])
            e_old = expo64[j]
            e = e_blk if e_blk > e_old else e_old
            mant64[j] = _scale_down(mant64[j], e_old - e) + _scale_down(
                np.float64(mant[j]), e_blk - e
            )
            expo64[j] = e


# ---------------------------------------------------------------- output passes


# One row of a block, elementwise with per-column statistics: the fills of
# ``passes.write_elementwise`` for the column chunks (``column_chunks``), and the row
# loops of the block kernels below.
@kernel(inline="always")  # Numba-IR inlining: see passes.in_place
def exp_scaled_by_column(xr, yr, cm, inv_t, scale):
    for j in range(yr.size):
        yr[j] = exp_nonpositive((xr[j] - cm[j]) * inv_t) * scale[j]


@kernel(inline="always")
def shifted_by_column(xr, yr, cm, inv_t, shift):
    for j in range(yr.size):
        yr[j] = (xr[j] - cm[j]) * inv_t - shift[j]


@kernel(inline="always")  # Numba-IR inlining: see passes.in_place
def _exp_scaled_cols(xb, yb, cm, inv_t, scale):
    for k in range(xb.shape[0]):
        exp_scaled_by_column(row_of(xb, k), row_of(yb, k), cm, inv_t, scale)


@kernel(inline="always")
def _shifted_cols(xb, yb, cm, inv_t, shift):
    for k in range(xb.shape[0]):
        shifted_by_column(row_of(xb, k), row_of(yb, k), cm, inv_t, shift)


@kernel(inline="always")
def _extexp_scaled_cols(xb, yb, inv_t, expo, scale):
    for k in range(xb.shape[0]):
        xr = row_of(xb, k)
        yr = row_of(yb, k)
        for j in range(xb.shape[1]):
            p, n = exp_reduce(_clamped(xr[j] * inv_t))
            yr[j] = ldexp_nonpositive(p, n - expo[j]) * scale[j]


# The output passes of every column; one read, one write per element; yb may be xb
# (the in-place loop sees one array: see passes.in_place).


@kernel
def write_exp_scaled_columns(xb, yb, cm, inv_t, a):
    """yb = exp((xb - cm)·inv_t)·a, column by column."""
    if in_place(xb, yb):
        _exp_scaled_cols(yb, yb, cm, inv_t, a)
    else:
        _exp_scaled_cols(xb, yb, cm, inv_t, a)


@kernel
def write_shifted_columns(xb, yb, cm, inv_t, a):
    """yb = (xb - cm)·inv_t - a, column by column (the log-domain output)."""
    if in_place(xb, yb):
        _shifted_cols(yb, yb, cm, inv_t, a)
    else:
        _shifted_cols(xb, yb, cm, inv_t, a)


@kernel
def write_extexp_columns(xb, yb, expo, inv_t, a):
    """yb = p·2^(n - expo)·a, column by column (two-pass, ``expo`` = E, ``a`` = 1/M)."""
    if in_place(xb, yb):
        _extexp_scaled_cols(yb, yb, inv_t, expo, a)
    else:
        _extexp_scaled_cols(xb, yb, inv_t, expo, a)


# ---------------------------------------------------------------- special columns


@kernel(inline="always")  # compile time: module docstring
def _special_columns(xb, cm, cs):
    """Indices of the columns whose (m, d) statistics are not regular."""
    idx = np.empty(xb.shape[1], np.intp)
    count = 0
    for j in range(xb.shape[1]):
        if not is_regular(cm[j], cs[j]):
            idx[count] = j
            count += 1
    return idx[:count]


@kernel(inline="always")  # compile time: module docstring
def _gather(xb, cols):
    """The listed columns of xb as contiguous rows of a new (len(cols), n) array."""
    out = np.empty((cols.size, xb.shape[0]), dtype=xb.dtype)
    for c in range(cols.size):
        for k in range(xb.shape[0]):
            out[c, k] = xb[k, cols[c]]
    return out


@kernel(inline="always")  # compile time: module docstring
def _finish_special(saved, cols, yb, log_output):
    """Write the special-value result of each saved column into yb."""
    for c in range(cols.size):
        # x typed read-only, as the row kernels call it: one compiled signature for both
        special_row_write(read_only_array(saved[c]), saved[c], log_output)
        for k in range(yb.shape[0]):
            yb[k, cols[c]] = saved[c, k]


# ---------------------------------------------------------------- per-block drivers
# (templates: the path constants ALGORITHM and LOG_OUTPUT are bound by paths.specialize)


@kernel
def _column_stats(xb, inv_t, cm, cs, b1, b2, b3):
    """Statistics of a block for the write pass, in cm/cs. Returns True when they hold
    the two-pass (E, M) pairs, all within the split's domain; False when they hold the
    max and Σ exp((x - m)·inv_t).
    """
    w = xb.shape[1]
    if ALGORITHM == TWO_PASS:
        column_extexp(xb, inv_t, b1, b2, cs, b3)
        ok = True
        for j in range(w):
            ok = ok and _in_domain(cs[j], b3[j], xb)
        if ok:
            for j in range(w):
                cm[j] = xb.dtype.type(b3[j])
            return True
        column_online(xb, inv_t, cm, cs, b1, b2)  # the whole block falls back, as a row does
    elif ALGORITHM == ONLINE:
        column_online(xb, inv_t, cm, cs, b1, b2)
    else:  # the three-pass forms (logsumexp's store has no output pass: as reload)
        column_max(xb, cm)
        column_sum_exp(xb, cm, inv_t, b1, cs)
    return False


@kernel(inline="always")  # a switch that pruning reduces to one call: no function of its own
def softmax_column_block(xb, yb, inv_t):
    """softmax (or log_softmax) of every column of the (n, w) block ``xb`` into ``yb``,
    with the pass structure ``ALGORITHM``.

    Blocks are views of C-contiguous arrays (the front door copies any other layout),
    so adjacent columns are adjacent in memory.
    """
    if ALGORITHM == THREE_PASS_STORE:
        store_column_block(xb, yb, inv_t)
    else:
        stats_column_block(xb, yb, inv_t)


@kernel
def stats_column_block(xb, yb, inv_t):
    """``softmax_column_block`` for the structures that take statistics first
    (reload, online, two-pass), then write in one pass."""
    like = xb.dtype.type(0.0)
    cm, a = block_array(like), block_array(like)
    b1, b2 = block_array(like), block_array(like)
    cs, b3 = block_array(0.0), block_array(0.0)
    w = xb.shape[1]
    extexp = _column_stats(xb, inv_t, cm, cs, b1, b2, b3)
    if ALGORITHM == TWO_PASS and extexp:
        if LOG_OUTPUT:
            for j in range(w):
                a[j] = xb.dtype.type(math.log(cs[j]) + np.float64(cm[j]) * math.log(2.0))
                cm[j] = xb.dtype.type(0.0)
            write_shifted_columns(xb, yb, cm, inv_t, a)
        else:
            for j in range(w):
                a[j] = xb.dtype.type(1.0 / cs[j])
            write_extexp_columns(xb, yb, cm, inv_t, a)
        return
    cols = _special_columns(xb, cm, cs)
    saved = _gather(xb, cols)
    for j in range(w):
        if LOG_OUTPUT:
            a[j] = xb.dtype.type(math.log(cs[j])) if cs[j] > 0 else xb.dtype.type(0.0)
        else:
            a[j] = xb.dtype.type(1.0 / cs[j]) if cs[j] > 0 else xb.dtype.type(0.0)
        if not is_finite(cm[j]):
            cm[j] = xb.dtype.type(0.0)  # a special column: overwritten below
    if LOG_OUTPUT:
        write_shifted_columns(xb, yb, cm, inv_t, a)
    else:
        write_exp_scaled_columns(xb, yb, cm, inv_t, a)
    _finish_special(saved, cols, yb, LOG_OUTPUT)


@kernel(inline="always")  # Numba-IR inlining: see passes.in_place
def _store_rows(xb, yb, k0, k1, cm, inv_t, part, cs):
    """Rows k0..k1 of the store pass: y = exp(x - m) (or x - m), cs += Σ exp."""
    w = xb.shape[1]
    for j in range(w):
        part[j] = xb.dtype.type(0.0)
    if LOG_OUTPUT:
        for k in range(k0, k1):
            xr = row_of(xb, k)
            yr = row_of(yb, k)
            for j in range(w):
                d = (xr[j] - cm[j]) * inv_t
                yr[j] = d
                part[j] += exp_nonpositive(d)
    else:
        for k in range(k0, k1):
            xr = row_of(xb, k)
            yr = row_of(yb, k)
            for j in range(w):
                e = exp_nonpositive((xr[j] - cm[j]) * inv_t)
                yr[j] = e
                part[j] += e
    for j in range(w):
        cs[j] += part[j]


@kernel
def store_column_block(xb, yb, inv_t):
    """three-pass-store per column: max; y = exp(x - m) (or x - m) with Σ; y *= 1/Σ.

    A kernel of its own, called straight from the drivers through the
    ``softmax_column_block`` switch: nested in another block kernel, its library was
    optimized twice, and its IR inlining (87 blocks) cost 0.5 s of a first call.
    """
    like = xb.dtype.type(0.0)
    cm, a = block_array(like), block_array(like)
    part, cs = block_array(like), block_array(0.0)
    w, n = xb.shape[1], xb.shape[0]
    column_max(xb, cm)
    for j in range(w):
        cs[j] = 0.0 if is_finite(cm[j]) else math.nan
    cols = _special_columns(xb, cm, cs)
    saved = _gather(xb, cols)
    for j in range(w):
        if not is_finite(cm[j]):
            cm[j] = xb.dtype.type(0.0)
    same = in_place(xb, yb)
    for k0 in range(0, n, ROW_BLOCK):
        k1 = min(k0 + ROW_BLOCK, n)
        if same:
            _store_rows(yb, yb, k0, k1, cm, inv_t, part, cs)
        else:
            _store_rows(xb, yb, k0, k1, cm, inv_t, part, cs)
    for j in range(w):
        if LOG_OUTPUT:
            a[j] = xb.dtype.type(math.log(cs[j])) if cs[j] > 0 else xb.dtype.type(0.0)
        else:
            a[j] = xb.dtype.type(1.0 / cs[j]) if cs[j] > 0 else xb.dtype.type(0.0)
    for k in range(n):
        yr = row_of(yb, k)
        for j in range(w):
            yr[j] = yr[j] - a[j] if LOG_OUTPUT else yr[j] * a[j]
    # NaN in a column with a finite max leaves a NaN sum: its column is all NaN.
    for j in range(w):
        if not is_finite(cs[j]):
            for k in range(n):
                yb[k, j] = math.nan
    _finish_special(saved, cols, yb, LOG_OUTPUT)


@kernel
def logsumexp_column_block(xb, out, inv_t):
    """out[j] = t·log Σ_k exp(xb[k, j]·inv_t) for every column of the block."""
    like = xb.dtype.type(0.0)
    cm, b1, b2 = block_array(like), block_array(like), block_array(like)
    cs, b3 = block_array(0.0), block_array(0.0)
    extexp = _column_stats(xb, inv_t, cm, cs, b1, b2, b3)
    for j in range(xb.shape[1]):
        if ALGORITHM == TWO_PASS and extexp:
            out[j] = (math.log(cs[j]) + b3[j] * math.log(2.0)) / inv_t
        elif is_regular(cm[j], cs[j]):
            out[j] = cm[j] + math.log(cs[j]) / inv_t
        else:
            out[j] = special_row_logsumexp(np.ascontiguousarray(xb[:, j]))
