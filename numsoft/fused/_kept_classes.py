"""Classes left out by ``where=`` in the losses with a class axis (SPEC §1, §10).

A class where ``where`` is False is not part of the row's distribution: its logit is
read as -inf (``masked_rows``), a label may not name it (``check_kept_labels``), and
label smoothing spreads ε over the k classes kept in the row, not over all C
(``smoothing_over_kept`` for labels, ``kept_targets`` for probability targets). A
gradient is set to exactly 0 on the classes left out (``zero_left_out``): the
vectorized exponential of -inf times a row scale above 1 can round to the smallest
subnormal instead. Each
helper works on ``(rows, C)`` arrays with the classes last, from the Python API (after
``_class_rows``) and from ``@njit`` callers alike; each is one read of its rows.
"""

from __future__ import annotations

import math

import numpy as np

from ..cpu._jit import kernel


@kernel
def masked_rows(x2, keep2):
    """``x2`` with the entries ``keep2`` leaves out at -inf (a new array)."""
    out = np.empty(x2.shape, x2.dtype)
    for i in range(x2.shape[0]):
        for j in range(x2.shape[1]):
            out[i, j] = x2[i, j] if keep2[i, j] else -math.inf
    return out


@kernel
def check_kept_labels(keep2, labels, ignore_index):
    """ValueError if a row's label (not ``ignore_index``) names a class left out."""
    for i in range(labels.size):
        y = labels[i]
        if y != ignore_index and not keep2[i, y]:
            raise ValueError("labels: a label names a class that where= leaves out")


@kernel
def smoothing_over_kept(x2, keep2, labels, ignore_index, eps, scale, loss, g2):
    """Label smoothing ε over each row's k kept classes, added to a cross-entropy run
    without it (``conf = 1 − ε``, ``eps_c = 0``): ``loss −= ε/k·Σ_kept x``, and, when
    ``g2`` has columns, ``g2 −= scale·ε/k`` on the kept classes. Ignored rows are left
    as they are (0)."""
    if eps == 0.0:
        return
    for i in range(x2.shape[0]):
        if labels[i] == ignore_index:
            continue
        k = 0
        s = 0.0
        for j in range(x2.shape[1]):
            if keep2[i, j]:
                k += 1
                s += x2[i, j]
        if k == 0:
            continue
        share = eps / k
        loss[i] -= share * s
        shift = scale * share
        for j in range(g2.shape[1]):
            if keep2[i, j]:
                g2[i, j] -= shift


@kernel
def kept_targets(q2, keep2, eps):
    """Probability targets on the kept classes, smoothed over them: ``(1 − ε)·q + ε/k``
    where kept, 0 where left out (a new array; the targets of a class left out are not
    read)."""
    out = np.zeros(q2.shape, q2.dtype)
    for i in range(q2.shape[0]):
        k = 0
        for j in range(q2.shape[1]):
            k += keep2[i, j]
        share = eps / k if k > 0 else 0.0
        for j in range(q2.shape[1]):
            if keep2[i, j]:
                out[i, j] = (1.0 - eps) * q2[i, j] + share
    return out


@kernel
def zero_left_out(g2, keep2):
    """``g2 = 0`` on the classes ``keep2`` leaves out (nothing when ``g2`` has no
    columns or ``keep2`` no rows)."""
    if g2.shape[1] == 0 or keep2.shape[0] == 0:
        return
    for i in range(g2.shape[0]):
        for j in range(g2.shape[1]):
            if not keep2[i, j]:
                g2[i, j] = 0.0
