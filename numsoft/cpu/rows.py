"""Drivers: apply a row kernel to every row of a 2-D view, or every column of a 3-D view.

The front door (``numsoft.frontdoor``) reduces every call to one of two shapes:

- ``(rows, n)``: the normalized axis is the last one; rows run in parallel (``prange``
  over contiguous spans of rows), or, when there are fewer rows than threads and they
  are long, each row is split across the threads (``split``).
- ``(outer, n, inner)`` with ``inner > 1``: the normalized axis is in the middle, as
  for ``axis=0`` on C-ordered data. Nothing is transposed: each task normalizes a
  block of adjacent columns in place, vectorized across the columns (``columns``).

Every driver is a template over the path constants ``ALGORITHM`` and ``LOG_OUTPUT``
(``paths``), and each run mode is a driver of its own: a parallel loop over spans of
the work (``*_parallel``; its ``.serial`` twin runs them on one thread), and split rows
(``*_split``). ``plan_rows`` picks the
mode in Python from the size and ``threads.core_threads_for``, and ``run_*`` call the
one compiled path. A span (``*_span``) is a serial loop inlined into its driver (and
into the ``@njit`` entry points) at the Numba IR level: as a function of its own it was
one more layer whose compilation re-optimizes everything below it.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ..vocabulary import ONLINE, THREE_PASS_STORE, TWO_PASS
from . import limits, measured_plan
from ._jit import kernel, parallel_kernel
from .auto import choose_algorithm, fits_in_cache, streams_output
from .column_chunks import logsumexp_slab, softmax_slab
from .columns import (
    COLUMN_BLOCK,
    block_count,
    block_view,
    logsumexp_column_block,
    softmax_column_block,
)
from .lane_tiles import TILE_ROWS, logsumexp_lane_tiles, softmax_lane_tiles
from .limits import TILE_MAX_N
from .machine import float32_lanes
from .online import logsumexp_row_online, softmax_row_online
from .passes import SUM_BLOCK
from .paths import (
    ALGORITHM,
    INLINE_ROWS,
    LANE_TILES,
    LOG_GROUPS,
    LOG_OUTPUT,
    SHORT_ROWS,
    STREAM_OUTPUT,
    specialize,
)
from .simd import BLOCK, block_array, borrowed_row, store_fence
from .split import logsumexp_row_split, softmax_row_split
from .threads import core_threads_for, serial_or_parallel, splits_rows
from .three_pass import (
    log_softmax_short_rows_three_pass,
    logsumexp_row_three_pass,
    logsumexp_short_rows_three_pass,
    softmax_inline_rows_three_pass_store,
    softmax_row_three_pass_reload,
    softmax_row_three_pass_store,
    softmax_row_three_pass_store_via,
    softmax_short_row_three_pass_store,
)
from .two_pass import logsumexp_row_two_pass, softmax_row_two_pass

#: How a driver runs (``plan_rows``): one thread, rows in parallel, or each row split.
SERIAL, PARALLEL, SPLIT = range(3)

#: softmax rows of at most this many bytes (256 float32, 128 float64) run in the
#: drivers' row loop with no call per row (a call passes arrays as structs and returns
#: a status: 13 ns of the 60 of a 32-element float32 row on AVX2), softmax pipelined
#: across rows (``three_pass.softmax_inline_rows_three_pass_store``). Zen 4, one
#: thread, ns per row, called → inlined and pipelined (``asv_bench/crossovers.py``,
#: inline_vs_call): float32 rows of 32 23.5 → 22.3, 64 35.3 →
#: 28.8, 128 56.3 → 50.0, 256 101 → 91.5; float64 rows of 32 40.4 → 34.0, 64 67.7 →
#: 61.4, 128 127 → 115; from 2 KiB on, no gain (float32 rows of 512: 194 → 190) or a
#: loss (float64 rows of 512: 489 → 591).
INLINE_ROW_BYTES = 1024

#: log_softmax rows of this item size and at most ``LOG_GROUP_ROW_BYTES`` bytes run
#: ``three_pass.log_softmax_short_rows_three_pass`` (logs by the group of 16 rows, the
#: output recomputed from x); other inlined rows run the row-at-a-time kernel. Zen 4,
#: one thread, ns per float32 row of 16/32/48/64/128 elements: 20.6/30.1/42.4/40.7/59
#: → 18.5/25.2/33.1/36.7/57; rows of 256: 103 → 105–109. Float64 rows of 32 took 22 →
#: 30 ns per row at 2 threads in groups.
LOG_GROUP_ITEMSIZE = 4
LOG_GROUP_ROW_BYTES = 512

#: float32 softmax rows of a multiple of 16 elements up to this many run 16 rows at a
#: time with the rows as vector lanes (``lane_tiles``), on CPUs with 16 float32 lanes.
#: Zen 4, ms for 2^21 elements, row kernel → lane tiles (``asv_bench/short_rows.py
#: --lengths 16,32,48,64 --functions softmax``, two runs): 1 thread, n=16 2.20 → 1.20,
#: 32 1.41 → 1.09–1.11, 48 1.35–1.37 → 1.19–1.39, 64 0.92–0.94 → 1.26–1.31 (its 64
#: column vectors outgrow the 32 registers); 2 threads 1.09 → 0.59, 0.71 → 0.55,
#: 0.68–0.69 → 0.57–0.61, 0.47–0.48 → 0.57–0.59.
LANE_TILE_MAX_N = 48


def row_length_classes(itemsize: int) -> tuple[int, ...]:
    """A row length from each class of rows the planner tells apart for items of
    ``itemsize`` bytes: the longest of each class and the shortest of the next (row
    tiles, rows as vector lanes, log groups, inlined rows, short rows, long rows).
    ``python -m numsoft warmup`` compiles one call per class and thread mode."""
    ends = {TILE_MAX_N, SUM_BLOCK, INLINE_ROW_BYTES // itemsize}
    if itemsize == 4:
        ends |= set(range(TILE_ROWS, LANE_TILE_MAX_N + 1, TILE_ROWS))
    if itemsize == LOG_GROUP_ITEMSIZE:
        ends.add(LOG_GROUP_ROW_BYTES // itemsize)
    return tuple(sorted(ends | {n + 1 for n in ends}))


def path_constants(
    algorithm: int,
    log_output: bool = False,
    n: int | None = None,
    itemsize: int = 8,
    stream: bool = False,
) -> dict:
    """The path constants of a softmax-like call: pass structure, output and, for
    three-pass-store, whether every row is short or tiny (rows of ``n`` elements of
    ``itemsize`` bytes; None: unknown) and whether log output goes by the group; and
    whether the output passes stream (``stream``: ``auto.streams_output``; never for
    three-pass-store's short rows, whose stored values live in a stack block, while
    its longer rows then store in a scratch row: ``softmax_row_three_pass_store_via``)."""
    short = algorithm == THREE_PASS_STORE and n is not None and n <= SUM_BLOCK
    inline = short and n * itemsize <= INLINE_ROW_BYTES
    lane_tiles = (
        inline
        and itemsize == 4
        and n % TILE_ROWS == 0
        and n <= LANE_TILE_MAX_N
        and float32_lanes() >= TILE_ROWS
    )
    return {
        "ALGORITHM": algorithm,
        "LOG_OUTPUT": log_output,
        "SHORT_ROWS": short,
        "INLINE_ROWS": inline,
        "LANE_TILES": n // TILE_ROWS if lane_tiles else 0,
        "STREAM_OUTPUT": stream and not short,
        "LOG_GROUPS": inline
        and log_output
        and itemsize == LOG_GROUP_ITEMSIZE
        and n * itemsize <= LOG_GROUP_ROW_BYTES,
    }


def plan_rows(rows: int, n: int) -> tuple[int, int]:
    """(mode, tasks) for ``rows`` rows of ``n`` elements.

    ``SERIAL`` when the call runs on one thread (``threads.core_threads_for``: at most
    ``SERIAL_MAX_ELEMENTS`` elements in all, or the measured plan's limit, where waking
    the thread pool costs more than the work, or one usable thread), ``SPLIT`` (each row
    across ``tasks`` threads) when there are fewer rows than threads and rows of at
    least ``SPLIT_MIN_ROW`` elements (or the plan's), otherwise ``PARALLEL`` over rows
    in ``tasks`` contiguous spans.
    """
    threads = core_threads_for(rows * n)
    if threads == 1:
        return SERIAL, 1
    if splits_rows(rows, n, threads):
        return SPLIT, threads
    return PARALLEL, min(threads, rows)


@kernel
def span(task, tasks, count):
    """[lo, hi) of task ``task`` of ``tasks`` near-equal contiguous spans of ``count``."""
    return count * task // tasks, count * (task + 1) // tasks


# ---------------------------------------------------------------- rows


@kernel(inline="always")  # a switch that pruning reduces to one call: no function of its own
def softmax_row(x, y, inv_t):
    """softmax or log_softmax of one non-empty row with the pass structure ``ALGORITHM``."""
    if ALGORITHM == TWO_PASS:
        softmax_row_two_pass(x, y, inv_t)
    elif ALGORITHM == ONLINE:
        softmax_row_online(x, y, inv_t)
    elif ALGORITHM == THREE_PASS_STORE and INLINE_ROWS:
        softmax_short_row_three_pass_store(x, y, inv_t)  # log_softmax not by the group
    elif ALGORITHM == THREE_PASS_STORE:
        softmax_row_three_pass_store(x, y, inv_t)
    else:
        softmax_row_three_pass_reload(x, y, inv_t)


@kernel(inline="always")  # as softmax_row
def logsumexp_row(x, inv_t):
    """t·log Σ exp(x·inv_t) (t = 1/inv_t) of one non-empty row with ``ALGORITHM``."""
    if ALGORITHM == TWO_PASS:
        return logsumexp_row_two_pass(x, inv_t)
    if ALGORITHM == ONLINE:
        return logsumexp_row_online(x, inv_t)
    return logsumexp_row_three_pass(x, inv_t)  # store has no output pass: as reload


@kernel(inline="always")  # see the module docstring
def softmax_rows_span(x2, y2, task, tasks, inv_t):
    """Serial row loop over span ``task`` of ``tasks``: y2[i] = softmax(x2[i]).

    ``task`` is an int64 at every call site (prange's index is unsigned), so the body
    compiles once per array type.
    """
    lo, hi = span(task, tasks, x2.shape[0])
    if LANE_TILES:
        softmax_lane_tiles(x2, y2, lo, hi, inv_t)  # 16 rows at a time, rows as lanes
    elif ALGORITHM == THREE_PASS_STORE and LOG_GROUPS:
        log_softmax_short_rows_three_pass(x2, y2, lo, hi, inv_t)  # logs by the group
    elif ALGORITHM == THREE_PASS_STORE and INLINE_ROWS and not LOG_OUTPUT:
        softmax_inline_rows_three_pass_store(x2, y2, lo, hi, inv_t)  # rows pipelined
    elif ALGORITHM == THREE_PASS_STORE and STREAM_OUTPUT:
        tmp = np.empty(x2.shape[1], x2.dtype)  # the stored row, in L2 from row to row
        for i in range(lo, hi):
            x, y = borrowed_row(x2, i), borrowed_row(y2, i)
            ahead = borrowed_row(x2, min(i + 1, hi - 1))  # prefetched during the exp pass
            softmax_row_three_pass_store_via(x, y, tmp, inv_t, ahead)
        store_fence()  # the span's streaming stores (passes.streamed)
    else:
        for i in range(lo, hi):
            softmax_row(borrowed_row(x2, i), borrowed_row(y2, i), inv_t)
        if STREAM_OUTPUT:
            store_fence()  # the span's streaming stores (passes.streamed)


@parallel_kernel
def softmax_rows_parallel(x2, y2, tasks, inv_t):
    """The rows in ``tasks`` contiguous spans, spans in parallel."""
    for task in prange(tasks):
        softmax_rows_span(x2, y2, np.int64(task), tasks, inv_t)


@kernel
def softmax_rows_split(x2, y2, tasks, inv_t):
    """One row after the other, each split into ``tasks`` parallel chunks."""
    for i in range(x2.shape[0]):
        softmax_row_split(x2[i], y2[i], inv_t, tasks)


@kernel(inline="always")  # see the module docstring
def logsumexp_rows_span(x2, out, task, tasks, inv_t):
    """Serial loop over one span of rows: out[i] = t·log Σ exp(x2[i]·inv_t)."""
    lo, hi = span(task, tasks, x2.shape[0])
    if LANE_TILES:
        logsumexp_lane_tiles(x2, out, lo, hi, inv_t)  # 16 rows at a time, rows as lanes
    elif ALGORITHM == THREE_PASS_STORE and SHORT_ROWS:
        logsumexp_short_rows_three_pass(x2, out, lo, hi, inv_t)  # logs by the group
    else:
        for i in range(lo, hi):
            out[i] = logsumexp_row(borrowed_row(x2, i), inv_t)


@parallel_kernel
def logsumexp_rows_parallel(x2, out, tasks, inv_t):
    """The rows in ``tasks`` contiguous spans, spans in parallel."""
    for task in prange(tasks):
        logsumexp_rows_span(x2, out, np.int64(task), tasks, inv_t)


@kernel
def logsumexp_rows_split(x2, out, tasks, inv_t):
    """One row after the other, each split into ``tasks`` parallel chunks."""
    for i in range(x2.shape[0]):
        out[i] = logsumexp_row_split(x2[i], inv_t, tasks)


# ---------------------------------------------------------------- row tiles (short rows)


@kernel
def tile_span(task, tasks, rows, n):
    """(first tile, end tile, rows per tile) of span ``task`` of ``tasks`` over the
    tiles of ``rows`` rows of ``n`` elements (as many rows per tile as a stack block
    holds)."""
    per_tile = BLOCK // n
    lo, hi = span(task, tasks, (rows + per_tile - 1) // per_tile)
    return lo, hi, per_tile


@kernel(inline="always")
def load_tile(x2, t, per_tile, buf):
    """(first row, tile): the rows of tile ``t`` of ``x2`` transposed into ``buf`` as an
    (n, w) array, rows as columns, so that the column-block kernels run with the rows
    as vector lanes."""
    n = x2.shape[1]
    r0 = t * per_tile
    w = min(per_tile, x2.shape[0] - r0)
    tile = buf[: n * w].reshape((n, w))
    for r in range(w):
        for j in range(n):
            tile[j, r] = x2[r0 + r, j]
    return r0, tile


@kernel(inline="always")  # see the module docstring
def softmax_tiles_span(x2, y2, task, tasks, inv_t):
    """Serial loop over one span of row tiles: each tile of short rows is transposed
    into a stack block, normalized by the column-block kernel (vectorized across the
    rows, where a row kernel on a 10-element row is all loop overhead), and written
    back transposed. Pass structure ``ALGORITHM`` per row, in L1; 1 read and 1 write
    of memory per element."""
    buf = block_array(x2.dtype.type(0.0))
    lo, hi, per_tile = tile_span(task, tasks, x2.shape[0], x2.shape[1])
    for t in range(lo, hi):
        r0, tile = load_tile(x2, t, per_tile, buf)
        softmax_column_block(tile, tile, inv_t)
        for r in range(tile.shape[1]):
            for j in range(tile.shape[0]):
                y2[r0 + r, j] = tile[j, r]


@parallel_kernel
def softmax_tiles_parallel(x2, y2, tasks, inv_t):
    """The row tiles in ``tasks`` contiguous spans, spans in parallel."""
    for task in prange(tasks):
        softmax_tiles_span(x2, y2, np.int64(task), tasks, inv_t)


@kernel(inline="always")  # see the module docstring
def logsumexp_tiles_span(x2, out, task, tasks, inv_t):
    """As ``softmax_tiles_span``, for logsumexp: out[r] of each row of each tile."""
    buf = block_array(x2.dtype.type(0.0))
    lo, hi, per_tile = tile_span(task, tasks, x2.shape[0], x2.shape[1])
    for t in range(lo, hi):
        r0, tile = load_tile(x2, t, per_tile, buf)
        logsumexp_column_block(tile, out[r0 : r0 + tile.shape[1]], inv_t)


@parallel_kernel
def logsumexp_tiles_parallel(x2, out, tasks, inv_t):
    """The row tiles in ``tasks`` contiguous spans, spans in parallel."""
    for task in prange(tasks):
        logsumexp_tiles_span(x2, out, np.int64(task), tasks, inv_t)


# ---------------------------------------------------------------- column blocks


@kernel(inline="always")  # see the module docstring
def softmax_blocks_span(x3, y3, task, tasks, inv_t):
    """Serial loop over one span of column blocks (see ``columns``)."""
    per_outer = block_count(x3.shape[2])
    lo, hi = span(task, tasks, x3.shape[0] * per_outer)
    for t in range(lo, hi):
        o, j0, xb = block_view(x3, t, per_outer)
        softmax_column_block(xb, y3[o, :, j0 : j0 + COLUMN_BLOCK], inv_t)


@parallel_kernel
def softmax_blocks_parallel(x3, y3, tasks, inv_t):
    """The column blocks in ``tasks`` contiguous spans, spans in parallel."""
    for task in prange(tasks):
        softmax_blocks_span(x3, y3, np.int64(task), tasks, inv_t)


@kernel(inline="always")  # see the module docstring
def logsumexp_blocks_span(x3, out2, task, tasks, inv_t):
    """Serial loop over one span of column blocks: out2[o, j] = t·log Σ exp(x3[o, :, j]·inv_t)."""
    per_outer = block_count(x3.shape[2])
    lo, hi = span(task, tasks, x3.shape[0] * per_outer)
    for t in range(lo, hi):
        o, j0, xb = block_view(x3, t, per_outer)
        logsumexp_column_block(xb, out2[o, j0 : j0 + COLUMN_BLOCK], inv_t)


@parallel_kernel
def logsumexp_blocks_parallel(x3, out2, tasks, inv_t):
    """The column blocks in ``tasks`` contiguous spans, spans in parallel."""
    for task in prange(tasks):
        logsumexp_blocks_span(x3, out2, np.int64(task), tasks, inv_t)


# ---------------------------------------------------------------- Python dispatch


def tile_limit() -> int:
    """Rows of at most this many elements run in row tiles (the plan is read first)."""
    measured_plan.read_limits()
    return limits.tile_max_n


def rows_driver(n: int, tiles_parallel, rows_parallel):
    """The driver for rows of ``n`` elements: row tiles up to ``limits.tile_max_n``
    (``TILE_MAX_N``, or the measured plan's limit)."""
    return tiles_parallel if n <= limits.tile_max_n else rows_parallel


def _plan(shape3, drivers, constants):
    """``(driver, tasks, by_rows)``: the one compiled driver a call on an ``(outer, n,
    inner)`` view runs, called as ``driver(src, dst, tasks, inv_t)``: by rows (the rows
    views of source and output) when ``inner == 1`` (in row tiles when rows are at most
    ``TILE_MAX_N`` long), else by column blocks (the 3-D arrays); serial, parallel or
    split as ``plan_rows`` decides. ``drivers``: (rows parallel, rows split, blocks
    parallel, tiles parallel)."""
    rows_parallel, rows_split, blocks_parallel, tiles_parallel = drivers
    outer, n, inner = shape3
    if inner == 1:
        mode, tasks = plan_rows(outer, n)
        parallel = rows_driver(n, tiles_parallel, rows_parallel)
        units = -(-outer // (BLOCK // n)) if parallel is tiles_parallel else outer
    else:
        parallel = blocks_parallel
        units = outer * -(-inner // COLUMN_BLOCK)
        mode, tasks = plan_rows(units, n * min(inner, COLUMN_BLOCK))
    if mode == SPLIT and inner == 1:
        return specialize(rows_split, **constants), tasks, True
    driver = specialize(parallel, **constants)
    # One task (a single column block or row tile) gains nothing from the pool: the
    # serial twin runs, and the parallel driver is not even compiled.
    if mode == SERIAL or min(tasks, units) == 1:
        # The serial twin runs the spans as the parallel tasks do, so that the thread
        # count cannot change a result: both call the same span kernel from a loop
        # (called directly from Python, LLVM may optimize it differently).
        return driver.serial, 1, inner == 1
    return driver, min(tasks, units), inner == 1


def _run(x3, dst3, dst_rows, drivers, inv_t, constants):
    """Run the core driver ``_plan`` picks for ``x3``, into ``dst_rows`` (the rows view
    of the output) or ``dst3``."""
    driver, tasks, by_rows = _plan(x3.shape, drivers, constants)
    if by_rows:
        driver(x3[:, :, 0], dst_rows, tasks, inv_t)
    else:
        driver(x3, dst3, tasks, inv_t)


def driver_for(rows_driver, columns_driver, shape3, **constants):
    """(driver, rows) for a call on an ``(outer, n, inner)`` view: the rows driver when
    ``inner == 1`` (``rows`` True) else the columns one, specialized to ``constants``, and
    its ``.serial`` twin for work below ``SERIAL_MAX_ELEMENTS``. For the drivers that
    parallelize over rows or column tiles (backward passes, variants, fused losses)."""
    outer, n, inner = shape3
    rows = inner == 1
    driver = specialize(rows_driver if rows else columns_driver, **constants)
    return serial_or_parallel(driver, outer * n * inner), rows


def _takes_column_chunks(algorithm: int, inner: int, nbytes: int) -> bool:
    """An online call on a middle axis (``inner`` > 1) whose ``nbytes`` of input are
    beyond the cache: it runs in full-width chunks of rows (``_by_column_chunks``)."""
    return algorithm == ONLINE and inner > 1 and not fits_in_cache(nbytes)


def _by_column_chunks(x3, dst, slab, drivers, inv_t, constants) -> bool:
    """Run an online call on a middle axis beyond the cache in full-width chunks of rows
    (``column_chunks``): ``slab(x3[o], dst[o])`` for each outer index, and the column
    blocks for a slab it declines. False (nothing run) for any other call."""
    if not _takes_column_chunks(constants["ALGORITHM"], x3.shape[2], x3.nbytes):
        return False
    for o in range(x3.shape[0]):
        if not slab(x3[o], dst[o]):
            _run(x3[o : o + 1], dst[o : o + 1], None, drivers, inv_t, constants)
    return True


#: The softmax drivers, in ``_plan``'s order.
SOFTMAX_DRIVERS = (
    softmax_rows_parallel,
    softmax_rows_split,
    softmax_blocks_parallel,
    softmax_tiles_parallel,
)


def run_softmax(x3, y3, algorithm: int, log_output: bool, inv_t, fresh: bool = True) -> None:
    """y3 = softmax (or log_softmax) of x3 along axis 1, through the one path that fits.

    ``x3``, ``y3``: C-contiguous ``(outer, n, inner)`` arrays, non-empty; ``y3`` may be
    ``x3``; ``fresh``: ``y3`` was allocated for this call (``auto.streams_output``).
    """
    constants = path_constants(
        algorithm, log_output, x3.shape[1], x3.dtype.itemsize, streams_output(y3.nbytes, fresh)
    )

    def slab(x2, y2):
        return softmax_slab(x2, y2, inv_t, log_output, constants["STREAM_OUTPUT"])

    if not _by_column_chunks(x3, y3, slab, SOFTMAX_DRIVERS, inv_t, constants):
        _run(x3, y3, y3[:, :, 0], SOFTMAX_DRIVERS, inv_t, constants)


def default_softmax_plan(dtype: np.dtype, log_output: bool, shape3: tuple, fresh: bool = True):
    """``(driver, tasks, one)``: what ``run_softmax`` runs on a C-contiguous
    ``(outer, n, inner)`` array of ``dtype`` with ``"auto"`` and no temperature, into a
    ``fresh`` output or not; call it as ``driver(x, y, tasks, one)`` on the rows
    (``(outer, n)`` views) when ``inner`` is 1, else on the 3-D arrays. None for a
    middle axis beyond the cache (its chunks of rows, ``_by_column_chunks``). For the
    default-call fast path (``frontdoor.run``), which spends a dictionary hit here instead
    of the planning (~3 µs). Keyed by the thread count a call of that size runs on
    (``core_threads_for``, which asks Numba only past its limit), as ``auto`` and the
    plan depend on it."""
    key = (dtype, log_output, shape3, fresh, core_threads_for(shape3[0] * shape3[1] * shape3[2]))
    try:
        return _default_plans[key]
    except KeyError:
        plan = _default_plans[key] = _default_softmax_plan(*key)
        return plan


#: ``default_softmax_plan``'s plans (a dict: a hit costs less than ``lru_cache``'s),
#: made under the limits in use.
_default_plans: dict = limits.remember_under_limits({})


def _default_softmax_plan(dtype, log_output, shape3, fresh, threads):
    outer, n, inner = shape3
    nbytes = outer * n * inner * dtype.itemsize
    columns = inner > 1
    algorithm = choose_algorithm(
        n, dtype.itemsize, outer * inner, threads, columns=columns, exp_output=not log_output
    )
    if _takes_column_chunks(algorithm, inner, nbytes):
        return None
    stream = streams_output(nbytes, fresh)
    constants = path_constants(algorithm, log_output, n, dtype.itemsize, stream)
    driver, tasks, _ = _plan(shape3, SOFTMAX_DRIVERS, constants)
    return driver, tasks, dtype.type(1.0)


#: The logsumexp drivers, in ``_plan``'s order.
LOGSUMEXP_DRIVERS = (
    logsumexp_rows_parallel,
    logsumexp_rows_split,
    logsumexp_blocks_parallel,
    logsumexp_tiles_parallel,
)


def run_logsumexp(x3, out2, algorithm: int, inv_t) -> None:
    """out2[o, j] = t·log Σ_k exp(x3[o, k, j]·inv_t), through the one path that fits."""
    constants = path_constants(algorithm, n=x3.shape[1], itemsize=x3.dtype.itemsize)

    def slab(x2, out):
        return logsumexp_slab(x2, out, inv_t)

    if not _by_column_chunks(x3, out2, slab, LOGSUMEXP_DRIVERS, inv_t, constants):
        _run(x3, out2, out2[:, 0], LOGSUMEXP_DRIVERS, inv_t, constants)


def default_logsumexp_plan(dtype: np.dtype, shape3: tuple):
    """``(driver, tasks, one)``: what ``run_logsumexp`` runs on a C-contiguous
    ``(outer, n, inner)`` array of ``dtype`` with ``"auto"`` and no temperature; call it
    as ``driver(x, out, tasks, one)`` on the rows (``(outer, n)`` and ``(outer,)``
    views) when ``inner`` is 1, else on the 3-D array and the ``(outer, inner)`` output.
    None for a middle axis beyond the cache. A dictionary hit, as
    ``default_softmax_plan``, for the default-call fast path (``frontdoor.run``)."""
    key = (dtype, shape3, core_threads_for(shape3[0] * shape3[1] * shape3[2]))
    try:
        return _default_lse_plans[key]
    except KeyError:
        plan = _default_lse_plans[key] = _default_logsumexp_plan(*key)
        return plan


#: ``default_logsumexp_plan``'s plans, made under the limits in use.
_default_lse_plans: dict = limits.remember_under_limits({})


def _default_logsumexp_plan(dtype, shape3, threads):
    outer, n, inner = shape3
    algorithm = choose_algorithm(
        n, dtype.itemsize, outer * inner, threads, columns=inner > 1, reduction=True
    )
    if _takes_column_chunks(algorithm, inner, outer * n * inner * dtype.itemsize):
        return None
    constants = path_constants(algorithm, n=n, itemsize=dtype.itemsize)
    driver, tasks, _ = _plan(shape3, LOGSUMEXP_DRIVERS, constants)
    return driver, tasks, dtype.type(1.0)
