"""Sparse maps onto the simplex: sparsemax, 1.5-entmax (exact) and α-entmax (bisection).

All three are α-entmax, p = max((α-1)·z - τ, 0)^(1/(α-1)) with τ chosen so that
Σp = 1 (Peters, Niculae & Martins, arXiv 1905.05702); α = 2 is sparsemax (Martins &
Astudillo, arXiv 1602.02068). Since τ ≥ (α-1)·max z - 1, only entries with
z > max z - 1/(α-1) can receive mass: each row kernel gathers those candidates
(``select.gather_above``), finds τ on them, and writes the output in one more pass.
Row pass structure: max (1 read), gather (1 read), threshold on the candidates, write
(1 read, 1 write); bisection adds a rescale pass (1 read, 1 write).
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from ..passes import is_finite, row_max, scale_inplace, special_row_write
from ..simd import strict_sub
from .select import gather_above, sort_desc

# ---------------------------------------------------------------- row kernels


@kernel
def _power(v, q):
    """v**q for v ≥ 0, with the exponents 1 (sparsemax) and 2 (1.5-entmax) exact."""
    if q == 1:
        return v
    if q == 2:
        return v * v
    return v**q


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
        p = _power(v if v > zero else zero, q)
        y[i] = p
        s += p
    return s


@kernel
def sparsemax_threshold(buf, count):
    """τ - z_max of sparsemax from the candidates sorted descending (float64).

    k* = max{k : 1 + k·z(k) > Σ_{j≤k} z(j)} (the condition holds exactly for k ≤ k*),
    τ = (Σ_{j≤k*} z(j) - 1)/k*.
    """
    top = np.float64(buf[0])
    cs = 0.0
    cs_star = 0.0
    k_star = 1
    for k in range(1, count + 1):
        zk = np.float64(buf[k - 1]) - top
        cs += zk
        if 1.0 + k * zk <= cs:
            break
        k_star = k
        cs_star = cs
    return (cs_star - 1.0) / k_star


@kernel
def entmax15_threshold(buf, count):
    """τ - z_max/2 of 1.5-entmax in the z/2 domain from the sorted candidates (float64).

    For the k largest u = z/2: τ_k = mean_k - sqrt(max((1 - k·var_k)/k, 0)); the support
    is the largest k with τ_k ≤ u(k) (Peters et al. 2019, Algorithm 2).
    """
    top = 0.5 * np.float64(buf[0])
    s1 = 0.0
    s2 = 0.0
    tau_star = -1.0
    for k in range(1, count + 1):
        u = 0.5 * np.float64(buf[k - 1]) - top
        s1 += u
        s2 += u * u
        mean = s1 / k
        delta = (1.0 - (s2 - s1 * mean)) / k
        tau = mean - math.sqrt(max(delta, 0.0))
        if tau <= u:
            tau_star = tau
    return tau_star


@kernel
def sparsemax_row(x, y, inv_t):
    """sparsemax of one row: exact threshold from the sorted support candidates."""
    zmax, buf, count = support_candidates(x, inv_t, 1.0)
    if count < 0:
        special_row_write(x, y, False)
        return
    sort_desc(buf, count)
    tau = x.dtype.type(sparsemax_threshold(buf, count))
    one = x.dtype.type(1.0)
    write_threshold_power(x, y, inv_t, zmax, one, tau, one)


@kernel
def entmax15_row(x, y, inv_t):
    """1.5-entmax of one row: exact threshold from the sorted support candidates."""
    zmax, buf, count = support_candidates(x, inv_t, 2.0)
    if count < 0:
        special_row_write(x, y, False)
        return
    sort_desc(buf, count)
    tau = x.dtype.type(entmax15_threshold(buf, count))
    dt = x.dtype.type
    write_threshold_power(x, y, inv_t, zmax, dt(0.5), tau, dt(2.0))


@kernel
def _entmax_mass(buf, count, zmax, am1, tau, q):
    """Σ max((α-1)·(z - z_max) - τ, 0)^q over the candidates, in float64."""
    s = 0.0
    for i in range(count):
        v = am1 * (np.float64(buf[i]) - zmax) - tau
        s += _power(max(v, 0.0), q)
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
