"""numsoft as users call it: right after a BLAS matmul, and on small arrays.

Both are tracked as ratios of two loops timed interleaved in one process, so machine
noise moves numerator and denominator alike:

- beside BLAS: ``Z = A @ W; softmax(Z, out=Z)`` with numsoft's default threads over
  the same loop on one thread. Spinning thread-pool workers (GNU OpenMP's, beside
  OpenBLAS's) made it 5.5x; the target is <= 1.2 (docs/threads.md).
- small calls: numsoft's time per call over ``scipy.special``'s on (200, 10) float64
  (target <= 0.5), and ``out=`` over the allocating form (target <= 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

import numsoft

from .common import SMOKE, optional_module

ROUNDS = 20 if SMOKE else 400


def medians_side_by_side(first, second, rounds: int = ROUNDS) -> tuple[float, float]:
    """Median time of ``first()`` and of ``second()``, called alternately.

    The median, not the best: contention between thread pools shows in the typical
    call, while the best call may dodge it.
    """
    first()
    second()
    times = np.empty((rounds, 2))
    for i in range(rounds):
        for j, run in enumerate((first, second)):
            t0 = time.perf_counter()
            run()
            times[i, j] = time.perf_counter() - t0
    med = np.median(times, axis=0)
    return float(med[0]), float(med[1])


LOOP = """
import time, numpy as np, numsoft
rng = np.random.default_rng(0)
a, w = rng.standard_normal((2000, 64)), rng.standard_normal((64, 100))
times = []
for _ in range({rounds}):
    t0 = time.perf_counter()
    z = a @ w
    numsoft.softmax(z, axis=1, out=z)
    times.append(time.perf_counter() - t0)
print(np.median(times[len(times) // 10:]))
"""


def loop_median(threads: int | None) -> float:
    """Median time of the matmul-then-softmax loop in a fresh process, with numsoft's
    default threads (None) or ``NUMBA_NUM_THREADS=threads``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = str(threads)
    code = LOOP.format(rounds=ROUNDS)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=600)  # fmt: skip
    return float(out.stdout.split()[-1])


class TrackBesideBlas:
    """Median of a matmul-then-softmax loop, default threads ÷ ``NUMBA_NUM_THREADS=1``.

    Each loop runs in a process of its own, as a user's program does: in one process a
    one-thread loop would run beside the other loop's idle pool workers, which is the
    very contention measured here. Processes alternate (default, one, default, one)
    and the ratio is of the medians over them.
    """

    timeout = 600

    def setup_cache(self):
        pairs = [(loop_median(None), loop_median(1)) for _ in range(1 if SMOKE else 3)]
        default, one = np.median(pairs, axis=0)
        return default / one

    def track_matmul_softmax_over_one_thread(self, ratio):
        return ratio

    track_matmul_softmax_over_one_thread.unit = "ratio"


class TrackSmallCall:
    """Time per call on (200, 10) float64: numsoft ÷ scipy.special, and out= ÷ fresh."""

    params = (("softmax", "logsumexp"),)
    param_names = ["function"]

    def setup(self, function):
        self.special = optional_module("scipy.special")
        self.x = np.random.default_rng(0).standard_normal((200, 10))
        self.out = np.empty(200 if function == "logsumexp" else (200, 10))
        self.function = function

    def track_over_scipy(self, function):
        ours = getattr(numsoft, function)
        theirs = getattr(self.special, function)
        x = self.x
        mine, scipy = medians_side_by_side(lambda: ours(x, axis=1), lambda: theirs(x, axis=1))
        return mine / scipy

    track_over_scipy.unit = "ratio"

    def track_out_over_fresh(self, function):
        func, x, out = getattr(numsoft, function), self.x, self.out
        into, fresh = medians_side_by_side(lambda: func(x, axis=1, out=out),
                                           lambda: func(x, axis=1))  # fmt: skip
        return into / fresh

    track_out_over_fresh.unit = "ratio"
