"""Issue 20's long-row and SciPy targets, measured in one process (float32).

    python asv_bench/targets.py                # 2 threads
    python asv_bench/targets.py --threads 1

Prints one line per target: 8192x8192 ``softmax(out=)`` against ``np.copyto`` (target
<= 1.2x), one row of 2^26 with two-pass against three-pass-reload (>= 1.15x) and
against torch (>= 6x, allocating), and ``scipy.special.softmax`` time over numsoft's
(allocating, >= 5x) at the roofline's shapes. Needs about 2 GiB; torch is optional.
"""

from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.roofline import best_time  # noqa: E402

SCIPY_SHAPES = (((16384, 128), -1), ((1024, 1024), -1), ((4096, 4096), -1),
                ((4096, 4096), 0), ((1, 1 << 20), -1), ((1, 1 << 24), -1))  # fmt: skip


def square_out(best, threads: int, rng) -> None:
    """8192x8192 ``softmax(out=)`` against ``np.copyto`` of the same array."""
    x = rng.standard_normal((8192, 8192)).astype(np.float32)
    out = np.empty_like(x)
    copy = best(lambda: np.copyto(out, x))
    cells = []
    for algorithm in ("auto", "two-pass", "three-pass-reload"):
        t = best(lambda a=algorithm: numsoft.softmax(x, out=out, algorithm=a))
        cells.append(f"{algorithm} {t:.2f} ms ({t / copy:.2f}x)")
    print(f"{threads}T 8192x8192 out=: copy {copy:.2f} ms; " + ", ".join(cells), flush=True)


def one_long_row(best, threads: int, rng, torch) -> None:
    """One row of 2^26: two-pass against reload (``out=``), numsoft against torch."""
    x = rng.standard_normal((1, 1 << 26)).astype(np.float32)
    out = np.empty_like(x)
    two = best(lambda: numsoft.softmax(x, out=out, algorithm="two-pass"))
    reload = best(lambda: numsoft.softmax(x, out=out, algorithm="three-pass-reload"))
    line = f"{threads}T 1x2^26 out=: two-pass {two:.2f} ms, reload {reload:.2f} ms, "
    line += f"reload/two-pass {reload / two:.2f}"
    if torch is not None:
        ours = best(lambda: numsoft.softmax(x))
        theirs = best(lambda: torch.softmax(torch.from_numpy(x), -1), 3)
        line += f"; allocating: numsoft {ours:.2f} ms, torch {theirs:.2f} ms, "
        line += f"torch/numsoft {theirs / ours:.1f}"
    print(line, flush=True)


def scipy_ratio(best, threads: int, rng, shape, axis: int) -> None:
    """``scipy.special.softmax`` time over numsoft's, both allocating."""
    import scipy.special

    x = rng.standard_normal(shape).astype(np.float32)
    ours = best(lambda: numsoft.softmax(x, axis=axis), 7)
    theirs = best(lambda: scipy.special.softmax(x, axis=axis), 3)
    case = f"{threads}T {shape[0]}x{shape[1]} axis={axis}"
    print(f"{case}: numsoft {ours:.3f} ms, scipy {theirs:.3f} ms, "
          f"scipy/numsoft {theirs / ours:.2f}", flush=True)  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5, help="timings per case (best kept)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    threads = min(args.threads, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)

    def best(fn, repeat=args.repeat):
        return best_time(fn, repeat, 0.0) * 1e3

    square_out(best, threads, rng)
    one_long_row(best, threads, rng, torch)
    for shape, axis in SCIPY_SHAPES:
        scipy_ratio(best, threads, rng, shape, axis)
    return 0


if __name__ == "__main__":
    sys.exit(main())
