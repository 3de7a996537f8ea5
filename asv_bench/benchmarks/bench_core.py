"""Core functions (SPEC §3): softmax, log_softmax, logsumexp, softmax_backward.

Timed with a preallocated ``out=`` where the function has one, so the numbers are the
kernel's and not the allocator's (allocating forms are compared with SciPy/NumPy in
``bench_compare``). Every ``setup`` calls the function once with the timed arguments,
which compiles it or loads it from Numba's disk cache: compile time is never timed
(first-call latency is ``bench_jit``).
"""

from __future__ import annotations

import functools

import numpy as np

from .common import (
    ALGORITHMS,
    AXES,
    DTYPES,
    OUT_OF_CACHE,
    SHAPES,
    THREADS,
    TRACK_SHAPES,
    available_threads,
    check_peak_tracking,
    extra_peak_mib,
    host_copy,
    make_logits,
    numsoft_function,
    reduced_shape,
    set_threads,
    timed_side_by_side,
)


class _Rowwise:
    """Shared setup: logits, a preallocated result, the thread count, one warm-up call."""

    timeout = 300
    function = "softmax"
    params = (ALGORITHMS, DTYPES, SHAPES, AXES, THREADS)
    param_names = ["algorithm", "dtype", "shape", "axis", "threads"]

    def setup(self, algorithm, dtype, shape, axis, threads):
        func = numsoft_function(self.function)
        set_threads(threads)
        self.x = make_logits(shape, dtype)
        if self.function == "logsumexp":
            self.out = np.empty(reduced_shape(self.x.shape, axis), dtype=self.x.dtype)
        else:
            self.out = np.empty_like(self.x)
        self.run = lambda: func(self.x, axis=axis, out=self.out, algorithm=algorithm)
        self.run()


class TimeSoftmax(_Rowwise):
    """``softmax(x, axis, out=, algorithm=)`` over the full grid."""

    function = "softmax"

    def time_softmax(self, algorithm, dtype, shape, axis, threads):
        self.run()


class TimeLogSoftmax(_Rowwise):
    """``log_softmax(x, axis, out=, algorithm=)``, 2 threads (scaling: ``TimeSoftmax``)."""

    function = "log_softmax"
    params = (ALGORITHMS, DTYPES, SHAPES, AXES, THREADS[-1:])

    def time_log_softmax(self, algorithm, dtype, shape, axis, threads):
        self.run()


class TimeLogsumexp(_Rowwise):
    """``logsumexp(x, axis, out=, algorithm=)``, 2 threads: 1 read (online, two-pass) or 2."""

    function = "logsumexp"
    params = (ALGORITHMS, DTYPES, SHAPES, AXES, THREADS[-1:])

    def time_logsumexp(self, algorithm, dtype, shape, axis, threads):
        self.run()


class TimeSoftmaxBackward:
    """``softmax_backward(y, dy, axis)`` (allocating: it has no ``out=``)."""

    timeout = 300
    params = (DTYPES, SHAPES, AXES, THREADS)
    param_names = ["dtype", "shape", "axis", "threads"]

    def setup(self, dtype, shape, axis, threads):
        backward = numsoft_function("softmax_backward")
        softmax = numsoft_function("softmax")
        set_threads(threads)
        self.y = softmax(make_logits(shape, dtype), axis=axis)
        self.dy = make_logits(shape, dtype, seed=1)
        self.run = lambda: backward(self.y, self.dy, axis=axis)
        self.run()

    def time_softmax_backward(self, dtype, shape, axis, threads):
        self.run()


class TrackBandwidth:
    """GB/s and time ÷ ``np.copyto`` time of ``softmax(x, out=)``, measured side by side.

    ``np.copyto(dst, x)`` reads and writes ``x.nbytes`` once each: the least traffic
    any softmax can have, so ``time_over_copy`` is how far a pass structure is from the
    memory-bandwidth limit (1.0 = at the limit). Where a row stays in cache between
    passes (``4096x4096``: 16/32 KiB rows) every structure can approach 1.0; on the long
    row every pass goes to memory and the traffic of SPEC §2 bounds the ratio from
    below: 1.5 for two-pass and online (3 elements moved per element against the
    copy's 2), 2.0 for three-pass-reload, 2.5 for three-pass-store.
    ``gbps`` counts the same 2·nbytes per call.

    All combinations are measured in ``setup_cache`` (one process, the copy and the
    softmax interleaved for each); the ``track_`` methods only report them.
    """

    timeout = 300
    params = (("auto", *ALGORITHMS), DTYPES, TRACK_SHAPES, THREADS)
    param_names = ["algorithm", "dtype", "shape", "threads"]

    def setup_cache(self):
        try:
            softmax = numsoft_function("softmax")
        except NotImplementedError as exc:
            return {"skip": str(exc)}
        results = {}
        for dtype in DTYPES:
            for shape in TRACK_SHAPES:
                x = make_logits(shape, dtype)
                out = np.empty_like(x)
                for threads in available_threads():
                    set_threads(threads)
                    for algorithm in self.params[0]:
                        run = functools.partial(softmax, x, out=out, algorithm=algorithm)
                        t_run, t_copy = timed_side_by_side(run, host_copy(x))
                        key = (algorithm, dtype, shape, threads)
                        results[key] = (t_run / t_copy, 2 * x.nbytes / t_run / 1e9)
        return results

    setup_cache.timeout = 1200

    def setup(self, results, algorithm, dtype, shape, threads):
        if "skip" in results:
            raise NotImplementedError(results["skip"])
        if (algorithm, dtype, shape, threads) not in results:
            raise NotImplementedError(f"{threads} threads not available")

    def track_time_over_copy(self, results, algorithm, dtype, shape, threads):
        return results[algorithm, dtype, shape, threads][0]

    track_time_over_copy.unit = "ratio"

    def track_gbps(self, results, algorithm, dtype, shape, threads):
        return results[algorithm, dtype, shape, threads][1]

    track_gbps.unit = "GB/s"


class _MemCore:
    """Setup shared by the memory benchmarks: out-of-cache logits, allocating form."""

    timeout = 300
    params = (("softmax", "log_softmax", "logsumexp", "softmax_backward"), DTYPES)
    param_names = ["function", "dtype"]

    def setup(self, function, dtype):
        func = numsoft_function(function)
        x = make_logits(OUT_OF_CACHE, dtype)
        if function == "softmax_backward":
            y = numsoft_function("softmax")(x)
            self.run = lambda: func(y, x)
        else:
            self.run = lambda: func(x)
        self.run()


class PeakMemCore(_MemCore):
    """asv's peak RSS of the whole process: interpreter, kernels, inputs and the call."""

    def peakmem_call(self, function, dtype):
        self.run()


class TrackExtraMemory(_MemCore):
    """Peak memory one call adds on top of what the process already held (MiB).

    The result (64 MiB for float32 softmax on 4096x4096, ~0 for logsumexp) plus any
    temporaries: a growing number here is a new temporary array.
    """

    def setup(self, function, dtype):
        check_peak_tracking()
        super().setup(function, dtype)

    def track_extra_peak_mib(self, function, dtype):
        return extra_peak_mib(self.run)

    track_extra_peak_mib.unit = "MiB"
