"""Top-k softmax: softmax over the k largest entries of each row, 0 elsewhere."""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..expfast import exp_nonpositive
from ..passes import row_max, special_row_write
from .passes import l1_normalize_stored
from .select import kth_largest


@kernel
def store_topk_exp_and_sum(x, y, v, ties, m, inv_t):
    """y = exp((x - m)·inv_t) on the selection, 0 elsewhere, returning Σ y.

    Selected: every x > v, and the first ``ties`` entries equal to v (lowest index
    first). An entry equal to the maximum m gets weight exactly 1, which also gives
    the +inf entries of a row with m = +inf an equal share. 1 read, 1 write.
    """
    zero = x.dtype.type(0.0)
    one = x.dtype.type(1.0)
    s = zero
    for i in range(x.size):
        xi = x[i]
        take = xi > v
        if not take and xi == v and ties > 0:
            take = True
            ties -= 1
        e = (one if xi == m else exp_nonpositive((xi - m) * inv_t)) if take else zero
        y[i] = e
        s += e
    return s


@kernel
def topk_softmax_row(x, y, inv_t, k):
    """softmax over the k largest entries of one row (selection by value of x).

    Max pass, streaming selection of the k-th largest value v (1 read, k-element
    heap), store pass over the selection, normalize pass: 3 reads, 2 writes. Rows with
    at most k non-excluded entries are plain softmax over them.
    """
    m = row_max(x)
    v, above, count, has_nan = kth_largest(x, k, np.empty(k, dtype=x.dtype))
    if has_nan or count == 0:
        special_row_write(x, y, False)
        return
    l1_normalize_stored(y, store_topk_exp_and_sum(x, y, v, k - above, m, inv_t), False)
