"""Cheaper exponentials numsoft could use, timed and checked beside ``exp_nonpositive``.

    python asv_bench/exp_alternatives.py                    # float64 and float32
    python asv_bench/exp_alternatives.py --dtypes float64 --repeat 30

``exp_nonpositive`` (what every softmax pass exponentiates) costs one multiply-add and a
subtraction to round ``n``, two multiply-adds for ``r = x - n·ln2``, a Horner polynomial
(degree 11 in float64, 5 in float32), a shift and two multiplies for ``2**n``, and a
compare-select for the lower clamp: 19 vector operations per float64 vector, and on an
AVX-512 core that retires about one 512-bit floating-point operation per cycle, the
polynomial is most of its cost. The alternatives, each in the same reduction:

- ``degree d``: a shorter polynomial (a near-minimax Chebyshev fit, ``mpmath.chebyfit``,
  over the same ``|r| <= 0.3466``): one multiply-add fewer per degree, at the accuracy
  printed;
- ``table 32 + gather``: ``e**x = 2**(n/32)·e**r`` with ``|r| <= ln2/64``, so a degree-5
  polynomial suffices; ``2**(j/32)`` comes from a 32-entry table, which the vectorized
  loop reads with a gather instruction (``vgatherqpd``: Numba has no vector types for a
  register permute);
- ``llvm.ldexp``: ``2**n`` by ``llvm.ldexp``, which LLVM lowers to one ``vscalefpd`` /
  ``vscalefps`` where the CPU has AVX-512 (printed: the count in the loop's assembly);
  without it LLVM may call libm per element, so it runs only on AVX-512 machines.

Timing as ``exp_cost.py``: 4096 shifted logits (``-|N(0, 5)|``) in L1, one thread, ns per
element, best of ``--repeat``. Accuracy: the largest error in ulp of the result over
2^20 arguments spread over [-745, 0] (float32: [-103, 0]), against ``np.exp`` in
``np.longdouble`` (float64; 80-bit on x86, so on other CPUs the float64 errors printed
include the oracle's own) or in float64 (float32). docs/performance.md quotes a run.
"""

from __future__ import annotations

import os
import re
import sys

import mpmath
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from asv_bench.exp_cost import REPS, one_thread_arguments, shifted_logits  # noqa: E402
from asv_bench.roofline import best_time  # noqa: E402
from numsoft.cpu._jit import JIT_OPTIONS, kernel  # noqa: E402
from numsoft.cpu.expfast import (  # noqa: E402
    _consts,
    _exp_of_reduced,
    _fmuladd,
    _mul_pow2_biased,
    exp_nonpositive,
)
from numsoft.cpu.machine import float32_lanes  # noqa: E402
from numsoft.cpu.simd import strict_sub  # noqa: E402

mpmath.mp.dps = 40

#: Table entries of the table-driven exponential (``2**(j/32)``) and its reduction.
TABLE_SIZE = 32
_TABLE = np.array([float(mpmath.mpf(2) ** (mpmath.mpf(j) / TABLE_SIZE)) for j in range(32)])
_LN2_N = mpmath.log(2) / TABLE_SIZE
_LN2_N_HI = float(mpmath.mpf(int(_LN2_N * 2**33)) / 2**33)  # 28 bits: n·hi exact
_LN2_N_LO = float(_LN2_N - _LN2_N_HI)
_N_LOG2E = float(TABLE_SIZE / mpmath.log(2))
_ROUND = 1.5 * 2.0**52  # adding it leaves rint(v) in the low mantissa bits


def chebyshev_poly(degree: int, half_width: float, dtype) -> tuple:
    """Near-minimax coefficients of ``e**r`` on ``|r| <= half_width``, highest first."""
    coeffs, _ = mpmath.chebyfit(mpmath.exp, [-half_width, half_width], degree + 1, error=True)
    return tuple(dtype(float(c)) for c in coeffs)


@intrinsic
def _as_int(typingctx, x):
    """The bits of a float64 as an int64."""
    if x == types.float64:
        return types.int64(x), lambda context, builder, sig, args: builder.bitcast(
            args[0], ir.IntType(64)
        )


@intrinsic
def _as_float(typingctx, i):
    """The float64 whose bits are the int64 ``i``."""
    if i == types.int64:
        return types.float64(i), lambda context, builder, sig, args: builder.bitcast(
            args[0], ir.DoubleType()
        )


@intrinsic
def _ldexp(typingctx, p, n):
    """``p·2**n`` for integer-valued ``n`` of ``p``'s dtype, by ``llvm.ldexp``."""
    if isinstance(p, types.Float) and p == n:

        def codegen(context, builder, sig, args):
            i32 = ir.IntType(32)
            fn = builder.module.declare_intrinsic(
                "llvm.ldexp",
                [args[0].type, i32],
                ir.FunctionType(args[0].type, [args[0].type, i32]),
            )
            return builder.call(fn, [args[0], builder.fptosi(args[1], i32)])

        return p(p, n), codegen


