"""Online-normalizer statistics on the device (Milakov & Gimelshein, arXiv 1805.02867).

Each thread reads its elements of a row once, keeping the running maximum ``m`` of the
finite entries and ``d = Σ exp((x - m)·inv_t)``, rescaled when ``m`` grows; the
threads' ``(m, d)`` partials merge with ``reduce.MERGE_ONLINE``. With the write pass
(``passes.write_row``) the traffic is 2 reads of x and 1 write of y per element, and the
second read of a row usually hits L2.
"""

from __future__ import annotations

import math

from ._jit import device


@device
def lane_online(x3, o, j, start, stop, step, inv_t):
    """Online partial ``(m, d, n_nan, n_posinf, 0)`` of ``x3[o, start:stop:step, j]``."""
    T = x3.dtype.type
    m = T(-math.inf)
    d = T(0.0)
    n_nan = T(0.0)
    n_inf = T(0.0)
    for i in range(start, stop, step):
        v = x3[o, i, j]
        if v > m:
            if v == math.inf:
                n_inf += T(1.0)
            else:
                d = d * math.exp((m - v) * inv_t) + T(1.0)
                m = v
        elif v > -math.inf:
            d += math.exp((v - m) * inv_t)
        elif v != v:
            n_nan += T(1.0)
    return m, d, n_nan, n_inf, T(0.0)
