"""numsoft beside SciPy, NumPy and (when installed) torch, on the same inputs.

Every library is called in its natural, allocating form (SciPy has no ``out=``), so
allocating is compared with allocating. numsoft uses ``algorithm="auto"``. The
``library`` parameter puts the libraries on one graph of the dashboard.

Threads: numsoft and torch use ``threads`` (2, the machine's cores); SciPy and NumPy
ufuncs are single-threaded whatever it is set to.
"""

from __future__ import annotations

import functools
import pathlib
import sys

import numpy as np

from .common import (
    AXES,
    DTYPES,
    OUT_OF_CACHE,
    SHAPES,
    SMOKE,
    TRACK_SHAPES,
    available_threads,
    check_peak_tracking,
    extra_peak_mib,
    host_copy,
    make_logits,
    numsoft_function,
    optional_module,
    set_threads,
    timed_side_by_side,
)

# asv_bench's scripts, from this checkout, after site-packages: a history run's numsoft
# is the commit's, installed in its virtualenv (and imported by .common above).
sys.path.append(str(pathlib.Path(__file__).resolve().parents[2]))
from asv_bench.targets import TABLE, case_label, small_table, table_row  # noqa: E402

LIBRARIES = ("numsoft", "scipy", "numpy", "torch")
FUNCTIONS = ("softmax", "log_softmax", "logsumexp")
#: Threads given to numsoft and torch in this module.
COMPARE_THREADS = max(available_threads())


