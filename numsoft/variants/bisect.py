"""Bisection maps with a parameter per row, as the ``entmax`` package computes them:
``entmax_bisect`` (α-entmax, α per row, α < 1 included), ``normmax_bisect`` and
``budget_bisect``, and their backward passes.

They back ``numsoft.torch`` (``entmax_bisect``, ``sparsemax_bisect``,
``normmax_bisect``, ``budget_bisect``). ``numsoft.entmax`` is the faster α-entmax
for one α ≥ 1; these follow entmax 1.3 step for step (every entry bisected, all
``n_iter`` steps run, the bracket as entmax sets it). The kernel is
``numsoft.cpu.variants.bisect``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .. import core
from .._docstrings import filled
from ..cpu.memory import read_only
from ..cpu.variants.bisect import bisect_rows, entmax_backward_rows
from ..route import follows_input_type
from ._run import bool_arg, int_arg, rows_along
from .sparse import entmax15_backward, sparsemax_backward

__all__ = ["entmax_bisect", "normmax_bisect", "budget_bisect"]

#: The parameters every bisection map documents alike.
_STEPS = """
    axis : int, optional
        The normalized axis (default -1).
    n_iter : int, optional
        Bisection steps, all of them run (default 50)."""


def _rows(func: str, x, axis, n_iter):
    """(x as (rows, n) float rows, the shape with ``axis`` last, axis) after checks."""
    x2, shape = rows_along(func, x, axis)
    if int_arg(func, "n_iter", n_iter) < 1:
        raise ValueError(f"{func}: n_iter must be at least 1")
    return x2, shape, int(axis)


def _per_row(func: str, name: str, value, shape, axis) -> np.ndarray:
    """``value`` (a number or an array broadcastable to x with ``axis`` of length 1)
    as one float64 per row, in the rows' order."""
    keep = list(shape[:-1]) + [1]
    try:
        v = np.asarray(value, dtype=np.float64)
        v = np.broadcast_to(np.moveaxis(v, axis, -1) if v.ndim else v, keep)
    except (TypeError, ValueError):
        raise ValueError(
            f"{func}: {name} must be a number or an array broadcastable to x with the "
            f"axis of length 1 (x's shape with that axis moved last: {tuple(shape)})"
        ) from None
    return np.ascontiguousarray(v.reshape(-1))


def _run(x2, shape, axis, c, r, q, target, lo, hi, cap, n_iter, normalize):
    y2 = np.empty_like(x2)
    if x2.size:
        bisect_rows(read_only(x2), y2, c, r, q, target, lo, hi, cap, n_iter, normalize)
    return np.moveaxis(y2.reshape(shape), -1, axis)


def _row_max(x2):
    return np.max(x2, axis=1).astype(np.float64) if x2.shape[1] else np.zeros(len(x2))


@follows_input_type
@filled("steps", _STEPS)
def entmax_bisect(
    x: ArrayLike, alpha: ArrayLike = 1.5, axis: int = -1, n_iter: int = 50,
    ensure_sum_one: bool = True,
) -> np.ndarray:  # fmt: skip
    """α-entmax by bisection, α per row, as ``entmax.entmax_bisect`` computes it.

    Parameters
    ----------
    x : array_like
        Scores.
    alpha : float or array_like, optional
        α (default 1.5): a number, or an array broadcastable to ``x`` with ``axis`` of
        length 1 (one α per row). Any α ≠ 1, as entmax bisects it.
    {steps}
    ensure_sum_one : bool, optional
        Divide the result by its sum (default True).

    Returns
    -------
    ndarray
        ``max((α−1)·x − τ, 0)^(1/(α−1))`` at the last bisection midpoint τ.

    Examples
    --------
    >>> import numpy as np
    >>> from numsoft.variants import bisect
    >>> bisect.entmax_bisect(np.array([[1.0, 0.8, 0.1], [1.0, 0.5, -2.0]]),
    ...                      alpha=np.array([[2.0], [1.5]]))
    array([[0.6       , 0.4       , 0.        ],
           [0.67399264, 0.32600736, 0.        ]])
    """
    x2, shape, ax = _rows("entmax_bisect", x, axis, n_iter)
    a = _per_row("entmax_bisect", "alpha", alpha, shape, ax)
    d = x2.shape[1]
    am1 = a - 1.0
    top = _row_max(x2) * am1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lo = top - 1.0
        hi = top - (1.0 / d) ** am1 if d else top
        r = 1.0 / am1
    ones = np.ones_like(a)
    normalize = bool_arg("entmax_bisect", "ensure_sum_one", ensure_sum_one)
    return _run(x2, shape, ax, am1, r, ones, ones, lo, hi, math.inf, int(n_iter), normalize)


