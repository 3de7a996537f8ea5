"""Softmax over a tree of classes (SPEC §9): each set of siblings is normalized, and a
node's probability is its share among its siblings times its parent's
(``hierarchical_log_softmax``, ``hierarchical_softmax``), and the loss of a label at
any node of the tree (``hierarchical_cross_entropy``).

The siblings are groups of ``segment_log_softmax`` (group = parent + 1, the roots'
group 0); the products down the tree are sums of logs, one level of the tree at a time.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ..frontdoor.arguments import as_input_array, check_out
from ..fused.cross_entropy import REDUCTIONS
from .arguments import Tree, tree_of
from .segments import segment_log_softmax

__all__ = ["hierarchical_log_softmax", "hierarchical_softmax", "hierarchical_cross_entropy"]


def _class_axis(func: str, a: np.ndarray, axis) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{func}: axis must be an int (the class axis), got {axis!r}")
    if a.ndim == 0 or not -a.ndim <= axis < a.ndim:
        raise ValueError(f"{func}: axis {axis} is out of bounds for a {a.ndim}-d x")
    return int(axis) % a.ndim


def _tree_log_probs(
    func, a, parents, ax, dtype, temperature
) -> tuple[np.ndarray, np.ndarray, Tree]:
    """(log p of every node, log_softmax among siblings, the tree), classes along ``ax``."""
    n = a.shape[ax]
    tree = tree_of(func, parents, n)
    siblings = segment_log_softmax(
        a, tree.parents + 1, num_segments=n + 1, axis=ax, dtype=dtype, temperature=temperature
    )
    log_p = siblings.copy()
    last = np.moveaxis(log_p, ax, -1)  # a view: classes last
    for level in range(1, int(tree.depth.max(initial=0)) + 1):
        nodes = np.flatnonzero(tree.depth == level)
        last[..., nodes] += last[..., tree.parents[nodes]]
    return log_p, siblings, tree


def hierarchical_log_softmax(
    x: ArrayLike,
    parents: ArrayLike,
    axis: int = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """log p of every node of a class tree: log_softmax among its siblings plus its
    parent's log p.

    Parameters
    ----------
    x : array_like
        Node logits along ``axis``: ``x[..., i]`` is node i's.
    parents : array_like of int
        ``parents[i]``: node i's parent, or -1 for a root; one per node, no cycle.
        The roots are siblings of each other, as are the children of each node.
    axis : int, optional
        The node axis (default -1).
    out : ndarray, optional
        Preallocated result of ``x``'s shape and the result dtype.
    dtype : dtype, optional
        Result dtype, as for ``log_softmax``.
    temperature : float, optional
        Positive, finite; every sibling softmax is applied to ``x / temperature``.

    Returns
    -------
    ndarray
        ``x``'s shape. Each node's p is the sum of its children's; the leaves' p sum
        to 1 (and so do the roots').

    See Also
    --------
    hierarchical_softmax, hierarchical_cross_entropy, segment_log_softmax

    Examples
    --------
    Two coarse classes (0, 1); node 0 has the fine classes 2 and 3.

    >>> import numpy as np
    >>> import numsoft
    >>> parents = np.array([-1, -1, 0, 0])
    >>> np.exp(numsoft.groups.hierarchical_log_softmax(np.array([0.0, 0.0, 1.0, 1.0]), parents))
    array([0.5 , 0.5 , 0.25, 0.25])
    """
    func = "hierarchical_log_softmax"
    a = as_input_array(x)
    ax = _class_axis(func, a, axis)
    log_p, _, _ = _tree_log_probs(func, a, parents, ax, dtype, temperature)
    res = check_out(out, a.shape, log_p.dtype)
    if res is None:
        return log_p
    res[...] = log_p
    return res


def hierarchical_softmax(
    x: ArrayLike,
    parents: ArrayLike,
    axis: int = -1,
    *,
    out: np.ndarray | None = None,
    dtype: DTypeLike | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """p of every node of a class tree: ``exp(hierarchical_log_softmax(...))``.

    Parameters
    ----------
    x, parents, axis, out, dtype, temperature
        As for ``hierarchical_log_softmax``.

    Returns
    -------
    ndarray
        ``x``'s shape; each node's p is the sum of its children's.

    See Also
    --------
    hierarchical_log_softmax

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> numsoft.groups.hierarchical_softmax(np.array([0.0, 0.0, 1.0, 1.0]), [-1, -1, 0, 0])
    array([0.5 , 0.5 , 0.25, 0.25])
    """
    res = hierarchical_log_softmax(x, parents, axis, out=out, dtype=dtype, temperature=temperature)
    return np.exp(res, out=res)


def hierarchical_cross_entropy(
    x: ArrayLike,
    labels: ArrayLike,
    parents: ArrayLike,
    *,
    axis: int = -1,
    ignore_index: int = -100,
    reduction: str = "mean",
    return_grad: bool = False,
):
    """``−log p(label)`` over a class tree; a label may be any node (an internal node
    when only the coarse class is known).

    Parameters
    ----------
    x : array_like
        Node logits along ``axis``.
    labels : array_like of int
        One node per row (``x``'s shape without ``axis``), or ``ignore_index``.
    parents : array_like of int
        The tree, as for ``hierarchical_log_softmax``.
    axis : int, optional
        The node axis (default -1).
    ignore_index : int, optional
        Label of rows that count for nothing (loss and gradient 0).
    reduction : {"mean", "sum", "none"}, optional
        ``"mean"`` over the rows not ignored (NaN if there are none), ``"sum"``, or the
        per-row losses (``"none"``).
    return_grad : bool, optional
        Also return the loss's gradient with respect to ``x``.

    Returns
    -------
    loss : ndarray or scalar
        The reduced loss, or the per-row losses.
    grad : ndarray
        With ``return_grad``: ``∂loss/∂x``, of ``x``'s shape. For row r with label l,
        ``q_j − [j on l's path]`` for every node j whose siblings include a node on
        the path (``q`` the softmax among siblings), 0 elsewhere.

    See Also
    --------
    hierarchical_log_softmax, cross_entropy

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> from numsoft.groups import hierarchical_cross_entropy
    >>> x = np.zeros((2, 4))
    >>> float(hierarchical_cross_entropy(x, np.array([2, 0]), [-1, -1, 0, 0], reduction="sum"))
    2.0794415416798357
    """
    func = "hierarchical_cross_entropy"
    if reduction not in REDUCTIONS:
        raise ValueError(f"{func}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not isinstance(return_grad, (bool, np.bool_)):
        raise TypeError(f"{func}: return_grad must be a bool, got {type(return_grad).__name__}")
    a = as_input_array(x)
    ax = _class_axis(func, a, axis)
    log_p, siblings, tree = _tree_log_probs(func, a, parents, ax, None, 1.0)
    n = a.shape[ax]
    rows_lp = np.moveaxis(log_p, ax, -1).reshape(-1, n)
    lab = np.asarray(labels)
    if lab.dtype == bool or not np.issubdtype(lab.dtype, np.integer):
        raise TypeError(f"{func}: labels must hold integers, got dtype {lab.dtype}")
    expected = a.shape[:ax] + a.shape[ax + 1 :]
    if lab.shape != expected:
        raise ValueError(
            f"{func}: labels must have shape {expected} (x without axis), got {lab.shape}"
        )
    lab = lab.reshape(-1).astype(np.int64)
    valid = lab != ignore_index
    if np.any((lab[valid] < 0) | (lab[valid] >= n)):
        raise ValueError(f"{func}: labels must lie in [0, {n}) or equal ignore_index")
    rows = np.flatnonzero(valid)
    losses = np.zeros(lab.size, log_p.dtype)
    losses[rows] = -rows_lp[rows, lab[rows]]
    n_valid = rows.size
    if reduction == "none":
        loss = losses.reshape(expected)
    elif reduction == "sum":
        loss = log_p.dtype.type(losses.sum(dtype=np.float64))
    else:
        loss = log_p.dtype.type(losses.sum(dtype=np.float64) / n_valid if n_valid else np.nan)
    if not return_grad:
        return loss
    # on_path[r, v]: v is row r's label or one of its ancestors
    on_path = np.zeros((lab.size, n), bool)
    node = lab[rows]
    at = rows
    while at.size:
        on_path[at, node] = True
        up = tree.parents[node] >= 0
        at, node = at[up], tree.parents[node[up]]
    # the nodes whose sibling group holds a node of the path: roots, and children of a
    # strict ancestor of the label
    p = tree.parents
    child_of_path = np.where(p >= 0, on_path[:, np.maximum(p, 0)], True)
    child_of_path &= p[None, :] != lab[:, None]
    child_of_path[~valid] = False
    q = np.exp(np.moveaxis(siblings, ax, -1).reshape(-1, n))
    scale = 1.0 / n_valid if reduction == "mean" and n_valid else 1.0
    grad = (np.where(child_of_path, q, 0.0) - on_path) * scale
    grad = np.moveaxis(grad.reshape(*expected[:ax], *expected[ax:], n), -1, ax)
    return loss, grad.astype(log_p.dtype, copy=False)
