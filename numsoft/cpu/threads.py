"""How many threads numsoft's parallel kernels may use in this process, and when.

numsoft's parallel drivers run on Numba's threading layer. The arrangement (see
docs/threads.md):

- **TBB** (the ``tbb`` package, a dependency where PyPI has wheels: Linux x86-64 and
  Windows) is the layer Numba picks first when it is installed. It is safe after
  ``fork`` and from many Python threads at once, and its idle workers sleep instead of
  spinning, so a softmax right after a BLAS matmul does not fight OpenBLAS's threads
  for the cores (GNU OpenMP's spinning workers made that loop 5.5x slower here).
- Where Numba runs on **GNU OpenMP** instead (no TBB wheel, or the user chose it), a
  child forked after the pool started would be killed by Numba on its first parallel
  region. numsoft registers a fork handler: such a child runs every numsoft kernel on
  its own thread (the serial twins, which never enter OpenMP), and stays correct.
- The small-input cut-off (``SERIAL_MAX_ELEMENTS``) keeps tiny calls off the pool.

The user's own choice (``NUMBA_THREADING_LAYER``, ``numba.set_num_threads``) is kept.
"""

from __future__ import annotations

import os

import numba

#: Below this many elements a call runs on one thread: waking the thread pool (~2 µs
#: here) costs more than splitting the work saves. Measured with
#: ``asv_bench/crossovers.py``, 2 threads, rows of 256 float32: parallel/serial time is
#: 1.21 at 1024 elements, 0.83 at 2048, 0.62 at 4096, 0.34 from 2^17 on.
SERIAL_MAX_ELEMENTS = 1 << 11

#: True in a child forked from a process whose GNU OpenMP pool had started.
_pool_unusable = False


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


def usable_threads() -> int:
    """Threads a numsoft call may use now: ``numba.get_num_threads()``, or 1 in a child
    forked from a process running GNU OpenMP's pool."""
    return 1 if _pool_unusable else numba.get_num_threads()


def threads_for(elements: int) -> int:
    """Threads a call on ``elements`` elements runs on: 1 up to ``SERIAL_MAX_ELEMENTS``
    (tested first, so that a small call never asks Numba, which starts the pool), else
    ``usable_threads()``."""
    return 1 if elements <= SERIAL_MAX_ELEMENTS else usable_threads()


def serial_or_parallel(driver, elements: int):
    """``driver``, or its ``.serial`` twin when the call runs on one thread
    (``threads_for``)."""
    return driver.serial if threads_for(elements) == 1 else driver