@follows_input_type
@filled("steps", _STEPS)
def normmax_bisect(x: ArrayLike, alpha: ArrayLike = 2.0, axis: int = -1, n_iter: int = 50):
    """α-normmax by bisection, α per row, as ``entmax.normmax_bisect`` computes it.

    ``p = max(x − τ, 0)^(1/(α−1))`` with ``Σ p^α = 1`` at the root, then divided by
    ``Σ p``: the solution of ``max ⟨x, p⟩ − ‖p‖_α`` on the simplex.

    Parameters
    ----------
    x : array_like
        Scores.
    alpha : float or array_like, optional
        α (default 2): a number, or an array broadcastable to ``x`` with ``axis`` of
        length 1 (one α per row).
    {steps}

    Returns
    -------
    ndarray
        ``p`` at the last bisection midpoint, divided by its sum.

    Examples
    --------
    >>> import numpy as np
    >>> from numsoft.variants import bisect
    >>> bisect.normmax_bisect(np.array([3.0, 1.0, 0.0]))
    array([1., 0., 0.])
    """
    x2, shape, ax = _rows("normmax_bisect", x, axis, n_iter)
    a = _per_row("normmax_bisect", "alpha", alpha, shape, ax)
    d = x2.shape[1]
    top = _row_max(x2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        hi = top - (1.0 / d) ** (a - 1.0) if d else top
        r = 1.0 / (a - 1.0)
    ones = np.ones_like(a)
    return _run(x2, shape, ax, ones, r, a, ones, top - 1.0, hi, math.inf, int(n_iter), True)


@follows_input_type
@filled("steps", _STEPS)
def budget_bisect(x: ArrayLike, budget: ArrayLike = 2.0, axis: int = -1, n_iter: int = 50):
    """Budget-sparsemax by bisection, as ``entmax.budget_bisect`` computes it.

    ``p = clamp(x − τ, 0, 1)`` with ``Σ p = budget`` (per row): the projection onto
    ``{0 ≤ p ≤ 1, Σ p = budget}``.

    Parameters
    ----------
    x : array_like
        Scores.
    budget : float or array_like, optional
        The sum of each row's result (default 2): a number, or an array broadcastable to
        ``x`` with ``axis`` of length 1 (one budget per row).
    {steps}

    Returns
    -------
    ndarray
        ``clamp(x − τ, 0, 1)`` at the last bisection midpoint τ.

    Examples
    --------
    >>> import numpy as np
    >>> from numsoft.variants import bisect
    >>> bisect.budget_bisect(np.array([3.0, 2.5, 0.0, -1.0]))
    array([1., 1., 0., 0.])
    """
    x2, shape, ax = _rows("budget_bisect", x, axis, n_iter)
    b = _per_row("budget_bisect", "budget", budget, shape, ax)
    d = max(x2.shape[1], 1)
    lo = (np.min(x2, axis=1).astype(np.float64) if x2.shape[1] else 0.0) - b / d
    hi = _row_max(x2) - b / d
    ones = np.ones_like(b)
    return _run(x2, shape, ax, ones, ones, ones, b, lo, hi, 1.0, int(n_iter), False)


# ---------------------------------------------------------------- backward passes


def entmax_input_gradient(y, dy, alpha, axes) -> np.ndarray:
    """∂/∂x of α-entmax: ``g·dy − g·Σ(g·dy)/Σg`` with ``g = y^(2−α)`` on the support.

    One α of 1 (softmax), 1.5 or 2 (sparsemax) for every row runs that map's compiled
    backward pass; other α along one axis the compiled ``entmax_backward_rows``; α
    along several axes at once, these NumPy expressions.
    """
    values = np.unique(np.asarray(alpha, dtype=np.float64))
    compiled = {1.0: core.softmax_backward, 1.5: entmax15_backward, 2.0: sparsemax_backward}
    if values.size == 1 and len(axes) == 1 and float(values[0]) in compiled:
        return compiled[float(values[0])](y, dy, axis=axes[0])
    if len(axes) == 1:
        y2, shape = rows_along("entmax_input_gradient", y, axes[0])
        dy2, _ = rows_along("entmax_input_gradient", np.broadcast_to(dy, y.shape), axes[0])
        e = 2.0 - _per_row("entmax_input_gradient", "alpha", alpha, shape, axes[0])
        dx2 = np.empty_like(y2)
        entmax_backward_rows(y2, dy2, dx2, e)
        return np.moveaxis(dx2.reshape(shape), -1, axes[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(y > 0, np.abs(y) ** (2 - alpha), 0).astype(y.dtype, copy=False)
    gdy = g * dy
    ratio = np.sum(gdy, axis=axes, keepdims=True) / np.sum(g, axis=axes, keepdims=True)
    return gdy - g * ratio


def entmax_alpha_gradient(y, dy, alpha, axes) -> np.ndarray:
    """∂/∂α of α-entmax per row (kept axes), as ``entmax.EntmaxBisectFunction`` has it:
    ``Σ dy·(y − ŷ)/(α−1)² − Σ dy·(y log y − ŷ·H)/(α−1)``, ŷ = g/Σg, H = Σ y log y."""
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(y > 0, np.abs(y) ** (2 - alpha), 0)
        s = np.where(y > 0, y * np.log(np.where(y > 0, y, 1)), 0)
    ent = np.sum(s, axis=axes, keepdims=True)
    skew = g / np.sum(g, axis=axes, keepdims=True)
    d = dy * (y - skew) / (alpha - 1) ** 2 - dy * (s - skew * ent) / (alpha - 1)
    return np.sum(d, axis=axes, keepdims=True)


def _alpha_rows(args, y):
    """α as an array broadcastable to y (the normalized axis of length 1)."""
    a = np.asarray(args["alpha"], dtype=np.float64)
    return a if a.ndim == 0 else a.reshape(a.shape)


def entmax_bisect_backward(args, y, dy, needs) -> dict:
    """Gradients of ``entmax_bisect`` in x and α (α's shaped like the rows)."""
    axes = (int(args["axis"]) % y.ndim,)
    alpha = _alpha_rows(args, y)
    grads = {"x": entmax_input_gradient(y, dy, alpha, axes)}
    if "alpha" in needs:
        grads["alpha"] = entmax_alpha_gradient(y, dy, alpha, axes)
    return grads


def normmax_bisect_backward(args, y, dy, needs) -> dict:
    """∂/∂x of ``normmax_bisect``, as ``entmax.NormmaxBisectFunction`` has it."""
    axes = (int(args["axis"]) % y.ndim,)
    alpha = _alpha_rows(args, y)

    def total(v):
        return np.sum(v, axis=axes, keepdims=True)

    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(y > 0, y, 0)
        b = np.where(y > 0, np.abs(y) ** (2 - alpha), 0)
        dx = dy * b - total(dy * b) * a
        dx = dx - total(dy * a) * (b - total(b) * a)
        dx = dx * total(a**alpha) ** ((alpha - 1) / alpha) / (alpha - 1)
    return {"x": dx.astype(y.dtype, copy=False)}


def budget_bisect_backward(args, y, dy, needs) -> dict:
    """∂/∂x of ``budget_bisect``: ``dy`` minus its mean over the entries strictly inside
    (0, 1), on those entries; 0 elsewhere."""
    axes = (int(args["axis"]) % y.ndim,)
    active = (y > 0) & (y < 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.sum(dy * active, axis=axes, keepdims=True) / np.sum(
            active, axis=axes, keepdims=True
        )
    return {"x": np.where(active, dy - mean, 0).astype(y.dtype, copy=False)}
