"""Softmax of a transformed row: adaptive temperature, scalable softmax, self-adjusting
softmax, MultiMax and the power-of-two Rowmax-PoT weights.

Where the variant is "softmax of something", the row kernel computes the something
(a scale, or a transformed row in the output buffer) and hands it to the core
``softmax_row`` with the call's pass structure, so every guarantee of ``softmax``
(NaN, ±inf, masks, temperature) carries over unchanged.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from ..expfast import exp_nonpositive, ldexp_fast
from ..passes import is_finite, is_regular, row_max, row_sum_exp, special_row_write
from ..rows import softmax_row
from .passes import (
    count_included,
    l1_normalize_stored,
    row_min_included,
    sum_exp_and_weighted,
)

#: β(H) of adaptive temperature, highest degree first (Veličković et al. 2024).
ADAPTIVE_POLY = (-0.037, 0.481, -2.3, 4.917, -1.791)

# ---------------------------------------------------------------- row kernels


@kernel
def adaptive_beta(h):
    """β = max(1, poly(H)) where the entropy H > 0.5, else 1."""
    if not h > 0.5:
        return 1.0
    p = 0.0
    for c in ADAPTIVE_POLY:
        p = p * h + c
    return max(1.0, p)


@kernel
def adaptive_softmax_row(x, y, inv_t):
    """softmax(β·z) with β from the entropy of softmax(z).

    Max (1 read) and (Σ e^d, Σ d·e^d) (1 read) give H = log Σe^d - Σd·e^d/Σe^d, then
    the core softmax of the row at inverse temperature β·inv_t.
    """
    m = row_max(x)
    s, w = sum_exp_and_weighted(x, m, inv_t)
    beta = adaptive_beta(math.log(s) - w / s) if is_regular(m, s) else 1.0
    softmax_row(x, y, inv_t * x.dtype.type(beta))


@kernel
def ssmax_row(x, y, inv_t, s):
    """softmax(s·log(n)·z), n = number of non-excluded entries: a count pass, then softmax.

    For n = 1 the output does not depend on the scale, so it is left at 1 (log 1 = 0
    would turn excluded -inf entries into 0·inf).
    """
    n = count_included(x)
    scale = s * math.log(n) if n > 1 else 1.0
    softmax_row(x, y, inv_t * x.dtype.type(scale))


@kernel
def write_sa(x, y, m, inv_t, inv_s, x_scale, lo, inv_range):
    """y = ((x·x_scale - lo)·inv_range)·softmax(z) from the softmax statistics (m, 1/Σ).

    ``x_scale`` is inv_t (z = x·inv_t), or inv_t times a power of two that ``lo`` and
    ``1/inv_range`` carry too. One read, one write per element; y may be x. Excluded
    entries (weight 0) give 0.
    """
    zero = x.dtype.type(0.0)
    for i in range(x.size):
        v = x[i]
        w = exp_nonpositive((v - m) * inv_t) * inv_s
        y[i] = w * ((v * x_scale - lo) * inv_range) if w > zero else zero


@kernel
def sa_softmax_row(x, y, inv_t, normalized):
    """z·softmax(z), or its range-normalized form, in the three-pass-reload structure.

    Max (and min for the normalized form) pass, Σ exp pass, write pass: 3 reads, 1
    write. Special rows: NaN → NaN; k ``+inf`` entries: 1/k there (normalized) or +inf
    (plain, the limit of z/k); a row of only -inf: NaN, like softmax.
    """
    dt = x.dtype.type
    m = row_max(x)
    s = row_sum_exp(x, m, inv_t)
    if not is_regular(m, s):
        special_row_write(x, y, False)
        if not normalized:
            for i in range(y.size):
                if y[i] > 0:
                    y[i] = math.inf
        return
    lo = dt(0.0)
    x_scale, inv_range = inv_t, dt(1.0)
    if normalized:
        lo = min(row_min_included(x) * inv_t, dt(0.0))
        span = max(m * inv_t, dt(0.0)) - lo
        inv_range = dt(1.0) / span if span > 0 else dt(0.0)
        if inv_range == math.inf:
            # A subnormal span: 1/span overflows. Measure z - lo in units 2^100 smaller
            # (exact: a power of two), so that the range's reciprocal is finite.
            up = dt(2.0**100)
            x_scale, lo, inv_range = inv_t * up, lo * up, dt(1.0) / (span * up)
    write_sa(x, y, m, inv_t, dt(1.0) / s, x_scale, lo, inv_range)


@kernel
def multimax_limit(b1, t1, t3):
    """σ(+inf): the limit of z + t1·relu(z - b1) + t3·relu(z - b3)² (b0, b2 terms vanish)."""
    if t3 != 0:
        return math.inf if t3 > 0 else -math.inf
    if t1 != -1:
        return math.inf if t1 > -1 else -math.inf
    return b1


@kernel
def multimax_row(x, y, inv_t, params):
    """softmax(σ(z)): σ written into y (1 read, 1 write), then the core softmax on y.

    Excluded (-inf) entries stay -inf; +inf entries take σ's limit at +inf.
    """
    dt = x.dtype.type
    zero = dt(0.0)
    b0, b1, b2, b3 = dt(params[0]), dt(params[1]), dt(params[2]), dt(params[3])
    t0, t1, t2, t3 = dt(params[4]), dt(params[5]), dt(params[6]), dt(params[7])
    top = dt(multimax_limit(params[1], params[5], params[7]))
    for i in range(x.size):
        z = x[i] * inv_t
        r0 = b0 - z
        r1 = z - b1
        r2 = b2 - z
        r3 = z - b3
        r0 = r0 if r0 > zero else zero
        r1 = r1 if r1 > zero else zero
        r2 = r2 if r2 > zero else zero
        r3 = r3 if r3 > zero else zero
        v = z + t0 * r0 + t1 * r1 + t2 * r2 * r2 + t3 * r3 * r3
        y[i] = z if z == -math.inf else (top if z == math.inf else v)
    softmax_row(y, y, dt(1.0))


@kernel
def store_pot_and_sum(x, y, m, c):
    """y = 2^(-rint((m - x)·c)), returning Σ y; NaN entries store NaN. 1 read, 1 write."""
    one = x.dtype.type(1.0)
    s = x.dtype.type(0.0)
    for i in range(x.size):
        e = np.rint((m - x[i]) * c)
        w = ldexp_fast(one, -e)
        w = w if e == e else e
        y[i] = w
        s += w
    return s


@kernel
def rowmax_pot_row(x, y, inv_t):
    """Rowmax-PoT of one row: max; store power-of-two weights with Σ; normalize.

    3 reads, 2 writes per element. Each weight is an exact power of two.
    """
    m = row_max(x)
    if not is_finite(m):
        special_row_write(x, y, False)
        return
    c = inv_t * x.dtype.type(1.0 / math.log(2.0))
    l1_normalize_stored(y, store_pot_and_sum(x, y, m, c), False)
