"""Kernels that take their arrays as addresses: what a user's ``@njit`` function calls.

Inside a user's jitted function, ``numsoft.softmax(x)`` and its kin call one of these
through a C function pointer (``numsoft._linked``) instead of compiling numsoft's
kernels into the user's function: the caller compiles its own code and a call
instruction, and these kernels are compiled once, cached and shipped like every other
(``numsoft.cpu._jit.kernel``). Every argument is an integer (an array's data address, a
length) or a scalar, so the C signature stays that of plain numbers; each kernel wraps
the addresses into C-contiguous arrays (no reference counts, no copy) and runs the same
serial span or row kernel as the Python API's drivers, with the same path constants, so
results agree to the bit.

Names: ``<function>_<geometry>_at``, the geometry as in ``rows``: one row of ``n``
(``row``, a 1-D ``x``), ``outer`` rows of ``n`` (``rows``, the last axis), or the
middle axis of ``(outer, n, inner)`` (``blocks``). Each reads x once or twice and
writes the output once, as its pass structure says (``three_pass``, ``two_pass``,
``online``).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import kernel, read_only_array
from .groups import (
    logsumexp_groups_columns,
    logsumexp_groups_rows,
    softmax_groups_columns,
    softmax_groups_rows,
)
from .rows import (
    logsumexp_blocks_span,
    logsumexp_row,
    logsumexp_rows_span,
    softmax_blocks_span,
    softmax_row,
    softmax_rows_span,
)

# Called from a user's thread: the group drivers' serial twins (``_jit.parallel_kernel``).
softmax_groups_rows, softmax_groups_columns = (
    softmax_groups_rows.serial,
    softmax_groups_columns.serial,
)
logsumexp_groups_rows, logsumexp_groups_columns = (
    logsumexp_groups_rows.serial,
    logsumexp_groups_columns.serial,
)


@intrinsic
def array_at(typingctx, address, shape, like):
    """The C-contiguous array of ``like``'s type and ``shape`` (a tuple of ints) at the
    integer ``address``: a view that holds no reference, valid while the caller's
    array lives (the ``@njit`` overloads pass that array to the call)."""
    if not (isinstance(address, types.Integer) and isinstance(shape, types.UniTuple)):
        return None
    dtype = like.dtype if isinstance(like, types.Array) else like
    arr = types.Array(dtype, len(shape), "C")

    def codegen(context, builder, sig, args):
        addr, dims = args[0], cgutils.unpack_tuple(builder, args[1])
        size = context.get_abi_sizeof(context.get_data_type(dtype))
        item = context.get_constant(types.intp, size)
        strides, step = [], item
        for dim in reversed(dims[1:]):
            strides.insert(0, step)
            step = builder.mul(step, dim)
        strides.insert(0, step)
        out = context.make_array(arr)(context, builder)
        context.populate_array(
            out,
            data=builder.inttoptr(addr, context.get_data_type(dtype).as_pointer()),
            shape=cgutils.pack_array(builder, dims),
            strides=cgutils.pack_array(builder, strides),
            itemsize=item,
            meminfo=None,
        )
        return out._getvalue()

    return arr(address, shape, like), codegen


@kernel(inline="always")
def reading(address, shape, like):
    """``array_at`` typed read-only, as the Python API hands kernels their inputs (the
    same compiled row kernels, so the same results)."""
    return read_only_array(array_at(address, shape, like))


# ---------------------------------------------------------------- softmax, log_softmax


@kernel
def softmax_row_at(x, y, n, inv_t):
    """softmax (or log_softmax, ``LOG_OUTPUT``) of the row of ``n`` at ``x`` into ``y``,
    with the pass structure ``ALGORITHM`` (``rows.softmax_row``)."""
    softmax_row(reading(x, (n,), inv_t), array_at(y, (n,), inv_t), inv_t)


@kernel
def softmax_rows_at(x, y, outer, n, inv_t):
    """softmax of each of the ``outer`` rows of ``n`` at ``x`` into ``y`` (``rows``)."""
    softmax_rows_span(reading(x, (outer, n), inv_t), array_at(y, (outer, n), inv_t), 0, 1, inv_t)


@kernel
def softmax_blocks_at(x, y, outer, n, inner, inv_t):
    """softmax along the middle axis of the ``(outer, n, inner)`` array at ``x``."""
    shape = (outer, n, inner)
    softmax_blocks_span(reading(x, shape, inv_t), array_at(y, shape, inv_t), 0, 1, inv_t)


# ---------------------------------------------------------------- logsumexp


@kernel
def logsumexp_row_at(x, n, inv_t):
    """t·log Σ exp(x·inv_t) of the row of ``n`` at ``x``, in x's dtype."""
    row = reading(x, (n,), inv_t)
    return row.dtype.type(logsumexp_row(row, inv_t))  # as the drivers store it


