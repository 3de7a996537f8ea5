"""``python -m numsoft warmup``: compile the common paths once, up front.

A call compiles the one path it runs (function × pass structure × geometry × output) the
first time that path runs, and caches it on disk (``numsoft.cpu.paths``). This command
runs small calls that reach the paths most programs use, in worker processes side by
side, so that a user or a container build pays the compile time once: later processes
load the kernels from the cache in milliseconds.

The default set is ``softmax``, ``log_softmax`` and ``logsumexp`` in float32 and
float64, along the last axis (short and long rows, one thread and several) and along
another axis, with ``"auto"`` and the pass structure ``"auto"`` picks for large arrays.
``--all`` adds every pass structure, split long rows, the backward passes, the
variants and the fused cross-entropy; names restrict the set to those functions.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time
from dataclasses import dataclass

import numpy as np

CORE = ("softmax", "log_softmax", "logsumexp")
BACKWARD = ("softmax_backward", "log_softmax_backward")
VARIANTS = (
    "sparsemax", "entmax15", "stablemax", "log_stablemax", "adaptive_softmax", "rowmax_pot",
    "softplus_l1", "softpick", "ssmax", "sa_softmax", "sigmoid_attention", "gumbel_softmax",
    "topk_softmax",
)  # fmt: skip
FUSED = ("cross_entropy",)
ALL = CORE + BACKWARD + VARIANTS + FUSED


@dataclass(frozen=True)
class Case:
    """One call: an array of ``shape`` normalized along ``axis`` with ``algorithm``."""

    label: str
    shape: tuple[int, ...]
    axis: int = -1
    algorithm: str = "auto"


#: The geometries every function is warmed up with (each is a path of its own).
GEOMETRIES = (
    Case("short rows, one thread", (4, 64)),
    Case("short rows", (64, 100)),
    Case("rows of 32", (128, 32)),  # float32: 16 rows at a time as vector lanes (lane_tiles)
    Case("long rows", (16, 1024)),
    Case("axis=0, one thread", (16, 8), axis=0),
    Case("axis=0", (64, 100), axis=0),
)


def large_algorithm() -> str:
    """The pass structure "auto" picks on this machine for arrays beyond the cache."""
    from .cpu.auto import ALGORITHM_NAMES, choose_algorithm

    return ALGORITHM_NAMES[choose_algorithm(1 << 28, 4)]


def _large_cases() -> tuple[Case, ...]:
    """The geometries of large arrays, with the pass structure "auto" picks for them
    (a small shape stands in for long rows: the path, not the size, is what compiles)."""
    from .cpu.machine import last_level_cache_bytes

    picked = large_algorithm()
    # A middle axis out of cache runs in chunks of rows (cpu/column_chunks.py), a path
    # of its own that only an array beyond the cache reaches: 100 columns of float32
    # (float64 is twice as large) take as many rows as fill the cache.
    rows = last_level_cache_bytes() // (100 * 4) + 1
    return (Case("long rows, large", (16, 1024), algorithm=picked),
            Case("axis=0, large", (rows, 100), axis=0))  # fmt: skip


def _extra_cases() -> tuple[Case, ...]:
    from .cpu.auto import ALGORITHM_NAMES
    from .cpu.rows import SPLIT_MIN_ROW

    split = tuple(Case(f"split row, {a}", (1, SPLIT_MIN_ROW), algorithm=a) for a in ALGORITHM_NAMES)
    others = tuple(
        Case(f"{geometry.label}, {a}", geometry.shape, geometry.axis, a)
        for geometry in GEOMETRIES[1:]
        for a in ALGORITHM_NAMES
    )
    return others + split


@dataclass(frozen=True)
class Job:
    function: str
    dtype: str
    cases: tuple[Case, ...]

    def __str__(self) -> str:
        return f"{self.function} {self.dtype} ({len(self.cases)} paths)"


def plan(functions: tuple[str, ...], everything: bool) -> list[Job]:
    """The jobs: one per function and dtype, each running its cases in order.

    A job's cases run in one process: they share kernels, which that process compiles
    once (jobs run side by side; the cache's writes are locked, ``cpu._jit``).
    """
    jobs = []
    for function in functions:
        takes_algorithm = function in CORE
        cases = GEOMETRIES + (_large_cases() if takes_algorithm else ())
        if everything and takes_algorithm:
            cases += _extra_cases()
        for dtype in ("float32", "float64"):
            jobs.append(Job(function, dtype, cases))
    return jobs


def _call(function: str, x: np.ndarray, case: Case) -> None:
    import numsoft

    f = getattr(numsoft, function)
    if function in CORE:
        f(x, axis=case.axis, algorithm=case.algorithm)
    elif function in BACKWARD:
        f(x, x, axis=case.axis)
    elif function == "topk_softmax":
        f(x, 2, axis=case.axis)
    elif function == "gumbel_softmax":
        f(x, seed=0, axis=case.axis)
    elif function == "cross_entropy":
        if case.axis == -1:  # class scores along the last axis: rows of logits
            f(x, np.zeros(x.shape[0], np.int64))
    else:
        f(x, axis=case.axis)


def run_job(job: Job) -> tuple[Job, float]:
    """Run one job's calls; returns it with its wall time (run in a worker process)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for case in job.cases:
        _call(job.function, rng.standard_normal(case.shape).astype(job.dtype), case)
    return job, time.perf_counter() - t0


def warmup(functions: tuple[str, ...] = CORE, everything: bool = False, workers: int = 0,
           echo=print) -> float:  # fmt: skip
    """Compile (or load from the cache) the paths of ``functions``; returns the wall time.

    ``workers`` processes run side by side (default: one per core); ``echo`` reports
    each finished job.
    """
    unknown = sorted(set(functions) - set(ALL))
    if unknown:
        raise ValueError(f"warmup: unknown function(s) {unknown}; choose from {list(ALL)}")
    jobs = plan(functions, everything)
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    # Fresh interpreters (spawn): a forked child of a process that has started Numba's
    # OpenMP threads cannot use them.
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
        futures = [pool.submit(run_job, job) for job in jobs]
        for done, future in enumerate(cf.as_completed(futures), 1):
            job, seconds = future.result()
            echo(f"[{done:>{len(str(len(jobs)))}}/{len(jobs)}] {job}: {seconds:.1f} s")
    return time.perf_counter() - t0
