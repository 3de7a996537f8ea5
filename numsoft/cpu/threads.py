"""How many threads numsoft's parallel kernels may use in this process, and when.

numsoft's parallel drivers run on Numba's threading layer. The arrangement (see
docs/threads.md):

- **TBB** (the ``tbb`` package, a dependency where PyPI has wheels and Numba a TBB
  layer: Linux x86-64 and Windows) is the layer Numba picks first when it can load it;
  ``layers.make_tbb_loadable`` (run when this module is imported) makes the installed
  wheel loadable in a venv too. It is safe after ``fork`` and from many Python threads
  at once, and its idle workers sleep instead of spinning, so a softmax right after a
  BLAS matmul does not fight OpenBLAS's threads for the cores.
- Where Numba runs on **GNU OpenMP** instead (no TBB, or the user chose it), a child
  forked after the pool started would be killed by Numba on its first parallel region:
  numsoft's fork handler makes such a child run every kernel on its own thread (the
  serial twins, which never enter OpenMP). Its workers spin while idle by default,
  fighting BLAS's threads for the cores: before the pool starts, numsoft loads the
  OpenMP runtime with a passive wait policy where the user set none
  (``layers.start_openmp_passively``), and says once (``SpinningThreadsWarning``) where
  it could not (the runtime had loaded before: another library's, or a pool started
  before numsoft was imported).
- The **workqueue** layer (macOS and Linux arm64 pip installs) aborts the process when
  two Python threads enter parallel code at once: ``run_parallel`` lets one thread at a
  time into the pool and runs the others' calls on their own threads.
- The small-input cut-off (``limits.SERIAL_MAX_ELEMENTS``, or the measured plan's)
  keeps tiny calls off the pool.

The user's own choice (``NUMBA_THREADING_LAYER``, ``numba.set_num_threads``) is kept.
"""

from __future__ import annotations

import os
import threading
import warnings

import numba
import numba.np.ufunc.parallel as _numba_parallel

from . import layers, limits, measured_plan
from .layers import make_tbb_loadable, numba_started_a_layer

make_tbb_loadable()
layers.start_openmp_passively()


def splits_rows(rows: int, n: int, threads: int | None = None) -> bool:
    """True when ``rows`` rows of ``n`` elements on ``threads`` threads run each row
    split across the threads (``rows.plan_rows``'s ``SPLIT``) rather than rows in
    parallel: rows of at least ``limits.split_min_row`` elements (read with the plan,
    by ``core_threads_for`` or ``auto.choose_algorithm``). ``threads`` defaults to
    ``usable_threads()``, asked only for a row that long (a small call never touches
    the thread pool)."""
    if n < limits.split_min_row:
        return False
    return rows < (usable_threads() if threads is None else threads)


#: True in a child forked from a process whose GNU OpenMP pool had started.
_pool_unusable = False

#: Layers whose pool costs more to wake than a mid-size call saves
#: (``limits.SLOW_POOL_SERIAL_MAX_ELEMENTS``): TBB's workers wake in a few µs.
SLOW_POOLS = ("omp", "workqueue")

#: Layers Numba documents as safe to enter from several Python threads at once.
THREADSAFE_LAYERS = ("tbb", "omp")

#: True once the layer Numba started is one of ``THREADSAFE_LAYERS``.
_pool_threadsafe = False

#: Held by the thread inside the pool while its layer is not known to be thread-safe.
_pool_entry = threading.Lock()


class SpinningThreadsWarning(UserWarning):
    """Numba runs on GNU OpenMP with its default wait policy: its idle threads spin,
    and beside another pool (BLAS, PyTorch) both run many times slower."""


def current_layer() -> str | None:
    """The threading layer Numba started in this process, or None if none has."""
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel region has run yet
        return None


def _openmp_is_gnu() -> bool:
    from numba.np.ufunc import omppool

    return omppool.openmp_vendor == "GNU"


