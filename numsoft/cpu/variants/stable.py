"""StableMax, log-StableMax and softpick: softmax replacements that never overflow.

StableMax (Prieto et al., "Grokking at the Edge of Numerical Stability", arXiv
2501.04697) replaces exp by s(v) = v + 1 for v ≥ 0, 1/(1 - v) for v < 0, which grows
linearly, and L1-normalizes. Softpick (arXiv 2504.20966) is relu(e^z - 1) normalized by
Σ|e^z - 1| + eps: not sum-to-one, and exactly 0 for z ≤ 0.
"""

from __future__ import annotations

import math

from .._jit import kernel
from ..expfast import exp_fast
from ..passes import is_finite, row_max, special_row_write
from .passes import expm1_fast, l1_normalize_stored

# ---------------------------------------------------------------- row kernels


@kernel
def store_stable_and_sum(x, y, inv_t):
    """y = s(z), z = x·inv_t, returning Σ y. One read, one write per element; y may be x.

    s(-inf) = 0 (excluded entries drop out), s(+inf) = +inf, s(NaN) = NaN.
    """
    one = x.dtype.type(1.0)
    s = x.dtype.type(0.0)
    for i in range(x.size):
        z = x[i] * inv_t
        w = z + one if z >= 0 else one / (one - z)
        y[i] = w
        s += w
    return s


@kernel
def stablemax_row(x, y, inv_t, log_output):
    """stablemax (or log_stablemax) of one row: store s(z) with Σ, then normalize.

    2 reads, 2 writes per element (the second pass is on y).
    """
    l1_normalize_stored(y, store_stable_and_sum(x, y, inv_t), log_output)


@kernel
def stablemax_backward_row(x, dy, dx):
    """dx_j = s'(x_j)/S · (dy_j - Σ_i p_i·dy_i), with s' = 1 (x ≥ 0) or s² (x < 0).

    The Jacobian of stablemax needs S = Σ s(x), which y alone does not determine, so
    this takes the logits. 2 reads of x and dy, 1 write of dx per element.
    """
    one = x.dtype.type(1.0)
    total = x.dtype.type(0.0)
    dot = x.dtype.type(0.0)
    for i in range(x.size):
        v = x[i]
        w = v + one if v >= 0 else one / (one - v)
        total += w
        dot += w * dy[i]
    inv = one / total
    mean = dot * inv
    for i in range(x.size):
        v = x[i]
        w = one if v >= 0 else one / ((one - v) * (one - v))
        dx[i] = w * inv * (dy[i] - mean)


@kernel
def store_softpick_and_sum(x, y, inv_t, m):
    """y = ±|e^(z-m) - e^(-m)| (sign of z), returning Σ|·| over non-excluded entries.

    |e^(z-m) - e^(-m)| = -expm1(-|z|)·e^(max(z, 0) - m) has no cancellation near z = 0.
    Excluded (-inf) entries store 0 and add nothing. One read, one write per element.
    """
    zero = x.dtype.type(0.0)
    s = zero
    for i in range(x.size):
        z = x[i] * inv_t
        mag = -expm1_fast(-abs(z)) * exp_fast((z if z > zero else zero) - m)
        mag = mag if z != -math.inf else zero
        y[i] = mag if z > zero else -mag
        s += mag
    return s


@kernel
def relu_scale_inplace(y, scale):
    """y = max(y, 0)·scale. One read, one write per element."""
    zero = y.dtype.type(0.0)
    for i in range(y.size):
        v = y[i]
        y[i] = v * scale if v > zero else zero


@kernel
def softpick_row(x, y, inv_t, eps):
    """softpick of one row with m = max(z, 0): max; store ±magnitudes with Σ; relu·scale.

    3 reads, 2 writes per element. Denominator Σ|e^(z-m) - e^(-m)| + eps·e^(-m); a zero
    denominator (eps = 0 and every z = 0) gives 0, its limit as eps → 0.
    """
    zero = x.dtype.type(0.0)
    zmax = row_max(x) * inv_t
    if zmax != zmax or zmax == math.inf:
        special_row_write(x, y, False)
        return
    m = zmax if zmax > zero else zero
    den = store_softpick_and_sum(x, y, inv_t, m) + x.dtype.type(eps) * exp_fast(-m)
    if not is_finite(den):
        special_row_write(y, y, False)  # only NaN makes den non-finite: an all-NaN row
        return
    relu_scale_inplace(y, x.dtype.type(1.0) / den if den > zero else zero)