@kernel
def logsumexp_rows_at(x, out, outer, n, inv_t):
    """logsumexp of each of the ``outer`` rows of ``n`` at ``x`` into ``out``."""
    logsumexp_rows_span(reading(x, (outer, n), inv_t), array_at(out, (outer,), inv_t), 0, 1, inv_t)


@kernel
def logsumexp_blocks_at(x, out, outer, n, inner, inv_t):
    """logsumexp along the middle axis of ``(outer, n, inner)`` at ``x`` into ``out``
    (``(outer, inner)``)."""
    logsumexp_blocks_span(
        reading(x, (outer, n, inner), inv_t), array_at(out, (outer, inner), inv_t), 0, 1, inv_t
    )


# ---------------------------------------------------------------- groups (segments)


@kernel(inline="always")
def one_span_of_groups(offsets, count):
    """(the ``count + 1`` int64 offsets at the address ``offsets``, one span of them all):
    the group drivers' arguments for a run on the caller's thread."""
    return array_at(offsets, (count + 1,), np.int64(0)), np.array([0, count], dtype=np.int64)


@kernel
def softmax_groups_rows_at(x, y, offsets, outer, n, count, inv_t):
    """softmax (``LOG_OUTPUT``: log_softmax) of each of the ``count`` groups that
    ``offsets`` (an int64 array at that address) gives along each of the ``outer`` rows
    of ``n`` at ``x``, into ``y``, on one thread (``groups.softmax_groups_rows``)."""
    shape = (outer, n)
    groups, spans = one_span_of_groups(offsets, count)
    softmax_groups_rows(reading(x, shape, inv_t), array_at(y, shape, inv_t), groups, spans, inv_t)


@kernel
def softmax_groups_columns_at(x, y, offsets, outer, n, inner, count, inv_t):
    """The same along the middle axis of the ``(outer, n, inner)`` array at ``x``."""
    shape = (outer, n, inner)
    groups, spans = one_span_of_groups(offsets, count)
    softmax_groups_columns(
        reading(x, shape, inv_t), array_at(y, shape, inv_t), groups, spans, inv_t
    )


@kernel
def logsumexp_groups_rows_at(x, out, offsets, outer, n, count, inv_t):
    """logsumexp of each group of each row into the ``(outer, count)`` array at ``out``."""
    groups, spans = one_span_of_groups(offsets, count)
    logsumexp_groups_rows(
        reading(x, (outer, n), inv_t), array_at(out, (outer, count), inv_t), groups, spans, inv_t
    )


@kernel
def logsumexp_groups_columns_at(x, out, offsets, outer, n, inner, count, inv_t):
    """The same along the middle axis, into the ``(outer, count, inner)`` array at ``out``."""
    groups, spans = one_span_of_groups(offsets, count)
    logsumexp_groups_columns(
        reading(x, (outer, n, inner), inv_t),
        array_at(out, (outer, count, inner), inv_t),
        groups,
        spans,
        inv_t,
    )
