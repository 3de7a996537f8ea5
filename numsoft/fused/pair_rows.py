"""Row kernels of the losses between two distributions: cross-entropy with probability
targets, KL divergence and the generalized Jensen–Shannon divergence (SPEC §10).

Each row is a pair ``(a, b)`` of length-C rows of logits (or, for cross-entropy,
logits and target probabilities); ``PAIR_LOSS`` picks the loss, ``GRADIENT`` and
``SECOND_GRADIENT`` whether ∂/∂a and ∂/∂b are written (path constants, ``cpu.paths``).
Every loss visits a row the same way:

1. the normalizer of each row of logits, ``(m, d, lse)`` of ``z = x·inv_t``, from one
   read by L1 blocks (``_online_blocks.row_stats``, shared with ``cross_entropy``);
2. one read of both rows that sums the loss (from L2 when the pair fits: 256 KiB for
   32 000 float32 classes);
3. with a gradient, one more read of both rows and one write per gradient.

Nothing of the row's size is allocated: the probabilities are recomputed from
``(m, d)`` where a pass needs them (``exp_nonpositive``, vectorized). Sums are in
float64. A row whose logits hold NaN, +inf or only -inf has no distribution: its loss
and gradients are NaN. A class of probability 0 adds nothing (``0·log 0 = 0``).

``params`` is one tuple of four float64 for every loss (one driver signature):

- ``SOFT_TARGETS``: ``(conf, eps_c, scale, 0)``; targets ``q`` become
  ``conf·q + eps_c`` (label smoothing ε: ``conf = 1 − ε``, ``eps_c = ε/C``);
- ``KL``: ``(inv_t, scale, 0, 0)``, the loss KL(p_a ‖ p_b);
- ``JSD``: ``(inv_t, beta, scale, 0)``, the loss β·KL(p_b ‖ m) + (1 − β)·KL(p_a ‖ m)
  with ``m = β·p_b + (1 − β)·p_a`` (``a`` the student, ``b`` the teacher).

``scale`` is the reduction's weight of a row (``divergences.row_weight``).
"""

from __future__ import annotations

import math

from numba import prange

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.expfast import exp_nonpositive
from ..cpu.logfast import log_fast
from ..cpu.passes import is_regular
from ..cpu.paths import GRADIENT, PAIR_LOSS, SECOND_GRADIENT
from ._online_blocks import row_stats

#: ``PAIR_LOSS`` codes.
SOFT_TARGETS, KL, JSD = 0, 1, 2
#: float32's smallest normal number: ``log_fast`` needs a normal argument, and a class
#: whose mixture probability is below it adds under 1e-36 to a row's JSD.
_TINY = 1.1754943508222875e-38


@kernel
def _fill_nan(g):
    for j in range(g.size):
        g[j] = math.nan


@kernel
def soft_targets_row(x, q, g, params):
    """−Σ q'_j·log softmax(x)_j with ``q' = conf·q + eps_c``; ∂/∂x into ``g`` with
    ``GRADIENT``: ``scale·(p_j·Σq' − q'_j)``.

    Passes: the row's normalizer (one read of x, with Σx when ``eps_c ≠ 0``), one read
    of x and q for Σq and Σ q·x, and with the gradient one read of both and one write.
    """
    conf, eps_c, scale, _ = params
    one = x.dtype.type(1.0)
    m, d, lse, sx = row_stats(x, eps_c != 0.0, one)
    sq = 0.0
    sqx = 0.0
    for j in range(x.size):
        qj = q[j]
        sq += qj
        sqx += qj * x[j] if qj != 0 else 0.0  # a class of no mass: 0·(-inf) is 0
    total = conf * sq + eps_c * x.size  # Σq'
    loss = lse * total
    if conf != 0.0:
        loss -= conf * sqx
    if eps_c != 0.0:
        loss -= eps_c * sx
    if GRADIENT:
        if not is_regular(m, d):
            _fill_nan(g)
        else:
            c_p = x.dtype.type(scale * total / d)
            c_q = x.dtype.type(scale * conf)
            c_0 = x.dtype.type(scale * eps_c)
            for j in range(x.size):
                g[j] = exp_nonpositive(x[j] - m) * c_p - c_q * q[j] - c_0
    return loss


@kernel(inline="always")  # one prologue of kl_row and jsd_row
def _pair_stats(a, b, ga, gb, it):
    """(m, d, lse) of both rows and whether both have a distribution; when one has none,
    the gradients the path writes are filled with NaN."""
    ma, da, lse_a, _ = row_stats(a, False, it)
    mb, db, lse_b, _ = row_stats(b, False, it)
    both = is_regular(ma, da) and is_regular(mb, db)
    if not both:
        if GRADIENT:
            _fill_nan(ga)
        if SECOND_GRADIENT:
            _fill_nan(gb)
    return ma, da, lse_a, mb, db, lse_b, both


