"""Sampled softmax cross-entropy (SPEC §10; ``tf.nn.sampled_softmax_loss`` with given
sampled values; Partial FC).

Each row's logits are its true class and a shared set of ``sampled`` classes,

    t_i = h_i·W[y_i] + b[y_i] − log q(y_i),    s_ij = h_i·W[k_j] + b[k_j] − log q(k_j),

with a sampled class equal to the row's label masked out (an accidental hit), and the
loss is the cross-entropy of ``[t_i, s_i·]`` with the true class first. The (N, S)
sampled logits come from one BLAS product; one fused row pass (``sampled_row``)
subtracts log q, masks the hits, runs the blocked online normalizer
(``_online_blocks.fold_row``) with the true logit merged in, and, with the gradient,
turns the row in place into ``∂ℓ/∂s`` (one read, one write). The gradients of ``h``
and of the rows of ``W`` (and ``bias``) used then come from two more products and a
scatter-add over the classes used (``add_rows``).

The whole computation (``sampled_core_with``) is written once for the Python API and
``@njit`` callers (``_sampled_overloads``), with the parallel or the serial row driver.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from numba.extending import register_jitable
from numpy.typing import ArrayLike

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.memory import read_only
from ..cpu.passes import is_regular, write_exp_scaled
from ..cpu.paths import GRADIENT, specialize
from ..cpu.threads import serial_or_parallel
from ..frontdoor.arguments import as_input_array, resolve_dtypes
from ..route import follows_input_type
from ._online_blocks import fold_partial, fold_row, lse_from_stats
from .cross_entropy import check_labels, check_loss_options, gradient_scale, reduce_losses

__all__ = ["sampled_cross_entropy"]


@kernel
def sampled_row(s, t, label, sampled, log_q, params):
    """(loss, ∂ℓ/∂t) of one row: ``s`` the sampled logits (rewritten in place: minus
    ``log_q``, hits at -inf, and with ``GRADIENT`` the gradient ``w·p_j``), ``t`` the
    true logit. ``params``: (w, remove accidental hits (0/1), ignore_index)."""
    w, remove, ignore = params
    if label == ignore:
        for j in range(s.size):
            s[j] = 0.0
        return 0.0, 0.0
    for j in range(s.size):
        z = s[j] - log_q[j]
        s[j] = -math.inf if remove != 0.0 and sampled[j] == label else z
    tt = s.dtype.type(t)
    one = s.dtype.type(1.0)
    m, d, _ = fold_row(s.dtype.type(-math.inf), 0.0, s, False, one)
    m, d = fold_partial(m, d, tt, 1.0, one)
    if not is_regular(m, d):
        for j in range(s.size):
            s[j] = math.nan
        return math.nan, math.nan
    loss = lse_from_stats(m, d) - t
    g_true = 0.0
    if GRADIENT:
        write_exp_scaled(s, s, m, one, s.dtype.type(w / d))
        g_true = w * (math.exp(tt - m) / d - 1.0)
    return loss, g_true


@parallel_kernel
def sampled_rows(s2, t, labels, sampled, log_q, params, loss, g_true):
    """Row driver: ``sampled_row`` of every row, in parallel."""
    for i in prange(s2.shape[0]):
        loss[i], g_true[i] = sampled_row(s2[i], t[i], labels[i], sampled, log_q, params)


@kernel
def row_dots(h, rows):
    """``Σ_d h[i, d]·rows[i, d]`` per row (float64 sums, the result in ``h``'s dtype)."""
    out = np.empty(h.shape[0], h.dtype)
    for i in range(h.shape[0]):
        acc = 0.0
        for k in range(h.shape[1]):
            acc += h[i, k] * rows[i, k]
        out[i] = acc
    return out


@kernel
def add_rows(dst, index, rows):
    """``dst[index[k]] += rows[k]`` for every k, repeated indices adding up."""
    for k in range(index.size):
        r = index[k]
        for j in range(rows.shape[1]):
            dst[r, j] += rows[k, j]


def sampled_core_with(rows):
    """The computation, with ``rows`` the row driver (parallel, or serial inside @njit).

    ``out`` = (loss (N,), dh (N, D), dW (V, D), dbias (V,) or (0,)); the gradients are
    written when ``want_grad``, ``dW`` and ``dbias`` added to (pass zeros: NumPy's
    ``zeros`` maps untouched pages lazily, so only the rows of ``W`` used cost memory).
    """

    @register_jitable
    def core(h2, W2, b1, lab, sampled, log_q, true_log_q, params, want_grad, out):
        loss, dh, dW, dbias = out
        ignore = params[2]
        safe = np.where(lab == int(ignore), 0, lab)
        Ws = W2[sampled]
        Wy = W2[safe]
        s2 = np.dot(h2, Ws.T)
        t = row_dots(h2, Wy)
        if b1.size > 0:
            s2 += b1[sampled]
            t += b1[safe]
        if true_log_q.size > 0:
            t -= true_log_q
        g_true = np.empty(h2.shape[0], h2.dtype)
        rows(s2, t, lab, sampled, log_q, params, loss, g_true)
        if want_grad:
            gt = g_true.reshape((-1, 1))
            dh[:] = np.dot(s2, Ws) + gt * Wy
            add_rows(dW, sampled, np.dot(s2.T, h2))
            add_rows(dW, safe, gt * h2)
            if dbias.size > 0:
                add_rows(dbias.reshape((-1, 1)), sampled, s2.sum(axis=0).reshape((-1, 1)))
                add_rows(dbias.reshape((-1, 1)), safe, gt)

    return core


def _ids(values, name: str, length: int, vocab: int) -> np.ndarray:
    ids = np.asarray(values)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {ids.dtype}")
    if ids.ndim != 1 or (length >= 0 and ids.size != length):
        raise ValueError(f"{name} must be a 1-D array of {length} class ids, got {ids.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"{name} must lie in [0, {vocab}) (the rows of W)")
    return read_only(ids.astype(np.int64, copy=False))


def _log_q(values, name: str, size: int, compute) -> np.ndarray:
    if values is None:
        return read_only(np.zeros(size if name == "sampled_log_q" else 0, compute))
    a = as_input_array(values, name)
    if a.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {a.shape}")
    return read_only(np.ascontiguousarray(a, dtype=compute))


@follows_input_type
def sampled_cross_entropy(
    h: ArrayLike,
    W: ArrayLike,
    labels: ArrayLike,
    sampled: ArrayLike,
    *,
    bias: ArrayLike | None = None,
    sampled_log_q: ArrayLike | None = None,
    true_log_q: ArrayLike | None = None,
    remove_accidental_hits: bool = True,
    ignore_index: int = -100,
    reduction: str = "mean",
    return_grad: bool = False,
):
    """Sampled softmax cross-entropy of ``h @ W.T + bias`` over the true class and a set of
    sampled classes (``tf.nn.sampled_softmax_loss`` with given sampled values).

    For row i with label y_i, the logits are ``t_i = h_i·W[y_i] + b[y_i] − log q(y_i)``
    and ``s_ij = h_i·W[k_j] + b[k_j] − log q(k_j)`` for the sampled classes k; a
    sampled class equal to y_i is masked out; the loss is
    ``log(e^{t_i} + Σ_j e^{s_ij}) − t_i``. Only the rows of ``W`` used are read.

    Parameters
    ----------
    h : array_like
        (N, D) hidden states.
    W : array_like
        (V, D) class weights.
    labels : array_like of int
        (N,) true classes in ``[0, V)`` or ``ignore_index``.
    sampled : array_like of int
        (S,) sampled classes in ``[0, V)``, shared by all rows (repeats allowed).
    bias : array_like, optional
        (V,) class biases.
    sampled_log_q : array_like, optional
        (S,) log of each sampled class's expected count (TF's ``sampled_expected_count``);
        default 0.
    true_log_q : array_like, optional
        (N,) log of each row's true class's expected count; default 0.
    remove_accidental_hits : bool, optional
        Mask a sampled class that equals the row's label (default True, as TF).
    ignore_index : int, optional
        Rows with this label give 0 loss and 0 gradient, not counted by ``"mean"``.
    reduction : str, optional
        ``"mean"`` (over rows not ignored), ``"sum"`` or ``"none"``.
    return_grad : bool, optional
        Also return the gradients of the reduced loss with respect to ``h``, ``W`` (only
        the rows used are non-zero) and, when given, ``bias``.

    Returns
    -------
    loss : scalar or ndarray
        A scalar, or (N,) for ``"none"``.
    dh, dW, dbias : ndarray
        Only with ``return_grad=True`` (``dbias`` only with ``bias``).

    Raises
    ------
    ValueError
        For shapes that do not match, labels or sampled ids out of range, or bad
        options.
    TypeError
        For non-integer ``labels`` or ``sampled``, or non-numeric arrays.

    Notes
    -----
    With every class sampled once and log q = 0 the loss is ``linear_cross_entropy``'s.
    float16/float32 inputs are computed in float32, others in float64.

    See Also
    --------
    linear_cross_entropy

    References
    ----------
    1. S. Jean et al., "On Using Very Large Target Vocabulary for Neural Machine
       Translation", arXiv:1412.2007 (2015).
    2. X. An et al., "Partial FC: Training 10 Million Identities on a Single Machine",
       arXiv:2010.05222 (2021).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> h = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> labels = np.array([2, 1])
    >>> float(numsoft.sampled_cross_entropy(h, W, labels, np.arange(3)))
    0.81030924
    >>> float(numsoft.sampled_cross_entropy(h, W, labels, np.array([0])))
    0.41003760
    """
    ha = as_input_array(h, "h")
    Wa = as_input_array(W, "W")
    ba = None if bias is None else as_input_array(bias, "bias")
    if ha.ndim != 2:
        raise ValueError(f"h must be a 2-D (N, D) array, got shape {ha.shape}")
    if Wa.ndim != 2 or Wa.shape[1] != ha.shape[1]:
        raise ValueError(f"W must have shape (V, {ha.shape[1]}) to match h, got {Wa.shape}")
    vocab, dim = Wa.shape
    if ba is not None and ba.shape != (vocab,):
        raise ValueError(f"bias must have shape ({vocab},), got {ba.shape}")
    _, _, ignore_index = check_loss_options(0.0, 0.0, ignore_index, reduction)
    if not isinstance(remove_accidental_hits, (bool, np.bool_)):
        raise TypeError(
            f"remove_accidental_hits must be True or False, got {remove_accidental_hits!r}"
        )
    if not isinstance(return_grad, (bool, np.bool_)):
        raise TypeError(f"return_grad must be True or False, got {return_grad!r}")
    dtypes = [ha.dtype, Wa.dtype] + ([] if ba is None else [ba.dtype])
    compute, _ = resolve_dtypes(np.result_type(*dtypes), None)
    n = ha.shape[0]
    lab = read_only(check_labels(labels, (n,), vocab, ignore_index))
    ids = _ids(sampled, "sampled", -1, vocab)
    log_q = _log_q(sampled_log_q, "sampled_log_q", ids.size, compute)
    true_q = _log_q(true_log_q, "true_log_q", n, compute)
    h2 = read_only(np.ascontiguousarray(ha, dtype=compute))
    W2 = read_only(np.ascontiguousarray(Wa, dtype=compute))
    b1 = read_only(np.empty(0, compute) if ba is None else np.ascontiguousarray(ba, compute))
    n_valid = int(np.count_nonzero(lab != ignore_index))
    grad = bool(return_grad)
    out = (
        np.empty(n, compute),
        np.empty((n, dim) if grad else (0, 0), compute),
        np.zeros((vocab, dim) if grad else (0, 0), compute),
        np.zeros(vocab if grad and ba is not None else 0, compute),
    )
    params = (
        gradient_scale(reduction, n_valid),
        float(remove_accidental_hits),
        float(ignore_index),
    )
    rows = serial_or_parallel(
        specialize(sampled_rows, GRADIENT=grad, STREAM_OUTPUT=False), n * max(ids.size, 1)
    )
    sampled_core_with(rows)(h2, W2, b1, lab, ids, log_q, true_q, params, grad, out)
    result = reduce_losses(out[0], n_valid, reduction, compute)
    if not grad:
        return result
    return (result, out[1], out[2]) + ((out[3],) if ba is not None else ())
