"""Gumbel-softmax: a differentiable sample from the categorical distribution softmax(z).

The Gumbel noise is drawn inside the kernel from a counter-based generator: the noise
of an element is a pure function of (seed, the element's index), so the result is the
same for a given seed whatever the number of threads or the order rows are visited.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from ..logfast import log_fast
from ..rows import softmax_row

#: splitmix64 (Steele, Lea & Flood 2014): the Weyl increment and the finalizer's constants.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@kernel
def splitmix64_mix(z):
    """The splitmix64 finalizer: a bijective 64-bit mix of ``z`` (uint64)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@kernel(inline="always")  # so that the caller's loop vectorizes
def gumbel_noise(key, index):
    """Standard Gumbel noise g = -log(-log U) for element ``index`` (float64).

    ``U = (h >> 12 + ½)·2^-52`` with ``h = mix(key + (index + 1)·γ)``, the splitmix64
    output number ``index`` of the stream ``key``: U lies in [2^-53, 1 - 2^-53], so
    g is finite (between -3.6 and 36.7).
    """
    h = splitmix64_mix(key + (np.uint64(index) + np.uint64(1)) * _GAMMA)
    u = (np.float64(h >> np.uint64(12)) + 0.5) * 2.0**-52
    return -log_fast(-log_fast(u))  # both arguments are normal: u ≥ 2^-53, -log u ≥ 1e-16


@kernel
def write_one_hot_argmax(y):
    """y ← one-hot of the first maximum of y; all NaN if y has NaN or only -inf."""
    best = 0
    has_nan = False
    for i in range(y.size):
        v = y[i]
        if v != v:
            has_nan = True
        elif v > y[best]:
            best = i
    bad = has_nan or y[best] == -math.inf
    fill = y.dtype.type(math.nan) if bad else y.dtype.type(0.0)
    for i in range(y.size):
        y[i] = fill
    if not bad:
        y[best] = 1.0


@kernel
def gumbel_softmax_row(x, y, inv_t, tau, hard, seed, base, stride):
    """softmax((z + g)/tau), or the one-hot argmax of z + g, for one row.

    Element k of the row has index ``base + k·stride`` in the generator's counter. One
    read of x, one write of z + g into y, then the core softmax (or argmax) on y.
    Excluded (-inf) entries stay -inf.
    """
    dt = x.dtype.type
    key = splitmix64_mix(seed + _GAMMA)
    for k in range(x.size):
        y[k] = x[k] * inv_t + dt(gumbel_noise(key, base + k * stride))
    if hard:
        write_one_hot_argmax(y)
    else:
        softmax_row(y, y, dt(1.0 / tau))
