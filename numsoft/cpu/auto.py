"""The rule behind ``algorithm="auto"``: measured on this machine where a plan was
measured (``python -m numsoft tune``, ``measured_plan``), else built in.

The built-in rule:

- **In cache** (the input fits in half the last-level cache; the output needs the other
  half, ``machine.last_level_cache_bytes``): three-pass-store. The exponential is the
  cost there, and store evaluates it once per element where the others evaluate it
  twice. A row split across the threads (``threads.splits_rows``) without an
  exponentiating output pass takes online instead (``logsumexp``; ``log_softmax``
  while the row fits the L2, beyond which store's re-read costs less): store saves no
  exponential there, and online's two parallel phases cost less than store's three.
- **A middle axis (``axis=0`` of C-ordered data) in cache**: the column blocks
  (``columns``) of three-pass-reload for ``log_softmax`` (its output pass has no
  exponential for store to save) and for float32 ``softmax`` in a few blocks (a
  block's rows are then runs an array row apart, and store's output re-read costs
  more than a float32 exponential; with ``MANY_COLUMN_BLOCKS`` or more, store's one
  exponential pays again); three-pass-store for the rest. In columns of at
  most ``NARROW_COLUMNS_BYTES`` each row of a block is a vector or two and the per-row
  loop costs more than its elements: two-pass, which sweeps the rows twice where the
  others sweep them three times, on wide vectors (AVX-512); on narrower ones, where
  two-pass's (M, E) update costs twice as many instructions, online (two sweeps, a
  lighter update) and, for ``softmax``, three-pass-store (one exponential per element).
- **Out of cache, vectors of at least ``WIDE_VECTOR_LANES`` float32 lanes (AVX-512)**:
  two-pass for a row split across the threads and for ``logsumexp`` of rows of at
  least ``REDUCTION_TWO_PASS_MIN`` elements (but for float64 rows that fit the L2): it
  reads each element once per pass, in fewer passes. Else three-pass-store for rows
  whose input and output fit the L2 (float64) or half of it (float32 softmax; the L1
  for float32 ``log_softmax`` and ``logsumexp``, which have no exponentiating output
  pass; ``machine.data_cache_bytes``): a re-read from there costs less than a second
  exponential (a float64 one costs three float32 ones). Beyond them, online for
  float64, whose statistics pass (a block max, one exponential and a float64 sum per
  element) costs less than two-pass's (M, E) update, and two-pass for float32, which
  moves three elements per element (two reads, one write) against four or five for
  the three-pass forms.
- **Out of cache, narrower vectors (AVX2, NEON)**: two-pass from ``MEMORY_BOUND_LANES``
  threads × float32 lanes, else three-pass-store, and online for ``logsumexp`` of rows
  of at least ``REDUCTION_ONLINE_MIN_BYTES``. With half the vector width every structure
  is exp-bound out of cache too, and store evaluates half the exponentials; two-pass
  pays off only when the threads' exponential throughput outruns memory. A long
  row's ``logsumexp`` has no exponential for store to save: online reads it once.
- **A middle axis (``axis=0`` of C-ordered data) out of cache**: online, in full-width
  chunks of rows (``column_chunks``): the column blocks read memory in 2 KiB runs at
  half the speed of a contiguous stream, the chunks read and write whole rows. Only
  when the axis gives every thread a chunk (``chunk_count(n) >= threads``): a shorter
  one is a single task, and the column blocks (as in cache) are faster.

The rule is chosen from the tune tables in ``asv_bench/tune_tables/`` (``python -m
numsoft tune``: each class's pass structures timed side by side), to minimize the
worst loss over all of them (``tests/test_rule_tables.py`` scores it on each: no class
above 1.10, at least 90 % within 1.03): a 2-core AMD Zen 5 running its own (AVX-512)
kernels and the wheel's x86-64-v3 (AVX2) ones, a core with half the vector width
against the same caches and memory, and a 2-core AMD Zen 4 (AVX-512), tuned three
times. The thread threshold ``MEMORY_BOUND_LANES`` was measured with
``asv_bench/roofline.py`` on a 2-core AVX2 AMD EPYC. ``docs/performance.md`` gives the
numbers per machine and how to measure yours; a plan measured on the machine replaces
this rule there.
"""

from __future__ import annotations

from ..vocabulary import ONLINE, THREE_PASS_RELOAD, THREE_PASS_STORE, TWO_PASS
from . import measured_plan
from .column_chunks import chunk_count
from .columns import COLUMN_BLOCK
from .machine import data_cache_bytes, float32_lanes, last_level_cache_bytes
from .threads import splits_rows, usable_threads

#: Threads × float32 vector lanes from which an out-of-cache softmax is memory-bound
#: (two-pass's fewer transfers win over store's fewer exponentials): 2 × 16 on Zen 5
#: is, 2 × 8 on the AVX2 machine is not (module docstring).
MEMORY_BOUND_LANES = 32

