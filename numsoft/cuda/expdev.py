"""Device-side ``exp`` pieces for the two-pass (extended-exponent) structure.

On the GPU ``math.exp`` is libdevice's accurate exp (a few instructions), so unlike the
CPU backend (``numsoft.cpu.expfast``) no polynomial is needed; what remains is the split
``e**z = p·2**n`` of Dukhan & Ablavatski (arXiv 2001.04438) that lets a row sum be kept
as a (mantissa, exponent) pair. The reduction ``r = z - n·ln2`` uses two fused
multiply-adds with ``ln2 = LN2_HI + LN2_LO``, exact enough for every ``|z|`` up to the
bound that ``numsoft.frontdoor.arguments.extexp_bound`` gives (2839 for float32, 2.3e7 for float64).

All arithmetic stays in the dtype of the input: constants are built with
``dtype.type`` from float64 literals, which NVVM folds at compile time.
"""

from __future__ import annotations

import math

from numba import cuda

from ._jit import device

#: ln 2 as the float64 nearest (``LN2_HI``) plus the float64 nearest of the rest.
LN2_HI = 0.6931471805599453
LN2_LO = 2.3190468138462996e-17
LOG2E = 1.4426950408889634


@device
def ln2_parts(like):
    """(hi, lo) with hi + lo = ln 2 to twice the precision of ``like``'s dtype."""
    hi = like.dtype.type(LN2_HI)
    lo = like.dtype.type((LN2_HI - float(hi)) + LN2_LO)
    return hi, lo


@device
def exp_reduce(z, like):
    """``e**z = p·2**n``: returns ``(p, n)``, ``p = e**r`` in [0.70, 1.42], ``n`` integer-valued.

    ``z`` is finite with ``|z|`` within the extended-exponent bound. ``like`` is an
    array of the compute dtype (it fixes the precision of the constants).
    """
    hi, lo = ln2_parts(like)
    n = like.dtype.type(math.floor(z * like.dtype.type(LOG2E) + like.dtype.type(0.5)))
    r = cuda.fma(-n, hi, z)
    r = cuda.fma(-n, lo, r)
    return math.exp(r), n


@device
def scale_pow2(p, k):
    """``p·2**k`` for an integer-valued float ``k <= 0`` (underflows gracefully to 0)."""
    return math.ldexp(p, int(k))
