"""Sparse maps onto the simplex: sparsemax, 1.5-entmax (exact) and α-entmax (bisection).

All three are α-entmax, p = max((α-1)·z - τ, 0)^(1/(α-1)) with τ chosen so that
Σp = 1 (Peters, Niculae & Martins, arXiv 1905.05702); α = 2 is sparsemax (Martins &
Astudillo, arXiv 1602.02068). Since τ ≥ (α-1)·max z - 1, only entries with
z > max z - 1/(α-1) can receive mass: each row kernel gathers those candidates
(``select.gather_above``), finds τ on them, and writes the output in one more pass.
Row pass structure: max (1 read), gather (1 read), threshold on the candidates (Newton
steps refining the support, a vectorized pass each, for sparsemax and 1.5-entmax;
bisection for α-entmax), write (1 read, 1 write); bisection adds a rescale pass
(1 read, 1 write).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from ..expfast import exp_fast
from ..logfast import log_fast
from ..passes import is_finite, row_max, scale_inplace, special_row_write
from ..simd import fmax, strict_sub
from .select import gather_above, sort_desc

# ---------------------------------------------------------------- row kernels


@kernel
def power(v, q):
    """v**q for v ≥ 0 (or NaN) and q ≠ 0, in a form loops vectorize.

    The exponents 1 (sparsemax) and 2 (1.5-entmax) are exact; any other is
    exp(q·log v) with numsoft's polynomial exp and log (``expfast``, ``logfast``),
    within a few ulp where a libm ``pow`` per element kept every α-entmax pass scalar
    (about 20 ns an element). For q > 0, 0, +inf and NaN are their own powers; for
    q < 0 (the bisection maps' α < 1) their reciprocals are.
    """
    if q == 1:
        return v
    if q == 2:
        return v * v
    return power_by_logs(v, q)


@kernel
def power_by_logs(v, q):
    """``power``'s exp(q·log v), for a loop that has ruled out q = 1 and 2 itself (LLVM
    keeps a loop that tests several invariant conditions scalar)."""
    regular = v > 0 and v < math.inf
    fast = exp_fast(q * log_fast(v if regular else q / q))
    edge = v if q > 0 else (q / q) / v
    return fast if regular else edge


@kernel
def support_candidates(x, inv_t, reach):
    """(z_max, buf, count): buf[:count] holds every z = x·inv_t ≥ z_max - reach.

    ``count`` is -1 for a row that needs the special-value rules (NaN, +inf, or no
    entry above -inf); those rows go to ``special_row_write``, whose NaN / equal share
    of the +inf entries is also the limit of every α-entmax.
    """
    zmax = row_max(x) * inv_t
    buf = np.empty(x.size, dtype=x.dtype)
    if not is_finite(zmax):
        return zmax, buf, -1
    count, has_nan = gather_above(x, inv_t, np.float64(zmax) - reach, buf)
    return zmax, buf, -1 if has_nan else count


@kernel
def write_threshold_power(x, y, inv_t, zmax, c, tau, q):
    """y = max((x·inv_t - z_max)·c - τ, 0)^q, returning Σ y; y may be x.

    τ is taken in the domain shifted by the row maximum: unshifting it instead would
    cancel catastrophically for huge logits (1e30 - (1e30 + τ)), and so would LLVM's
    reassociation of it (``simd.strict_sub``). One read, one write.
    """
    zero = x.dtype.type(0.0)
    s = zero
    for i in range(x.size):
        v = strict_sub(strict_sub(x[i] * inv_t, zmax) * c, tau)
        p = power(v if v > zero else zero, q)
        y[i] = p
        s += p
    return s


#: Newton steps after which ``refined_threshold`` gives up and sorts the candidates.
#: The measured rows (normal, uniform, exponential, log-spaced and Cauchy logits, rows
#: of 10 to 50257 at scales 0.01 to 3) take 1 to 12.
MAX_REFINE_STEPS = 64

#: The candidates are compacted to the current support once it holds less than this
#: share of them: a compaction (a scalar pass) costs about two vectorized passes.
COMPACT_BELOW = 0.5


@kernel
def support_moments(buf, count, top, c, tau):
    """(|S|, Σu, Σu², min u) over S = {u > τ}, u = c·(z - top), z in ``buf[:count]``.

    One vectorized read in float64: the count is a float and the minimum a maximum of
    -u (``simd.fmax``), reductions LLVM vectorizes without ``nnan``. The subtraction is
    ``simd.strict_sub``: reassociated, ``z - top > τ`` became ``z > top + τ``, which
    rounds back to ``z > top`` for huge logits and left the support empty.
    """
    k = 0.0
    s1 = 0.0
    s2 = 0.0
    neg_umin = 0.0
    for i in range(count):
        u = c * strict_sub(np.float64(buf[i]), top)
        inside = u > tau
        k += 1.0 if inside else 0.0
        s1 += u if inside else 0.0
        s2 += u * u if inside else 0.0
        neg_umin = fmax(neg_umin, -u if inside else 0.0)
    return k, s1, s2, -neg_umin


@kernel
def keep_above(buf, count, top, c, tau):
    """Compact ``buf[:count]`` to the z with c·(z - top) > τ, in order; return their count."""
    k = 0
    for i in range(count):
        v = buf[i]
        buf[k] = v
        k += 1 if c * strict_sub(np.float64(v), top) > tau else 0
    return k


@kernel
def refined_threshold(buf, count, top, c, q, tau, max_steps):
    """τ of sparsemax (q = 1) or 1.5-entmax (q = 2) in the domain u = c·(z - z_max).

    τ solves f(τ) = Σ max(u - τ, 0)^q = 1 over the candidates ``buf[:count]``, with no
    sort, from a lower bound ``tau`` (f(tau) ≥ 1). Newton steps climb monotonically
    towards the root: for q = 1 on f itself (a step is Michelot's projection), for q = 2
    on sqrt(f) - 1, convex too (a norm of (u - τ)₊) and almost linear for a dense row,
    where Newton on f would only halve τ's distance at each step. Each step is one
    vectorized pass over the candidates (``support_moments``) for |S|, Σu, Σu² and
    min u of the support S = {u > τ}, from which the root over S alone is solved in
    closed form; when every u in S lies at or above that root, S is the support and the
    root is exact, as the sorted algorithm's. A ``tau`` whose f is below 1 gives NaN
    (no step is taken from above the root). The sums are taken about u = 0 (the row
    maximum) rather than about τ, so that an almost flat row loses nothing to
    cancellation. Once S is a small part of the candidates they are compacted to it
    (``keep_above``, ``COMPACT_BELOW``). Passes: 1 to 12 for the measured rows;
    past ``max_steps`` the candidates are sorted instead (``sorted_threshold``).
    """
    for step_count in range(max_steps):
        k, s1, s2, umin = support_moments(buf, count, top, c, tau)
        mass = s1 - k * tau if q == 1 else s2 - 2.0 * tau * s1 + k * tau * tau  # f(τ)
        if step_count == 0 and not mass >= 1.0:
            return math.nan  # ``tau`` was no lower bound
        if q == 1:
            root = (s1 - 1.0) / k
            if umin >= root:
                return root
            step = root
        else:
            disc = s1 * s1 - k * (s2 - 1.0)
            if disc >= 0.0:
                root = (s1 - math.sqrt(disc)) / k
                if umin >= root and root >= tau:
                    return root
            gap = s1 - k * tau  # Σ_S (u - τ)
            norm = math.sqrt(mass)  # sqrt(Σ_S (u - τ)²)
            step = tau + norm * (norm - 1.0) / gap
        if not step > tau:  # converged to rounding
            return tau
        tau = step
        if k < COMPACT_BELOW * count:
            count = keep_above(buf, count, top, c, tau)
    return sorted_threshold(buf, count, top, c, q)


@kernel
def sorted_threshold(buf, count, top, c, q):
    """``refined_threshold``'s τ from the candidates sorted descending. O(count·log count).

    For the k largest u: sparsemax's τ_k = (Σ_{j≤k} u(j) - 1)/k, 1.5-entmax's
    τ_k = mean_k - sqrt(max((1 - k·var_k)/k, 0)) (Peters et al. 2019, Algorithm 2); the
    support is the largest k with τ_k ≤ u(k). Sorts ``buf[:count]`` in place.
    """
    sort_desc(buf, count)
    s1 = 0.0
    s2 = 0.0
    tau_star = -1.0
    for k in range(1, count + 1):
        u = c * strict_sub(np.float64(buf[k - 1]), top)
        s1 += u
        s2 += u * u
        if q == 1:
            tau = (s1 - 1.0) / k
        else:
            mean = s1 / k
            tau = mean - math.sqrt(max((1.0 - (s2 - s1 * mean)) / k, 0.0))
        if tau <= u:
            tau_star = tau
    return tau_star


@kernel
def row_max_and_mean(x):
    """(max, mean) of a non-empty row, the max NaN-propagating, the mean in float64. 1 read."""
    m = x[0]
    s = 0.0
    for i in range(x.size):
        m = fmax(m, x[i])
        s += np.float64(x[i])
    return m, s / x.size


@kernel
def row_threshold(x, inv_t, c, q):
    """(z_max, τ, found) of sparsemax (c = 1, q = 1) or 1.5-entmax (c = 1/2, q = 2) for
    the row z = x·inv_t, τ in the domain u = c·(z - z_max); ``found`` is False for a
    row that needs the special-value rules (NaN, +inf, or no entry above -inf).

    In u, τ is at least -1 (the maximum alone) and at least mean(u) - 1/n (q = 1) or
    mean(u) - 1/sqrt(n) (q = 2): Σ_i (u_i - τ) over all n entries, at most Σ (u_i - τ)₊
    (resp. by Cauchy–Schwarz at most sqrt(n·Σ(u_i - τ)₊²)), stays below 1 at τ. Only the
    entries above the larger bound are gathered, and the Newton steps start from it
    (``refined_threshold``); where the mean's rounding put that bound above τ (huge
    logits), the steps find so at once and the row is gathered again from -1. Passes:
    max and mean (1 read), gather (1 read), the steps over the candidates.
    """
    zmax, mean = row_max_and_mean(x)
    zmax = zmax * inv_t
    if not is_finite(zmax):
        return zmax, 0.0, False
    top = np.float64(zmax)
    n = x.size
    gap = c * strict_sub(mean * np.float64(inv_t), top)
    bound = gap - (1.0 / n if q == 1 else 1.0 / math.sqrt(n))
    buf = np.empty(n, dtype=x.dtype)
    if bound > -1.0:  # not where the mean overflowed, or a float64 sum rounded it
        count, has_nan = gather_above(x, inv_t, top + bound / c, buf)
        tau = refined_threshold(buf, count, top, c, q, bound, MAX_REFINE_STEPS)
        if tau == tau:
            return zmax, tau, not has_nan
    count, has_nan = gather_above(x, inv_t, top - 1.0 / c, buf)
    return zmax, refined_threshold(buf, count, top, c, q, -1.0, MAX_REFINE_STEPS), not has_nan


@kernel
def refined_row(x, y, inv_t, c, q):
    """sparsemax (c = 1, q = 1) or 1.5-entmax (c = 1/2, q = 2) of one row: the threshold
    (``row_threshold``), then the write pass (1 read, 1 write)."""
    zmax, tau, found = row_threshold(x, inv_t, c, q)
    if not found:
        special_row_write(x, y, False)
        return
    dt = x.dtype.type
    write_threshold_power(x, y, inv_t, zmax, dt(c), dt(tau), dt(q))


@kernel
def sparsemax_row(x, y, inv_t):
    """sparsemax of one row (``refined_row``)."""
    refined_row(x, y, inv_t, 1.0, 1)


@kernel
def entmax15_row(x, y, inv_t):
    """1.5-entmax of one row (``refined_row``)."""
    refined_row(x, y, inv_t, 0.5, 2)


@kernel
def _entmax_mass(buf, count, zmax, am1, tau, q):
    """Σ max((α-1)·(z - z_max) - τ, 0)^q over the candidates, in float64."""
    s = 0.0
    for i in range(count):
        v = am1 * strict_sub(np.float64(buf[i]), zmax) - tau
        s += power(max(v, 0.0), q)
    return s


@kernel
def entmax_bisect_row(x, y, inv_t, alpha, n_iter):
    """α-entmax of one row by bisection on τ over the support candidates (float64).

    In the shifted domain u = (α-1)·(z - z_max) ≤ 0, τ lies in [-1, -count^(1-α)].
    Bisection keeps Σp(τ_lo) ≥ 1 and stops when the bracket is below the dtype's
    epsilon or after ``n_iter`` halvings; the output is then renormalized to sum to 1.
    """
    am1 = alpha - 1.0
    q = 1.0 / am1
    zmax, buf, count = support_candidates(x, inv_t, q)
    if count < 0:
        special_row_write(x, y, False)
        return
    zmax64 = np.float64(zmax)
    tol = 2.0**-52 if x.itemsize == 8 else 2.0**-23
    lo = -1.0
    hi = -((1.0 / count) ** am1)
    for _ in range(n_iter):
        if hi - lo <= tol:
            break
        mid = 0.5 * (lo + hi)
        if _entmax_mass(buf, count, zmax64, am1, mid, q) >= 1.0:
            lo = mid
        else:
            hi = mid
    dt = x.dtype.type
    s = write_threshold_power(x, y, inv_t, zmax, dt(am1), dt(lo), dt(q))
    scale_inplace(y, dt(1.0) / s)


@kernel
def sparsemax_backward_row(y, dy, dx):
    """dx = dy - mean(dy over the support y > 0) on the support, 0 elsewhere. 2 reads each."""
    zero = y.dtype.type(0.0)
    s = zero
    k = 0
    for i in range(y.size):
        inside = y[i] > zero
        s += dy[i] if inside else zero
        k += 1 if inside else 0
    mean = s / y.dtype.type(max(k, 1))
    for i in range(y.size):
        dx[i] = dy[i] - mean if y[i] > zero else zero


@kernel
def entmax15_backward_row(y, dy, dx):
    """dx = g·dy - g·Σ(g·dy)/Σg with g = sqrt(y) (Peters et al. 2019). 2 reads each."""
    zero = y.dtype.type(0.0)
    sg = zero
    sgd = zero
    for i in range(y.size):
        g = math.sqrt(y[i])
        sg += g
        sgd += g * dy[i]
    q = sgd / sg if sg > zero else zero
    for i in range(y.size):
        dx[i] = math.sqrt(y[i]) * (dy[i] - q)
