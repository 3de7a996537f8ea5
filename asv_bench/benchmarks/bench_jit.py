"""First-call latency, and numsoft called from a user's ``@njit`` loop.

``TrackFirstCall``: what a user waits for on the first ``numsoft.softmax`` call.

Every other benchmark excludes compilation (it warms up in ``setup``). Here a fresh
interpreter imports numsoft and calls ``softmax`` once on a small float32 array; the
time from ``import numsoft`` to the call returning is reported in seconds, with

- ``cold``: an empty ``NUMBA_CACHE_DIR`` (first use after install: compile everything
  that call needs);
- ``warm``: a ``NUMBA_CACHE_DIR`` filled by one earlier process (every later process:
  load the compiled kernels from disk).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from .common import numsoft, numsoft_function
from .njit_loops import LOOPS, SIDES, compile_loop, inputs

FIRST_CALL = """
import time
import numpy as np
x = np.linspace(-4.0, 4.0, 64 * 1000, dtype=np.float32).reshape(64, 1000)
t0 = time.perf_counter()
import numsoft
numsoft.softmax(x)
print(time.perf_counter() - t0)
"""


def first_call_seconds(cache_dir: str) -> float:
    """Run ``FIRST_CALL`` in a new interpreter with ``NUMBA_CACHE_DIR=cache_dir``."""
    # Import the numsoft the benchmarks import (asv's "existing" environment finds it
    # through a path it does not hand down to subprocesses).
    root = os.path.dirname(os.path.dirname(os.path.abspath(numsoft.__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=path)
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"first-call subprocess failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


class TrackFirstCall:
    """Seconds from ``import numsoft`` to the first ``softmax`` result, by cache state."""

    timeout = 600
    params = (("cold", "warm"),)
    param_names = ["cache"]

    def setup(self, cache):
        numsoft_function("softmax")
        self.cache_dir = tempfile.mkdtemp(prefix="numsoft-jit-")
        if cache == "warm":
            first_call_seconds(self.cache_dir)

    def teardown(self, cache):  # asv tears down skipped benchmarks too
        if hasattr(self, "cache_dir"):
            shutil.rmtree(self.cache_dir, ignore_errors=True)

    def track_first_call_seconds(self, cache):
        if cache == "cold":  # each repeat of a cold run needs an empty cache again
            shutil.rmtree(self.cache_dir, ignore_errors=True)
            os.makedirs(self.cache_dir)
        return first_call_seconds(self.cache_dir)

    track_first_call_seconds.unit = "seconds"


class TimeNjitRowLoop:
    """A Numba user's loop over 20 000 rows, one numsoft call per row inside ``@njit``,
    beside the same loop written by hand (``njit_loops.LOOPS``): the cost of a small
    call inside jitted code. ``asv_bench/njit_calls.py`` prints the same as a table,
    with the compile time of such a caller."""

    params = (tuple(LOOPS), (4, 16, 256), ("float32", "float64"), SIDES)
    param_names = ["function", "n", "dtype", "loop"]

    def setup(self, function, n, dtype, loop):
        self.loop = compile_loop(function, loop)
        self.args = inputs(20_000, n, dtype)
        self.loop(*self.args)  # compiled here, not timed

    def time_row_loop(self, function, n, dtype, loop):
        self.loop(*self.args)
