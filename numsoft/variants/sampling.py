"""Public functions: Gumbel-softmax.

The row kernels are in ``numsoft.cpu.variants.sampling`` (the math is documented there).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba.extending import register_jitable
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import Request
from ..route import follows_input_type
from ..vocabulary import GUMBEL
from ._run import bool_arg, doc, real_arg, run_variant

__all__ = ["gumbel_softmax"]


@register_jitable
def gumbel_params(tau, hard):
    if not (tau > 0.0 and math.isfinite(tau)):
        raise ValueError("gumbel_softmax: tau must be positive and finite")
    return np.array([tau, 1.0 if hard else 0.0])


def seed_value(seed) -> int:
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


@follows_input_type
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
    params = gumbel_params(
        real_arg("gumbel_softmax", "tau", tau), bool_arg("gumbel_softmax", "hard", hard)
    )
    s = seed_value(seed)
    return run_variant(x, Request(axis, out, dtype, where, temperature), GUMBEL, params, seed=s)