#: float32 lanes from which two-pass wins out of cache on any thread count, for rows
#: that overflow half the L2 (float32) or all of it (float64): 16 (AVX-512), measured
#: on Zen 4 (module docstring).
WIDE_VECTOR_LANES = 16

#: Row length from which ``logsumexp`` beyond the cache takes two-pass on wide vectors:
#: its one pass reads each element once, where store's second pass re-reads the row
#: (module docstring). Zen 5, 2 threads, 512 MiB, store ÷ two-pass: float32 rows of
#: 1024 0.71, 4096 1.10–1.12, 16384 1.19; float64 rows of 4096 1.07. A float64 row
#: whose input and output fit the L2 keeps store: the Zen 4 tables (rows of 4096,
#: beyond the cache) had two-pass 1.07–1.12 × the best (store or online), the Zen 5
#: store 1.08 × two-pass.
REDUCTION_TWO_PASS_MIN = 4096

#: Row bytes from which ``logsumexp`` beyond the cache takes online on narrower vectors,
#: where two-pass's (M, E) update is exp-bound: one read per element against store's
#: two. Zen 5 running x86-64-v3 (AVX2) kernels, 2 threads, 128 MiB, store ÷ online:
#: float32 rows of 1024 0.98, 2048 1.06, 4096 1.10; float64 rows of 1024 1.06, 4096
#: 1.07 (two-pass 1.2–1.5 × online throughout).
REDUCTION_ONLINE_MIN_BYTES = 8192

#: Column blocks from which an in-cache float32 ``softmax`` along a middle axis takes
#: three-pass-store again (``_column_blocks``): each thread then has many blocks, and
#: store's one exponential pays. Tune tables, ``softmax float32`` along ``axis=0`` of 64
#: rows, reload ÷ store: 2 blocks (L2) 0.48–0.85 on every table; 64 blocks (LLC) 1.14–1.27
#: on the Zen 4, 1.16 on the Zen 5 running AVX2 kernels, 0.97 on its AVX-512 ones.
MANY_COLUMN_BLOCKS = 16

#: Bytes of columns (a row of a 2-D array normalized along ``axis=0``) up to which an
#: in-cache middle axis takes the narrow-column choice (module docstring, ``_narrow_columns``):
#: 4096×16 float32, 1 thread, AVX-512: two-pass 51 µs, store 57 (softmax); 44 against
#: reload's 48 (``log_softmax``).
NARROW_COLUMNS_BYTES = 128


def fits_in_cache(nbytes: int) -> bool:
    """True when an input of ``nbytes`` and an output of its size fit the last-level
    cache: the line between the in-cache and out-of-cache rules."""
    return 2 * nbytes <= last_level_cache_bytes()


def streams_output(nbytes: int, fresh: bool) -> bool:
    """True when an output of ``nbytes`` is written by streaming stores (``passes.streamed``):
    when it is beyond the cache (``fits_in_cache`` False), where the cache cannot keep it
    for the caller anyway and an ordinary store would first read each line from memory,
    and is not ``fresh`` (allocated for this call). The OS zeroes a new page through
    the cache when it is first written, and an ordinary store then finds its line
    there; a streaming one evicts it instead: one output pass on a new 2^26 float32
    array took 21 ms with ordinary stores and 29 with streaming ones (2 threads). On
    whole calls the difference is smaller and goes both ways: allocating 1×2^24 took
    8.6–9.0 ms streaming against 9.2–9.8 ordinary (three runs), but once the split
    output pass walked its chunks last read first (``passes.last_piece``, ordinary stores
    only) 7.3–8.5 against 7.3–8.0 (two runs)."""
    return not fresh and not fits_in_cache(nbytes)


def choose_algorithm(
    n: int, itemsize: int, rows: int = 1, threads: int | None = None, **options
) -> int:
    """Code of the pass structure ``"auto"`` uses for ``rows`` rows of ``n`` elements
    (``options``: ``builtin_algorithm``'s): the winner measured on this machine for the
    call's class (``measured_plan``, written by ``python -m numsoft tune``) where there
    is one, else ``builtin_algorithm``'s."""
    if "lanes" not in options and (plan := measured_plan.winners()):
        kind = measured_plan.kind_of(
            options.get("exp_output", False), options.get("reduction", False)
        )
        nbytes = rows * n * itemsize
        columns = options.get("columns", False)
        measured = plan.get(measured_plan.case_class(kind, itemsize, n, nbytes, columns))
        if measured is not None:
            return measured
    return builtin_algorithm(n, itemsize, rows, threads, **options)


