"""Fenchel–Young losses of the sparse maps: loss and gradient in one row visit.

For a row z with label y and p* the map of z (sparsemax, 1.5-entmax or α-entmax by
``VARIANT``), the loss is ``Ω(p*) + ⟨p* − e_y, z⟩`` and its gradient ``p* − e_y``
(Blondel, Martins & Niculae, arXiv 1901.02324), with

    Ω(p) = (1 − Σ p^α) / (α(α − 1))      (α = 2: sparsemax, α = 1.5: entmax15).

Pass structure per row: the map's own passes write p* into the gradient row (the
``sparse`` row kernels), then one pass reads z and p* for Σ p^α and ⟨p*, z⟩ (float64)
and scales p* in place into the gradient. No other row-sized memory.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ...vocabulary import ENTMAX15, SPARSEMAX
from .._jit import kernel, parallel_kernel
from ..paths import VARIANT
from .sparse import entmax15_row, entmax_bisect_row, sparsemax_row


@kernel
def omega_and_dot(z, p, alpha):
    """(Σ p^α, ⟨p, z⟩) of one row in float64, the products over the support only."""
    s = 0.0
    dot = 0.0
    for i in range(p.size):
        v = np.float64(p[i])
        if v > 0.0:
            s += v * v if alpha == 2.0 else (v * math.sqrt(v) if alpha == 1.5 else v**alpha)
            dot += v * np.float64(z[i])
    return s, dot


@kernel
def fenchel_young_row(z, g, label, alpha, n_iter, ignore_index, scale):
    """The loss of one row; ``scale·(p* − e_label)`` into ``g`` (0 for an ignored row)."""
    zero = g.dtype.type(0.0)
    if label == ignore_index:
        for i in range(g.size):
            g[i] = zero
        return 0.0
    one = z.dtype.type(1.0)
    if VARIANT == SPARSEMAX:
        sparsemax_row(z, g, one)
    elif VARIANT == ENTMAX15:
        entmax15_row(z, g, one)
    else:
        entmax_bisect_row(z, g, one, alpha, n_iter)
    s, dot = omega_and_dot(z, g, alpha)
    loss = (1.0 - s) / (alpha * (alpha - 1.0)) + dot - np.float64(z[label])
    factor = g.dtype.type(scale)
    for i in range(g.size):
        g[i] = g[i] * factor
    g[label] -= factor
    return loss


@parallel_kernel
def fenchel_young_rows(z2, labels, alpha, n_iter, ignore_index, scale, loss, g2):
    """Row driver: ``loss[i]`` and the gradient row ``g2[i]`` for every row, in parallel."""
    for i in prange(z2.shape[0]):
        loss[i] = fenchel_young_row(z2[i], g2[i], labels[i], alpha, n_iter, ignore_index, scale)
