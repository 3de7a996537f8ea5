"""Row-local variants on the device (mirrors ``numsoft.variants``): one row group per row.

Same launch geometry as the core kernels (``launch.plan``, warp / block / column
regimes) but rows are never split: several variants iterate over the whole row
(bisection, top-k selection). Every row statistic is a ``reduce.MERGE_MAXSUM`` partial
``(max, sum, sum, sum, sum)`` merged over the row group with ``group_reduce``, so the
variants share the core's reduction and special-value writer (``passes.write_special``).

Per variant, global reads (R) and writes (W) per element, z = x·inv_t:

- ``ssmax``: count pass, then the core online softmax: 3 R, 1 W;
- ``sigmoid_attention``: count pass (default bias), write: 2 R, 1 W;
- ``stablemax``/``log_stablemax``/``softplus_l1``: Σ of weights, write: 2 R, 1 W;
- ``softpick``: max, Σ|e^(z-m) - e^(-m)|, write: 3 R, 1 W;
- ``sparsemax``/``entmax15``/``entmax``: max, one read per bisection step
  (≤ 64, stopping when the bracket is below the dtype's epsilon), then the closed-form
  threshold on the found support (α = 2, 1.5) or a renormalization: about 2 + steps R,
  1 W. Sparsemax and 1.5-entmax are exact once the support is found, like the CPU's
  kernels;
- ``topk_softmax``: max, one read per distinct value among the k largest (a descending
  walk over the row's values), Σ, write; a tie at the k-th value is cut by index (lowest
  first) by one serial scan of the row group's first lane.

The row group's reductions run in the compute dtype (float32 rows reduce in float32).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, types

from ..vocabulary import (
    ENTMAX,
    ENTMAX15,
    LOG_STABLEMAX,
    ONLINE,
    SIGMOID_ATTENTION,
    SOFTMAX,
    SOFTPICK,
    SOFTPLUS_L1,
    SPARSEMAX,
    SSMAX,
    TOPK,
)
from . import launch
from ._jit import array3, device, kernel
from .passes import write_row, write_special
from .reduce import MERGE_MAXSUM, SLOTS, group_reduce
from .rows import row_stats, this_row, whole_row_lane

#: Size of the per-group scratch of the top-k tie cut: row groups per block reach
#: ``launch.BLOCK_THREADS`` (rows of one element) or ``launch.COLUMN_THREADS``.
MAX_GROUPS = 256

#: Bisection steps of sparsemax and 1.5-entmax (the bracket reaches the float64
#: epsilon after ~53; the closed form then fixes the threshold exactly).
EXACT_BISECTION_STEPS = 64


@device
def row_sums(buf, a, b, c, d, e):
    """Merge a ``(max, sum, sum, sum, sum)`` partial over the row group (every lane calls)."""
    return group_reduce(buf, MERGE_MAXSUM, (a, b, c, d, e), a)  # MAXSUM ignores inv_t


@device
def lane_scan(x3, lane):
    """(max of the finite entries, 0, n_nan, n_posinf, n_included) of this lane's elements.

    Included means not ``-inf`` (masked entries arrive as ``-inf``). One read.
    """
    o, j, start, stop, step = lane
    T = x3.dtype.type
    m = T(-math.inf)
    n_nan = T(0.0)
    n_inf = T(0.0)
    n_in = T(0.0)
    for i in range(start, stop, step):
        v = x3[o, i, j]
        if v != -math.inf:
            n_in += T(1.0)
        if v == math.inf:
            n_inf += T(1.0)
        elif v > m:
            m = v
        elif v != v:
            n_nan += T(1.0)
    return m, T(0.0), n_nan, n_inf, n_in


@device
def row_scan(buf, x3, lane):
    """``lane_scan`` merged over the row group."""
    s = lane_scan(x3, lane)
    return row_sums(buf, s[0], s[1], s[2], s[3], s[4])


# ---------------------------------------------------------------- scaled softmax


@device
def scaled_softmax_row(buf, x3, y3, lane, inv_t, bound):
    """Core online softmax of the row at inverse temperature ``inv_t``."""
    kind, stats = row_stats(buf, x3, lane, ONLINE, inv_t, bound)
    write_row(x3, y3, lane, kind, stats, inv_t, False)


@device
def ssmax_row(buf, x3, y3, lane, inv_t, s, bound):
    """softmax(s·log(n)·z), n = included entries (n = 1: the scale is irrelevant, 1)."""
    n = row_scan(buf, x3, lane)[4]
    T = x3.dtype.type
    scale = s * T(math.log(n)) if n > 1 else T(1.0)
    scaled_softmax_row(buf, x3, y3, lane, inv_t * scale, bound)


@device
def sigmoid_attention_row(buf, x3, y3, lane, inv_t, has_bias, bias):
    """y = sigmoid(z + b), b = ``bias`` or -log(n); the branch on the sign never overflows."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    n = row_scan(buf, x3, lane)[4]
    b = T(bias) if has_bias else T(-math.log(max(n, T(1.0))))
    one = T(1.0)
    for i in range(start, stop, step):
        v = x3[o, i, j] * inv_t + b
        e = math.exp(-abs(v))
        r = one / (one + e)
        y3[o, i, j] = r if v >= 0 else e * r


