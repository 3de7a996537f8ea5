"""Cost of one exponential: numsoft's vectorized ``exp_fast`` (any x) and
``exp_nonpositive`` (x <= 43, what every softmax kernel takes of ``x - max``), beside
``np.exp`` and ``torch.exp``, on an array that stays in L1, one thread.

    python asv_bench/exp_cost.py                 # float32 and float64
    python asv_bench/exp_cost.py --dtypes float32 --repeat 50

Prints ns per element and each one's time over ``exp_nonpositive``'s. The input is
``-|N(0, 5)|``, the range of shifted logits. ``roofline_model.py`` takes its compute
roof from ``exp_rate`` here.
"""

from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from asv_bench.roofline import best_time  # noqa: E402
from numsoft.cpu._jit import kernel  # noqa: E402
from numsoft.cpu.expfast import exp_fast, exp_nonpositive  # noqa: E402

#: Elements per call: 16 KiB of float32, resident in L1.
ELEMENTS = 4096
#: Passes over the array per timed call, so that the call overhead is negligible.
REPS = 256


@kernel
def _exp_into(exp, x, y, reps):
    """``reps`` passes of ``y = exp(x)``; ``exp`` is a kernel, a compile-time constant
    (one specialization per function, inlined and vectorized as in the passes)."""
    for _ in range(reps):
        for i in range(x.size):
            y[i] = exp(x[i])


NUMSOFT_EXPS = {"exp_fast": exp_fast, "exp_nonpositive": exp_nonpositive}


def shifted_logits(dtype, size: int = ELEMENTS):
    """``-|N(0, 5)|`` in ``dtype``: what a softmax kernel exponentiates."""
    return -np.abs(5 * np.random.default_rng(0).standard_normal(size)).astype(dtype)


def exp_rate(name: str, dtype, repeat: int, min_time: float) -> float:
    """Exponentials per second of numsoft's ``name`` on an L1-resident array, one thread."""
    x = shifted_logits(dtype)
    y = np.empty_like(x)
    t = best_time(lambda: _exp_into(NUMSOFT_EXPS[name], x, y, REPS), repeat, min_time)
    return REPS * x.size / t


def library_exps(x, y, torch):
    """(name, call) of the libraries' exp of ``x`` into ``y``."""
    calls = {"np.exp": lambda: np.exp(x, out=y)}
    if torch is not None:
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        calls["torch.exp"] = lambda: torch.exp(tx, out=ty)
    return calls


def one_thread_arguments(doc: str, argv, dtypes: str):
    """The options of the exponential timings (``--dtypes``, ``--repeat``, ``--min-time``),
    parsed; Numba then runs on one thread."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--dtypes", default=dtypes)
    ap.add_argument("--repeat", type=int, default=20, help="timings per case (best kept)")
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per case, at least")
    args = ap.parse_args(argv)
    numba.set_num_threads(1)
    return args


def main(argv=None) -> int:
    args = one_thread_arguments(__doc__, argv, "float32,float64")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    for dtype in args.dtypes.split(","):
        ns = {n: 1e9 / exp_rate(n, dtype, args.repeat, args.min_time) for n in NUMSOFT_EXPS}
        x = shifted_logits(dtype)
        y = np.empty_like(x)
        for name, fn in library_exps(x, y, torch).items():
            ns[name] = best_time(fn, args.repeat, args.min_time) * 1e9 / x.size
        base = ns["exp_nonpositive"]
        for name, t in ns.items():
            print(f"{dtype:8s} {name:16s} {t:6.3f} ns/element  {t / base:5.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