def _after_fork_in_child() -> None:
    global _pool_unusable
    if current_layer() == "omp" and _openmp_is_gnu():
        _pool_unusable = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def run_parallel(driver, serial, args: tuple):
    """``driver(*args)`` on Numba's thread pool, or ``serial(*args)`` (the same spans on
    the calling thread, same results) while another Python thread is inside a pool
    whose layer is not known to be thread-safe: workqueue, or any layer before the
    first parallel region has shown which one Numba started. Never blocks, so Dask's
    threaded scheduler and thread pools cannot deadlock on it."""
    if _pool_threadsafe:
        return driver(*args)
    if not _pool_entry.acquire(blocking=False):
        return serial(*args)
    try:
        return driver(*args)
    finally:
        _pool_entry.release()
        _learn_layer()


def _learn_layer() -> None:
    """After a parallel region: keep mid-size calls on one thread on a layer whose pool
    is slow to wake (``limits.SLOW_POOL_SERIAL_MAX_ELEMENTS``); once the layer is known
    to be thread-safe, drop the entry lock, and warn once about GNU OpenMP's spinning
    workers."""
    global _pool_threadsafe
    layer = current_layer()
    if layer in SLOW_POOLS:
        limits.keep_on_one_thread(limits.SLOW_POOL_SERIAL_MAX_ELEMENTS)
    if layer not in THREADSAFE_LAYERS:
        return
    _pool_threadsafe = True
    if layer == "omp" and _openmp_is_gnu() and spin_fight_possible():
        warnings.warn(
            "numsoft: Numba runs its thread pool on GNU OpenMP, whose idle threads spin, "
            "and the OpenMP runtime had loaded before numsoft could make it wait "
            "passively (another library's, or a pool started before numsoft was "
            "imported): right after a NumPy matmul (whose BLAS threads spin too) a "
            "softmax ran 12x slower than on one thread. Set OMP_WAIT_POLICY=passive "
            "before Python starts (0.9x then), or let Numba use TBB ('pip install tbb'; "
            "'python -m numsoft info' says why it does not); see numsoft's docs/threads.md",
            SpinningThreadsWarning,
            stacklevel=2,
        )


def spin_fight_possible() -> bool:
    """GNU OpenMP would spin beside other pools: its wait policy is the default (the user
    set none, and numsoft could not set it before the runtime loaded) and numsoft runs
    more than one thread."""
    unset = not any(os.environ.get(name) for name in layers.WAIT_POLICY_VARIABLES)
    return unset and not layers.openmp_made_passive and numba.get_num_threads() > 1


def usable_threads() -> int:
    """Threads a numsoft call may use now: ``numba.get_num_threads()``, or 1 in a child
    forked from a process running GNU OpenMP's pool.

    Once the pool has started, the thread count is read straight from the layer
    (``_get_num_threads``, what ``get_num_threads`` returns after ``_launch_threads``):
    ``get_num_threads`` takes two locks first: 0.67–0.70 µs of a 7.9 µs call, against
    0.19 µs for this function. Numba versions without those names take the public call.
    """
    if _pool_unusable:
        return 1
    if numba_started_a_layer():
        n = _numba_parallel._get_num_threads()
        if n > 0:
            return n
    return numba.get_num_threads()


def threads_for(elements: int) -> int:
    """Threads a call on ``elements`` elements runs on: 1 up to
    ``limits.variant_serial_max_elements`` (tested first, so that a small call never asks
    Numba, which starts the pool), else ``usable_threads()``."""
    return 1 if elements <= limits.variant_serial_max_elements else usable_threads()


def core_threads_for(elements: int) -> int:
    """``threads_for`` for the drivers of softmax, log_softmax and logsumexp
    (``rows.plan_rows``), whose one-thread limit ``tune`` measures on softmax: the
    measured plan's where there is one (``limits.serial_max_elements``). The variants
    keep the built-in one (``threads_for``)."""
    if elements <= limits.serial_max_elements:
        return 1
    if limits.serial_max_elements < 0:  # the first call: reading the plan sets the limits
        measured_plan.read_limits()
        return core_threads_for(elements)
    return usable_threads()


def serial_or_parallel(driver, elements: int):
    """``driver``, or its ``.serial`` twin when the call runs on one thread
    (``threads_for``)."""
    return driver.serial if threads_for(elements) == 1 else driver
