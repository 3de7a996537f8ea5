"""Short float32 rows as vector lanes: softmax, log_softmax and logsumexp of 16 rows of
16·q elements at a time.

A row kernel on a row of 32 float32 spends most of its time on what the row's length
does not amortize: two horizontal reductions (max, Σ), loop set-up, and an exponential
loop LLVM runs in 8-lane vectors. Here 16 rows are loaded as 16·q vectors and
transposed 16×16 block by block in registers (``_transpose16``: 4 stages of
``shufflevector``, 64 two-source permutes per block), so that vector k holds element k
of all 16 rows: the rows' maxima are an elementwise max of 16·q vectors, their sums an
elementwise sum, with no horizontal reduction and no per-row overhead. softmax
transposes the scaled exponentials back; log_softmax writes (x − m)·inv_t − log Σ row
by row from x (a broadcast per row, no transpose back); logsumexp writes the 16 rows'
m + t·log Σ, in float64, from vectors. Pass structure three-pass-store per tile of 16
rows: x read once (log_softmax: again from L1), y written once, the exponentials
through a stack tile in L1.

Numba loops over 16 lanes do not compile to this (LLVM unrolled them into scalar code
or vectorized the loop across the lanes' rows, with gathers), so
the loads, transposes, reductions and stores are LLVM intrinsics here. The exponential
stays numsoft's ``exp_nonpositive``, in a flat loop over the tile that LLVM vectorizes
without a remainder. The 16 rows' reciprocal sums (softmax) and log-sums (log_softmax,
``logfast.log_fast``) are one vector each: their loops run over ``simd.opaque_count``
lanes, which LLVM otherwise unrolls into 16 scalar divisions or libm calls (float32
log_softmax rows of 32: 1.13-1.15 → 1.02-1.08 ms per 2^21 elements, one thread).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import kernel
from .expfast import exp_nonpositive
from .logfast import log_fast
from .passes import special_row_logsumexp
from .paths import LANE_TILES, LOG_OUTPUT
from .simd import _stack_array, borrowed_row, lane_array, opaque_count
from .three_pass import softmax_short_row_three_pass_store

#: Rows per tile: the float32 lanes of one AVX-512 vector.
TILE_ROWS = 16

#: The most 16-element blocks per row the intrinsics take (rows of at most 64 float32);
#: the drivers use fewer (``rows.LANE_TILE_MAX_N``: 64 was slower than the row kernel).
MAX_TILE_BLOCKS = 4

#: ``tile_array(like)``: the transposed tile of 16 rows × 64 float32, 64-byte aligned.
tile_array = _stack_array(TILE_ROWS * 16 * MAX_TILE_BLOCKS, align=64)


def _lane_mask(values):
    return ir.Constant(ir.VectorType(ir.IntType(32), TILE_ROWS), values)


def _transpose16(builder, vecs):
    """The 16×16 transpose of 16 vectors of 16 lanes: vecs[i][l] → out[l][i].

    Stage s exchanges bit s of the row index with bit s of the lane index, between the
    vectors i and i + s (bit s of i clear): log2(16) stages of 16 shuffles.
    """
    vecs = list(vecs)
    for s in (8, 4, 2, 1):
        low = _lane_mask([lane if lane & s == 0 else 16 + lane - s for lane in range(16)])
        high = _lane_mask([lane + s if lane & s == 0 else 16 + lane for lane in range(16)])
        for i in range(16):
            if i & s == 0:
                a, b = vecs[i], vecs[i + s]
                vecs[i] = builder.shuffle_vector(a, b, low)
                vecs[i + s] = builder.shuffle_vector(a, b, high)
    return vecs


def _tree(values, op):
    """op-reduction of ``values`` as a balanced tree (independent operations in flight)."""
    values = list(values)
    while len(values) > 1:
        values = [
            op(*values[i : i + 2]) if i + 1 < len(values) else values[i]
            for i in range(0, len(values), 2)
        ]
    return values[0]


def _maximum(builder, a, b):
    """``llvm.maximum`` of two float32 vectors: the NaN-propagating max (``simd.fmax``)."""
    fnty = ir.FunctionType(a.type, [a.type, a.type])
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.maximum.v{a.type.count}f32")
    return builder.call(fn, [a, b])


class _Tile:
    """The LLVM values an intrinsic below needs: vector type, pointers, integer maker."""

    def __init__(self, context, builder, sig, args):
        self.context, self.sig, self.args = context, sig, args
        self.builder = builder
        self.vec = ir.VectorType(ir.FloatType(), TILE_ROWS)
        self.intp = context.get_value_type(types.intp)
        self.arrays = [
            context.make_array(ty)(context, builder, value=arg)
            if isinstance(ty, types.Array)
            else None
            for ty, arg in zip(sig.args, args, strict=True)
        ]

    def at(self, array, offset):
        """Pointer to the vector at element ``offset`` (an LLVM integer) of a 1-D array."""
        ptr = self.builder.gep(self.arrays[array].data, [offset])
        return self.builder.bitcast(ptr, self.vec.as_pointer())

    def row_block(self, array, row, block):
        """Pointer to block ``block`` (16 elements) of row ``row`` of a 2-D array, whose
        rows have unit stride (the row drivers' views of C-contiguous arrays)."""
        b = self.builder
        ary = self.arrays[array]
        stride = cgutils.unpack_tuple(b, ary.strides)[0]
        base = b.add(b.ptrtoint(ary.data, self.intp), b.mul(row, stride))
        return b.inttoptr(b.add(base, self.intp(64 * block)), self.vec.as_pointer())

    def tile_row(self, array, k):
        """Pointer to vector k (of 16 lanes) of the tile, argument ``array``."""
        return self.at(array, self.intp(k * TILE_ROWS))

    def index(self, k):
        """Integer argument ``k`` of the intrinsic (a row number) as an ``intp``."""
        return self.context.cast(self.builder, self.args[k], self.sig.args[k], types.intp)

    def splat(self, value):
        """A vector of 16 copies of the float32 ``value``."""
        b = self.builder
        one = b.insert_element(ir.Constant(self.vec, ir.Undefined), value, ir.IntType(32)(0))
        return b.shuffle_vector(one, one, _lane_mask([0] * TILE_ROWS))


def _blocks(blocks, rows=(), vectors=()):
    """The literal block count ``blocks`` of an intrinsic's call, or None (the call does
    not type: a count not yet literal, or ``rows`` not all 2-D float32 arrays and
    ``vectors`` not all 1-D float32 arrays)."""
    arrays_ok = all(
        isinstance(ty, types.Array) and ty.ndim == ndim and ty.dtype == types.float32
        for ndim, group in ((2, rows), (1, vectors))
        for ty in group
    )
    literal = isinstance(blocks, types.IntegerLiteral)
    if arrays_ok and literal and 1 <= blocks.literal_value <= MAX_TILE_BLOCKS:
        return blocks.literal_value
    return None


@intrinsic
def load_shifted_tile(typingctx, x2, r0, last, blocks, tile, maxima, inv_t):
    """Rows r0…r0+15 of the C-contiguous float32 ``x2`` (rows of 16·``blocks``
    elements), transposed: tile[k·16 + j] = (x2[r, k] - maxima[j])·inv_t, where
    maxima[j] is row r's max (NaN if it holds one) and r = r0 + j, or, with an integer
    ``last`` (None: a whole tile), min(r0 + j, last): the rows past ``last`` repeat it,
    so a partial tile reads no row beyond it (one compare and select per row, which
    cost whole tiles of softmax 4-7 %). One read of each element."""
    q = _blocks(blocks, rows=(x2,), vectors=(tile, maxima))
    if q is None or not isinstance(last, (types.Integer, types.NoneType)):
        return None
    clamped = isinstance(last, types.Integer)

    def codegen(context, builder, sig, args):
        t = _Tile(context, builder, sig, args)
        first = t.index(1)
        rows = [builder.add(first, t.intp(i)) for i in range(TILE_ROWS)]
        if clamped:
            end = t.index(2)
            rows = [builder.select(builder.icmp_signed("<", r, end), r, end) for r in rows]
        columns = []
        for block in range(q):
            loaded = [builder.load(t.row_block(0, row, block), align=4) for row in rows]
            columns += _transpose16(builder, loaded)
        top = _tree(columns, lambda a, b: _maximum(builder, a, b))
        builder.store(top, t.at(5, t.intp(0)), align=4)
        scale = t.splat(args[6])
        for k, column in enumerate(columns):
            shifted = builder.fmul(builder.fsub(column, top), scale)
            builder.store(shifted, t.tile_row(4, k), align=64)
        return context.get_dummy_value()

    return types.void(x2, r0, last, blocks, tile, maxima, types.float32), codegen


@intrinsic
def tile_sums(typingctx, tile, blocks, sums):
    """sums[j] = Σ_k tile[k·16 + j] over the 16·``blocks`` vectors of the tile."""
    q = _blocks(blocks, vectors=(tile, sums))
    if q is None:
        return None

    def codegen(context, builder, sig, args):
        t = _Tile(context, builder, sig, args)
        rows = [builder.load(t.tile_row(0, k), align=64) for k in range(16 * q)]
        builder.store(_tree(rows, builder.fadd), t.at(2, t.intp(0)), align=4)
        return context.get_dummy_value()

    return types.void(tile, blocks, sums), codegen


@intrinsic
def store_scaled_tile(typingctx, tile, blocks, scales, y2, r0):
    """y2[r0 + j, k] = tile[k·16 + j]·scales[j]: the tile transposed back into rows
    r0…r0+15 of the C-contiguous float32 ``y2``. One write of each element."""
    q = _blocks(blocks, rows=(y2,), vectors=(tile, scales))
    if q is None:
        return None

    def codegen(context, builder, sig, args):
        t = _Tile(context, builder, sig, args)
        first = t.index(4)
        scale = builder.load(t.at(2, t.intp(0)), align=4)
        for block in range(q):
            columns = [
                builder.fmul(builder.load(t.tile_row(0, 16 * block + k), align=64), scale)
                for k in range(16)
            ]
            for i, row in enumerate(_transpose16(builder, columns)):
                builder.store(row, t.row_block(3, builder.add(first, t.intp(i)), block), align=4)
        return context.get_dummy_value()

    return types.void(tile, blocks, scales, y2, r0), codegen


@intrinsic
def store_log_rows(typingctx, x2, r0, blocks, maxima, logs, inv_t, y2):
    """y2[r0 + j] = (x2[r0 + j] - maxima[j])·inv_t - logs[j] for the 16 rows of a tile, row
    by row (no transpose: each row's shift is one broadcast). One read (from L1: the
    tile's rows were just loaded) and one write of each element."""
    q = _blocks(blocks, rows=(x2, y2), vectors=(maxima, logs))
    if q is None:
        return None

    def codegen(context, builder, sig, args):
        t = _Tile(context, builder, sig, args)
        first = t.index(1)
        top = builder.load(t.at(3, t.intp(0)), align=4)
        log = builder.load(t.at(4, t.intp(0)), align=4)
        scale = t.splat(args[5])
        for j in range(TILE_ROWS):
            row = builder.add(first, t.intp(j))
            lane = ir.IntType(32)(j)
            shift = t.splat(builder.extract_element(top, lane))
            minus = t.splat(builder.extract_element(log, lane))
            for block in range(q):
                value = builder.load(t.row_block(0, row, block), align=4)
                value = builder.fsub(builder.fmul(builder.fsub(value, shift), scale), minus)
                builder.store(value, t.row_block(6, row, block), align=4)
        return context.get_dummy_value()

    return types.void(x2, r0, blocks, maxima, logs, types.float32, y2), codegen


@kernel(inline="always")  # Numba-IR inlining into both span kernels below
def exp_tile(tile, sums):
    """tile[i] = exp(tile[i]) over a tile of shifted logits (``load_shifted_tile``) and
    sums[j] = Σ_k tile[k·16 + j]: a regular row's sum is at least 1, exp(0) of its max;
    a special row's lane (NaN, ±inf, or only -inf: its max is not finite) holds NaN or 0,
    with no trap, and the other lanes are unaffected."""
    for i in range(TILE_ROWS * 16 * LANE_TILES):
        tile[i] = exp_nonpositive(tile[i])
    tile_sums(tile, LANE_TILES, sums)


@kernel  # called once per span of rows (rows.py)
def softmax_lane_tiles(x2, y2, lo, hi, inv_t):
    """softmax (or log_softmax: ``LOG_OUTPUT``) of the float32 rows lo…hi-1 of
    16·``LANE_TILES`` elements, 16 rows per tile with the rows as vector lanes (module
    docstring); the rows after the last whole tile, and a tile with a row holding NaN,
    ±inf or only -inf (whose max is not finite), go row at a time
    (``softmax_short_row_three_pass_store``).

    Pass structure three-pass-store per tile: 1 read of x, 1 write of y per element (the
    shifted values and exponentials stay in stack tiles in L1). In place is safe: a
    tile is written after its last read.
    """
    one = np.float32(1.0)
    tile = tile_array(one)
    maxima = lane_array(one)
    sums = lane_array(one)
    r0 = lo
    while r0 < hi:
        stop = min(r0 + TILE_ROWS, hi)
        if stop - r0 == TILE_ROWS:
            load_shifted_tile(x2, r0, None, LANE_TILES, tile, maxima, inv_t)
            regular = True
            for j in range(TILE_ROWS):
                regular &= abs(maxima[j]) < np.inf  # NaN, ±inf: the row kernel's path
            if regular:
                exp_tile(tile, sums)
                if LOG_OUTPUT:
                    for j in range(opaque_count(TILE_ROWS)):  # one vector of logs
                        sums[j] = log_fast(sums[j])
                    store_log_rows(x2, r0, LANE_TILES, maxima, sums, inv_t, y2)
                else:
                    for j in range(opaque_count(TILE_ROWS)):  # one vector division
                        sums[j] = one / sums[j]
                    store_scaled_tile(tile, LANE_TILES, sums, y2, r0)
                r0 = stop
                continue
        # one inlined copy of the row kernel, for the last rows and special tiles
        for r in range(r0, stop):
            softmax_short_row_three_pass_store(borrowed_row(x2, r), borrowed_row(y2, r), inv_t)
        r0 = stop


@kernel  # called once per span of rows (rows.py)
def logsumexp_lane_tiles(x2, out, lo, hi, inv_t):
    """out[i] = t·log Σ exp(x2[i]·inv_t) for the float32 rows lo…hi-1 of
    16·``LANE_TILES`` elements, 16 rows per tile as vector lanes (``exp_tile``; the
    last tile's missing rows repeat its last row), the tile's 16 logs in float64
    vectors (``logfast.log_fast``, as ``three_pass.short_rows_log_sums``). A special
    row (NaN, +inf, only -inf) gets ``passes.special_row_logsumexp`` in place of its
    lane's value. No row kernel: it took 1.2 s of the path's first compile.

    Pass structure: 1 read of x per element (the exponentials stay in a stack tile in
    L1), 1 write per row; no transpose back.
    """
    one = np.float32(1.0)
    tile = tile_array(one)
    maxima = lane_array(one)
    sums = lane_array(one)
    values = lane_array(0.0)
    for r0 in range(lo, hi, TILE_ROWS):
        count = min(TILE_ROWS, hi - r0)
        load_shifted_tile(x2, r0, r0 + count - 1, LANE_TILES, tile, maxima, inv_t)
        exp_tile(tile, sums)  # every lane: a special row's is replaced below
        for j in range(opaque_count(TILE_ROWS)):  # vectors of float64 logs
            values[j] = maxima[j] + log_fast(np.float64(sums[j])) / inv_t
        for j in range(count):  # branch-free, so that it vectorizes: specials after
            out[r0 + j] = values[j]
        for j in range(count):
            if not abs(maxima[j]) < np.inf:
                out[r0 + j] = special_row_logsumexp(borrowed_row(x2, r0 + j))