# ---------------------------------------------------------------- positive weights, L1-normalized


@device
def weight(code, z, one):
    """The unnormalized weight of stablemax (s(z)) or softplus_l1 (softplus(z)); 0 at -inf."""
    if code == SOFTPLUS_L1:
        return max(z, one - one) + math.log1p(math.exp(-abs(z)))
    return z + one if z >= 0 else one / (one - z)


@device
def lane_weight_sum(x3, lane, code, inv_t, scale):
    """Σ weight(z)·scale over this lane's finite entries. One read."""
    o, j, start, stop, step = lane
    s = x3.dtype.type(0.0)
    one = x3.dtype.type(1.0)
    for i in range(start, stop, step):
        v = x3[o, i, j]
        if v > -math.inf and v < math.inf:
            s += weight(code, v * inv_t, one) * scale
    return s


@device
def l1_weights_row(buf, x3, y3, lane, code, inv_t, bound):
    """weight(z)/Σ weight (log_stablemax: the log of it), with the softmax special rows.

    A sum that overflows although every weight is finite is recomputed with the weights
    scaled by the largest one; softplus weights that all underflow to 0 while some z is
    finite have the limit softmax(z), as on the CPU. A row of only -inf is NaN.
    """
    o, j, start, stop, step = lane
    T = x3.dtype.type
    one = T(1.0)
    zero = T(0.0)
    log_output = code == LOG_STABLEMAX
    st = row_scan(buf, x3, lane)
    n_nan, n_inf = st[2], st[3]
    s = row_sums(buf, zero, lane_weight_sum(x3, lane, code, inv_t, one), zero, zero, zero)[1]
    pre = one
    if cuda.syncthreads_or(int(s == math.inf and n_inf == 0)) != 0:
        if s == math.inf and n_inf == 0:
            pre = one / weight(code, st[0] * inv_t, one)
        part = lane_weight_sum(x3, lane, code, inv_t, pre)
        s2 = row_sums(buf, zero, part, zero, zero, zero)[1]
        if pre != one:
            s = s2
    underflow = code == SOFTPLUS_L1 and s == 0 and st[0] > -math.inf and n_nan + n_inf == 0
    if cuda.syncthreads_or(int(underflow)) != 0:
        # every softplus underflowed: their limit e^z makes the row softmax(z)
        d = row_sums(buf, zero, lane_sum_exp_all(x3, lane, st[0], inv_t), zero, zero, zero)[1]
        if underflow:
            write_row(x3, y3, lane, ONLINE, (st[0], d, zero, zero, zero), inv_t, False)
            return
    if n_nan > 0 or n_inf > 0 or s == 0:
        write_special(x3, y3, lane, n_nan, n_inf, log_output)
        return
    shift = T(math.log(s))
    inv_s = one / s
    for i in range(start, stop, step):
        w = weight(code, x3[o, i, j] * inv_t, one) * pre
        if log_output:
            y3[o, i, j] = T(math.log(w)) - shift if w > zero else T(-math.inf)
        else:
            y3[o, i, j] = w * inv_s


