"""The limits in use: when a call stays on one thread, when one row is split across the
threads, and up to what length rows run in row tiles.

The built-in values below, or those ``python -m numsoft tune`` measured on this machine
(``measured_plan`` reads the plan and sets them here with ``use``). The drivers read
``serial_max_elements``, ``split_min_row`` and ``tile_max_n`` from this module;
``serial_max_elements`` is -1 until the plan has been read, which sends the first call
to ``measured_plan`` (``threads.core_threads_for``). Caches of choices made under the
limits register here (``remember_under_limits``) and are emptied when the limits change.

The variants keep ``SERIAL_MAX_ELEMENTS`` (``threads.threads_for``): heavier per
element, sparsemax gained from a second thread from 8192 elements on.
"""

from __future__ import annotations

#: Up to this many elements a call runs on one thread: waking the thread pool costs more
#: than splitting the work saves. On the 2-core AMD EPYC Zen 5, 2 threads:
#: ``asv_bench/crossovers.py`` (the driver alone, rows of 256 float32, two-pass, two
#: runs) gives parallel/serial time 1.48-1.50 at 2048 elements, 1.26-1.29 at 4096,
#: 0.97-0.98 at 8192, 0.74-0.77 at 16384; as users call it (``numsoft.softmax``), one
#: thread up to 8192 rather than 2048 takes 0.60-0.72 of the time from 3200 to 8192
#: elements in float32 and 0.64-0.87 in float64, and up to 16384 would lose 5-14 % for
#: float64 from 12288 on (float32 would gain: ``python -m numsoft tune`` measures 16384
#: here and on every Zen 4 table in ``asv_bench/tune_tables/``).
SERIAL_MAX_ELEMENTS = 1 << 13

#: Rows at least this long are split across threads when there are fewer rows than
#: threads (below it the per-pass parallel launches cost more than they save).
#: Measured (``asv_bench/crossovers.py``), one float32 row, split/serial time: two-pass
#: 1.54 at 8192, 0.80 at 16384, 0.64 at 32768; three-pass-store 2.73, 1.15, 0.83; ~0.5
#: from 2^17 on.
SPLIT_MIN_ROW = 1 << 15

#: Rows of at most this many elements run in row tiles (``rows.softmax_tiles_span``):
#: the column-block kernels vectorize across rows, where a row kernel is loop overhead.
#: Measured (``asv_bench/crossovers.py``, 4096 rows, one thread, AVX2 Zen 2), tiles /
#: row-kernel time, float32 (float64): n=2 0.37 (0.37), 4 0.33 (0.65), 8 0.78 (0.92),
#: 10 0.83 (0.84), 16 1.19 (1.09), 32 2.0 (1.44): the scalar transposes cost more than
#: the vector lanes save from 16 on.
TILE_MAX_N = 10

#: On a layer whose idle workers sleep in the kernel or spin against BLAS's threads
#: (GNU OpenMP, workqueue: ``threads.SLOW_POOLS``), calls up to this many elements stay
#: on one thread, whatever the plan says. Measured (2 threads ÷ 1, rows of 100 float64,
#: 2-core AMD EPYC Zen 5): workqueue 3.08 / 1.78 / 1.19 / 0.61 at 25600 / 102400 /
#: 409600 / 1638400 elements, GNU OpenMP with a passive wait policy 1.42 / 1.13 / 1.32 /
#: 0.76; right after a matmul, spinning GNU OpenMP 72.9 / 25.0 / 6.8 / 2.1 (TBB 1.26 /
#: 1.06 / 1.02 / 0.85).
SLOW_POOL_SERIAL_MAX_ELEMENTS = 1 << 20

#: The built-in value of each limit a plan may set, by the plan's names.
BUILTIN = {
    "serial_max_elements": SERIAL_MAX_ELEMENTS,
    "split_min_row": SPLIT_MIN_ROW,
    "tile_max_n": TILE_MAX_N,
}

#: The limits in use (``use``); ``serial_max_elements`` is -1 until the plan is read.
serial_max_elements = -1
split_min_row = SPLIT_MIN_ROW
tile_max_n = TILE_MAX_N
#: The variants' one-thread limit (``threads.threads_for``).
variant_serial_max_elements = SERIAL_MAX_ELEMENTS

#: Calls up to this many elements stay on one thread whatever the limits say
#: (``keep_on_one_thread``).
_one_thread_floor = 0

_caches: list[dict] = []


def remember_under_limits(cache: dict) -> dict:
    """Register ``cache`` (of choices made under the limits in use): it is emptied
    whenever the limits change or are to be read again. Returns ``cache``."""
    _caches.append(cache)
    return cache


def use(limits: dict[str, int]) -> None:
    """Make the calls use ``limits`` (a value for each of ``BUILTIN``'s names)."""
    global serial_max_elements, split_min_row, tile_max_n
    serial_max_elements = max(limits["serial_max_elements"], _one_thread_floor)
    split_min_row = limits["split_min_row"]
    tile_max_n = limits["tile_max_n"]
    _forget_choices()


def keep_on_one_thread(elements: int) -> None:
    """Keep calls of up to ``elements`` elements on one thread, whatever the plan or the
    built-in limits say (the variants' too): for a pool slow to wake
    (``SLOW_POOL_SERIAL_MAX_ELEMENTS``)."""
    global _one_thread_floor, serial_max_elements, variant_serial_max_elements
    if elements <= _one_thread_floor:
        return
    _one_thread_floor = elements
    variant_serial_max_elements = max(SERIAL_MAX_ELEMENTS, elements)
    if serial_max_elements >= 0:
        serial_max_elements = max(serial_max_elements, elements)
    _forget_choices()


def forget() -> None:
    """Read the limits from the plan again at the next call."""
    global serial_max_elements
    serial_max_elements = -1
    _forget_choices()


def is_read() -> bool:
    """Whether the limits have been set (from the plan, or the built-in ones)."""
    return serial_max_elements >= 0


def in_use() -> dict[str, int]:
    """The limits set now, by the plan's names (read the plan first: ``is_read``)."""
    return {
        "serial_max_elements": serial_max_elements,
        "split_min_row": split_min_row,
        "tile_max_n": tile_max_n,
    }


def _forget_choices() -> None:
    for cache in _caches:
        cache.clear()
