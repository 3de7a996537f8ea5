"""``python -m numsoft``: the demo; ``warmup``: compile ahead of use; ``info``: the install.

The demo computes softmax, log_softmax and logsumexp with every pass structure on
sample arrays and prints, per function and algorithm, the max error against SciPy
(float64 reference) and the time relative to NumPy and SciPy, measured side by side.
``warmup`` compiles the common paths into Numba's cache (``numsoft.warmup``); ``info``
prints what a bug report needs (``numsoft.info``).
"""

from __future__ import annotations

import argparse
import functools
import time

import numba
import numpy as np

import numsoft
from numsoft.cpu.machine import other_running_threads
from numsoft.vocabulary import ALGORITHMS
from numsoft.warmup import Progress


def _numpy_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _numpy_log_softmax(x):
    d = x - x.max(axis=-1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=-1, keepdims=True))


def _numpy_logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[..., 0]


def _cache_dir() -> str:
    from numsoft.info import kernel_cache

    return kernel_cache()[0]


class _JobLines(Progress):
    """Warmup progress off a terminal: a line at the start and one per finished job."""

    def start(self, jobs, workers: int) -> None:
        calls = sum(len(job.cases) for job in jobs)
        functions = ", ".join(dict.fromkeys(job.function for job in jobs))
        print(
            f"numsoft warmup: {calls} calls of {functions} in float32 and float64, "
            f"{workers} worker processes, into {_cache_dir()}",
            flush=True,
        )

    def job_done(self, job, seconds: float, done: int, total: int) -> None:
        print(f"[{done:>{len(str(total))}}/{total}] {job}: {seconds:.1f} s", flush=True)


class _Bar(_JobLines):
    """Warmup progress on a terminal: a bar of calls run, the elapsed time, and what
    each worker is running now (tqdm, redrawn every quarter second)."""

    def start(self, jobs, workers: int) -> None:
        from tqdm import tqdm

        super().start(jobs, workers)
        self.running: dict[tuple[str, str], str] = {}
        self.bar = tqdm(
            total=sum(len(job.cases) for job in jobs),
            unit="call",
            dynamic_ncols=True,
            bar_format="{n}/{total} calls {bar} {elapsed} | {desc}",
        )

    def call(self, function, dtype, label, done) -> None:
        if done:
            self.bar.update(1)
            self.running.pop((function, dtype), None)
        else:
            self.running[(function, dtype)] = f"{function} {dtype}: {label}"

    def job_done(self, job, seconds: float, done: int, total: int) -> None:
        self.bar.write(f"[{done:>{len(str(total))}}/{total}] {job}: {seconds:.1f} s")
        if done == total:
            self.bar.n = self.bar.total  # calls still in the queue when the last job ended
            self.bar.close()

    def tick(self) -> None:
        self.bar.set_description_str("; ".join(self.running.values()), refresh=False)
        self.bar.refresh()


