"""Selection and sorting of a row's largest entries (sparsemax, entmax, top-k).

The sparse variants only need the entries that can be in the support: for α-entmax
the threshold satisfies τ ≥ (α-1)·z_max - 1, so no entry with z ≤ z_max - 1/(α-1)
gets any mass. ``gather_above`` compacts those candidates into a scratch buffer in one
read, and only they are sorted: for typical rows a handful of entries instead of n.
Top-k needs only the value of the k-th largest entry: ``kth_largest`` keeps the k
largest seen so far in a min-heap during one read, with no copy of the row.
"""

from __future__ import annotations

import math

from .._jit import kernel


@kernel
def gather_above(x, scale, lower, buf):
    """Copy z = x·scale for every z ≥ ``lower`` into ``buf``; return (count, has NaN).

    One read of x; ``buf`` needs room for all of x. ``lower`` may be float64 for a
    float32 row (the comparison is then exact). The bound is inclusive so that the row
    maximum is kept even when ``lower = z_max - reach`` rounds back to z_max (huge
    logits); an entry at the bound gets no mass, so keeping it is harmless. NaN entries
    are reported and not copied. Branch-free (every z is stored, the count advances
    past the kept ones): where about half the entries are kept, a branch per entry
    mispredicted so often that the gather took 12x as long (rows of 50257 float32).
    """
    count = 0
    nan_count = 0
    for i in range(x.size):
        z = x[i] * scale
        buf[count] = z
        count += 1 if z >= lower else 0
        nan_count += 1 if z != z else 0
    return count, nan_count > 0


@kernel
def sort_desc(buf, count):
    """Sort ``buf[:count]`` (no NaN) in place, largest first. O(count·log count).

    Heapsort on a min-heap (the smallest goes to the end first). NumPy's ``sort`` in
    jitted code compiles Numba's quicksort, about a second of every first call of a
    sorting variant; the rows sorted here are the few candidates above a threshold.
    """
    for i in range(count // 2 - 1, -1, -1):
        _sift_down(buf, count, i)
    for end in range(count - 1, 0, -1):
        buf[0], buf[end] = buf[end], buf[0]
        _sift_down(buf, end, 0)


@kernel
def _sift_down(heap, k, i):
    """Restore the min-heap order of heap[:k] below position ``i`` (whose value changed)."""
    while True:
        child = 2 * i + 1
        if child >= k:
            return
        if child + 1 < k and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= heap[i]:
            return
        heap[i], heap[child] = heap[child], heap[i]
        i = child


@kernel
def kth_largest(x, k, heap):
    """(v, above, count, has_nan) for the entries of x above -inf (NaN excluded).

    ``v`` is the k-th largest of them (-inf if there are ``count`` < k) and ``above``
    the number of them strictly greater than v. One read of x; ``heap`` (≥ k
    elements) is the scratch min-heap. O(n) for typical rows (an entry below the
    current k-th largest costs one comparison), O(n·log k) at worst (ascending rows).
    """
    count = 0
    has_nan = False
    for i in range(x.size):
        v = x[i]
        if v > -math.inf:
            if count < k:
                j = count  # sift up
                heap[j] = v
                while j > 0 and heap[(j - 1) // 2] > heap[j]:
                    p = (j - 1) // 2
                    heap[j], heap[p] = heap[p], heap[j]
                    j = p
                count += 1
            elif v > heap[0]:
                heap[0] = v
                _sift_down(heap, k, 0)
        elif v != v:
            has_nan = True
    if count < k:
        return x.dtype.type(-math.inf), count, count, has_nan
    kth = heap[0]
    above = 0
    for j in range(k):
        if heap[j] > kth:
            above += 1
    return kth, above, count, has_nan
