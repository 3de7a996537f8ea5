"""``python -m numsoft warmup``: compile the common paths once, up front.

A call compiles the one path it runs (function × pass structure × geometry × output) the
first time that path runs, and caches it on disk (``numsoft.cpu.paths``). This command
runs small calls that reach the paths most programs use, in worker processes side by
side, so that a user or a container build pays the compile time once: later processes
load the kernels from the cache in milliseconds.

The default set is ``softmax``, ``log_softmax`` and ``logsumexp`` in float32 and
float64, along the last axis (short and long rows, one thread and several) and along
another axis, with ``"auto"`` and the pass structure ``"auto"`` picks for large arrays;
and what a torch user's first training step with ``numsoft.torch`` (the entmax drop-in)
runs: ``sparsemax``, ``entmax15``, their backward passes and losses, and the bisection
maps, along the last axis (``DROPIN``); and the kernels a user's ``@njit`` function
calls by address (``NJIT``: ``numsoft.cpu.by_address``). ``--all`` adds every pass
structure, split long rows, the backward passes, the variants, the fused
cross-entropy and divergences (``kl_div``, ``jsd``), and the drop-in's functions along
every axis; names restrict the set to those functions.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import queue
import time
from dataclasses import dataclass

import numpy as np

import numsoft

from .cpu.auto import choose_algorithm
from .cpu.columns import COLUMN_BLOCK
from .cpu.limits import SERIAL_MAX_ELEMENTS as SERIAL
from .cpu.limits import SPLIT_MIN_ROW
from .cpu.machine import last_level_cache_bytes
from .cpu.rows import row_length_classes
from .variants import bisect
from .vocabulary import ALGORITHM_NAMES, PUBLIC_VARIANTS

CORE = ("softmax", "log_softmax", "logsumexp")
BACKWARD = ("softmax_backward", "log_softmax_backward")
#: The variants warmed by default, and the arguments of their calls (before ``axis``).
_VARIANT_ARGS = {v.name: v.warmup for v in PUBLIC_VARIANTS if v.warmup is not None}
VARIANTS = tuple(_VARIANT_ARGS)
FUSED = ("cross_entropy", "kl_div", "jsd")
#: What numsoft.torch's sparse maps run forward and backward (``entmax_bisect``: the
#: bisection maps' one kernel, at α = 1.5 and 2, which take its exact path).
DROPIN = (
    "sparsemax",
    "entmax15",
    "sparsemax_backward",
    "entmax15_backward",
    "sparsemax_loss",
    "entmax15_loss",
    "entmax_bisect",
)
#: The kernels that ``softmax``, ``log_softmax``, ``logsumexp`` and 1-D ``cross_entropy``
#: inside a user's ``@njit`` function call by address (``numsoft._linked``), each with
#: its defaults, on 1-D, 2-D and column input.
NJIT = ("njit",)
DEFAULT = CORE + DROPIN + NJIT
ALL = tuple(dict.fromkeys(CORE + BACKWARD + VARIANTS + FUSED + DROPIN + NJIT))


@dataclass(frozen=True)
class Case:
    """One call: an array of ``shape`` normalized along ``axis`` with ``algorithm``."""

    label: str
    shape: tuple[int, ...]
    axis: int = -1
    algorithm: str = "auto"


def geometries(itemsize: int) -> tuple[Case, ...]:
    """The calls that reach every path the planner picks for items of ``itemsize``
    bytes, along the last axis and along another: a row length from each class of rows
    it tells apart (``rows.row_length_classes``), each on one thread (at most
    ``SERIAL_MAX_ELEMENTS`` elements) and on several, along another axis in narrow
    columns (``auto.NARROW_COLUMNS_BYTES``), one column block and several, and a 1-D
    row split across threads. The shapes are small: the path, not the size, is what
    compiles."""
    cases = []
    for n in row_length_classes(itemsize):
        cases += [
            Case(f"rows of {n}, one thread", (max(1, SERIAL // n), n)),
            Case(f"rows of {n}", (2 * SERIAL // n + 2, n)),
            Case(f"axis=0 of {n}, narrow", (n, 2), axis=0),
            Case(f"axis=0 of {n}, one block", (n, 64), axis=0),
            Case(f"axis=0 of {n}", (n, COLUMN_BLOCK + 1), axis=0),
        ]
    return (*cases, Case("1-D, split across threads", (SPLIT_MIN_ROW,)))


def large_algorithms(function: str, itemsize: int) -> tuple[str, str]:
    """The pass structures "auto" picks on this machine for ``function`` on items of
    ``itemsize`` bytes beyond the cache: (many long rows, one long row)."""
    output = {"exp_output": function == "softmax", "reduction": function == "logsumexp"}
    many = choose_algorithm(1 << 20, itemsize, 64, **output)
    one = choose_algorithm(1 << 28, itemsize, 1, **output)
    return ALGORITHM_NAMES[many], ALGORITHM_NAMES[one]


def _large_cases(function: str, itemsize: int) -> tuple[Case, ...]:
    """The geometries of large arrays, with the pass structures "auto" picks for them
    (small shapes stand in for long rows: the path, not the size, is what compiles)."""
    many, one = large_algorithms(function, itemsize)
    # A middle axis out of cache runs in chunks of rows (cpu/column_chunks.py), a path
    # of its own that only an array beyond the cache reaches: 100 columns of float32
    # (float64 is twice as large) take as many rows as fill the cache.
    rows = last_level_cache_bytes() // (100 * 4) + 1
    return (
        Case("long rows, large", (16, 1024), algorithm=many),
        Case("one long row, large", (SPLIT_MIN_ROW,), algorithm=one),
        Case("axis=0, large", (rows, 100), axis=0),
    )


def _every_algorithm(cases: tuple[Case, ...]) -> tuple[Case, ...]:
    return tuple(
        Case(f"{c.label}, {a}", c.shape, c.axis, a) for a in ALGORITHM_NAMES for c in cases
    )


@dataclass(frozen=True)
class Job:
    function: str
    dtype: str
    cases: tuple[Case, ...]

    def __str__(self) -> str:
        return f"{self.function} {self.dtype} ({len(self.cases)} calls)"


def plan(functions: tuple[str, ...], everything: bool) -> list[Job]:
    """The jobs: one per function and dtype, each running its cases in order.

    A job's cases run in one process: they share kernels, which that process compiles
    once (jobs run side by side; the cache's writes are locked, ``cpu._jit``).
    """
    jobs = []
    for function in functions:
        takes_algorithm = function in CORE
        for dtype in ("float32", "float64"):
            cases = geometries(np.dtype(dtype).itemsize)
            if function in NJIT:  # a caller compiles what it types, not what it runs
                cases = (Case("@njit calls", (3, 4)),)
            if function in DROPIN and not everything:  # torch's dim=-1: rows
                cases = tuple(c for c in cases if c.axis == -1 and len(c.shape) == 2)
            if takes_algorithm:
                large = _large_cases(function, np.dtype(dtype).itemsize)
                cases += large + (_every_algorithm(cases) if everything else ())
            jobs.append(Job(function, dtype, cases))
    return jobs


def _call(function: str, x: np.ndarray, case: Case) -> None:
    labels = 0 if x.ndim == 1 else np.zeros(x.shape[0], np.int64)
    if function == "entmax_bisect":
        for alpha in (1.5, 2.0):
            bisect.entmax_bisect(x, alpha, axis=case.axis)
        return
    if function in NJIT:
        _njit_calls()(x, np.zeros(x.shape[0], np.int64))
        return
    f = getattr(numsoft, function)
    if function in CORE:
        f(x, axis=case.axis, algorithm=case.algorithm)
    elif function in BACKWARD or function.endswith("_backward"):
        f(x, x, axis=case.axis)
    elif function in _VARIANT_ARGS:
        f(x, *_VARIANT_ARGS[function], axis=case.axis)
    elif case.axis == -1 and function.endswith("_loss"):  # class scores along the last axis
        f(x, labels, reduction="none")
        f(x, labels, return_grad=True)
    elif function == "cross_entropy" and case.axis == -1:
        f(x, labels)
    elif function in ("kl_div", "jsd") and case.axis == -1:  # the loss, and with its gradient
        f(x, x)
        f(x, x, return_grad=True)


_njit_caller = None


def _njit_calls():
    """A jitted function that makes the ``NJIT`` calls (compiled on first use: importing
    numsoft compiles nothing)."""
    global _njit_caller
    if _njit_caller is None:
        import numba

        @numba.njit
        def caller(x, labels):
            for i in range(x.shape[0]):
                numsoft.logsumexp(x[i])
                numsoft.softmax(x[i])
                numsoft.log_softmax(x[i])
                numsoft.cross_entropy(x[i], labels[i])
            for axis in (-1, 0):
                numsoft.logsumexp(x, axis=axis)
                numsoft.softmax(x, axis=axis)
                numsoft.log_softmax(x, axis=axis)

        _njit_caller = caller
    return _njit_caller


#: In a worker process: where it reports each call it starts and ends (``warmup``).
_events = None


def _report_to(events) -> None:
    global _events
    _events = events


def run_job(job: Job) -> tuple[Job, float]:
    """Run one job's calls; returns it with its wall time (run in a worker process,
    which reports each call's start and end when ``warmup`` gave it a queue)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    x = None
    for case in job.cases:
        if _events is not None:
            _events.put((job.function, job.dtype, case.label, False))
        if x is None or x.shape != case.shape:  # calls in a row on one shape share it
            x = rng.standard_normal(case.shape).astype(job.dtype)
        _call(job.function, x, case)
        if _events is not None:
            _events.put((job.function, job.dtype, case.label, True))
    return job, time.perf_counter() - t0


class Progress:
    """What ``warmup`` reports; this one reports nothing. ``__main__`` shows a progress
    bar on a terminal and a line per finished job elsewhere."""

    def start(self, jobs: list[Job], workers: int) -> None:
        """Before any worker starts."""

    def call(self, function: str, dtype: str, label: str, done: bool) -> None:
        """A worker started (``done`` False) or finished one call."""

    def job_done(self, job: Job, seconds: float, done: int, total: int) -> None:
        """A job's calls all ran (``done`` of ``total`` jobs)."""

    def tick(self) -> None:
        """About every quarter second while workers run."""


def warmup(
    functions: tuple[str, ...] = DEFAULT,
    everything: bool = False,
    workers: int = 0,
    progress: Progress | None = None,
) -> float:
    """Compile (or load from the cache) the paths of ``functions``; returns the wall time.

    ``workers`` processes run side by side (default: one per core), each a job at a
    time (a function in one dtype); ``progress`` hears of each call and job.
    """
    unknown = sorted(set(functions) - set(ALL))
    if unknown:
        raise ValueError(f"warmup: unknown function(s) {unknown}; choose from {list(ALL)}")
    return run_jobs(plan(functions, everything), workers, progress)


def run_jobs(jobs: list[Job], workers: int = 0, progress: Progress | None = None) -> float:
    """Run ``jobs`` in ``workers`` processes side by side (default: one per core), each
    a job at a time; ``progress`` hears of each call and job. Returns the wall time."""
    workers = min(workers or os.cpu_count() or 1, len(jobs))
    progress = progress or Progress()
    progress.start(jobs, workers)
    t0 = time.perf_counter()
    # Fresh interpreters (spawn): a forked child of a process that has started Numba's
    # OpenMP threads cannot use them.
    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    with cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_report_to, initargs=(events,)
    ) as pool:
        pending = {pool.submit(run_job, job) for job in jobs}
        finished = 0
        while pending:
            done, pending = cf.wait(pending, timeout=0.25, return_when=cf.FIRST_COMPLETED)
            _drain(events, progress)
            for future in done:
                job, seconds = future.result()
                finished += 1
                progress.job_done(job, seconds, finished, len(jobs))
            progress.tick()
    return time.perf_counter() - t0


def _drain(events, progress: Progress) -> None:
    while True:
        try:
            progress.call(*events.get_nowait())
        except queue.Empty:
            return
