"""Vectorizable natural logarithm of a positive float64 (``log_fast``).

Used where a loop takes a log per element: Gumbel noise (``variants.sampling``, two
logs per element), where a libm call per element would keep the loop scalar.
:func:`log_fast` is straight-line arithmetic on registers, so such a loop vectorizes
(8 float64 lanes on AVX-512). The short rows' row sums once took their logs here, 16
rows at a time; libm's ``log`` over the same group of 16, outside the row loop, was as
fast and compiles 0.2 s faster (``three_pass.short_rows_log_sums``). Called once per
row, scalar, it is slower than libm's ``log`` (its division and series are one long
chain).

Method: ``s = m·2**e`` from the bits of ``s``, ``m`` moved to ``[√½, √2)``; then
``log m = 2·atanh(f)`` with ``f = (m - 1)/(m + 1)``, ``|f| ≤ 0.1716``, summed as its
Taylor series ``2f + 2f³/3 + … + 2f¹⁹/19`` (the next term is below 2**-55 of the first),
and ``log s = e·ln2_hi + (e·ln2_lo + log m)`` with ``e·ln2_hi`` exact.

>>> import math
>>> abs(log_fast(10.0) - math.log(10.0)) < 1e-15
True
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from numsoft.cpu._jit import kernel
from numsoft.cpu.expfast import _fmuladd

__all__ = ["log_fast"]

#: ln 2 to 42 significant bits: ``e * _LN2_HI`` is exact for every float64 exponent e.
_LN2_HI = float.fromhex("0x1.62e42fefa3800p-1")
_LN2_LO = math.log(2.0) - _LN2_HI
_SQRT2 = math.sqrt(2.0)
#: 2/(2k+1) for k = 9 … 1: the atanh series after its first term, Horner order.
_ATANH_SERIES = tuple(2.0 / (2 * k + 1) for k in range(9, 0, -1))


@intrinsic
def _binade_split(typingctx, s):
    """``(m, e)`` with ``s = m * 2**e``, ``m`` in ``[1, 2)``, for a positive normal float64
    (from its bits: no ``frexp`` call, so loops over it vectorize)."""
    if isinstance(s, types.Float) and s.bitwidth == 64:

        def codegen(context, builder, sig, args):
            i64 = ir.IntType(64)
            bits = builder.bitcast(args[0], i64)
            e = builder.sub(builder.lshr(bits, i64(52)), i64(1023))
            mantissa = builder.or_(builder.and_(bits, i64((1 << 52) - 1)), i64(1023 << 52))
            m = builder.bitcast(mantissa, ir.DoubleType())
            return context.make_tuple(
                builder, sig.return_type, [m, builder.sitofp(e, ir.DoubleType())]
            )

        return types.UniTuple(types.float64, 2)(s), codegen


@kernel
def log_fast(s):
    """``log(s)`` for a positive, normal, finite float64 ``s``; within 2 ulp (1.7 measured
    over 2**21 points from 1e-304 to 1e304 and [1, 4097]), ``log(1) == 0`` exactly.

    Other inputs (0, subnormals, negatives, inf, NaN) give an unspecified finite or NaN
    value: callers pass a row's Σ exp, which is at least 1. Cost: a division and 13
    multiply-adds, no memory access, no branches.
    """
    m, e = _binade_split(s)
    high = m > _SQRT2
    m = m * 0.5 if high else m
    e = e + 1.0 if high else e
    f = (m - 1.0) / (m + 1.0)
    f2 = f * f
    q = _ATANH_SERIES[0]
    for i in range(1, len(_ATANH_SERIES)):  # constant trip count: unrolled
        q = _fmuladd(q, f2, _ATANH_SERIES[i])
    log_m = _fmuladd(f * f2, q, 2.0 * f)
    return _fmuladd(e, _LN2_HI, _fmuladd(e, _LN2_LO, log_m))
