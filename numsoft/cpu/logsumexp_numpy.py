"""logsumexp's NumPy passes on the CPU: the near-zero refinement and SciPy's weighted,
signed sum. The front door (``frontdoor.run``) calls them on the kernels' source."""

from __future__ import annotations

import numpy as np


def refine_near_zero(src3: np.ndarray, lse: np.ndarray, inv_t, t: float) -> None:
    """Recompute the rows whose logsumexp is below 1 in magnitude to full relative
    accuracy (SciPy gh-18295): ``m + log1p(Σ_{other} exp(z - m))``, one maximum taken
    out of the sum.

    ``m + log(Σ exp(z - m))`` is accurate to an ulp of ``max(|m|, 1)``: relative
    accuracy is lost only when the result is near 0 (``logsumexp([0, -40])`` is
    4.2e-18, not 0), which needs ``|result| < 1``. Those rows (typically few: a result
    near 0 means the row is already nearly normalized) take NumPy's passes.
    """
    near = np.abs(lse) < 1
    if not near.any():
        return
    o, j = np.nonzero(near)
    z = src3[o, :, j].astype(np.float64) * np.float64(inv_t)  # (rows, n)
    top = np.argmax(z, axis=1)
    m = z[np.arange(z.shape[0]), top]
    z[np.arange(z.shape[0]), top] = -np.inf  # the one maximum contributes exactly 1
    rest = np.exp(z - m[:, None]).sum(axis=1)
    lse[o, j] = t * (m + np.log1p(rest))


def weighted_smooth_max(src3: np.ndarray, b3: np.ndarray, inv_t, t: float):
    """(t·log |Σ b·exp(x/t)|, sign of the sum) of each row of ``src3`` (the kernels'
    ``(outer, n, inner)`` source) with the weights ``b3`` laid out alike (0 where an
    entry is masked), as SciPy computes it.

    The largest ``z = x/t`` among the weighted entries (``b != 0``, unmasked) is
    factored out and the signed terms ``b·exp(z - max)`` are summed in float64, so
    weights that cancel give exactly ``-inf`` with sign 0 and a weight's log is never
    added to a large ``x`` (where float rounding absorbed it). NaN in ``b`` gives NaN.
    NumPy's passes, not the kernels: SciPy's speed, for the rarer weighted call.
    """
    z3 = src3 if t == 1.0 else src3 * inv_t
    active = b3 != 0
    top = np.max(z3, axis=1, where=active, initial=-np.inf, keepdims=True)
    top[~np.isfinite(top)] = 0  # ±inf or no entry: exp(z) itself, as SciPy
    terms = np.zeros(z3.shape, dtype=src3.dtype)
    np.exp(z3 - top, out=terms, where=active)
    total = np.sum(b3 * terms, axis=1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lse = t * (np.log(np.abs(total)) + top[:, 0, :])
    return lse.astype(src3.dtype), np.sign(total).astype(src3.dtype)
