"""Parameters and helpers shared by every benchmark module.

Nothing here is a benchmark (asv collects only names starting with ``time_``,
``peakmem_``, ``mem_``, ``track_``). Each ``bench_*.py`` module covers one area of the
library and imports what it needs from here, so a new area (variants, fused ops, CUDA)
is one new module.

Skipping: a benchmark whose function, library or hardware is missing raises
``NotImplementedError`` in ``setup``; asv then records it as skipped ("n/a"), not
failed. That is how the suite runs unchanged on old commits (before a function
existed: the first commit is an empty package), without torch, and without a GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import os
import time

import numba
import numpy as np

# Imported unguarded: every commit has the package, so an import error is a real
# failure (it must fail the smoke run, not turn the whole suite into skips).
import numsoft


def _prime_numba() -> None:
    """Pay Numba's one-time start-up (~0.4-1 s) once, in the importing process.

    The first compilation or cache load in a process imports and registers Numba's
    typing and lowering tables. asv's forkserver imports the benchmark modules once and
    forks every benchmark from that process, so doing it here saves it in each of the
    few hundred benchmark processes. A trivial serial function is enough; nothing
    parallel runs here, so no OpenMP thread exists before the fork.
    """
    numba.njit(lambda: 0)()


_prime_numba()

#: The four pass structures of SPEC §2 (``"auto"`` picks one of them).
ALGORITHMS = ("three-pass-reload", "three-pass-store", "two-pass", "online")
DTYPES = ("float32", "float64")
#: ``NUMSOFT_ASV_SMOKE=1`` (set by ``smoke.sh`` for CI): the same benchmarks on small
#: arrays, to check quickly that every one runs; the sizes below it are the real ones.
SMOKE = os.environ.get("NUMSOFT_ASV_SMOKE") == "1"
#: Rows of 128 elements with the whole array in L3 (32 MiB), and an array far
#: beyond L3 (64 MiB as float32, 128 MiB as float64) with 16 KiB/32 KiB rows.
IN_CACHE = "256x128" if SMOKE else "16384x128"
OUT_OF_CACHE = "64x4096" if SMOKE else "4096x4096"
SHAPES = (IN_CACHE, OUT_OF_CACHE)
#: One row too long for any cache (64 MiB as float32): every pass of a pass structure
#: goes to memory, and 2 threads must split the row (SPEC §2 partial merges; the smoke
#: row is still long enough to be split).
LONG_ROW = "1x65536" if SMOKE else "1x16777216"
#: The bandwidth tracks add the long row: it is where the pass structures differ most.
TRACK_SHAPES = (*SHAPES, LONG_ROW)
AXES = (-1, 0)
THREADS = (1, 2)

#: Time a side-by-side bandwidth measurement spends timing (seconds), and its fewest
#: rounds. With 0.1 s and 3 rounds, two runs of identical code differed by up to 23 %
#: on 2-thread float32 out-of-cache cases (4 of 60 ratios beyond ±10 %: a 64 MiB call
#: took 3-4 rounds, and on a shared 2-core machine one scheduler slice more or less
#: moves the best of so few); see docs/benchmarks.md.
TRACK_BUDGET_S = 0.01 if SMOKE else 0.4
TRACK_MIN_ROUNDS = 3 if SMOKE else 10


def numsoft_function(name: str, module: str | None = None):
    """``numsoft.<module>.<name>``, or ``NotImplementedError`` so asv skips it.

    ``module=None`` looks the name up on ``numsoft`` itself; otherwise on the
    submodule (e.g. ``"variants"``, ``"fused"``, ``"cuda"``), then on ``numsoft``.
    """
    owners = [numsoft]
    if module is not None:
        with contextlib.suppress(ImportError):
            owners.insert(0, importlib.import_module(f"numsoft.{module}"))
    for owner in owners:
        func = getattr(owner, name, None)
        if func is not None:
            return func
    raise NotImplementedError(f"numsoft has no {name!r} at this commit")


def optional_module(name: str):
    """Import an optional comparison library (``torch``) or skip the benchmark."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise NotImplementedError(f"{name} is not installed") from None