def _warmup(args) -> int:
    import sys

    from numsoft import warmup

    functions = tuple(args.functions) or (warmup.ALL if args.all else warmup.DEFAULT)
    progress = _Bar() if sys.stderr.isatty() else _JobLines()
    try:
        seconds = warmup.warmup(functions, args.all, args.jobs, progress)
    except ValueError as exc:
        print(exc)
        return 2
    print(f"done in {seconds:.0f} s; later processes load these kernels from the cache")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m numsoft",
        description="Without a command: the demo (softmax, log_softmax and logsumexp with "
        "every pass structure, errors against SciPy and speed against NumPy and SciPy). "
        "'warmup' compiles ahead of use; 'tune' measures the pass structures and limits on "
        "this machine for algorithm='auto'; 'info' describes the install.",
    )
    parser.add_argument("--rows", type=int, default=2048, help="rows of the sample array")
    parser.add_argument("--cols", type=int, default=2048, help="row length of the sample array")
    parser.add_argument("--repeats", type=int, default=5, help="timing rounds (median of)")
    commands = parser.add_subparsers(dest="command", metavar="{warmup,tune,info}")
    commands.add_parser(
        "info",
        help="versions, threading layer and why, threads, CPU, cache, CUDA",
        description="Print what a bug report needs: versions, the threading layer Numba "
        "runs numsoft on and why, threads, what numsoft read from the CPU, the kernel "
        "cache and whether CUDA is available.",
    )
    warm = commands.add_parser(
        "warmup",
        help="compile the common paths ahead of use (numsoft.warmup)",
        description="Compile numsoft's common paths into Numba's on-disk cache, in worker "
        "processes side by side, so that later processes start without compiling.",
    )
    warm.add_argument(
        "functions",
        nargs="*",
        help="public functions to warm up (default: softmax, log_softmax, logsumexp and "
        "what numsoft.torch's sparse maps run)",
    )
    warm.add_argument(
        "--all",
        action="store_true",
        help="every pass structure, split rows, "
        "the backward passes, the variants and cross_entropy",
    )
    warm.add_argument(
        "--jobs", type=int, default=0, help="worker processes (default: one per core)"
    )
    warm.add_argument(
        "--tune",
        action="store_true",
        help="then measure the pass structures and limits on this machine ('tune')",
    )
    tune = commands.add_parser(
        "tune",
        help="measure the fastest pass structure per case class, and the limits, on this machine",
        description="Time the four pass structures on one array per case class "
        "(function x dtype x L2 / last-level cache / memory x row length), keep the "
        "winners in a plan file that algorithm='auto' follows on this machine, and print "
        "them beside the built-in rule's picks; then the one-thread, split-row and "
        "row-tile limits.",
    )
    tune.add_argument(
        "--check",
        action="store_true",
        help="measure and compare only: the built-in rule's and the plan's picks against "
        "the measured best, nothing written",
    )
    tune.add_argument(
        "--only", default="", help="the classes and limits whose name contains this text"
    )
    tune.add_argument("--rounds", type=int, default=5, help="alternating rounds per case")
    tune.add_argument(
        "--force",
        action="store_true",
        help="write the plan even where the machine looked busy (by default a plan "
        "measured before is kept then)",
    )
    args = parser.parse_args(argv)
    if args.command == "tune":
        from numsoft import tune as tuning

        return tuning.run(check=args.check, only=args.only, rounds=args.rounds, force=args.force)
    if args.command == "warmup":
        status = _warmup(args)
        if status == 0 and args.tune:
            from numsoft import tune as tuning

            status = tuning.run()
        return status
    if args.command == "info":
        from numsoft.info import report

        print(report())
        return 0
    return _demo(args)


#: Rounds whose time spreads more than this above the best mark a busy machine.
BUSY_SPREAD = 0.3


#: Calls in a row of each function per round, the best of which counts: the first call
#: after another library's can pay for memory that library's allocator gave back to the
#: system (page faults on the new output: 0.9 -> 14 ms for a 16 MiB softmax right after
#: SciPy's, in glibc's heap), which is not the kernel's time.
BURST = 3


def _timed_rounds(rounds: int, calls: dict) -> dict:
    """Seconds of each of ``calls`` (name -> zero-argument function) per round (the best
    of ``BURST`` calls in a row), the calls taking turns within each round so that a
    busy spell hits them alike."""
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            best = np.inf
            for _ in range(BURST):
                t0 = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - t0)
            times[name].append(best)
    return {name: np.array(t) for name, t in times.items()}


def _ratio(theirs: np.ndarray, ours: np.ndarray) -> str:
    """Median of the per-round ratios, with their range: how many times faster."""
    r = theirs / ours
    return f"{np.median(r):5.1f}x ({r.min():.1f}-{r.max():.1f})"