@kernel
def kl_row(a, b, ga, gb, params):
    """KL(p_a ‖ p_b) of ``p = softmax(x·inv_t)``; with ``GRADIENT`` ∂/∂a into ``ga``:
    ``w·p_a·(log p_a − log p_b − KL)``, with ``SECOND_GRADIENT`` ∂/∂b into ``gb``:
    ``w·(p_b − p_a)``, where ``w = scale·inv_t``.

    The loss sums ``p_a·r`` with ``r = log p_a − log p_b = (a − b)·inv_t − (lse_a −
    lse_b)`` per element: small where the distributions are close, so close rows lose
    no digits to cancellation.
    """
    inv_t, scale, _, _ = params
    it = a.dtype.type(inv_t)
    ma, da, lse_a, mb, db, lse_b, both = _pair_stats(a, b, ga, gb, it)
    if not both:
        return math.nan
    shift = a.dtype.type(lse_a - lse_b)
    k = 0.0
    for j in range(a.size):
        e = exp_nonpositive((a[j] - ma) * it)
        k += e * ((a[j] - b[j]) * it - shift) if e != 0 else 0.0
    kl = k / da
    w = scale * inv_t
    if GRADIENT:
        ca = a.dtype.type(w / da)
        klt = a.dtype.type(kl)
        for j in range(a.size):
            e = exp_nonpositive((a[j] - ma) * it)
            ga[j] = e * ca * ((a[j] - b[j]) * it - shift - klt) if e != 0 else 0.0
    if SECOND_GRADIENT:
        ca = a.dtype.type(w / da)
        cb = a.dtype.type(w / db)
        for j in range(a.size):
            gb[j] = exp_nonpositive((b[j] - mb) * it) * cb - exp_nonpositive((a[j] - ma) * it) * ca
    return kl


@kernel(inline="always")  # inside the class loops: they vectorize as one body
def _jsd_terms(a, b, j, ma, mb, it, la, lb, beta, beta_c):
    """(p_a, p_b, log p_a − log m, log p_b − log m) of class ``j`` (``la = log d_a``)."""
    lpa = (a[j] - ma) * it - la
    lpb = (b[j] - mb) * it - lb
    pa = exp_nonpositive(lpa)
    pb = exp_nonpositive(lpb)
    mix = beta * pb + beta_c * pa
    tiny = a.dtype.type(_TINY)
    lm = log_fast(mix if mix > tiny else tiny)
    return pa, pb, lpa - lm, lpb - lm


@kernel
def jsd_row(a, b, ga, gb, params):
    """β·KL(p_b ‖ m) + (1 − β)·KL(p_a ‖ m), ``m = β·p_b + (1 − β)·p_a``; with
    ``GRADIENT`` ∂/∂a = ``w·(1 − β)·p_a·(log(p_a/m) − KL(p_a ‖ m))`` into ``ga``, with
    ``SECOND_GRADIENT`` ∂/∂b = ``w·β·p_b·(log(p_b/m) − KL(p_b ‖ m))`` into ``gb``
    (``w = scale·inv_t``). Two exps and a log per class and pass.
    """
    inv_t, beta64, scale, _ = params
    it = a.dtype.type(inv_t)
    beta = a.dtype.type(beta64)
    beta_c = a.dtype.type(1.0 - beta64)
    ma, da, _, mb, db, _, both = _pair_stats(a, b, ga, gb, it)
    if not both:
        return math.nan
    la = a.dtype.type(math.log(da))
    lb = a.dtype.type(math.log(db))
    ka = 0.0
    kb = 0.0
    for j in range(a.size):
        pa, pb, ra, rb = _jsd_terms(a, b, j, ma, mb, it, la, lb, beta, beta_c)
        ka += pa * ra if pa != 0 else 0.0
        kb += pb * rb if pb != 0 else 0.0
    w = scale * inv_t
    if GRADIENT or SECOND_GRADIENT:
        ca = a.dtype.type(w * (1.0 - beta64))
        cb = a.dtype.type(w * beta64)
        kat = a.dtype.type(ka)
        kbt = a.dtype.type(kb)
        for j in range(a.size):
            pa, pb, ra, rb = _jsd_terms(a, b, j, ma, mb, it, la, lb, beta, beta_c)
            if GRADIENT:
                ga[j] = ca * pa * (ra - kat) if pa != 0 else 0.0
            if SECOND_GRADIENT:
                gb[j] = cb * pb * (rb - kbt) if pb != 0 else 0.0
    return beta64 * kb + (1.0 - beta64) * ka


@kernel
def pair_row(a, b, ga, gb, params):
    """The ``PAIR_LOSS`` of one pair of rows (its gradients as the constants ask)."""
    if PAIR_LOSS == SOFT_TARGETS:
        return soft_targets_row(a, b, ga, params)
    if PAIR_LOSS == KL:
        return kl_row(a, b, ga, gb, params)
    return jsd_row(a, b, ga, gb, params)


@parallel_kernel
def pair_loss_rows(a2, b2, params, loss, ga2, gb2):
    """Row driver: ``loss[i]`` (and the gradients the constants ask for) of every pair
    of rows ``(a2[i], b2[i])``, in parallel. A gradient not asked for may have zero
    columns (it is never written)."""
    for i in prange(a2.shape[0]):
        loss[i] = pair_row(a2[i], b2[i], ga2[i], gb2[i], params)
