"""Sigmoid attention and softplus-L1 attention: softmax replacements built on an
elementwise map (sigmoid, softplus), without the exponential normalization.
"""

from __future__ import annotations

import math

from .._jit import kernel
from ..expfast import exp_nonpositive
from ..online import softmax_row_online
from ..passes import row_max
from ..paths import specialize
from .passes import count_included, l1_normalize_stored

#: The softmax limit of softplus_l1 uses the online structure (any finite row, any scale).
_softmax_row_online = specialize(softmax_row_online, LOG_OUTPUT=False)


# ---------------------------------------------------------------- row kernels


@kernel
def sigmoid_attention_row(x, y, inv_t, has_bias, bias):
    """y = sigmoid(z + b), b = ``bias`` or -log(n) (n = non-excluded entries).

    Count pass (only for the default bias), then one read and one write per element.
    sigmoid(v) = 1/(1 + e^-v) for v ≥ 0 and e^v/(1 + e^v) below, so neither branch
    overflows and tiny results keep their relative accuracy.
    """
    dt = x.dtype.type
    one = dt(1.0)
    b = dt(bias) if has_bias else dt(-math.log(max(count_included(x), 1)))
    for i in range(x.size):
        v = x[i] * inv_t + b
        e = exp_nonpositive(-abs(v))
        r = one / (one + e)
        y[i] = r if v >= 0 else e * r


@kernel
def store_softplus_and_sum(x, y, inv_t):
    """y = softplus(z) = max(z, 0) + log1p(e^-|z|), returning Σ y. 1 read, 1 write.

    softplus(-inf) = 0 (excluded entries drop out), softplus(+inf) = +inf, NaN → NaN.
    """
    zero = x.dtype.type(0.0)
    s = zero
    for i in range(x.size):
        z = x[i] * inv_t
        w = (z if z > zero else zero) + math.log1p(exp_nonpositive(-abs(z)))
        y[i] = w
        s += w
    return s


@kernel
def softplus_l1_row(x, y, inv_t):
    """softplus(z)/Σ softplus(z): store with Σ, then normalize. 2 reads, 2 writes.

    When every softplus underflows to 0 although some z is finite (all z below about
    -745 in float64), the limit softplus(z) ~ e^z makes the result softmax(z).
    """
    s = store_softplus_and_sum(x, y, inv_t)
    if s == 0.0 and row_max(x) > -math.inf:
        _softmax_row_online(x, y, inv_t)
        return
    l1_normalize_stored(y, s, False)