def numpy_softmax(x, axis):
    """The textbook form: ``exp(x - max) / sum``, one temporary reused."""
    e = x - x.max(axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def numpy_log_softmax(x, axis):
    """``x - max - log(sum(exp(x - max)))``."""
    shifted = x - x.max(axis=axis, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return shifted


def numpy_logsumexp(x, axis):
    """``max + log(sum(exp(x - max)))``."""
    m = x.max(axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.exp(x - m).sum(axis=axis))


def implementation(library: str, function: str, threads: int):
    """``f(x, axis)`` computing ``function`` with ``library``; skips what is missing."""
    if library == "numsoft":
        set_threads(threads)
        func = numsoft_function(function)
        return lambda x, axis: func(x, axis=axis)
    if library == "scipy":
        special = optional_module("scipy.special")
        func = getattr(special, function)
        return lambda x, axis: func(x, axis=axis)
    if library == "numpy":
        return {
            "softmax": numpy_softmax,
            "log_softmax": numpy_log_softmax,
            "logsumexp": numpy_logsumexp,
        }[function]
    if library == "torch":
        torch = optional_module("torch")
        torch.set_num_threads(threads)
        func = {
            "softmax": torch.softmax,
            "log_softmax": torch.log_softmax,
            "logsumexp": torch.logsumexp,
        }[function]
        return lambda x, axis: func(torch.from_numpy(x), axis).numpy()
    raise ValueError(f"unknown library {library!r}")


class _Compare:
    timeout = 300
    function = "softmax"
    params = (LIBRARIES, DTYPES, SHAPES, AXES)
    param_names = ["library", "dtype", "shape", "axis"]

    def setup(self, library, dtype, shape, axis):
        func = implementation(library, self.function, COMPARE_THREADS)
        self.x = make_logits(shape, dtype)
        self.run = functools.partial(func, self.x, axis)
        self.run()


class TimeCompareSoftmax(_Compare):
    """softmax by library, both axes (axis=0 is a strided reduction for NumPy/SciPy)."""

    function = "softmax"

    def time_softmax(self, library, dtype, shape, axis):
        self.run()


class TimeCompareLogSoftmax(_Compare):
    """log_softmax by library, float32, last axis."""

    function = "log_softmax"
    params = (LIBRARIES, ("float32",), SHAPES, (-1,))

    def time_log_softmax(self, library, dtype, shape, axis):
        self.run()


class TimeCompareLogsumexp(_Compare):
    """logsumexp by library, float32, last axis."""

    function = "logsumexp"
    params = (LIBRARIES, ("float32",), SHAPES, (-1,))

    def time_logsumexp(self, library, dtype, shape, axis):
        self.run()


class TrackCompareBandwidth:
    """softmax time ÷ ``np.copyto`` time of the same bytes, and GB/s, by library.

    Measured side by side (interleaved with the copy) in ``setup_cache``; the
    allocating call is compared with the preallocated copy, as the anchors in
    ``shared/NUMBA-NOTES.md`` are (float32, 2 threads: torch 6.0×, SciPy 8.1× on
    8192x8192; torch 11.5×, SciPy 7.9× on one row of 2^26).
    """

    timeout = 300
    params = (LIBRARIES, DTYPES, TRACK_SHAPES)
    param_names = ["library", "dtype", "shape"]

    def setup_cache(self):
        results = {}
        for library in LIBRARIES:
            try:
                func = implementation(library, "softmax", COMPARE_THREADS)
            except NotImplementedError as exc:
                results[library] = str(exc)
                continue
            for dtype in DTYPES:
                for shape in TRACK_SHAPES:
                    x = make_logits(shape, dtype)
                    run = functools.partial(func, x, -1)
                    t_run, t_copy = timed_side_by_side(run, host_copy(x))
                    results[library, dtype, shape] = (t_run / t_copy, 2 * x.nbytes / t_run / 1e9)
        return results

    setup_cache.timeout = 1200

    def setup(self, results, library, dtype, shape):
        if library in results:
            raise NotImplementedError(results[library])

    def track_time_over_copy(self, results, library, dtype, shape):
        return results[library, dtype, shape][0]

    track_time_over_copy.unit = "ratio"

    def track_gbps(self, results, library, dtype, shape):
        return results[library, dtype, shape][1]

    track_gbps.unit = "GB/s"


class TrackCompareExtraMemory:
    """Peak memory one softmax call adds, by library (MiB), out-of-cache shape.

    The result alone is 64 MiB (float32) / 128 MiB (float64); more is temporaries.
    """

    timeout = 300
    params = (LIBRARIES, DTYPES)
    param_names = ["library", "dtype"]

    def setup(self, library, dtype):
        check_peak_tracking()
        func = implementation(library, "softmax", COMPARE_THREADS)
        x = make_logits(OUT_OF_CACHE, dtype)
        self.run = functools.partial(func, x, -1)
        self.run()

    def track_extra_peak_mib(self, library, dtype):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"


class TimeCompareCallOverhead:
    """Tiny arrays, one thread: what a call costs beyond its arithmetic (argument
    checks, layout, dispatch), numsoft against the libraries' own per-call cost."""

    params = (LIBRARIES, ("softmax", "logsumexp"), ("1x8", "64x100", "8x8x8"))
    param_names = ["library", "function", "shape"]

    def setup(self, library, function, shape):
        func = implementation(library, function, 1)
        x = make_logits(shape, "float32")
        self.run = functools.partial(func, x, 0 if x.ndim == 3 else -1)
        self.run()

    def time_call(self, library, function, shape):
        self.run()


class TrackTargets:
    """The targets table (``asv_bench/targets.py``): per dtype × shape × axis, SciPy's
    time ÷ numsoft's and torch's ÷ numsoft's (allocating calls, above 1: numsoft is
    faster) and ``softmax(out=)`` ÷ ``np.copyto`` (from 2^16 elements), measured side
    by side on ``COMPARE_THREADS`` threads."""

    timeout = 900
    CASES = small_table() if SMOKE else TABLE
    params = (
        [case_label(*case) for case in CASES],
        ("scipy/numsoft", "torch/numsoft", "out=/copy"),
    )
    param_names = ["case", "ratio"]

    def setup_cache(self):
        try:
            torch = optional_module("torch")
            torch.set_num_threads(COMPARE_THREADS)
        except NotImplementedError:
            torch = None
        set_threads(COMPARE_THREADS)
        repeat = 2 if SMOKE else 7
        return {case_label(*case): table_row(*case, repeat, torch)["ratios"] for case in self.CASES}

    setup_cache.timeout = 900

    def setup(self, results, case, ratio):
        if ratio not in results[case]:
            raise NotImplementedError(f"no {ratio} for {case} (torch missing or a small call)")

    def track_ratio(self, results, case, ratio):
        return results[case][ratio]

    track_ratio.unit = "ratio"
