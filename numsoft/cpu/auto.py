"""Algorithm names, their integer codes, and the rule behind ``algorithm="auto"``.

In cache, the cost is the exp: three-pass-store evaluates it once per element while
the others evaluate it twice, so store wins whenever the data stays in cache, and with
one thread at every size (one core cannot saturate memory with exp-bound passes).
Out of cache with several threads, the cost is memory traffic: two-pass and online
move 3 elements per element (2 reads, 1 write) against 4–5 for the three-pass forms,
and two-pass was the fastest or within noise of it.

Measured crossovers (``asv_bench/roofline.py``, float32, ``out=`` form, time ÷
``np.copyto`` time of the same array; 2 cores Zen 5, load average ~1; see
``docs/performance.md`` for the full tables):

=================  ========  =======  ========  ======  ======  =============
shape              threads   reload   store     two     online  auto picks
=================  ========  =======  ========  ======  ======  =============
16384×128 (8 MiB)  1         15.9     15.4      26.0    26.4    store
16384×128          2         6.35     5.53      11.0    9.24    store
1024×1024 (4 MiB)  2         3.26     2.68      4.35    3.52    store
1×2^20 (4 MiB)     2         3.59     3.02      4.81    3.62    store
4096×4096 (64MiB)  1         2.60     2.62      3.36    2.85    store
4096×4096          2         1.79     2.41      1.77    1.84    two-pass
8192×8192 (256M)   2         1.47     2.07      1.88    1.68    two-pass
1×2^24 (64 MiB)    2         2.02     2.50      1.75    1.81    two-pass
1×2^26 (256 MiB)   1         2.69     2.84      3.14    2.92    store
1×2^26 (256 MiB)   2         1.78     2.39      1.61    2.03    two-pass
=================  ========  =======  ========  ======  ======  =============

float64 follows the same pattern.

On a 2-core AVX2 machine (AMD EPYC, 2026-12-04; ``asv_bench`` TrackBandwidth, time ÷
copy time, 2 threads) the same shapes out of cache went the other way: store 1.79 /
two-pass 2.02 on 4096×4096 float32, 1.81 / 2.22 on 1×2^24, 1.83 / 2.07 on 4096×4096
float64. There, half the vector width makes every structure exp-bound out of cache
too (``asv_bench/roofline_model.py``, docs/performance.md), and store evaluates half
the exponentials. Two-pass pays off only when the threads' exp throughput outruns
memory, which scales with threads × vector lanes: 2 × 16 float32 lanes on Zen 5
(two-pass wins), 2 × 8 on the AVX2 machine (store wins).

Two changes to two-pass then moved the crossover on AVX-512 (Zen 4, 2 cores,
2026-12-04, ``asv_bench/pass_costs.py``): its (M, E) pass keeps four update chains in
flight instead of one (28 → 22–24 ms on 2^26 float32; a plain Σ exp takes 16.8 ms),
and its output pass scales by 2^(n - E) in 5 operations instead of 13. Out of cache,
one thread, time ÷ copy time, two-pass against store: 2.11 / 2.44 (4096×4096 float32),
2.23 / 2.60 (1×2^24), 2.12 / 3.23 (1×2^26), 2.30 / 2.57 (8192×8192), 2.79 / 2.92
(4096×4096 float64), 2.18 / 2.64 (1×2^24 float64). So one AVX-512 core now takes
two-pass too (``WIDE_VECTOR_LANES``). The AVX2 rule is the one measured there before
these changes (not re-measured: no AVX2 machine was at hand).

A middle axis (``axis=0`` of C-ordered data) out of cache is ``online`` in full-width
chunks of rows (``column_chunks``): the column blocks read memory in 2 KiB runs at half
the speed of a contiguous stream, and the chunks read and write whole rows. 4096×4096
float32 ``axis=0`` ``out=``, Zen 4, ms, before → after: 1 thread 27.6 (online) / 26.3
(auto, two-pass blocks) → 20.7; 2 threads 14.6 (auto) → 10.7.

Then three-pass-store got cheaper (its exponentials summed in the loop that stores
them, and ``exp_nonpositive`` without its upper clamp), and out of cache it overtook
two-pass again on AVX-512 wherever a row's passes stay in L1 or the exponential is a
float64's (Zen 4, 2026-12-05, three runs in separate processes, store ÷ two-pass time,
``out=`` / allocating, 2 threads; 1 thread alike): float64 4096×4096 0.83–0.86 /
0.77–0.80, 8192×8192 0.88–0.92 / 0.76–0.85, 2048×8192 0.84–0.87 / 0.76–0.80, 1×2^24
0.82–1.04 / 0.86, 1×2^26 0.80 / 0.90; float32 rows of 16 KiB (4096×4096) 0.88–0.91 /
0.59–0.90, of 8 KiB (16384×2048) 0.92–0.95 / 0.80–0.85. Float32 rows whose input and
output rows overflow L1 stay with two-pass: rows of 32 KiB (8192×8192) 1.06–1.14 /
0.87–0.93, of 64 KiB (2048×16384) 1.00–1.07 / 0.89–0.91, one row of 2^24 0.90–1.13 /
0.96–1.13, of 2^26 1.19–1.66 / 1.01–1.24.

``logsumexp`` (no output pass: store reads a row twice, two-pass once) on one float64
row of 2^26 took 36.4 ms with store against 31.3 with two-pass (2 threads; 58 against
64 on one), 8.8 against 8.0 on 2^24, but 29.9 against 32.9 on 8192×8192 float64. So
the float64 rows that take store are those whose input and output fit L2: a float64
exponential costs three times a float32's (``asv_bench/exp_cost.py``), worth an L2
re-read; a float32 one is worth only an L1 re-read.

Then three-pass-store learned to stream its output (``out=`` beyond the cache: the
exponentials go to a scratch row that stays in L2, and the output is written once, by
streaming stores, with the next row prefetched during the exponentials: three_pass.py,
``softmax_row_three_pass_store_via``). Float32, 2 threads, Zen 4, time ÷ ``np.copyto``,
``out=`` / allocating, store against two-pass, two runs: rows of 8192 0.97–0.99 /
1.53–1.56 against 1.05–1.08 / 1.63–1.67; 16384 0.96–0.98 / 1.52–1.55 against 1.04–1.05 /
1.64–1.66; 65536 0.96–1.01 / 1.55–1.61 against 0.99–1.01 / 1.61–1.64; but 131072 (a row
and its scratch fill the 1 MiB L2) 1.12–1.16 / 1.54–1.55 against 0.97–0.99 / 1.58–1.62.
Float32 ``log_softmax`` and ``logsumexp`` stay with two-pass beyond L1: neither has an
output pass that exponentiates, and on 8192×8192 store took 31.3–31.8 / 19.5–20.2 ms
(``log_softmax``, allocating / ``out=``) against two-pass's 29.1–30.5 / 16.2–17.4, and
12.6–12.8 ms (``logsumexp``) against 11.0–11.1 (three alternating runs).

Then online's statistics pass (a block max, one exponential and a float64 sum per
element) had become cheaper than two-pass's (M, E) update, and beyond the L2 online
overtook two-pass except on many float32 rows with an output pass (Zen 4, 2026-12-05,
ninth session; online ÷ two-pass time, ``out=``, best of 7 in two alternating rounds):
one row of 2^22 / 2^24 (split across 2 threads) float32 softmax 0.90–0.92 / 0.95–0.96,
log_softmax 0.92 / 0.99, logsumexp 0.88 / 0.93; float64 0.87–0.90 / 0.93, 0.69 / 0.97,
0.87 / 0.94, 2^26 float64 softmax 0.94; one thread 0.81–0.98 alike. Many rows beyond
L2: logsumexp 0.87–0.95 in both dtypes (64×2^18 to 8192² float32, 256×2^15 to 4×2^21
float64), float64 softmax 0.96–0.99 and log_softmax 0.91–0.95, but float32 softmax
0.99–1.06 and log_softmax 0.93–1.06.

The rule: three-pass-store when the input fits in half the last-level cache (the output
needs the other half; ``machine.last_level_cache_bytes``, 16 MiB of Zen 5's 32). Out of
cache, with vectors of at least ``WIDE_VECTOR_LANES``: three-pass-store for rows whose
input and output fit the L2 (float64) or half of it (float32 softmax; the L1 for
float32 ``log_softmax`` and ``logsumexp``; ``machine.data_cache_bytes``); beyond them
online for float64, for ``logsumexp`` and for a row split across threads
(``threads.splits_rows``), else two-pass; with narrower vectors, two-pass from
``MEMORY_BOUND_LANES`` threads × float32 lanes, else three-pass-store. A middle axis
out of cache is online (in chunks of rows).
"""

