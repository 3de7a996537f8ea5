"""Linear cross-entropy without logits (Cut Cross-Entropy, arXiv 2411.09009).

The loss of ``logits = h @ W.T (+ bias)`` for N rows and a vocabulary of V is computed
by vocabulary chunks of c columns, so the (N, V) logits never exist:

1. Forward sweep. For each chunk, BLAS writes ``h @ W[c0:c1].T`` into one reused (N, c)
   buffer; a parallel kernel adds the bias, folds every row segment into that row's
   running online ``(max m, Σ exp(x − m))`` (``_online_blocks.fold_row``), adds
   ``Σ x`` (label smoothing) and picks the label logit when the label falls in the
   chunk. Then ``lse = m + log d`` and the loss per row (``cross_entropy.ce_loss_value``).
2. Backward sweep (``return_grad=True``). Each chunk's logits are recomputed, turned in
   place into ``G = ∂loss/∂logits`` (``cross_entropy.ce_grad_row`` with the full-row
   ``(m, d)``), and ``dh += G @ W[c0:c1]``, ``dW[c0:c1] = G.T @ h``, ``dbias[c0:c1] =
   Σ_rows G`` by BLAS.

Extra memory: the (N, c) buffer, an (N, D) matmul temporary and O(N) statistics,
i.e. O(N·c) instead of O(N·V). The sweep itself (``linear_ce_sweeps``) is written once
with calls NumPy and Numba share (``np.dot`` with ``out``), so the Python API runs it
as Python on NumPy's BLAS and ``@njit`` code compiles the same lines.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import prange
from numba.extending import register_jitable
from numpy.typing import ArrayLike

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.memory import read_only
from ..cpu.paths import specialize
from ..cpu.threads import serial_or_parallel
from ..frontdoor.arguments import as_input_array, resolve_dtypes
from ..route import follows_input_type
from ._online_blocks import fold_row, lse_from_stats
from .cross_entropy import (
    ce_grad_row,
    ce_loss_value,
    check_labels,
    check_loss_options,
    gradient_scale,
    loss_constants,
    reduce_losses,
)

__all__ = ["linear_cross_entropy"]

#: Default chunk: the (N, chunk) logits buffer takes about this many bytes. Fewer,
#: larger chunks mean fewer hand-overs between BLAS and the Numba thread pool (each
#: costs idle/spinning threads on a small machine); 8 MiB keeps N=2048, V=32000 float32
#: at 3% (forward) and 7% (with gradients) of the logits' 262 MB.
CHUNK_BYTES = 8 << 20
#: Default chunks stay within these bounds (multiples of 64 columns).
MIN_CHUNK, MAX_CHUNK = 256, 8192


# ---------------------------------------------------------------- kernels


@kernel
def add_bias(row, bias_c):
    """row += bias_c when a bias is given (``bias_c.size > 0``). One read, one write."""
    if bias_c.size:
        for j in range(row.size):
            row[j] += bias_c[j]


@parallel_kernel
def fold_chunk(logits, bias_c, c0, labels, m, d, s, x_label):
    """Fold the chunk ``logits`` (columns c0:c0+c of every row) into the row statistics.

    Per row: add the bias; ``(m[i], d[i])`` ← online merge of the segment (by L1
    blocks); ``s[i] += Σ`` when ``s`` is not empty (label smoothing); ``x_label[i]`` =
    the label's logit if the label lies in this chunk. ``logits`` is overwritten with
    the biased logits.
    Traffic: one read and one write of the chunk (the write only with a bias).
    """
    with_sum = s.size > 0
    c = logits.shape[1]
    one = logits.dtype.type(1.0)
    for i in prange(logits.shape[0]):
        row = logits[i]
        add_bias(row, bias_c)
        m[i], d[i], si = fold_row(m[i], d[i], row, with_sum, one)
        if with_sum:
            s[i] += si
        y = labels[i] - c0
        if 0 <= y < c:
            x_label[i] = row[y]


@parallel_kernel
def finish_rows(m, d, s, x_label, labels, ce, loss, lse):
    """lse[i] = m[i] + log d[i] and the row loss (0 for ignored rows), rows in parallel
    (``ce``: ``cross_entropy.loss_constants``; ``s`` empty without smoothing)."""
    for i in prange(m.size):
        lse_i = lse_from_stats(m[i], d[i])
        lse[i] = lse_i
        if labels[i] == ce[0]:
            loss[i] = 0.0
        else:
            s_i = s[i] if s.size > 0 else 0.0
            loss[i] = ce_loss_value(lse_i, x_label[i], s_i, ce)


@parallel_kernel
def grad_chunk(logits, bias_c, c0, labels, m, d, lse, ce):
    """Overwrite the chunk ``logits`` with ∂loss/∂logits, rows in parallel.

    Uses the full-row statistics (m, d, lse) of the forward sweep; ignored rows get 0.
    One read, one write of the chunk.
    """
    for i in prange(logits.shape[0]):
        row = logits[i]
        if labels[i] == ce[0]:
            for j in range(row.size):
                row[j] = 0.0
        else:
            add_bias(row, bias_c)
            ce_grad_row(row, row, m[i], d[i], lse[i], labels[i] - c0, ce)


# ---------------------------------------------------------------- the two sweeps


#: The row-parallel steps of the sweep, for the Python API (the gradient is written in
#: place, never streamed: ``auto.streams_output``).
PARALLEL_STEPS = (fold_chunk, finish_rows, specialize(grad_chunk, STREAM_OUTPUT=False))


def sweeps_with(steps):
    """The forward (and backward) sweep over vocabulary chunks, calling ``steps``.

    ``steps = (fold, finish, grad)``: ``fold_chunk``, ``finish_rows``, ``grad_chunk``
    (``PARALLEL_STEPS``, or what ``serial_or_parallel`` picks of them) or their serial
    twins (inside a user's ``@njit``). They are bound in the closure, not passed as
    values: jitted code then calls them as known functions (a tuple of functions would
    be Numba's experimental first-class function type, which warns at every compile).
    """
    fold, finish, grad = steps

    def linear_ce_sweeps(layer, labels, chunk, ce, want_grad, outputs):
        """Fill the output arrays.

        ``layer = (h, W, bias)``: ``h`` (N, D), ``W`` (V, D) C-contiguous of one float
        dtype, ``bias`` of size V or 0; ``labels`` (N,) int; ``ce``:
        ``cross_entropy.loss_constants``. ``outputs = (loss, lse, dh, dW, dbias)``:
        writes ``loss`` (N,) and ``lse`` (N,, float64); with ``want_grad`` also ``dh``
        (N, D), ``dW`` (V, D) and, with a bias, ``dbias`` (V,). Peak extra memory:
        N·min(chunk, V) + N·D elements + 4 arrays of N.
        """
        h, W, bias = layer
        loss, lse, dh, dW, dbias = outputs
        n, dim = h.shape
        vocab = W.shape[0]
        buf = np.empty(n * min(chunk, vocab), dtype=h.dtype)
        m = np.full(n, -np.inf, dtype=h.dtype)
        d = np.zeros(n)
        s = np.zeros(n if ce[2] != 0.0 else 0)  # Σ x, for label smoothing only
        x_label = np.zeros(n)
        for c0 in range(0, vocab, chunk):
            c1 = min(c0 + chunk, vocab)
            logits = buf[: n * (c1 - c0)].reshape((n, c1 - c0))
            np.dot(h, W[c0:c1].T, logits)
            fold(logits, bias[c0:c1], c0, labels, m, d, s, x_label)
        finish(m, d, s, x_label, labels, ce, loss, lse)
        if not want_grad:
            return
        tmp = np.empty((n, dim), dtype=h.dtype)
        dh[...] = 0.0
        for c0 in range(0, vocab, chunk):
            c1 = min(c0 + chunk, vocab)
            logits = buf[: n * (c1 - c0)].reshape((n, c1 - c0))
            np.dot(h, W[c0:c1].T, logits)
            grad(logits, bias[c0:c1], c0, labels, m, d, lse, ce)
            np.dot(logits.T, h, dW[c0:c1])
            np.dot(logits, W[c0:c1], tmp)
            dh += tmp
            if bias.size:
                dbias[c0:c1] = logits.sum(axis=0)

    return linear_ce_sweeps


@register_jitable
def default_chunk(n, vocab, itemsize):
    """Chunk width so that the (n, chunk) buffer is about ``CHUNK_BYTES``."""
    c = CHUNK_BYTES // max(1, n * itemsize) // 64 * 64
    c = max(MIN_CHUNK, min(MAX_CHUNK, c))
    return max(1, min(c, vocab))


# ---------------------------------------------------------------- public function


@follows_input_type
def linear_cross_entropy(
    h: ArrayLike,
    W: ArrayLike,
    labels: ArrayLike,
    *,
    bias: ArrayLike | None = None,
    chunk_size: int | None = None,
    label_smoothing: float = 0.0,
    z_loss: float = 0.0,
    ignore_index: int = -100,
    reduction: str = "mean",
    return_lse: bool = False,
    return_grad: bool = False,
):
    """Cross-entropy of ``logits = h @ W.T + bias`` without materializing the logits.

    Same loss as ``cross_entropy(h @ W.T + bias, labels, ...)``, per row

        ℓ = lse − (1 − ε)·x_y − (ε/V)·Σ_j x_j + z·lse²,    x = W h + b,

    computed over vocabulary chunks of ``chunk_size`` columns: each chunk's logits come
    from one BLAS matmul into a reused ``(N, chunk_size)`` buffer and are folded into
    each row's online ``(max, Σ exp)``; the gradients are accumulated chunk by chunk
    in a second sweep that recomputes the chunk logits (Cut Cross-Entropy). Extra
    memory is O(N·chunk_size + N·D), not O(N·V).

    Parameters
    ----------
    h : array_like, shape (..., D)
        Hidden states (the leading axes are the rows).
    W : array_like, shape (V, D)
        Classifier (unembedding) weights, one row per class.
    labels : array_like of int, shape (...)
        Class of each row, in ``[0, V)`` or ``ignore_index``.
    bias : array_like, shape (V,), optional
        Added to the logits; ``-inf`` entries exclude classes.
    chunk_size : int, optional
        Vocabulary columns per chunk. Default: the buffer is about 8 MiB
        (``CHUNK_BYTES``), between 256 and 8192 columns (1024 for N = 2048 float32).
    label_smoothing : float, optional
        As in ``numsoft.cross_entropy``.
    z_loss : float, optional
        As in ``numsoft.cross_entropy``.
    ignore_index : int, optional
        As in ``numsoft.cross_entropy``.
    reduction : str, optional
        ``"mean"`` (default), ``"sum"`` or ``"none"``, as in ``numsoft.cross_entropy``.
    return_lse : bool, optional
        As in ``numsoft.cross_entropy``.
    return_grad : bool, optional
        Also return the gradients of the reduced loss (``"none"``: of ``Σ loss``):
        ``dh = G @ W`` (shaped like ``h``), ``dW = G.T @ h`` and, with a bias,
        ``dbias = Σ_rows G``, where ``G = ∂loss/∂logits`` (see
        ``numsoft.cross_entropy``) is formed one chunk at a time.

    Returns
    -------
    loss : scalar or ndarray
        Scalar for ``"mean"``/``"sum"``, else shaped like ``labels``.
    lse : ndarray
        Only with ``return_lse=True``.
    dh : ndarray
        Only with ``return_grad=True``; shaped like ``h``.
    dW : ndarray
        Only with ``return_grad=True``; shaped like ``W``.
    dbias : ndarray
        Only with ``return_grad=True`` and a ``bias``; shaped like ``bias``. Outputs
        come in this order, as one tuple.

    Raises
    ------
    ValueError
        For labels out of range, mismatched shapes (naming ``W``, ``bias`` or
        ``labels``), a ``chunk_size`` below 1, or bad loss options.
    TypeError
        For non-numeric arrays, non-integer ``labels`` or ``chunk_size``.

    Notes
    -----
    float16/float32 inputs are computed in float32 (BLAS sgemm), others in float64.
    Non-finite logits (from non-finite ``h``/``W``/``bias``, or a row whose every
    class is excluded) give a non-finite loss and NaN gradient rows. Unlike the CCE
    paper's GPU kernel, no gradient entries are filtered out: the gradient is exact.

    Each chunk hands the cores from BLAS to Numba's thread pool and back. Both pools
    spin-wait after their work by default, which on a machine with few cores can
    cost more than the kernels; ``OMP_WAIT_POLICY=PASSIVE`` (and one BLAS thread when
    the rows are few) avoids it. ``asv_bench/fused_memory.py`` measures both.

    See Also
    --------
    cross_entropy

    References
    ----------
    1. E. Wijmans, B. Huval, A. Hertzberg, V. Koltun, P. Krähenbühl, "Cut Your
       Losses in Large-Vocabulary Language Models", arXiv:2411.09009 (2024).
    2. M. Milakov, N. Gimelshein, "Online normalizer calculation for softmax",
       arXiv:1805.02867 (2018).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> h = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> labels = np.array([2, 1])
    >>> float(numsoft.linear_cross_entropy(h, W, labels))
    0.81030924
    >>> float(numsoft.cross_entropy(h @ W.T, labels))
    0.81030924
    >>> loss, dh, dW = numsoft.linear_cross_entropy(h, W, labels, chunk_size=2,
    ...                                             return_grad=True)
    >>> dh
    array([[-0.0776812 , -0.2111594 ],
           [ 0.26584473, -0.03168947]])
    """
    ha = as_input_array(h, "h")
    Wa = as_input_array(W, "W")
    ba = None if bias is None else as_input_array(bias, "bias")
    if ha.ndim < 1:
        raise ValueError("h must have at least one dimension (the last is D)")
    if Wa.ndim != 2 or Wa.shape[1] != ha.shape[-1]:
        raise ValueError(f"W must have shape (V, {ha.shape[-1]}) to match h, got {Wa.shape}")
    vocab, dim = Wa.shape
    if ba is not None and ba.shape != (vocab,):
        raise ValueError(f"bias must have shape ({vocab},), got {ba.shape}")
    eps, z, ignore_index = check_loss_options(label_smoothing, z_loss, ignore_index, reduction)
    if chunk_size is not None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral):
            raise TypeError(f"chunk_size must be an int or None, got {chunk_size!r}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    dtypes = [ha.dtype, Wa.dtype] + ([] if ba is None else [ba.dtype])
    compute, _ = resolve_dtypes(np.result_type(*dtypes), None)
    row_shape = ha.shape[:-1]
    lab = read_only(check_labels(labels, row_shape, vocab, ignore_index).reshape(-1))
    h2 = read_only(np.ascontiguousarray(ha.reshape((math.prod(row_shape), dim)), dtype=compute))
    W2 = read_only(np.ascontiguousarray(Wa, dtype=compute))
    b1 = read_only(np.empty(0, compute) if ba is None else np.ascontiguousarray(ba, compute))
    n = h2.shape[0]
    chunk = default_chunk(n, vocab, compute.itemsize) if chunk_size is None else int(chunk_size)
    n_valid = int(np.count_nonzero(lab != ignore_index))
    loss = np.empty(n, compute)
    lse = np.empty(n)
    if return_grad:
        dh = np.empty((n, dim), compute)
        dW = np.empty((vocab, dim), compute)
        dbias = np.empty(vocab if ba is not None else 0, compute)
    else:
        dh, dW, dbias = (np.empty((0, 0), compute), np.empty((0, 0), compute), np.empty(0, compute))
    ce = loss_constants(ignore_index, eps, vocab, z, gradient_scale(reduction, n_valid))
    sweeps = sweeps_with(tuple(serial_or_parallel(step, n * vocab) for step in PARALLEL_STEPS))
    sweeps((h2, W2, b1), lab, chunk, ce, return_grad, (loss, lse, dh, dW, dbias))
    outputs = [reduce_losses(loss.reshape(row_shape), n_valid, reduction, compute)]
    if return_lse:
        lse_rows = lse.astype(compute).reshape(row_shape)
        outputs.append(lse_rows if lse_rows.ndim else lse_rows[()])
    if return_grad:
        outputs += [dh.reshape(ha.shape), dW]
        if ba is not None:
            outputs.append(dbias)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