@kernel
def exp_shorter(x, poly):
    """``exp_nonpositive`` with the polynomial ``poly`` instead of its own."""
    c = _consts(x)
    x = c.x_min if x < c.x_min else x
    z = _fmuladd(x, c.log2e, c.round_bias)
    n = strict_sub(z, c.round_bias)
    return _mul_pow2_biased(_exp_of_reduced(x, n, poly), z)


@kernel
def exp_table(x, poly):
    """float64 ``e**x = 2**(n/32)·e**r``, ``2**(j/32)`` read from ``_TABLE``, ``x <= 0``."""
    x = -746.0 if x < -746.0 else x
    z = _fmuladd(x, _N_LOG2E, _ROUND)
    n = strict_sub(z, _ROUND)
    r = _fmuladd(-n, _LN2_N_HI, x)
    r = _fmuladd(-n, _LN2_N_LO, r)
    p = poly[0]
    for i in range(1, len(poly)):
        p = _fmuladd(p, r, poly[i])
    bits = _as_int(z)
    # 2**(floor(n/32) + 64) from the exponent bits, times 2**-64 last (gradual underflow)
    scale = _as_float(((bits >> 5) + (1023 + 64)) << 52)
    return p * _TABLE[bits & (TABLE_SIZE - 1)] * scale * 2.0**-64


@kernel
def exp_scalef(x):
    """``exp_nonpositive`` with ``2**n`` by ``llvm.ldexp``."""
    c = _consts(x)
    x = c.x_min if x < c.x_min else x
    n = np.rint(x * c.log2e)
    return _ldexp(_exp_of_reduced(x, n, c.poly_nonpositive), n)


@numba.njit(**JIT_OPTIONS)  # numsoft's kernel options, uncached: its assembly is read
def _map(exp, x, y, reps, poly):
    """``reps`` passes of ``y = exp(x)`` (``exp`` of one or two arguments)."""
    for _ in range(reps):
        for i in range(x.size):
            y[i] = exp(x[i], poly) if len(poly) else exp(x[i])


def ulp_error(exp, poly, dtype) -> float:
    """Largest error in ulp of ``exp`` over 2^20 arguments of its range (module doc)."""
    lo = -745.0 if dtype == np.float64 else -103.0
    x = np.linspace(lo, 0.0, 1 << 20).astype(dtype)
    y = np.empty_like(x)
    _map(exp, x, y, 1, poly)
    wide = np.longdouble if dtype == np.float64 else np.float64
    ref = np.exp(x.astype(wide))
    tiny = np.finfo(dtype).tiny
    normal = ref >= tiny
    return float(
        np.max(
            np.abs(y[normal].astype(wide) - ref[normal])
            / np.spacing(ref[normal].astype(dtype)).astype(wide)
        )
    )


def ns_per_element(exp, poly, x, y, repeat: int, min_time: float) -> float:
    """Best time of ``y = exp(x)`` per element (``REPS`` passes per timed call)."""
    _map(exp, x, y, 1, poly)
    return best_time(lambda: _map(exp, x, y, REPS, poly), repeat, min_time) * 1e9 / (REPS * x.size)


def cases(dtype):
    """(name, exp, poly) of each alternative in ``dtype``."""
    out = [("exp_nonpositive", exp_nonpositive, ())]
    top = 11 if dtype == np.float64 else 5
    for degree in range(top - 1, top - 4, -1):
        out.append((f"degree {degree}", exp_shorter, chebyshev_poly(degree, 0.3466, dtype)))
    if dtype == np.float64:
        table_poly = chebyshev_poly(5, float(_LN2_N) / 2 * 1.001, np.float64)
        out.append((f"table {TABLE_SIZE} + gather", exp_table, table_poly))
    if float32_lanes() == 16:
        out.append(("llvm.ldexp", exp_scalef, ()))
    return out


def main(argv=None) -> int:
    args = one_thread_arguments(__doc__, argv, "float64,float32")
    for name in args.dtypes.split(","):
        dtype = np.dtype(name).type
        x = shifted_logits(dtype)
        y = np.empty_like(x)
        base = None
        for label, exp, poly in cases(dtype):
            ns = ns_per_element(exp, poly, x, y, args.repeat, args.min_time)
            base = base or ns
            asm = _map.inspect_asm(_map.signatures[-1]) if label == "llvm.ldexp" else ""
            extra = f"  vscalef in loop: {len(re.findall('vscalef', asm))}" if asm else ""
            err = ulp_error(exp, poly, dtype)
            print(
                f"{name:8s} {label:22s} {ns:6.3f} ns/element  {ns / base:5.2f}x  "
                f"max error {err:8.2f} ulp{extra}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
