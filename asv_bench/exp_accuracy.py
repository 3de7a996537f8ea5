"""Exhaustive float32 accuracy of numsoft's exponentials: every float32 in each range.

    python asv_bench/exp_accuracy.py                      # both, under 2 minutes on 2 cores
    python asv_bench/exp_accuracy.py --functions exp_nonpositive

Prints, per function and range, the largest error in ulp of a normal result (against
``np.exp`` in float64, exact to well below a float32 ulp), the float32 argument where it
occurs, and the largest error of a subnormal result in units of the smallest subnormal.
Results that overflow (``exp_fast`` above ln(FLT_MAX)) are checked to be ``inf`` and
left out of the error. The unit tests sweep 2^20 points; this script is the exhaustive
check behind the figures in ``numsoft/cpu/expfast.py``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from numsoft.cpu.expfast import exp_fast, exp_nonpositive  # noqa: E402

FUNCTIONS = {"exp_fast": exp_fast, "exp_nonpositive": exp_nonpositive}
#: The ranges each function's contract covers; below -104 every float32 result is 0.
RANGES = {
    "exp_fast": ((-104.0, -0.0), (0.0, 89.0)),
    "exp_nonpositive": ((-104.0, -0.0), (0.0, 43.0)),
}
#: Arguments per batch (64 MiB of float32 per array).
BATCH = 1 << 24


@numba.njit(parallel=True)
def _exp_of_bits(exp, bits, y):
    x = bits.view(np.float32)
    for i in numba.prange(x.size):
        y[i] = exp(x[i])


def _bits(v: float) -> int:
    return int(np.array(v, np.float32).view(np.uint32))


def _ulp_errors(y, x):
    """|y - e**x| in ulp of e**x (the smallest subnormal below the normal range)."""
    ref = np.exp(x.astype(np.float64))
    fi = np.finfo(np.float32)
    _, e = np.frexp(ref)
    e = np.where(ref != 0, e.astype(np.int64) - 1, fi.minexp)
    ulp = np.ldexp(1.0, (np.maximum(e, fi.minexp) - fi.nmant).astype(np.int32))
    return np.abs(y.astype(np.float64) - ref) / ulp, ref


def sweep(exp, lo: float, hi: float):
    """(largest normal error, its argument, largest subnormal error) over [lo, hi]."""
    a, b = sorted((_bits(lo), _bits(hi)))  # one sign: bit patterns run with |x|
    worst, arg, worst_sub = 0.0, None, 0.0
    fi = np.finfo(np.float32)
    for start in range(a, b + 1, BATCH):
        bits = np.arange(start, min(start + BATCH, b + 1), dtype=np.uint32)
        x = bits.view(np.float32)
        y = np.empty_like(x)
        _exp_of_bits(exp, bits, y)
        err, ref = _ulp_errors(y, x)
        over = ref > fi.max
        if not np.all(np.isposinf(y[over])):
            raise AssertionError("a result above FLT_MAX is not inf")
        normal = (ref >= fi.tiny) & ~over
        if normal.any():
            i = np.argmax(np.where(normal, err, 0.0))
            if err[i] > worst:
                worst, arg = float(err[i]), float(x[i])
        if (~normal & ~over).any():
            worst_sub = max(worst_sub, float(err[~normal & ~over].max()))
    return worst, arg, worst_sub


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    args = ap.parse_args(argv)
    for name in args.functions.split(","):
        for lo, hi in RANGES[name]:
            worst, arg, worst_sub = sweep(FUNCTIONS[name], lo, hi)
            print(f"{name:16s} [{lo:g}, {hi:g}]: {worst:.3f} ulp (at x = {arg!r}), "
                  f"subnormal results {worst_sub:.3f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