@device
def lane_sum_exp_all(x3, lane, m, inv_t):
    """Σ exp((x - m)·inv_t) over this lane's entries (none NaN or +inf). One read."""
    o, j, start, stop, step = lane
    s = x3.dtype.type(0.0)
    for i in range(start, stop, step):
        s += math.exp((x3[o, i, j] - m) * inv_t)
    return s


@device
def softpick_row(buf, x3, y3, lane, inv_t, eps):
    """relu(e^(z-m) - e^(-m)) / (Σ|e^(z-m) - e^(-m)| + eps·e^(-m)), m = max(z, 0).

    |e^(z-m) - e^(-m)| = -expm1(-|z|)·e^(max(z, 0) - m) has no cancellation near z = 0;
    a zero denominator gives 0 (its limit as eps → 0). NaN or +inf: the special rows.
    """
    o, j, start, stop, step = lane
    T = x3.dtype.type
    zero = T(0.0)
    st = row_scan(buf, x3, lane)
    zmax = st[0] * inv_t
    m = zmax if zmax > zero else zero
    part = zero
    for i in range(start, stop, step):
        z = x3[o, i, j] * inv_t
        if z > -math.inf and z < math.inf:
            part += -math.expm1(-abs(z)) * math.exp(max(z, zero) - m)
    den = row_sums(buf, st[0], part, st[2], st[3], st[4])[1] + T(eps) * math.exp(-m)
    if st[2] > 0 or st[3] > 0:
        write_special(x3, y3, lane, st[2], st[3], False)
        return
    inv = T(1.0) / den if den > zero else zero
    for i in range(start, stop, step):
        z = x3[o, i, j] * inv_t
        y3[o, i, j] = -math.expm1(-z) * math.exp(z - m) * inv if z > zero else zero


# ---------------------------------------------------------------- α-entmax by bisection


@device
def power(v, q):
    """v**q for v ≥ 0, exact for q = 1 (sparsemax) and q = 2 (1.5-entmax)."""
    if q == 1:
        return v
    if q == 2:
        return v * v
    return v**q


@device
def lane_entmax_mass(x3, lane, zmax, am1, q, tau, inv_t):
    """Σ max((α-1)·(z - z_max) - τ, 0)^q over this lane's entries. One read."""
    o, j, start, stop, step = lane
    s = x3.dtype.type(0.0)
    for i in range(start, stop, step):
        v = am1 * (x3[o, i, j] * inv_t - zmax) - tau
        if v > 0:
            s += power(v, q)
    return s


