"""Vectorizable ``exp``, ``ldexp`` and extended-exponent reduction for float32/float64.

Numba here has no SVML, so a loop over ``math.exp``/``np.exp`` compiles to one scalar libm
call per element and never vectorizes. The functions below are branch-free straight-line
code on registers (no tables, no memory traffic besides the caller's own loads/stores), so
when they are inlined into a ``@kernel`` loop LLVM vectorizes them (``<16 x float>`` /
``<8 x double>`` on AVX-512).

Method (Cody & Waite; the extended-exponent split of Dukhan & Ablavatski, arXiv 2001.04438):

* ``n = rint(x*log2(e))`` and ``r = (x - n*ln2_hi) - n*ln2_lo``. ``ln2_hi`` has few enough
  significant bits that ``n*ln2_hi`` is exact for ``|n| <= 2**B``; the subtraction is then
  exact (Sterbenz), so ``r`` is accurate up to ``|x| <= EXTEXP_MAX_ABS_*``.
* ``e**r`` for ``|r| <= ln2/2`` is a Horner polynomial ``1 + r + c2 r^2 + ...`` whose
  coefficients (``c0 = c1 = 1`` fixed, so ``exp(0) == 1``) are a relative-error minimax
  fit (Remez exchange in 60 digits, then rounded): degree 6 for float32, 11 for float64;
  ``exp_nonpositive`` takes degree 5 in float32 (1.91 ulp instead of 0.91).
* ``2**n`` is made from exponent bits (int -> float ``bitcast``), in two factors so that
  ``n`` outside the normal exponent range still gives a single, correct rounding
  (gradual underflow to subnormals, overflow to ``inf``).
* For ``x <= 43`` (every softmax pass exponentiates ``x - max <= 0``),
  ``exp_nonpositive`` rounds ``n`` by adding a bias constant and takes ``2**(n + 64)``
  from that sum's bits, then multiplies by ``2**-64``: 8 fewer vector operations, the
  same accuracy. ``ldexp_nonpositive`` is the same scaling for a given ``k <= 62``.

Each function is generic: float32 in -> float32 arithmetic throughout (no promotion to
float64, which would halve the vector width); float64 in -> float64.

The ``reassoc`` flag of ``SAFE_FASTMATH`` would let LLVM fold ``(x - n*hi) - n*lo`` into
``x - n*ln2`` or ``(p*2**a)*2**b`` into ``p*(2**a*2**b)``, destroying the reduction or the
underflow handling. So multiply-adds are ``llvm.fmuladd`` calls (never reassociated) and
the power-of-two multiply is emitted by an intrinsic with an explicit ``nsz`` flag (Numba's
fastmath pass only adds flags to float instructions that have none).

Called from Python they return Python floats (Numba boxes scalars); in jitted code a
float32 argument gives a float32 result.

>>> import numpy as np
>>> exp_fast(1.0)
2.718281828459045
>>> exp_fast(np.float32(-100.0))  # float32 subnormal: 27 * 2**-149
3.7835e-44
>>> exp_reduce(np.float32(3.0))  # e**3 = 1.2553 * 2**4
(1.2553, 4.0)
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from numsoft.cpu._jit import kernel
from numsoft.cpu.dtype_constants import per_dtype
from numsoft.cpu.simd import strict_sub

__all__ = [
    "EXTEXP_MAX_ABS_F32",
    "EXTEXP_MAX_ABS_F64",
    "exp_fast",
    "exp_nonpositive",
    "exp_reduce",
    "extexp_bound",
    "extexp_max_abs",
    "ldexp_fast",
    "ldexp_nonpositive",
]

#: ``exp_reduce`` is accurate for ``|x| <= EXTEXP_MAX_ABS_*`` (= 2**B * ln 2 with B = 12
#: for float32 and 25 for float64): there ``|n| <= 2**B`` so ``n*ln2_hi`` is exact, and the
#: error of ``ln2_hi + ln2_lo`` times ``n`` stays below 2**-27 (f32) / 2**-59 (f64).
EXTEXP_MAX_ABS_F32 = 2.0**12 * math.log(2.0)  # ~2839.1
EXTEXP_MAX_ABS_F64 = 2.0**25 * math.log(2.0)  # ~2.33e7

_Consts = namedtuple(
    "_Consts",
    [
        "log2e",  # log2(e)
        "ln2_hi",  # ln 2 rounded to few bits: n*ln2_hi exact for |n| <= 2**B
        "ln2_lo",  # ln 2 - ln2_hi, rounded
        "poly",  # e**r ~ Horner over poly, highest degree first
        "poly_nonpositive",  # exp_nonpositive's polynomial, the same form
        "x_min",  # exp(x) rounds to 0 for x <= x_min
        "x_max",  # exp(x) overflows for x >= x_max
        "k_max",  # ldexp clamp: beyond it every |p| in range gives 0 or inf
        "half",
        "round_bias",  # rint by addition, with 2**n's exponent bias and SCALE_OFFSET
        "k_min_biased",  # ldexp_nonpositive's clamp: 2**(k + SCALE_OFFSET) stays normal
    ],
)

#: ``exp_nonpositive`` builds ``2**(n + SCALE_OFFSET)`` (a normal number for every ``n``
#: down to the underflow limit, -150 / -1075) and multiplies by ``2**-SCALE_OFFSET`` last.
SCALE_OFFSET = 64
#: ``exp_nonpositive`` is exact-to-contract for ``x <= NONPOSITIVE_X_MAX``: there
#: ``n <= 62`` and ``2**(n + SCALE_OFFSET)`` is still a normal float32.
NONPOSITIVE_X_MAX = 43.0


def _make(dt, ln2_hi, ln2_lo, poly, x_min, x_max, k_max, poly_nonpositive=None):
    mant, bias = (23, 127) if dt == np.float32 else (52, 1023)
    return _Consts(
        log2e=dt(1.0 / math.log(2.0)),
        ln2_hi=dt(float.fromhex(ln2_hi)),
        ln2_lo=dt(float.fromhex(ln2_lo)),
        poly=tuple(dt(c) for c in poly),
        poly_nonpositive=tuple(dt(c) for c in (poly_nonpositive or poly)),
        x_min=dt(x_min),
        x_max=dt(x_max),
        k_max=dt(k_max),
        half=dt(0.5),
        # 1.5 * 2**mant: adding it rounds to an integer kept in the low mantissa bits.
        round_bias=dt(1.5 * 2.0**mant + bias + SCALE_OFFSET),
        k_min_biased=dt(1 - bias - SCALE_OFFSET),  # -190 / -1086
    )


# Minimax coefficients for |r| <= 0.3468 (f32) / 0.3466 (f64): a bit wider than ln2/2 because
# x*log2e is rounded before rint. Relative error after rounding: 2**-27.7 (f32), 2**-56.4 (f64).
_F32 = _make(
    np.float32,
    "0x1.62ep-1",  # 11 significant bits
    "0x1.0bfbe8p-15",  # ln 2 - ln2_hi, from a 60-digit ln 2 (not math.log(2), itself rounded)
    (0.0013814517, 0.008368756, 0.041668393, 0.1666652, 0.49999994, 1.0, 1.0),
    x_min=-104.0,  # < ln(2**-150): rounds to +0
    x_max=89.0,  # > ln(FLT_MAX)
    k_max=252.0,  # 2 * 126: both halves of k stay normal exponents
    # Degree 5 for the softmax passes' exponential: one multiply-add fewer per element.
    # A minimax fit weighted by the ulp of e**r (which doubles at r = 0), each coefficient
    # then moved a few float32 ulps to the smallest error of the float32 evaluation:
    # polynomial 1.06 ulp, exp_nonpositive 1.91 ulp over every float32 in [-104, 43].
    poly_nonpositive=(
        0.008265907876193523,
        0.04189931973814964,
        0.16668133437633514,
        0.4999913275241852,
        0.999999463558197,
        1.0,
    ),
)
_F64 = _make(
    np.float64,
    "0x1.62e42fep-1",  # 28 significant bits
    "0x1.f473de6af278fp-30",
    (
        2.5000061742031496e-08,
        2.763024495181089e-07,
        2.7557586355466153e-06,
        2.4801493107743984e-05,
        0.00019841269506619,
        0.0013888888943622425,
        0.008333333333494434,
        0.04166666666653018,
        0.16666666666666413,
        0.5000000000000011,
        1.0,
        1.0,
    ),
    x_min=-746.0,  # < ln(2**-1075)
    x_max=710.0,  # > ln(DBL_MAX)
    k_max=2044.0,  # 2 * 1022
)


def extexp_max_abs(dtype) -> float:
    """Largest ``|x|`` for which :func:`exp_reduce` is accurate, for ``dtype``."""
    return EXTEXP_MAX_ABS_F32 if np.dtype(dtype) == np.float32 else EXTEXP_MAX_ABS_F64


extexp_bound = per_dtype(
    np.float32(EXTEXP_MAX_ABS_F32),
    np.float64(EXTEXP_MAX_ABS_F64),
    """``extexp_max_abs`` of the dtype of ``x`` (a float or a float array), as that dtype.

    Jit-only, resolved at compile time: a dtype constant, not a run-time argument.
    """,
)

#: ``_consts(x)``: the constants above in the dtype of ``x`` (jit-only).
_consts = per_dtype(_F32, _F64)


@intrinsic
def _fmuladd(typingctx, a, b, c):
    """``a*b + c`` via ``llvm.fmuladd`` (fused where the CPU has FMA); never reassociated."""
    if isinstance(a, types.Float) and a == b == c:

        def codegen(context, builder, sig, args):
            fty = args[0].type
            fn = builder.module.declare_intrinsic(
                "llvm.fmuladd", [fty], ir.FunctionType(fty, [fty, fty, fty])
            )
            return builder.call(fn, args)

        return a(a, b, c), codegen


@intrinsic
def _mul_pow2(typingctx, p, k):
    """``p * 2**k`` for integer-valued ``k`` in the normal exponent range (one rounding).

    ``2**k`` is built from its exponent bits without a float -> int conversion: adding
    ``1.5 * 2**mantissa_bits`` puts the integer ``k`` in the low mantissa bits (exact for
    ``|k| < 2**(mantissa_bits - 1)``), and shifting the sum's bits left by
    ``mantissa_bits`` drops everything above them, leaving ``k << mantissa_bits``. A
    float64 -> int64 ``fptosi`` has no AVX2 instruction (only AVX-512DQ's
    ``vcvttpd2qq``): LLVM scalarized it, and it was half the time of a float64 ``exp``.
    """
    if isinstance(p, types.Float) and p == k:
        width = p.bitwidth
        mant, bias = (23, 127) if width == 32 else (52, 1023)
        shifter = 1.5 * 2.0**mant

        def codegen(context, builder, sig, args):
            pv, kv = args
            ity = ir.IntType(width)
            # Explicit flags stop Numba's fastmath pass adding "reassoc" (it only flags
            # instructions that have none): k + shifter must round as written, and
            # (p*2**a)*2**b must not become p*2**(a+b).
            shifted = builder.fadd(kv, kv.type(shifter), flags=("nsz",))
            e = builder.add(builder.bitcast(shifted, ity), ity(bias))
            scale = builder.bitcast(builder.shl(e, ity(mant)), pv.type)
            return builder.fmul(pv, scale, flags=("nsz",))

        return p(p, k), codegen


@intrinsic
def _mul_pow2_biased(typingctx, p, z):
    """``p * 2**n``, with ``z = n + round_bias`` as ``_consts`` defines it, ``n >= -190``.

    ``z``'s low mantissa bits hold ``n + bias + SCALE_OFFSET``; shifting its bits left by
    the mantissa width drops everything above them, leaving the float
    ``2**(n + SCALE_OFFSET)``, a normal number. ``p`` times it is exact; the product times
    ``2**-SCALE_OFFSET`` rounds once, so subnormal results are correctly rounded. The
    multiplies carry explicit flags so that fastmath does not reassociate them into
    ``p * (2**(n + SCALE_OFFSET) * 2**-SCALE_OFFSET)``, which would flush to zero.
    """
    if isinstance(p, types.Float) and p == z:
        width = p.bitwidth
        mant = 23 if width == 32 else 52

        def codegen(context, builder, sig, args):
            pv, zv = args
            ity = ir.IntType(width)
            scale = builder.bitcast(builder.shl(builder.bitcast(zv, ity), ity(mant)), pv.type)
            exact = builder.fmul(pv, scale, flags=("nsz",))
            return builder.fmul(exact, pv.type(2.0**-SCALE_OFFSET), flags=("nsz",))

        return p(p, z), codegen


@kernel
def _exp_of_reduced(x, n, poly):
    """``e**(x - n*ln2)`` for integer-valued ``n``: the two-constant reduction, then the
    minimax polynomial ``poly`` (2 + its degree fused multiply-adds)."""
    c = _consts(x)
    r = _fmuladd(-n, c.ln2_hi, x)  # exact: n*ln2_hi fits the mantissa, then Sterbenz
    r = _fmuladd(-n, c.ln2_lo, r)
    p = poly[0]
    for i in range(1, len(poly)):  # constant trip count: LLVM fully unrolls
        p = _fmuladd(p, r, poly[i])
    return p


@kernel
def exp_reduce(x):
    """Extended-exponent split ``e**x = p * 2**n``; returns ``(p, n)``.

    ``n = rint(x*log2(e))`` is an integer-valued float of ``x``'s dtype and
    ``p = e**r``, ``r = x - n*ln2``, lies in ``[0.7069, 1.4145]``. For
    ``|x| <= EXTEXP_MAX_ABS_F32`` / ``EXTEXP_MAX_ABS_F64`` (``|n| <= 4096`` / ``2**25``)
    ``p`` is within 0.93 ulp of ``e**(x - n*ln2)`` (measured, both dtypes); outside that
    range (including ``±inf``) the result is unspecified, and NaN gives NaN: callers clamp.

    Cost: 1 mul, 1 rint and 8 (f32) / 13 (f64) fused multiply-adds, no memory access,
    no branches. Used by two-pass softmax to accumulate ``sum e**x`` without overflow.
    """
    c = _consts(x)
    n = np.rint(x * c.log2e)
    return _exp_of_reduced(x, n, c.poly), n


@kernel
def _mul_pow2_split(p, k):
    """``p * 2**k`` for integer-valued ``|k| <= k_max``: two exact powers, one rounding."""
    h = np.rint(k * _consts(p).half)
    return _mul_pow2(_mul_pow2(p, h), k - h)


@kernel
def ldexp_fast(p, k):
    """``p * 2**k`` for integer-valued float ``k`` of ``p``'s dtype, any magnitude.

    ``k`` is clamped to ``±k_max`` (252 / 2044; NaN counts as very negative), split as
    ``h + (k - h)`` with ``h = rint(k/2)``, and ``p`` is multiplied by the two powers of
    two built from exponent bits, so the first product is exact and only the second one
    rounds: very negative ``k`` gives the correctly rounded subnormal or ``0``, large
    ``k`` gives ``±inf``. Correctly rounded for normal ``p`` with
    ``2**-100 <= |p| <= 2**100`` (f32) / ``2**-960 <= |p| <= 2**960`` (f64) and any
    ``k``; ``0``, ``inf`` and NaN ``p`` propagate.

    Cost: 2 compare/selects, 1 rint, 2 float->int converts, 2 integer add/shift pairs,
    2 multiplies; no branches, no memory, vectorizes.
    """
    c = _consts(p)
    k = k if k > -c.k_max else -c.k_max  # also maps NaN to -k_max: fptosi(NaN) is poison
    k = k if k < c.k_max else c.k_max
    return _mul_pow2_split(p, k)


@kernel
def exp_fast(x):
    """``e**x`` for float32 or float64 ``x``, same dtype out; vectorizes inside loops.

    ``x`` is clamped to ``[x_min, x_max]`` (which still underflows to 0 / overflows to inf,
    and keeps NaN), then ``p, n = exp_reduce(x)`` and ``p * 2**n`` as in ``ldexp_fast``
    (its clamp is skipped: here ``|n| <= 1076`` already). Special values:
    ``exp(-inf) = 0``, ``exp(inf) = inf``, ``exp(nan) = nan``, gradual underflow down to
    the smallest subnormal, no FP-exception checks or warnings (pure arithmetic).

    Measured max error vs a float64 / long double oracle: float32 0.91 ulp (exhaustive,
    every float32 in [-104, 104]; beyond, exact 0 / inf), float64 0.92 ulp (1.7e7 points
    over [-746, 710]); subnormal results within 0.86 ulp (ulp = smallest subnormal).
    Cost: ~25 (f32) / ~30 (f64) AVX-512 instructions per vector of 16 / 8 lanes, no memory.
    """
    c = _consts(x)
    x = c.x_max if x > c.x_max else x  # NaN compares false and passes through
    x = c.x_min if x < c.x_min else x
    p, n = exp_reduce(x)
    return _mul_pow2_split(p, n)


@kernel
def exp_nonpositive(x):
    """``e**x`` for ``x <= NONPOSITIVE_X_MAX`` (43): the exponential of a shifted logit.

    Same reduction as :func:`exp_fast`, with a cheaper ``2**n``: ``n`` is rounded by
    adding a bias constant (one multiply-add, no ``rint``), whose low bits then give
    ``2**(n + 64)`` by one shift, and two multiplies make ``p * 2**n`` with gradual
    underflow (``_mul_pow2_biased``). In float32 the polynomial is of degree 5, not 6:
    13 vector operations against ``exp_fast``'s 23, 0.18-0.19 against 0.31-0.34 ns per
    float32 element on Zen 4 (``asv_bench/exp_cost.py``, one thread, in L1; degree 6
    took 0.20-0.24). Its error is 1.91 ulp at most, measured over every float32 in
    [-104, 43] (``exp_fast``: 0.91); subnormal results are within 1.35 of the smallest
    subnormal. float64 has ``exp_fast``'s polynomial and accuracy (0.92 ulp).

    ``exp(-inf) = 0``, ``exp(nan) = nan``. Above 43 (``+inf`` included) the value is
    unspecified: every caller passes a shifted logit ``(x - max)·inv_t <= 0`` or a
    difference of running maxima ``m_old - m_new <= 0``, so there is no upper clamp
    (its compare and select cost 0.243 against 0.196 ns per float32 element). Use
    ``exp_fast`` for any ``x``.

    >>> exp_nonpositive(np.float32(-100.0)) == exp_fast(np.float32(-100.0))
    True
    """
    c = _consts(x)
    x = c.x_min if x < c.x_min else x  # -inf (excluded) to x_min, exp 0; NaN kept
    z = _fmuladd(x, c.log2e, c.round_bias)
    n = strict_sub(z, c.round_bias)  # as written: (a + c) - c must not fold to a
    return _mul_pow2_biased(_exp_of_reduced(x, n, c.poly_nonpositive), z)


@kernel
def ldexp_nonpositive(p, k):
    """``p * 2**k`` for integer-valued float ``k <= 62`` of ``p``'s dtype (any ``k`` below).

    For ``p`` in ``exp_reduce``'s range ``[0.7069, 1.4145]`` (or any normal ``p`` with
    ``|log2 p| <= 60``): correctly rounded, gradual underflow included, as
    ``ldexp_fast``. ``k`` is raised to ``-190`` (float32) / ``-1086`` (float64), where
    every such product already rounds to 0, then turned into ``2**(k + 64)`` and two
    multiplies as in ``exp_nonpositive``: 5 vector operations against ``ldexp_fast``'s 13.
    The output pass of two-pass softmax scales by ``2**(n - E)`` with ``E`` the row's
    largest ``n``, so ``k <= 0`` there.
    """
    c = _consts(p)
    k = k if k > c.k_min_biased else c.k_min_biased  # also maps NaN k to the clamp
    return _mul_pow2_biased(p, k + c.round_bias)
