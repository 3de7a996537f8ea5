"""Small LLVM intrinsics that let the pass loops vectorize (no SVML, no ``nnan``) and
keep per-row overhead low.

Numba exposes no vector types, and the fastmath flags numsoft may use (``SAFE_FASTMATH``,
no ``nnan``) stop LLVM from recognizing a compare-and-select max as a reduction. The
helpers below fill those gaps (``as_unit_stride`` and ``borrowed_row`` are described
at their definitions):

* ``fmax(a, b)``: ``llvm.maximum``, the NaN-propagating maximum. LLVM vectorizes a
  reduction over it without ``nnan`` and interleaves four vector accumulators (checked
  with ``inspect_asm``: four independent ``vmaxps zmm`` chains), and a NaN anywhere in a
  row comes out of the max pass as NaN.
* ``stream_store(dst, start, src)`` / ``store_fence()``: non-temporal (streaming) stores
  of a stack block into an array, and the fence that orders them before the caller's
  later stores; the output passes of data beyond the cache write through them
  (``passes.streamed``), since an ordinary store first reads the line it writes.
* ``lane_array(like)`` / ``chain_lane_array(like)`` / ``block_array(like)``: ``LANES`` /
  ``CHAIN_LANES`` / ``BLOCK`` elements of
  ``like``'s dtype on the stack (``alloca``).
  Explicit per-lane accumulators kept there stay in vector registers: LLVM knows stack
  memory aliases no argument, so it keeps them out of memory in the loop, which it cannot
  do for a heap (NRT) array; a block buffer there is contiguous and aliases nothing, so
  loops through it vectorize whatever the caller's arrays are. The array must not
  outlive the function that made it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .machine import float32_lanes

#: Explicit accumulator lanes: one AVX-512 register of float32 (two of float64).
LANES = 16

#: float32 lanes of four of this machine's vectors (64 with AVX-512, 32 with AVX2):
#: accumulators updated by a chain of dependent operations (the two-pass (M, E) update)
#: keep four independent chains in flight instead of one, and their two arrays of
#: float32 still fit the register file (8 of 32 zmm, 8 of 16 ymm).
CHAIN_LANES = 4 * float32_lanes()

#: Elements of a stack block (2 KiB of float32): the unit of the blocked sums.
BLOCK = 512

#: Elements of the stack block a streamed output pass fills before storing it (1 KiB of
#: float32; 512 B to 1 KiB measured alike, 4 KiB 1.5x slower).
STREAM_BLOCK = 256

#: Bytes of one non-temporal store (an AVX-512 register, two AVX2 ones): ``stream_store``
#: needs its destination aligned to this.
STREAM_ALIGN = 64


@intrinsic
def fmax(typingctx, a, b):
    """NaN-propagating maximum of two floats of one dtype (``llvm.maximum``)."""
    if isinstance(a, types.Float) and a == b:

        def codegen(context, builder, sig, args):
            fty = args[0].type
            fn = builder.module.declare_intrinsic(
                "llvm.maximum", [fty], ir.FunctionType(fty, [fty, fty])
            )
            return builder.call(fn, args)

        return a(a, b), codegen


@intrinsic
def strict_sub(typingctx, a, b):
    """``a - b`` that LLVM may not reassociate with the operations around it.

    Numba's fastmath pass adds ``reassoc`` only to float instructions that carry no
    flags, so an explicit ``nsz`` keeps it off. Use where a reassociation would
    hoist an invariant across a cancellation: ``(x - max) - tau`` must not become
    ``x - (max + tau)``, which loses ``tau`` next to a huge ``max``.
    """
    if isinstance(a, types.Float) and a == b:

        def codegen(context, builder, sig, args):
            return builder.fsub(args[0], args[1], flags=("nsz",))

        return a(a, b), codegen


@intrinsic
def opaque_count(typingctx, n):
    """``n``, an integer, as a value LLVM cannot see through (an empty inline asm).

    A loop over a few lanes with a constant trip count is fully unrolled into scalar
    code before the loop vectorizer sees it; ``range(opaque_count(16))`` keeps the loop,
    which then runs as one vector (and a remainder loop that is never entered).
    """
    if isinstance(n, types.Integer):

        def codegen(context, builder, sig, args):
            ty = args[0].type
            return builder.asm(ir.FunctionType(ty, [ty]), "", "=r,0", [args[0]], False)

        return n(n), codegen


def _stack_array(size, align=None):
    """An intrinsic ``f(like)`` returning ``size`` uninitialized elements of ``like``'s
    float dtype as a C-contiguous 1-D array on the caller's stack (aligned to ``align``
    bytes; default: the element's alignment)."""

    @intrinsic
    def stack_array(typingctx, like):
        if not isinstance(like, types.Float):
            return None
        arrty = types.Array(like, 1, "C")

        def codegen(context, builder, sig, args):
            elty = context.get_data_type(like)
            ary = context.make_array(arrty)(context, builder)
            intp = context.get_value_type(types.intp)
            itemsize = intp(context.get_abi_sizeof(elty))
            data = cgutils.alloca_once(builder, elty, size=size)
            if align is not None:
                data.align = align
            context.populate_array(
                ary,
                data=data,
                shape=cgutils.pack_array(builder, [intp(size)]),
                strides=cgutils.pack_array(builder, [itemsize]),
                itemsize=itemsize,
                meminfo=None,
            )
            return ary._getvalue()

        return arrty(like), codegen

    return stack_array


