"""The targets table: every shape against SciPy, torch and a copy, in one process.

    python asv_bench/targets.py                  # the table, short rows, the long ones
    python asv_bench/targets.py --threads 1
    python asv_bench/targets.py --only table     # or: short, long

Each row of the table is one dtype, shape and axis, with three ratios measured side by
side (the contenders take turns, the best of ``--repeat`` rounds is kept):

- SciPy ÷ numsoft: ``scipy.special.softmax`` over ``numsoft.softmax``, both allocating;
- torch ÷ numsoft: ``torch.softmax`` (same thread count) over numsoft, both allocating;
- out= ÷ copy: ``numsoft.softmax(x, out=out)`` over ``np.copyto(out, x)``.

Then the short rows (2^21 float32 elements in rows of 32, 128 and 512, torch ÷ numsoft
for softmax, log_softmax and logsumexp) and the long ones (8192² ``out=`` ÷ copy, one
row of 2^26: torch ÷ numsoft and three-pass-reload ÷ two-pass). A ratio that misses its
target is starred.

torch runs in rounds of its own after the others, then the script pauses: its OpenMP
threads spin after each call and slowed a numsoft call taking turns with it (4096²
float32 ``out=``: 5.4 → 7.3 ms), and ``OMP_WAIT_POLICY=passive``, which stops that,
slows torch's small calls 5×. Needs about 2.5 GiB and torch (the CPU wheel); asv tracks the table
through ``benchmarks/bench_compare.py:TrackTargets``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.short_rows import pairs  # noqa: E402

#: (dtype, shape, axis) of the table, in the issue's order.
TABLE = (
    ("float32", (16384, 128), -1),
    ("float32", (4096, 4096), -1),
    ("float32", (4096, 4096), 0),
    ("float32", (1, 1 << 20), -1),
    ("float32", (1, 1 << 24), -1),
    ("float32", (64, 100), 0),
    ("float64", (4096, 4096), -1),
    ("float64", (4096, 4096), 0),
    ("float64", (1, 1 << 24), -1),
    ("float64", (64, 100), 0),
)
#: The issue's targets per ratio: SciPy ÷ numsoft ≥ 5, torch ÷ numsoft ≥ 1 (numsoft no
#: slower), out= ÷ copy ≤ 1.3 (axis 0) or 1.2 (one row of 2^24).
SCIPY_TARGET = 5.0
TORCH_TARGET = 1.0
SHORT_ROW_TARGET = 1.5
LONG_ROW_TARGET = 6.0
SMALL = 1 << 16  # below this many elements a call is per-call cost: no out= ÷ copy


def case_label(dtype: str, shape, axis: int) -> str:
    """``"float32 4096x4096 axis=0"``: a row of the table, as asv's parameter names it."""
    return f"{dtype} {'x'.join(map(str, shape))} axis={axis}"


def small_table() -> tuple:
    """The table on arrays of at most 4096 elements per row and 64 rows: the same
    calls for asv's smoke run, in milliseconds (rows that become alike, once)."""
    return tuple(dict.fromkeys((d, (min(s[0], 64), min(s[1], 4096)), a) for d, s, a in TABLE))


def copy_target(shape, axis) -> float | None:
    """The issue's bound on out= ÷ copy for a shape, None where it sets none."""
    if axis == 0 and shape[0] > 64:
        return 1.3
    if shape == (1, 1 << 24):
        return 1.2
    return None


def best_side_by_side(calls: dict, repeat: int, min_time: float = 0.05) -> dict:
    """Best time in seconds of each call, the calls taking turns round by round.

    Short calls are timed in loops of at least ``min_time`` / 10 seconds, so that a
    5 µs call is not a timer reading; every call runs once before timing starts.
    """
    loops = {}
    for name, fn in calls.items():
        fn()
        t0 = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t0, 1e-7)
        loops[name] = max(1, int(min_time / 10 / once))
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, fn in calls.items():
            n = loops[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / n)
    return best


def best_torch(calls: dict, repeat: int) -> dict:
    """``best_side_by_side`` of torch's calls, then a pause for its threads to sleep."""
    t = best_side_by_side(calls, repeat)
    time.sleep(0.3)
    return t


