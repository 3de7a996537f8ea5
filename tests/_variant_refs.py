"""Independent NumPy/SciPy reference implementations of the SPEC §4 variants.

Each reference takes one 1-D float64 row ``z`` (already divided by the temperature,
with masked entries removed) and returns the variant's output for it. They follow the
SPEC's definitions directly (full sorts, root finding with SciPy, long double where the
direct formula would overflow) and share no code with numsoft.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, softmax


def ref_softmax(z):
    return softmax(z)


def ref_sparsemax(z):
    z = z - z.max()  # shift-invariant; unshifted, 1 + z(1) > z(1) fails for |z| ~ 1e30
    s = np.sort(z)[::-1]
    k = np.arange(1, z.size + 1)
    cs = np.cumsum(s)
    support = 1 + k * s > cs
    kz = k[support][-1]
    tau = (cs[kz - 1] - 1) / kz
    return np.maximum(z - tau, 0.0)


def ref_entmax(z, alpha):
    """α-entmax by Brent's method on τ (independent of numsoft's bisection)."""
    if alpha == 1.0:
        return softmax(z)
    u = (alpha - 1.0) * (z - z.max())
    q = 1.0 / (alpha - 1.0)

    def excess(tau):
        return np.sum(np.maximum(u - tau, 0.0) ** q) - 1.0

    tau = brentq(excess, -1.0, 0.0, xtol=1e-300, rtol=1e-15, maxiter=500)
    p = np.maximum(u - tau, 0.0) ** q
    return p / p.sum()


def stable_s(z):
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(z >= 0, z + 1.0, 1.0 / (1.0 - np.minimum(z, 0.0)))


def ref_stablemax(z):
    s = stable_s(z)
    return s / s.sum()


def ref_log_stablemax(z):
    s = stable_s(z)
    return np.log(s) - np.log(s.sum())


def ref_softpick(z, eps=1e-6):
    """The direct formula relu(e^z - 1)/(Σ|e^z - 1| + eps) in long double."""
    zl = np.asarray(z, dtype=np.longdouble)
    em1 = np.expm1(zl)
    return (np.maximum(em1, 0) / (np.abs(em1).sum() + np.longdouble(eps))).astype(np.float64)


def ref_adaptive(z):
    p = softmax(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.sum(np.where(p > 0, p * np.log(p), 0.0))
    beta = max(1.0, np.polyval([-0.037, 0.481, -2.3, 4.917, -1.791], h)) if h > 0.5 else 1.0
    return softmax(beta * z)


def ref_ssmax(z, s=1.0):
    return softmax(s * np.log(z.size) * z)


def ref_sa(z, normalized=False):
    p = softmax(z)
    if not normalized:
        return z * p
    lo, hi = min(z.min(), 0.0), max(0.0, z.max())
    if hi == lo:
        return np.zeros_like(p)  # an all-zero row has an empty range (documented: 0)
    return (z - lo) / (hi - lo) * p


def ref_multimax(z, ranges, ts):
    b0, b1, b2, b3 = ranges
    t0, t1, t2, t3 = ts
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    sigma = z + t0 * relu(b0 - z) + t1 * relu(z - b1) + t2 * relu(b2 - z) ** 2
    sigma = sigma + t3 * relu(z - b3) ** 2
    return softmax(sigma)


def ref_sigmoid(z, bias=None):
    b = -np.log(z.size) if bias is None else bias
    return expit(z + b)


def ref_softplus_l1(z):
    s = np.logaddexp(0.0, z)
    return s / s.sum()


def ref_topk(z, k):
    order = np.argsort(-z, kind="stable")  # ties: lowest index first
    keep = order[:k]
    out = np.zeros_like(z)
    out[keep] = softmax(z[keep])
    return out


def ref_rowmax_pot(z):
    w = 2.0 ** (-np.rint((z.max() - z) / np.log(2.0)))
    return w / w.sum()


# ---------------------------------------------------------------- Gumbel noise

_GAMMA = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def gumbel_noise(seed, size):
    """The documented noise: g_i = -log(-log U_i), U_i from splitmix64 keyed by seed."""
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed) + _GAMMA)
        h = _mix(key + (np.arange(size, dtype=np.uint64) + np.uint64(1)) * _GAMMA)
    u = ((h >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0**-52
    return -np.log(-np.log(u))


# ---------------------------------------------------------------- applying a row reference


def apply_rows(ref, x, axis=-1, where=None, temperature=1.0, fill=0.0):
    """Apply a row reference over ``axis`` (int or tuple, normalized jointly) in float64.

    Masked entries are removed before the reference sees the row and get ``fill``; a row
    with no unmasked entry is all ``fill``.
    """
    x64 = np.asarray(x, dtype=np.float64) / temperature
    mask = np.ones(x64.shape, bool) if where is None else np.broadcast_to(where, x64.shape)
    # a tuple of axes is a set (NumPy): a row lists its entries in C index order
    axes = tuple(sorted(a % x64.ndim for a in (axis if isinstance(axis, tuple) else (axis,))))
    dest = tuple(range(x64.ndim - len(axes), x64.ndim))
    xm = np.moveaxis(x64, axes, dest)
    mm = np.moveaxis(mask, axes, dest)
    lead = xm.shape[: x64.ndim - len(axes)]
    xr = xm.reshape(lead + (-1,))
    mr = mm.reshape(lead + (-1,))
    out = np.full(xr.shape, fill, dtype=np.float64)
    for idx in np.ndindex(lead):
        keep = mr[idx]
        if keep.any():
            row = out[idx]
            row[keep] = ref(xr[idx][keep])
    return np.moveaxis(out.reshape(xm.shape), dest, axes)