#: ``lane_array(like)``: ``LANES`` elements of ``like``'s dtype on the stack.
lane_array = _stack_array(LANES)

#: ``chain_lane_array(like)``: ``CHAIN_LANES`` elements of ``like``'s dtype on the stack.
chain_lane_array = _stack_array(CHAIN_LANES)

#: ``block_array(like)``: ``BLOCK`` elements of ``like``'s dtype on the stack.
block_array = _stack_array(BLOCK)

#: ``stream_block_array(like)``: ``STREAM_BLOCK`` elements of ``like``'s dtype on the
#: stack, aligned to a cache line. With the element's alignment, where the block fell
#: was up to the process: in 9 of 26 processes the streamed output pass took twice the
#: time (its vector loads and stores split across lines).
stream_block_array = _stack_array(STREAM_BLOCK, align=STREAM_ALIGN)


@intrinsic
def stream_store(typingctx, dst, start, src):
    """dst[start : start + src.size] = src with non-temporal stores of ``STREAM_ALIGN`` bytes.

    The caller guarantees that ``dst`` has unit stride, that ``&dst[start]`` is
    ``STREAM_ALIGN``-byte aligned (a misaligned streaming store faults) and that
    ``src`` (C-contiguous, of ``dst``'s dtype) holds a multiple of ``STREAM_ALIGN``
    bytes. The stores bypass the cache and are weakly ordered: ``store_fence()`` must
    follow before anything else reads ``dst``.
    """
    if not (
        isinstance(dst, types.Array)
        and isinstance(src, types.Array)
        and dst.ndim == src.ndim == 1
        and dst.dtype == src.dtype
        and isinstance(dst.dtype, types.Float)
        and isinstance(start, types.Integer)
    ):
        return None

    def codegen(context, builder, sig, args):
        dst_ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        src_ary = context.make_array(sig.args[2])(context, builder, value=args[2])
        elty = context.get_data_type(sig.args[0].dtype)
        itemsize = context.get_abi_sizeof(elty)
        lanes = STREAM_ALIGN // itemsize
        vecptr = ir.VectorType(elty, lanes).as_pointer()
        intp = context.get_value_type(types.intp)
        first = context.cast(builder, args[1], sig.args[1], types.intp)
        dst_ptr = builder.gep(dst_ary.data, [first])
        count = builder.udiv(cgutils.unpack_tuple(builder, src_ary.shape)[0], intp(lanes))
        # !nontemporal !{i32 1}: LLVM emits movntps/movntpd (AArch64: stnp).
        nontemporal = builder.module.add_metadata([ir.IntType(32)(1)])
        with cgutils.for_range(builder, count) as loop:
            offset = builder.mul(loop.index, intp(lanes))
            src_vec = builder.bitcast(builder.gep(src_ary.data, [offset]), vecptr)
            dst_vec = builder.bitcast(builder.gep(dst_ptr, [offset]), vecptr)
            value = builder.load(src_vec, align=itemsize)
            store = builder.store(value, dst_vec, align=STREAM_ALIGN)
            store.set_metadata("nontemporal", nontemporal)
        return context.get_dummy_value()

    return types.void(dst, start, src), codegen