def table_row(dtype: str, shape, axis: int, repeat: int, torch=None) -> dict:
    """Times (s) and the three ratios of one row of the table."""
    import scipy.special

    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    out = np.empty_like(x)
    calls = {
        "numsoft": lambda: numsoft.softmax(x, axis=axis),
        "scipy": lambda: scipy.special.softmax(x, axis=axis),
    }
    if x.size >= SMALL:
        calls["out="] = lambda: numsoft.softmax(x, axis=axis, out=out)
        calls["copy"] = lambda: np.copyto(out, x)
    t = best_side_by_side(calls, repeat)
    if torch is not None:
        tx = torch.from_numpy(x)
        t |= best_torch({"torch": lambda: torch.softmax(tx, axis)}, repeat)
    ratios = {"scipy/numsoft": t["scipy"] / t["numsoft"]}
    if "torch" in t:
        ratios["torch/numsoft"] = t["torch"] / t["numsoft"]
    if "copy" in t:
        ratios["out=/copy"] = t["out="] / t["copy"]
    return {"times": t, "ratios": ratios}


def _mark(value: float, target: float | None, higher_is_better: bool = True) -> str:
    if target is None:
        return f"{value:.2f}"
    met = value >= target if higher_is_better else value <= target
    return f"{value:.2f}" + ("" if met else "*")


def print_table(repeat: int, torch) -> None:
    print("| dtype | shape, axis | numsoft | SciPy ÷ numsoft | torch ÷ numsoft | out= ÷ copy |")
    print("|---|---|---:|---:|---:|---:|")
    for dtype, shape, axis in TABLE:
        row = table_row(dtype, shape, axis, repeat, torch)
        r, t = row["ratios"], row["times"]
        cells = [
            f"{t['numsoft'] * 1e3:.4g} ms",
            _mark(r["scipy/numsoft"], SCIPY_TARGET),
            _mark(r["torch/numsoft"], TORCH_TARGET) if "torch/numsoft" in r else "–",
            _mark(r["out=/copy"], copy_target(shape, axis), False) if "out=/copy" in r else "–",
        ]
        where = f"{'×'.join(map(str, shape))}, {axis}"
        print(f"| {dtype} | {where} | " + " | ".join(cells) + " |", flush=True)


def print_short_rows(repeat: int, torch) -> None:
    """torch ÷ numsoft on 2^21 float32 elements in short rows."""
    cells = {}
    for n in (32, 128, 512):
        x = np.random.default_rng(0).standard_normal(((1 << 21) // n, n)).astype("f4")
        calls = pairs(x, torch)
        t = best_side_by_side({f: ours for f, ours, _ in calls}, repeat)
        t |= best_torch({f"torch {f}": theirs for f, _, theirs in calls}, repeat)
        for f in ("softmax", "log_softmax", "logsumexp"):
            cells.setdefault(f, []).append(_mark(t[f"torch {f}"] / t[f], SHORT_ROW_TARGET))
    print("\nshort rows, 2^21 float32, torch ÷ numsoft at rows of 32 / 128 / 512:")
    for f, marks in cells.items():
        print(f"  {f}: " + " / ".join(marks), flush=True)


def print_long_rows(repeat: int, torch) -> None:
    """8192² out= ÷ copy; one row of 2^26: torch ÷ numsoft and reload ÷ two-pass."""
    x = np.random.default_rng(0).standard_normal((8192, 8192)).astype("f4")
    out = np.empty_like(x)
    t = best_side_by_side(
        {"out=": lambda: numsoft.softmax(x, out=out), "copy": lambda: np.copyto(out, x)},
        repeat,
    )
    print(f"\n8192² float32 out= ÷ copy: {t['out='] / t['copy']:.2f}", flush=True)
    del x, out
    x = np.random.default_rng(0).standard_normal((1, 1 << 26)).astype("f4")
    out = np.empty_like(x)
    calls = {
        "numsoft": lambda: numsoft.softmax(x),
        "two-pass": lambda: numsoft.softmax(x, out=out, algorithm="two-pass"),
        "reload": lambda: numsoft.softmax(x, out=out, algorithm="three-pass-reload"),
    }
    t = best_side_by_side(calls, repeat)
    if torch is not None:
        tx = torch.from_numpy(x)
        t |= best_torch({"torch": lambda: torch.softmax(tx, -1)}, repeat)
    line = f"1×2^26 float32: reload ÷ two-pass {t['reload'] / t['two-pass']:.2f}"
    if torch is not None:
        line += f", torch ÷ numsoft {_mark(t['torch'] / t['numsoft'], LONG_ROW_TARGET)}"
    print(line, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7, help="rounds per case (best kept)")
    ap.add_argument("--only", choices=("table", "short", "long"))
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    threads = min(args.threads, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    head = f"{threads} threads, numsoft {numsoft.__version__}, best of {args.repeat}"
    print(head + "; * marks a missed target")
    if args.only in (None, "table"):
        print_table(args.repeat, torch)
    if args.only in (None, "short") and torch is not None:
        print_short_rows(args.repeat, torch)
    if args.only in (None, "long"):
        print_long_rows(args.repeat, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
