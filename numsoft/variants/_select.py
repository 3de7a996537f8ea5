"""Selection and sorting of a row's largest entries, shared by sparsemax, entmax and top-k.

The sparse variants only need the entries that can be in the support: for α-entmax
the threshold satisfies τ ≥ (α-1)·z_max - 1, so no entry with z ≤ z_max - 1/(α-1)
gets any mass. ``gather_above`` compacts those candidates into a scratch buffer in one
read, and only they are sorted: for typical rows a handful of entries instead of n.
"""

from __future__ import annotations

import numpy as np

from ..cpu._jit import kernel


@kernel
def gather_above(x, scale, lower, buf):
    """Copy z = x·scale for every z > ``lower`` into ``buf``; return (count, has NaN).

    One read of x, ``count`` writes. ``lower`` may be float64 for a float32 row (the
    comparison is then exact). NaN entries are reported and not copied.
    """
    count = 0
    has_nan = False
    for i in range(x.size):
        z = x[i] * scale
        if z > lower:
            buf[count] = z
            count += 1
        elif z != z:
            has_nan = True
    return count, has_nan


@kernel
def sort_desc(buf, count):
    """Sort ``buf[:count]`` in place, largest first. O(count·log count)."""
    head = buf[:count]
    head.sort()
    for i in range(count // 2):
        j = count - 1 - i
        head[i], head[j] = head[j], head[i]


@kernel
def kth_largest(buf, count, k):
    """The k-th largest of ``buf[:count]`` (1 ≤ k ≤ count), by introselect: O(count)."""
    return np.partition(buf[:count], count - k)[count - k]