@intrinsic
def prefetch_range(typingctx, a, start, stop):
    """Software prefetch of the cache lines of a[start:stop] into L2 (``llvm.prefetch``,
    read, locality 2; x86: ``prefetcht1``), one per ``STREAM_ALIGN`` bytes, for float32
    arrays; for float64 it emits nothing. A hint: it never faults and changes no value.
    The caller keeps 0 <= start <= stop <= a.size.

    Why float32 only: in ``three_pass.softmax_row_three_pass_store_via`` (8192×8192,
    ``out=``, 2 threads, Zen 4, four alternating runs, time ÷ ``np.copyto``) prefetching
    the next row took float32 from 1.06-1.21 to 0.96-1.02, and float64 from 1.09-1.15
    to 1.22-1.28: a float64 line holds 8 exponentials, whose arithmetic already hides
    the hardware prefetcher's reads, and the extra requests only compete with them.
    """
    if not (
        isinstance(a, types.Array)
        and a.ndim == 1
        and isinstance(a.dtype, types.Float)
        and isinstance(start, types.Integer)
        and isinstance(stop, types.Integer)
    ):
        return None

    def codegen(context, builder, sig, args):
        if sig.args[0].dtype != types.float32:
            return context.get_dummy_value()
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        itemsize = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
        intp = context.get_value_type(types.intp)
        lo = context.cast(builder, args[1], sig.args[1], types.intp)
        hi = context.cast(builder, args[2], sig.args[2], types.intp)
        stride = cgutils.unpack_tuple(builder, ary.strides)[0]
        i8p = ir.IntType(8).as_pointer()
        base = builder.bitcast(ary.data, i8p)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p] + [ir.IntType(32)] * 3)
        )
        lines = builder.udiv(
            builder.add(builder.mul(builder.sub(hi, lo), intp(itemsize)), intp(STREAM_ALIGN - 1)),
            intp(STREAM_ALIGN),
        )
        first = builder.mul(lo, stride)
        with cgutils.for_range(builder, lines) as loop:
            offset = builder.add(first, builder.mul(loop.index, intp(STREAM_ALIGN)))
            ptr = builder.gep(base, [offset])
            builder.call(fn, [ptr, ir.IntType(32)(0), ir.IntType(32)(2), ir.IntType(32)(1)])
        return context.get_dummy_value()

    return types.void(a, start, stop), codegen


@intrinsic
def store_fence(typingctx):
    """A sequentially consistent fence (x86: ``mfence``): orders the weakly ordered
    streaming stores before this thread's later memory operations."""

    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def as_unit_stride(typingctx, a):
    """The 1-D array ``a`` retyped as C-contiguous; the caller guarantees unit stride.

    LLVM vectorizes loops over rows of a strided 2-D view (``x3[o, :, j0:j1][k]``,
    Numba layout ``A``) poorly here: measured 10× slower than the same loop over a
    C-typed row. Numba indexes a C array from its shape alone, so the retyped view is
    only correct when the stride really is the itemsize.
    """
    if isinstance(a, types.Array) and a.ndim == 1:
        ret = a.copy(layout="C")

        def codegen(context, builder, sig, args):
            return impl_ret_borrowed(context, builder, ret, args[0])

        return ret(a), codegen


@intrinsic
def borrowed_row(typingctx, a, i):
    """Row ``i`` of the 2-D array ``a`` as a 1-D view that holds no reference.

    ``a[i]`` takes a reference on ``a``'s buffer (an atomic increment and decrement
    per row), and the reference count of every array passed to a kernel that is not
    inlined stays on the hot path. At 128 float32 per row that was ~40 % of a row's
    time (measured with the three-pass-store row kernel, 174 vs 102 ns per row). The
    view is only valid while ``a`` is alive, so it must not outlive the driver's call.
    """
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(i, types.Integer)):
        return None
    row = a.copy(ndim=1, layout="C" if a.layout == "C" else "A")

    def codegen(context, builder, sig, args):
        arr = context.make_array(a)(context, builder, value=args[0])
        shape = cgutils.unpack_tuple(builder, arr.shape)
        strides = cgutils.unpack_tuple(builder, arr.strides)
        index = context.cast(builder, args[1], sig.args[1], types.intp)
        base = builder.ptrtoint(arr.data, strides[0].type)
        data = builder.inttoptr(builder.add(base, builder.mul(index, strides[0])), arr.data.type)
        out = context.make_array(row)(context, builder)
        context.populate_array(
            out,
            data=data,
            shape=cgutils.pack_array(builder, [shape[1]]),
            strides=cgutils.pack_array(builder, [strides[1]]),
            itemsize=arr.itemsize,
            meminfo=None,
        )
        return out._getvalue()

    return row(a, i), codegen
