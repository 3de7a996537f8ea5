"""Register tiles: each thread loads a tile of its row's elements before using any.

A GPU hides memory latency with the loads in flight, and a loop that loads an element
and then computes with it (or stores a result that may alias the next element) keeps
one load per thread in flight. At the occupancy numsoft's kernels reach (≤ 64 registers,
so 1024 threads per SM) that is 4 KiB per SM, where Little's law asks for about
bandwidth × latency ≈ 20 KiB per SM (H100/H200: 3–5 TB/s, ~600 ns, 132 SMs). Every
row sweep therefore goes a tile at a time: ``load_tile`` issues the tile's loads back to
back into a ``cuda.local.array(TILE)`` that the compiler keeps in registers (the loops
have a constant trip count, ``tile_len``, and are unrolled), the tile is then reduced
or transformed in registers, and ``store_tile`` writes it.

A tile is ``TILE_BYTES`` (8 float32 or 4 float64 elements, 8 registers): 32 KiB in
flight per SM, within the kernels' 64-register launch bound (the float32 kernels do not
spill). ``tests/test_cuda_ptx.py`` checks that a tile's loads are all issued before any
is used and that the tile is not in local memory.

A thread's elements of a row are ``start, start + step, ...`` below ``stop``; the tile
at ``i`` holds ``i, i + step, ..., i + (len - 1)·step``. Elements past ``stop`` are
``fill`` (``-inf`` contributes nothing to any row statistic); their loads read the
element ``stop - 1`` instead, so that a tile's loads share one address computation and
need no branch. Row indices are passed as unsigned integers, which Numba indexes without
its negative-index wraparound (3 integer instructions per load or store less; the
float32 ``softmax_kernel`` shrinks from 6600 to 5848 SASS instructions).
"""

from __future__ import annotations

from numba import config, types, uint64

from ._jit import device

#: Bytes per tile, and its capacity in elements (of the smallest dtype, float32).
TILE_BYTES = 32
TILE = TILE_BYTES // 4

if config.ENABLE_CUDASIM:

    def tile_len(like):
        """Elements per tile for the dtype of array ``like``."""
        return TILE_BYTES // like.dtype.itemsize

else:
    from numba.cuda.extending import intrinsic

    @intrinsic
    def tile_len(typingctx, like):
        """Elements per tile for the dtype of array ``like``: a compile-time constant
        (an array's ``itemsize`` attribute is read at run time, and a loop over it is
        not unrolled)."""
        length = TILE_BYTES // (like.dtype.bitwidth // 8)

        def codegen(context, builder, signature, args):
            return context.get_constant(types.intp, length)

        return types.intp(like), codegen


@device
def load_tile(x3, o, j, i, step, stop, tile, fill):
    """``tile[u] = x3[o, i + u·step, j]`` for the indices below ``stop``, else ``fill``."""
    last = stop - 1
    for u in range(tile_len(tile)):
        k = i + u * step
        v = x3[o, uint64(min(k, last)), j]  # unconditional: one address computation, no branch
        tile[u] = v if k < stop else fill


@device
def store_tile(y3, o, j, i, step, stop, tile):
    """``y3[o, i + u·step, j] = tile[u]`` for the indices below ``stop``."""
    for u in range(tile_len(tile)):
        k = i + u * step
        if k < stop:
            y3[o, uint64(k), j] = tile[u]