@device
def lane_support(x3, lane, zmax, am1, tau, inv_t):
    """(Σu, Σu², count) of u = (α-1)·(z - z_max) > τ over this lane's entries. One read."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    s1 = T(0.0)
    s2 = T(0.0)
    k = T(0.0)
    for i in range(start, stop, step):
        u = am1 * (x3[o, i, j] * inv_t - zmax)
        if u > tau:
            s1 += u
            s2 += u * u
            k += T(1.0)
    return s1, s2, k


@device
def entmax_row(buf, x3, y3, lane, active, code, inv_t, params):
    """α-entmax: bisection on τ in the domain shifted by the row max, then the output.

    α and the step limit: 2 (sparsemax) and 1.5 (``ENTMAX15``) with
    ``EXACT_BISECTION_STEPS``, else ``params = (α, n_iter)``.

    With u = (α-1)·(z - z_max) ≤ 0, τ lies in [-1, -n^(1-α)] (n included entries);
    bisection keeps Σp(lo) ≥ 1. All row groups of the block step together (the
    reductions synchronize the block) until every bracket is below the dtype's epsilon
    or ``n_iter`` steps. α = 2 and 1.5 then solve for τ exactly on the support
    {u > lo}; other α renormalize p(lo).
    """
    o, j, start, stop, step = lane
    T = x3.dtype.type
    if code == SPARSEMAX:
        alpha, n_iter = T(2.0), EXACT_BISECTION_STEPS
    elif code == ENTMAX15:
        alpha, n_iter = T(1.5), EXACT_BISECTION_STEPS
    else:
        alpha, n_iter = params[0], int(params[1])
    st = row_scan(buf, x3, lane)
    # A row without finite entries is written as special; 0 keeps its arithmetic quiet.
    zmax = st[0] * inv_t if st[0] > -math.inf else T(0.0)
    am1 = alpha - T(1.0)
    q = T(1.0) / am1
    n = max(st[4], T(1.0))
    lo = T(-1.0)
    hi = -((T(1.0) / n) ** am1)
    tol = T(2.0**-52) if x3.itemsize == 8 else T(2.0**-23)
    it = 0
    while cuda.syncthreads_or(int(active and it < n_iter and hi - lo > tol)) != 0:
        mid = T(0.5) * (lo + hi)
        part = lane_entmax_mass(x3, lane, zmax, am1, q, mid, inv_t)
        mass = row_sums(buf, st[0], part, st[2], st[3], st[4])[1]
        if it < n_iter and hi - lo > tol:
            if mass >= 1:
                lo = mid
            else:
                hi = mid
        it += 1
    if code == ENTMAX:
        part = lane_entmax_mass(x3, lane, zmax, am1, q, lo, inv_t)
        tot = row_sums(buf, st[0], part, st[2], st[3], st[4])
    else:
        sup = lane_support(x3, lane, zmax, am1, lo, inv_t)
        tot = row_sums(buf, st[0], sup[0], sup[1], sup[2], st[4])
    if st[2] > 0 or st[3] > 0 or st[0] == -math.inf:
        write_special(x3, y3, lane, st[2], st[3], False)
        return
    scale = T(1.0)
    if code == ENTMAX:
        tau = lo
        scale = T(1.0) / tot[1]  # Σp(lo) ≥ 1: the bisection keeps it so
    else:
        s1, s2, k = tot[1], tot[2], tot[3]  # k ≥ 1: the max entry is in the support
        if code == SPARSEMAX:
            tau = (s1 - T(1.0)) / k
        else:
            mean = s1 / k
            tau = mean - math.sqrt(max((T(1.0) - (s2 - s1 * mean)) / k, T(0.0)))
    for i in range(start, stop, step):
        v = am1 * (x3[o, i, j] * inv_t - zmax) - tau
        y3[o, i, j] = power(v, q) * scale if v > 0 else T(0.0)


# ---------------------------------------------------------------- top-k softmax


@device
def lane_below(x3, lane, cur):
    """(max of the entries < cur, count of entries == cur) of this lane. One read."""
    o, j, start, stop, step = lane
    T = x3.dtype.type
    nxt = T(-math.inf)
    eq = T(0.0)
    for i in range(start, stop, step):
        v = x3[o, i, j]
        if v == cur:
            eq += T(1.0)
        elif v < cur and v > nxt:
            nxt = v
    return nxt, eq


@device
def topk_weight(v, m, inv_t, one):
    """exp((v - m)·inv_t), exactly 1 at the maximum (so +inf entries share equally)."""
    return one if v == m else math.exp((v - m) * inv_t)


@device
def topk_softmax_row(buf, cut_buf, x3, y3, lane, active, inv_t, k):
    """softmax over the k largest entries (ties at the k-th value: lowest index first).

    Walks the row's distinct values downwards from the max, one reduction each, until
    the entries ≥ the current value number at least k: that value v is the k-th
    largest. Rows with fewer than k included entries are softmax over all of them.
    """
    o, j, start, stop, step = lane
    T = x3.dtype.type
    zero = T(0.0)
    one = T(1.0)
    st = row_scan(buf, x3, lane)
    m = T(math.inf) if st[3] > 0 else st[0]
    cur = m
    above = zero
    v = T(-math.inf)
    ties = zero
    n_eq = zero
    done = not active or m == -math.inf
    while cuda.syncthreads_or(int(not done)) != 0:
        nxt, eq = lane_below(x3, lane, cur)
        r = row_sums(buf, nxt, eq, zero, zero, zero)
        if not done:
            if above + r[1] >= k:
                v, ties, n_eq, done = cur, T(k) - above, r[1], True
            else:
                above += r[1]
                cur = r[0]
                done = cur == -math.inf
    part = zero
    for i in range(start, stop, step):
        xi = x3[o, i, j]
        if xi > v:
            part += topk_weight(xi, m, inv_t, one)
    s = row_sums(buf, zero, part, zero, zero, zero)[1] + ties * topk_weight(v, m, inv_t, one)
    # The index of the last tied entry taken: only a partial tie needs the scan.
    g = cuda.threadIdx.y
    if cuda.threadIdx.x == 0:
        cut = stop
        if ties < n_eq:
            left = int(ties)
            cut = -1
            for i in range(stop):
                if x3[o, i, j] == v:
                    if left == 0:
                        break
                    left -= 1
                    cut = i
        if ties == 0:
            cut = -1
        cut_buf[g] = cut
    cuda.syncthreads()
    cut = cut_buf[g]
    if st[2] > 0 or m == -math.inf:
        write_special(x3, y3, lane, st[2], st[3], False)
        return
    inv_s = one / s
    for i in range(start, stop, step):
        xi = x3[o, i, j]
        take = xi > v or (xi == v and i <= cut)
        y3[o, i, j] = topk_weight(xi, m, inv_t, one) * inv_s if take else zero


# ---------------------------------------------------------------- kernel and driver


@kernel(lambda ft: (array3(ft), array3(ft), types.int64, types.Array(ft, 1, "A"), ft, ft))
def variant_kernel(x3, y3, code, params, inv_t, bound):
    """y3 = variant ``code`` (``numsoft.vocabulary``) of every row of x3; y3 may be x3.

    ``params`` holds the variant's parameters (``codes`` layout) in the compute dtype.
    Every branch is uniform over the block (``code`` is a kernel argument).
    """
    buf = cuda.shared.array(0, x3.dtype)
    cut_buf = cuda.shared.array(MAX_GROUPS, types.int64)
    row = this_row(x3)
    lane, active = whole_row_lane(x3, row), row[2]
    if code == SOFTMAX:
        scaled_softmax_row(buf, x3, y3, lane, inv_t, bound)
    elif code == SSMAX:
        ssmax_row(buf, x3, y3, lane, inv_t, params[0], bound)
    elif code == SIGMOID_ATTENTION:
        sigmoid_attention_row(buf, x3, y3, lane, inv_t, params[0] != 0, params[1])
    elif code == SOFTPICK:
        softpick_row(buf, x3, y3, lane, inv_t, params[0])
    elif code in (SPARSEMAX, ENTMAX15, ENTMAX):
        entmax_row(buf, x3, y3, lane, active, code, inv_t, params)
    elif code == TOPK:
        topk_softmax_row(buf, cut_buf, x3, y3, lane, active, inv_t, x3.dtype.type(params[0]))
    else:
        l1_weights_row(buf, x3, y3, lane, code, inv_t, bound)


def variant_rows(x3, y3, code, params, inv_t, bound):
    """Driver: y3 = variant ``code`` of every row of the device view x3 (non-empty).

    ``params``: the variant's parameters (host, any float dtype; sent in the compute
    dtype, so float32 rows see float32 parameters); scalars of the compute dtype.
    ``y3`` may be ``x3``.
    """
    outer, n, inner = x3.shape
    rows = outer * inner
    p = launch.plan(rows, n, inner, split=False)
    if p.groups > MAX_GROUPS:
        raise RuntimeError(f"numsoft.cuda.variants: {p.groups} row groups > MAX_GROUPS")
    shared = p.shared_bytes(SLOTS, x3.dtype.itemsize)
    d_params = cuda.to_device(np.asarray(params, dtype=x3.dtype))
    variant_kernel[p.grid(rows), (p.lanes, p.groups), 0, shared](
        x3, y3, code, d_params, inv_t, bound
    )