def _demo(args) -> int:
    try:
        import scipy.special as sps
    except ImportError:  # the demo still runs; SciPy columns are left out
        sps = None

    funcs = [
        ("softmax", numsoft.softmax, _numpy_softmax),
        ("log_softmax", numsoft.log_softmax, _numpy_log_softmax),
        ("logsumexp", numsoft.logsumexp, _numpy_logsumexp),
    ]
    rng = np.random.default_rng(0)
    arrays = {
        dt: rng.normal(scale=4.0, size=(args.rows, args.cols)).astype(dt)
        for dt in (np.float32, np.float64)
    }
    print(
        f"numsoft {numsoft.__version__}: {args.rows}x{args.cols} sample arrays, "
        f"{numba.get_num_threads()} threads; compiling (or loading) every path first...",
        flush=True,
    )
    # Every call once before any is timed: the first call of a path compiles it (or
    # loads it from the cache), and a timing that included that was noise. Each call is
    # named before it runs, so a compiling one says what it is compiling.
    for x in arrays.values():
        for name, ours, numpy_impl in funcs:
            numpy_impl(x)
            if sps:
                getattr(sps, name)(x, axis=-1)
            print(f"  {name} {x.dtype}:", end="", flush=True)
            for algorithm in ALGORITHMS:
                print(f" {algorithm}", end="", flush=True)
                t0 = time.perf_counter()
                ours(x, algorithm=algorithm)
                print(f" {time.perf_counter() - t0:.1f} s,", end="", flush=True)
            print(" ready", flush=True)
    print(
        f"ms: median over {args.repeats} rounds of the best of {BURST} calls in a row (the "
        f"calls of a table row take turns in each round); 'vs': how many times faster "
        f"numsoft is, median (range) over the rounds; error vs {'SciPy' if sps else 'NumPy'}"
        " in float64\n"
    )
    header = f"{'function':<12} {'dtype':<8} {'algorithm':<18} {'max error':>10} {'ms':>8} "
    header += f"{'vs NumPy':>16}" + (f" {'vs SciPy':>16}" if sps else "")
    print(header)
    print("-" * len(header))
    worst = 0.0
    busy = 0
    others = []
    for dtype, x in arrays.items():
        x64 = x.astype(np.float64)
        for name, ours, numpy_impl in funcs:
            ref = getattr(sps, name)(x64, axis=-1) if sps else numpy_impl(x64)
            calls = {"numpy": functools.partial(numpy_impl, x)}
            if sps:
                calls["scipy"] = functools.partial(getattr(sps, name), x, axis=-1)
            calls |= {a: functools.partial(ours, x, algorithm=a) for a in ALGORITHMS}
            times = _timed_rounds(args.repeats, calls)
            others.append(other_running_threads())
            for algorithm in ALGORITHMS:
                err = float(np.max(np.abs(ours(x, algorithm=algorithm).astype(np.float64) - ref)))
                scale = float(np.max(np.abs(ref))) or 1.0
                worst = max(worst, err / scale / (1e-5 if dtype == np.float32 else 1e-12))
                t = times[algorithm]
                busy += np.median(t) > (1 + BUSY_SPREAD) * t.min()
                row = f"{name:<12} {np.dtype(dtype).name:<8} {algorithm:<18} {err:>10.2e} "
                row += f"{np.median(t) * 1e3:>8.2f} {_ratio(times['numpy'], t):>16}"
                if sps:
                    row += f" {_ratio(times['scipy'], t):>16}"
                print(row)
    rows = 2 * len(funcs) * len(ALGORITHMS)
    sampled = [n for n in others if n is not None]
    signs = []
    if busy > rows // 4:
        signs.append(
            f"{busy} of {rows} rows' rounds spread more than {BUSY_SPREAD:.0%} above their best"
        )
    if sampled and np.median(sampled) >= 1:
        others_running = int(np.median(sampled))
        signs.append(f"{others_running} threads of other processes running during the rounds")
    if signs:
        print(
            f"\nNote: the machine looks busy ({'; '.join(signs)}): numsoft's threads shared "
            "the cores, so read the ratios as rough and rerun on a quiet machine."
        )
    if worst > 1.0:
        print("ERROR: an error exceeded the tolerance")
        return 1
    print("\nAll errors within tolerance (float32 1e-5, float64 1e-12 relative to max |ref|).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