from __future__ import annotations

from ..vocabulary import ONLINE, THREE_PASS_STORE, TWO_PASS
from .machine import data_cache_bytes, float32_lanes, last_level_cache_bytes
from .threads import splits_rows, usable_threads

#: Threads × float32 vector lanes from which an out-of-cache softmax is memory-bound
#: (two-pass's fewer transfers win over store's fewer exponentials): 2 × 16 on Zen 5
#: was, 2 × 8 on the AVX2 machine was not (module docstring).
MEMORY_BOUND_LANES = 32

#: float32 lanes from which two-pass wins out of cache on any thread count, for rows
#: that overflow half the L2 (float32) or all of it (float64): 16 (AVX-512), measured
#: on Zen 4
#: (module docstring).
WIDE_VECTOR_LANES = 16


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
    n: int,
    itemsize: int,
    rows: int = 1,
    threads: int | None = None,
    lanes: int | None = None,
    columns: bool = False,
    exp_output: bool = False,
    reduction: bool = False,
) -> int:
    """Code of the pass structure ``"auto"`` uses for ``rows`` rows of ``n`` elements
    on ``threads`` threads (default: ``threads.usable_threads()``, asked only for
    inputs beyond the cache: a small call never touches the thread pool) with vectors
    of ``lanes`` float32 (default: this machine's); ``columns``: the normalized axis is
    not the last one; ``exp_output``: the output pass exponentiates (softmax, not
    log_softmax or logsumexp); ``reduction``: there is no output pass (logsumexp). See
    the module docstring."""
    if fits_in_cache(rows * n * itemsize):
        return THREE_PASS_STORE
    if columns:
        return ONLINE  # in full-width chunks of rows (``column_chunks``)
    if threads is None:
        threads = usable_threads()
    if lanes is None:
        lanes = float32_lanes()
    if lanes >= WIDE_VECTOR_LANES:
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
        # beyond them, online's statistics pass (a block max, one exponential and a sum
        # per element) costs less than two-pass's (M, E) update; two-pass is ahead only
        # on many float32 rows with an output pass
        if itemsize >= 8 or reduction or splits_rows(rows, n, threads):
            return ONLINE
        return TWO_PASS
    if threads * lanes >= MEMORY_BOUND_LANES:
        return TWO_PASS
    return THREE_PASS_STORE
