"""Gumbel-softmax: a differentiable sample from the categorical distribution softmax(z).

The Gumbel noise is drawn inside the kernel from a counter-based generator: the noise
of an element is a pure function of (seed, the element's index), so the result is the
same for a given seed whatever the number of threads or the order rows are visited.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..cpu._jit import kernel
from ..cpu.rows import softmax_row
from ._codes import GUMBEL
from ._passes import log_fast
from ._run import bool_arg, doc, prepare_variant, real_arg, run_variant

__all__ = ["gumbel_softmax"]

#: splitmix64 (Steele, Lea & Flood 2014): the Weyl increment and the finalizer's constants.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@kernel
def splitmix64_mix(z):
    """The splitmix64 finalizer: a bijective 64-bit mix of ``z`` (uint64)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@kernel(inline="always")  # so that the caller's loop vectorizes
def gumbel_noise(key, index):
    """Standard Gumbel noise g = -log(-log U) for element ``index`` (float64).

    ``U = (h >> 12 + ½)·2^-52`` with ``h = mix(key + (index + 1)·γ)``, the splitmix64
    output number ``index`` of the stream ``key``: U lies in [2^-53, 1 - 2^-53], so
    g is finite (between -3.6 and 36.7).
    """
    h = splitmix64_mix(key + (np.uint64(index) + np.uint64(1)) * _GAMMA)
    u = (np.float64(h >> np.uint64(12)) + 0.5) * 2.0**-52
    return -log_fast(-log_fast(u))  # both arguments are normal: u ≥ 2^-53, -log u ≥ 1e-16


@kernel
def write_one_hot_argmax(y):
    """y ← one-hot of the first maximum of y; all NaN if y has NaN or only -inf."""
    best = 0
    has_nan = False
    for i in range(y.size):
        v = y[i]
        if v != v:
            has_nan = True
        elif v > y[best]:
            best = i
    bad = has_nan or y[best] == -math.inf
    fill = y.dtype.type(math.nan) if bad else y.dtype.type(0.0)
    for i in range(y.size):
        y[i] = fill
    if not bad:
        y[best] = 1.0


@kernel
def gumbel_softmax_row(x, y, inv_t, tau, hard, seed, base, stride):
    """softmax((z + g)/tau), or the one-hot argmax of z + g, for one row.

    Element k of the row has index ``base + k·stride`` in the generator's counter. One
    read of x, one write of z + g into y, then the core softmax (or argmax) on y.
    Excluded (-inf) entries stay -inf.
    """
    dt = x.dtype.type
    key = splitmix64_mix(seed + _GAMMA)
    for k in range(x.size):
        y[k] = x[k] * inv_t + dt(gumbel_noise(key, base + k * stride))
    if hard:
        write_one_hot_argmax(y)
    else:
        softmax_row(y, y, dt(1.0 / tau))


@register_jitable
def gumbel_params(tau, hard):
    if not (tau > 0.0 and math.isfinite(tau)):
        raise ValueError("gumbel_softmax: tau must be positive and finite")
    return np.array([tau, 1.0 if hard else 0.0])


def _seed_value(seed) -> int:
    """A 64-bit seed from ``seed`` (None: drawn from NumPy's default generator)."""
    if seed is None:
        return int(np.random.default_rng().integers(0, 2**63))
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"gumbel_softmax: seed must be None, an int or a numpy.random.Generator, "
            f"got {type(seed).__name__}"
        )
    if not 0 <= seed < 2**64:
        raise ValueError(f"gumbel_softmax: seed must be in [0, 2**64), got {seed}")
    return int(seed)


@doc(
    """
    tau : float, optional
        Positive Gumbel-softmax temperature (default 1), applied after the noise.
    hard : bool, optional
        Return the one-hot argmax of ``z + g`` instead (default False).
    seed : int, numpy.random.Generator or None, optional
        Seed of the noise; the same seed gives the same output. None draws one from
        NumPy's default generator."""
)
def gumbel_softmax(
    x: ArrayLike,
    tau: float = 1.0,
    hard: bool = False,
    seed: int | np.random.Generator | None = None,
    axis: int | tuple[int, ...] | None = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    where: ArrayLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """Gumbel-softmax: ``softmax((z + g)/tau)`` with Gumbel noise ``g = -log(-log U)``.

    Parameters
    ----------
    x : array_like
        Input logits (unnormalized log-probabilities).
    {common}

    Returns
    -------
    ndarray
        A relaxed one-hot sample per row (summing to 1), or with ``hard=True`` the exact
        one-hot sample: ``argmax(z + g)`` is distributed as softmax(z).

    Notes
    -----
    U ~ Uniform(0, 1) comes from splitmix64 evaluated at the element's C-order index
    (for normalized axes that are not adjacent, its index once they are moved to the
    end), keyed by ``seed``: results depend on the seed and the values only, not on the
    thread count or the memory layout. Masked entries
    are never selected. Jang, Gu & Poole, "Categorical Reparameterization with
    Gumbel-Softmax", arXiv 1611.01144.

    See Also
    --------
    softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> y = numsoft.gumbel_softmax(np.log([0.5, 0.3, 0.2]), tau=0.5, seed=0)
    >>> bool(np.isclose(y.sum(), 1.0))
    True
    >>> numsoft.gumbel_softmax(np.log([0.5, 0.3, 0.2]), hard=True, seed=0)
    array([0., 1., 0.])
    """
    params = gumbel_params(real_arg("gumbel_softmax", "tau", tau),
                           bool_arg("gumbel_softmax", "hard", hard))  # fmt: skip
    s = _seed_value(seed)
    p = prepare_variant(x, axis, dtype, where, temperature, GUMBEL)
    return run_variant(p, out, GUMBEL, params, seed=s)