def set_threads(n: int) -> None:
    """``numba.set_num_threads(n)``; skip when the machine has fewer threads."""
    if n > numba.config.NUMBA_NUM_THREADS:
        raise NotImplementedError(
            f"{n} threads requested, NUMBA_NUM_THREADS is {numba.config.NUMBA_NUM_THREADS}"
        )
    numba.set_num_threads(n)


def available_threads() -> tuple[int, ...]:
    """The entries of ``THREADS`` this machine can run."""
    return tuple(n for n in THREADS if n <= numba.config.NUMBA_NUM_THREADS)


def parse_shape(shape: str) -> tuple[int, ...]:
    """``"16384x128"`` → ``(16384, 128)`` (shapes are strings so the dashboard reads well)."""
    return tuple(int(s) for s in shape.split("x"))


#: Elements of the random block that ``make_logits`` tiles (4 MiB as float32).
LOGITS_BLOCK = 1 << 20


def make_logits(shape: str, dtype: str, seed: int = 0) -> np.ndarray:
    """Logits ~ N(0, 4²), C-contiguous: a random block of ``LOGITS_BLOCK`` tiled.

    Drawing 16 M normal variates costs more than the softmax being timed, and a quick
    run sets up a few hundred benchmarks; tiling one block costs a memory copy. A
    period of 2^20 elements is far longer than any row and than the L2, so neither the
    kernels nor the caches can take advantage of the repetition.
    """
    rng = np.random.default_rng(seed)
    block = rng.standard_normal(LOGITS_BLOCK, dtype=np.dtype(dtype))
    block *= block.dtype.type(4.0)
    return np.resize(block, parse_shape(shape))


def reduced_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """Shape of a reduction of ``shape`` over ``axis``."""
    axis %= len(shape)
    return shape[:axis] + shape[axis + 1 :]


def host_copy(x: np.ndarray):
    """``np.copyto`` of ``x`` into a preallocated, already touched array: the bandwidth limit."""
    dst = np.empty_like(x)
    np.copyto(dst, x)
    return functools.partial(np.copyto, dst, x)


def timed_side_by_side(run, copy, budget_s: float = TRACK_BUDGET_S):
    """Best time of ``run()`` and of ``copy()`` (see ``host_copy``), measured interleaved.

    Interleaving (copy, run, copy, run, ...) exposes both to the same machine state
    (frequency, other processes), which is what makes their ratio meaningful.
    Returns ``(t_run, t_copy)`` in seconds, each the minimum over at least
    ``TRACK_MIN_ROUNDS`` rounds.
    """
    copy()
    run()
    best_run = best_copy = float("inf")
    start = time.perf_counter()
    rounds = 0
    while rounds < TRACK_MIN_ROUNDS or (time.perf_counter() - start < budget_s and rounds < 200):
        t0 = time.perf_counter()
        copy()
        t1 = time.perf_counter()
        run()
        t2 = time.perf_counter()
        best_copy = min(best_copy, t1 - t0)
        best_run = min(best_run, t2 - t1)
        rounds += 1
    return best_run, best_copy


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise NotImplementedError(f"/proc/self/status has no {field}")


def check_peak_tracking() -> None:
    """Skip unless the peak-RSS counter can be reset (Linux ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        _status_kib("VmHWM")
    except OSError:
        raise NotImplementedError("peak RSS cannot be reset on this system") from None


def _release_free_heap() -> None:
    """Return freed heap memory to the OS (glibc ``malloc_trim``), where there is one.

    Otherwise a block freed by the warm-up call can be reused with its pages still
    resident, and the next call's allocation would not show in the peak.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def extra_peak_mib(run) -> float:
    """Peak resident memory ``run()`` adds above what the process holds before it (MiB).

    Resets the kernel's high-water mark (``VmHWM``) just before the call, so the
    inputs, the interpreter and the compiled kernels are excluded: what remains is the
    result plus any temporaries the call allocates and touches.
    """
    _release_free_heap()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    result = run()
    peak = _status_kib("VmHWM")
    del result
    return (peak - before) / 1024.0
