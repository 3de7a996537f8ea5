"""Bisection maps with a parameter per row: α-entmax, α-normmax and budget-sparsemax,
as the ``entmax`` package (version 1.3) computes them.

Each is ``p(τ) = clamp(c·x − τ, 0, cap)^r`` with τ the root of ``Σ p(τ)^q = target``,
found by ``n_iter`` halvings of a bracket ``[lo, hi]`` that the caller sets per row
(``numsoft.variants.bisect``); ``p`` is taken at the last midpoint and, for the maps
that ask for it, divided by its sum. Unlike ``numsoft.entmax`` (which bisects only the
support candidates and stops at the dtype's epsilon), every entry takes part and all
``n_iter`` steps run: the results match entmax's for every α, α < 1 included.

Pass structure per row: ``n_iter`` reads of the row (one per step, float64 sums),
one read and one write for ``p``, one more read and write to normalize. α-entmax at
α = 1.5 and 2 (``sparsemax_bisect`` and the default α) finds τ exactly instead, as
``numsoft.sparsemax`` and ``numsoft.entmax15`` do, and replays the ``n_iter`` steps
on it: a few reads of the row for the ``n_iter`` ones.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._jit import kernel, parallel_kernel
from ..simd import borrowed_row
from .sparse import power, power_by_logs, row_threshold, write_threshold_power


@kernel
def _mapped(v, cap, r):
    """clamp(v, 0, cap)^r (``sparse.power``; r = 1 and 2 exact)."""
    v = min(max(v, 0.0), cap)
    return power(v, r)


@kernel
def is_entmax(c, r, q, target, cap):
    """Whether the map is α-entmax (c = α − 1, r = 1/c, q = 1, target 1, no cap); at
    α = 2 (r = 1) and 1.5 (r = 2) it is sparsemax or 1.5-entmax of c·x."""
    return q == 1.0 and target == 1.0 and cap == math.inf and c * r == 1.0


@kernel
def newton_root(x, c, r, lo):
    """τ* of α-entmax at 1 < α < 2, where Σ max(c·x − τ, 0)^r = 1 (r > 1), by Newton
    steps; NaN where they do not settle (the row is then bisected).

    The sum is convex in τ and at least 1 at ``lo``: Newton from ``lo`` approaches the
    root monotonically, never stepping past it, until a step no longer moves τ. One
    vectorized pass per step (``sparse.power_by_logs``) for the sum and its slope.
    """
    tau = lo
    for _ in range(64):
        s = 0.0
        slope = 0.0
        for i in range(x.size):
            v = max(c * np.float64(x[i]) - tau, 0.0)
            p = power_by_logs(v, r)
            s += p
            slope += p / v if v > 0.0 else 0.0
        if s == 1.0:
            return tau
        if not (slope > 0.0 and slope < math.inf):
            return math.nan
        step = tau + (s - 1.0) / (r * slope)
        if not step > tau:  # settled, to rounding
            return tau
        tau = step
    return math.nan


@kernel
def bisect_row(x, y, c, r, q, target, lo, hi, cap, n_iter, normalize):
    """One row of a bisection map (module docstring), into ``y``.

    Where the map is sparsemax or 1.5-entmax (``is_entmax``, r = 1 or 2), τ* comes from
    ``sparse.row_threshold`` (exact, a few passes over the support candidates) and the
    bisection is replayed without evaluating the sums: a step keeps its midpoint
    exactly when the sum there is at least the target, which for this decreasing sum is
    when the midpoint is at most τ*. The same ``n_iter`` decisions, the same last
    midpoint; p is then written by sparse maps' output pass, in the row's dtype. α-entmax
    at any other α between 1 and 2 finds τ* by Newton steps (``newton_root``) and
    replays the bisection on it the same way; α > 2 and α < 1 are bisected.
    """
    one = x.dtype.type(1.0)
    entmax = is_entmax(c, r, q, target, cap)
    exact = entmax and (r == 1.0 or r == 2.0)
    zmax = x.dtype.type(0.0)
    root = math.nan
    if exact:
        zmax, tau_u, exact = row_threshold(x, one, c, int(r))  # a special row: bisected
        root = c * np.float64(zmax) + tau_u if exact else math.nan
    elif entmax and r > 1.0:
        root = newton_root(x, c, r, lo)
    replay = root == root
    dm = hi - lo
    tau = lo
    mid = lo
    for _ in range(n_iter):
        dm /= 2.0
        mid = tau + dm
        if replay:
            if mid <= root:
                tau = mid
            continue
        f = -target
        if entmax and r != 1.0 and r != 2.0:  # α-entmax at any other α
            for i in range(x.size):
                f += power_by_logs(max(c * np.float64(x[i]) - mid, 0.0), r)
        else:
            for i in range(x.size):
                f += power(_mapped(c * np.float64(x[i]) - mid, cap, r), q)
        if f >= 0.0:
            tau = mid
    if exact:
        dt = x.dtype.type
        shift = dt(mid - c * np.float64(zmax))
        s = np.float64(write_threshold_power(x, y, one, zmax, dt(c), shift, dt(r)))
    else:
        s = 0.0
        for i in range(x.size):
            p = _mapped(c * np.float64(x[i]) - mid, cap, r)
            y[i] = p
            s += p
    if normalize:
        inv = 1.0 / s if s != 0.0 else math.nan
        for i in range(y.size):
            y[i] = y[i] * inv


@parallel_kernel
def bisect_rows(x2, y2, c, r, q, target, lo, hi, cap, n_iter, normalize):
    """Row driver: row i with the per-row parameters ``c[i]``, ``r[i]``, ... in parallel
    (rows as reference-free views, ``simd.borrowed_row``: short rows are most of the
    attention shapes these maps see)."""
    for i in prange(x2.shape[0]):
        bisect_row(borrowed_row(x2, i), borrowed_row(y2, i), c[i], r[i], q[i], target[i],
                   lo[i], hi[i], cap, n_iter, normalize)  # fmt: skip


@kernel
def entmax_backward_row(y, dy, dx, e):
    """∂/∂x of α-entmax for one row: ``dx = g·dy − g·Σ(g·dy)/Σg`` with ``g = y^e`` on the
    support (e = 2 − α, ``sparse.power_by_logs``), 0 elsewhere; NaN where Σg = 0.
    Two reads of y and dy, one write, float64 sums."""
    sg = 0.0
    sgd = 0.0
    for i in range(y.size):
        v = np.float64(y[i])
        g = power_by_logs(v, e) if v > 0.0 else 0.0
        sg += g
        sgd += g * np.float64(dy[i])
    ratio = sgd / sg if sg != 0.0 else math.nan
    for i in range(y.size):
        v = np.float64(y[i])
        g = power_by_logs(v, e) if v > 0.0 else 0.0
        dx[i] = g * (np.float64(dy[i]) - ratio)


@parallel_kernel
def entmax_backward_rows(y2, dy2, dx2, e):
    """Row driver of ``entmax_backward_row``, ``e[i]`` for row i, rows in parallel."""
    for i in prange(y2.shape[0]):
        entmax_backward_row(borrowed_row(y2, i), borrowed_row(dy2, i), borrowed_row(dx2, i),
                            e[i])  # fmt: skip