def builtin_algorithm(
    n: int,
    itemsize: int,
    rows: int = 1,
    threads: int | None = None,
    lanes: int | None = None,
    columns: bool = False,
    exp_output: bool = False,
    reduction: bool = False,
) -> int:
    """Code of the pass structure the built-in rule picks for ``rows`` rows of ``n``
    elements on ``threads`` threads (default: ``threads.usable_threads()``, asked only
    for inputs beyond the cache or a row long enough to split: a small call never
    touches the thread pool) with
    vectors of ``lanes`` float32 (default: this machine's); ``columns``: the normalized
    axis is not the last one; ``exp_output``: the output pass exponentiates (softmax,
    not log_softmax or logsumexp); ``reduction``: there is no output pass (logsumexp).
    See the module docstring."""
    if fits_in_cache(rows * n * itemsize):
        if columns:
            if rows * itemsize <= NARROW_COLUMNS_BYTES:
                return _narrow_columns(float32_lanes() if lanes is None else lanes, exp_output)
            return _column_blocks(rows, itemsize, exp_output, reduction)
        # a row split across the threads: two parallel phases instead of store's three;
        # for log_softmax only within the L2, beyond which store's re-read costs less
        within_l2 = 2 * n * itemsize <= data_cache_bytes(2)
        if not exp_output and (reduction or within_l2) and splits_rows(rows, n, threads):
            return ONLINE
        return THREE_PASS_STORE
    if threads is None:
        threads = usable_threads()
    if columns:
        # online in full-width chunks of rows (``column_chunks``), a task per chunk: a
        # normalized axis too short to give every thread a chunk is one serial task there
        if chunk_count(n) >= threads:
            return ONLINE
        return _column_blocks(rows, itemsize, exp_output, reduction, in_cache=False)
    if lanes is None:
        lanes = float32_lanes()
    if lanes >= WIDE_VECTOR_LANES:
        # one read per element for a split row (two phases, three transfers) and for a
        # long row's logsumexp (one pass)
        # (a float64 row whose input and output fit the L2 excepted: store)
        l2_row = itemsize >= 8 and 2 * n * itemsize <= data_cache_bytes(2)
        long_reduction = reduction and n >= REDUCTION_TWO_PASS_MIN and not l2_row
        if splits_rows(rows, n, threads) or long_reduction:
            return TWO_PASS
        # rows whose re-reads hit L2; for float32, whose exponential is worth less, half
        # of it (a row and its stored exponentials, as the streaming store path keeps
        # them) where store saves the output pass's exponential (softmax), else L1
        if itemsize >= 8:
            fits = 2 * n * itemsize <= data_cache_bytes(2)
        elif exp_output:
            fits = 4 * n * itemsize <= data_cache_bytes(2)
        else:
            fits = 2 * n * itemsize <= data_cache_bytes(1)
        if fits:
            return THREE_PASS_STORE
        # beyond them, float64's online statistics pass (a block max, one exponential
        # and a sum per element) costs less than two-pass's (M, E) update
        return ONLINE if itemsize >= 8 else TWO_PASS
    if threads * lanes >= MEMORY_BOUND_LANES:
        return TWO_PASS
    if reduction and n * itemsize >= REDUCTION_ONLINE_MIN_BYTES:
        return ONLINE
    return THREE_PASS_STORE


def _narrow_columns(lanes: int, exp_output: bool) -> int:
    """The pass structure of an in-cache middle axis in columns of at most
    ``NARROW_COLUMNS_BYTES``: two-pass on vectors of ``WIDE_VECTOR_LANES``; on narrower
    ones three-pass-store for ``softmax`` and online for the others (module docstring).

    Zen 5 running x86-64-v3 (AVX2) kernels, 4096×16 float32, each ÷ the best (median of
    three tunes): ``softmax`` store 1.00, online 1.03, two-pass 1.17; ``log_softmax``
    online 1.00, reload 1.04, two-pass 1.19; float64 4096×8 ``softmax`` store 1.00,
    online 1.12, two-pass 1.23. On its AVX-512 kernels two-pass is ahead by 2–8 %.
    """
    if lanes >= WIDE_VECTOR_LANES:
        return TWO_PASS
    return THREE_PASS_STORE if exp_output else ONLINE


def _column_blocks(
    columns: int, itemsize: int, exp_output: bool, reduction: bool, in_cache: bool = True
) -> int:
    """The pass structure of the column blocks (``columns``): reload for ``log_softmax``,
    whose output pass has no exponential for store to save, and for float32 ``softmax``
    in a few blocks (up to ``MANY_COLUMN_BLOCKS``) or beyond the cache (``in_cache``
    False), where a block's rows are runs of ``COLUMN_BLOCK`` columns an array row apart
    and store's output re-read costs more than a float32 exponential; else store
    (``logsumexp``'s two are one kernel)."""
    if reduction:
        return THREE_PASS_STORE
    if not exp_output:
        return THREE_PASS_RELOAD
    few = COLUMN_BLOCK < columns < MANY_COLUMN_BLOCKS * COLUMN_BLOCK
    if itemsize < 8 and (few or (not in_cache and columns > COLUMN_BLOCK)):
        return THREE_PASS_RELOAD
    return THREE_PASS_STORE
