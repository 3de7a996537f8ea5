"""Attention ``softmax(q·kᵀ·scale)·v`` by blocks with the online softmax (FlashAttention).

Each parallel task owns one block of ``QUERY_BLOCK`` query rows of one batch entry and
loops over blocks of ``KEY_BLOCK`` keys. For a key block it forms the small score tile
``S = scale·Q_blk·K_blkᵀ`` (masked entries ``-inf``), and for every query row keeps the
running maximum ``m``, the running sum ``l`` and the output accumulator ``a``:

    m' = max(m, max_j S_j),   p_j = exp(S_j − m'),   α = exp(m − m'),
    l' = α·l + Σ_j p_j,        a' = α·a + Σ_j p_j·v_j,

the online-normalizer merge (Milakov & Gimelshein, arXiv 1805.02867) applied to a
weighted sum (Dao et al., FlashAttention, arXiv 2205.14135). At the end ``out = a/l``.
Only a ``QUERY_BLOCK × KEY_BLOCK`` tile of scores exists at any time, never the
``Lq × Lk`` matrix. Traffic: q and out once; k and v once per query block.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import prange
from numpy.typing import ArrayLike

from ..cpu._jit import kernel, parallel_kernel
from ..cpu.expfast import exp_nonpositive
from ..cpu.memory import read_only
from ..cpu.passes import row_max, scale_inplace, store_exp_and_sum
from ..cpu.threads import serial_or_parallel
from ..frontdoor.arguments import as_input_array, resolve_dtypes
from ..route import follows_input_type

__all__ = ["attention"]

#: Query rows per task and keys per score tile (a 64×128 float32 tile is 32 KiB).
QUERY_BLOCK = 64
KEY_BLOCK = 128


# ---------------------------------------------------------------- kernels


@kernel
def load_keys_transposed(k2, j0, kt):
    """kt[d, j] = k2[j0 + j, d] for the ``kt.shape[1]`` keys of the block."""
    for j in range(kt.shape[1]):
        for dd in range(kt.shape[0]):
            kt[dd, j] = k2[j0 + j, dd]


@kernel
def score_tile(q2, i0, kt, scale, s):
    """s[i, j] = scale·(q2[i0 + i] · kt[:, j]): an axpy over the key block per (i, d)."""
    for i in range(s.shape[0]):
        srow = s[i]
        for j in range(srow.size):
            srow[j] = 0.0
        for dd in range(kt.shape[0]):
            qv = q2[i0 + i, dd] * scale
            for j in range(srow.size):
                srow[j] += qv * kt[dd, j]


@kernel
def mask_tile(s, i0, j0, mask2, has_mask, causal):
    """Set excluded scores to -inf: ``mask2`` False, or key after query when causal."""
    ninf = s.dtype.type(-math.inf)
    for i in range(s.shape[0]):
        for j in range(s.shape[1]):
            if (has_mask and not mask2[i0 + i, j0 + j]) or (causal and j0 + j > i0 + i):
                s[i, j] = ninf


@kernel
def online_softmax_update(s, v2, j0, m, l, acc):
    """Fold the score tile into the running (m, l, acc) of each query row.

    The scores are overwritten with ``p = exp(s − m')``; a row whose tile is fully
    masked is left unchanged. ``acc`` is rescaled only when the maximum grows. NaN
    scores make the row's l (and so its output) NaN.
    """
    one = s.dtype.type(1.0)
    for i in range(s.shape[0]):
        srow = s[i]
        mb = row_max(srow)
        if mb == -math.inf:
            continue
        m_old = m[i]
        # A NaN maximum (NaN first in the tile) must stick, or the row would look
        # fully masked at the end; later NaN entries poison l and acc through exp.
        m_new = mb if (mb > m_old or mb != mb) else m_old
        l_tile = store_exp_and_sum(srow, srow, m_new, one)
        arow = acc[i]
        if m_new != m_old:
            alpha = exp_nonpositive(m_old - m_new)
            scale_inplace(arow, alpha)
            l[i] = l[i] * alpha + l_tile
        else:
            l[i] += l_tile
        for j in range(srow.size):
            pj = srow[j]
            if pj != 0.0:
                for e in range(arow.size):
                    arow[e] += pj * v2[j0 + j, e]
        m[i] = m_new


@kernel
def write_normalized(acc, m, l, out2, i0):
    """out2[i0 + i] = acc[i] / l[i]; a row that saw no unmasked key gets 0."""
    for i in range(acc.shape[0]):
        orow = out2[i0 + i]
        if m[i] == -math.inf:
            for e in range(orow.size):
                orow[e] = 0.0
        else:
            inv = orow.dtype.type(1.0 / l[i])
            for e in range(orow.size):
                orow[e] = acc[i, e] * inv


@parallel_kernel
def attention_blocks(q3, k3, v3, mask3, maps, options, out3):
    """FlashAttention-style driver: tasks = (batch entry, query block), in parallel.

    With ``maps = (qmap, kmap, vmap, mmap)``, batch entry b reads ``q3[qmap[b]]``,
    ``k3[kmap[b]]``, ``v3[vmap[b]]`` and ``mask3[mmap[b]]``, so broadcast operands are
    never copied. ``options = (has_mask, causal, scale)``; with ``causal`` a task stops
    at the last key its queries may see.
    """
    qmap, kmap, vmap, mmap = maps
    has_mask, causal, scale = options
    nb, lq, dv = out3.shape
    lk = k3.shape[1]
    dim = q3.shape[2]
    nqb = (lq + QUERY_BLOCK - 1) // QUERY_BLOCK
    dt = out3.dtype
    for task in prange(nb * nqb):
        b = task // nqb
        i0 = (task % nqb) * QUERY_BLOCK
        bq = min(QUERY_BLOCK, lq - i0)
        q2, k2, v2, mask2 = q3[qmap[b]], k3[kmap[b]], v3[vmap[b]], mask3[mmap[b]]
        # Flat buffers viewed C-contiguous at each tile's exact shape: a sliced 2-D
        # buffer would have runtime strides and its loops would not vectorize.
        s_buf = np.empty(QUERY_BLOCK * KEY_BLOCK, dtype=dt)
        kt_buf = np.empty(dim * KEY_BLOCK, dtype=dt)
        acc = np.zeros((bq, dv), dtype=dt)
        m = np.full(bq, -np.inf, dtype=dt)
        l = np.zeros(bq)
        k_end = min(lk, i0 + bq) if causal else lk
        for j0 in range(0, k_end, KEY_BLOCK):
            bk = min(KEY_BLOCK, k_end - j0)
            kt = kt_buf[: dim * bk].reshape((dim, bk))
            s = s_buf[: bq * bk].reshape((bq, bk))
            load_keys_transposed(k2, j0, kt)
            score_tile(q2, i0, kt, scale, s)
            if has_mask or causal:
                mask_tile(s, i0, j0, mask2, has_mask, causal)
            online_softmax_update(s, v2, j0, m, l, acc)
        write_normalized(acc, m, l, out3[b], i0)


# ---------------------------------------------------------------- front door


def _batch_map(shape: tuple[int, ...], batch: tuple[int, ...]) -> np.ndarray:
    """For each flat index of ``batch``, the flat index of the operand broadcast to it."""
    ids = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    return np.ascontiguousarray(np.broadcast_to(ids, batch)).reshape(-1)


def _check_scale(scale, dim: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(dim) if dim else 1.0
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number or None, got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale!r}")
    return float(scale)


def _mask_operand(mask, lq: int, lk: int):
    """(mask as (M, mq, mk) bool array, its batch shape) with mq ∈ {1, Lq}, mk ∈ {1, Lk}."""
    mk = np.asarray(mask)
    if mk.dtype != np.bool_:
        raise TypeError(f"mask must be a boolean array, got dtype {mk.dtype}")
    mk = mk.reshape((1,) * max(0, 2 - mk.ndim) + mk.shape)
    rows, cols = mk.shape[-2:]
    if rows not in (1, lq) or cols not in (1, lk):
        raise ValueError(
            f"mask of shape {np.shape(mask)} is not broadcastable to (..., {lq}, {lk})"
        )
    batch = mk.shape[:-2]
    return mk.reshape((math.prod(batch), rows, cols)), batch


@follows_input_type
def attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    *,
    scale: float | None = None,
    mask: ArrayLike | None = None,
    causal: bool = False,
) -> np.ndarray:
    """Scaled dot-product attention ``softmax(q·kᵀ·scale)·v``, block by block.

        out_i = Σ_j exp(s_ij) · v_j / Σ_j' exp(s_ij'),    s_ij = scale · (q_i · k_j),

    over the keys ``j`` allowed by ``mask`` and ``causal``. Computed FlashAttention
    style: for each block of queries, key blocks are visited in turn and the running
    maximum, running sum and output accumulator are updated with the online softmax
    (rescaled when the maximum grows), so the full ``(Lq, Lk)`` score matrix is never
    formed.

    Parameters
    ----------
    q : array_like, shape (..., Lq, D)
        Queries.
    k : array_like, shape (..., Lk, D)
        Keys.
    v : array_like, shape (..., Lk, Dv)
        Values.
    scale : float, optional
        Score scale; default ``1/sqrt(D)``.
    mask : array_like of bool, optional
        Broadcastable to ``(..., Lq, Lk)``; ``False`` excludes a key for a query (e.g. a
        key-padding mask of shape ``(B, 1, 1, Lk)``).
    causal : bool, optional
        Query ``i`` sees only keys ``j <= i`` (top-left aligned, as PyTorch's
        ``scaled_dot_product_attention(is_causal=True)``); combined with ``mask`` by
        logical and.

    Returns
    -------
    ndarray, shape (..., Lq, Dv)
        The leading (batch, head) dimensions of ``q``, ``k``, ``v`` and ``mask``
        broadcast together. float32 for float16/float32 input, else float64.

    Raises
    ------
    ValueError
        Mismatched ``D``, ``Lk``, batch shapes or mask shape (the message names the
        argument), non-finite ``scale``.
    TypeError
        Non-boolean ``mask``, non-bool ``causal``, complex or non-numeric input.

    Notes
    -----
    A query row with no allowed key (fully masked, or ``Lk = 0``) gives an output row
    of **0**, as PyTorch's ``scaled_dot_product_attention`` does (2.13 checked); a
    hand-written ``softmax(scores.masked_fill(-inf)) @ v`` gives NaN there. NaN in q,
    k or v reaches the rows it touches as NaN.

    References
    ----------
    1. T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré, "FlashAttention: Fast and
       Memory-Efficient Exact Attention with IO-Awareness", arXiv:2205.14135 (2022).
    2. M. Milakov, N. Gimelshein, "Online normalizer calculation for softmax",
       arXiv:1805.02867 (2018).

    Examples
    --------
    >>> import numpy as np
    >>> import numsoft
    >>> q = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> k = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> v = np.array([[1.0], [2.0], [3.0]])
    >>> numsoft.attention(q, k, v, scale=1.0)
    array([[2.        ],
           [2.26695639]])
    >>> numsoft.attention(q, k, v, scale=1.0, causal=True)
    array([[1.        ],
           [1.73105858]])
    >>> numsoft.attention(q, k, v, mask=np.array([[False] * 3, [True] * 3]), scale=1.0)
    array([[0.        ],
           [2.26695639]])
    """
    qa, ka, va = (as_input_array(a, name) for a, name in ((q, "q"), (k, "k"), (v, "v")))
    for a, name in ((qa, "q"), (ka, "k"), (va, "v")):
        if a.ndim < 2:
            raise ValueError(f"{name} must have shape (..., L, D), got {a.shape}")
    lq, dim = qa.shape[-2:]
    lk, dv = va.shape[-2:]
    if ka.shape[-1] != dim:
        raise ValueError(f"k has feature size {ka.shape[-1]}, q has {dim}")
    if ka.shape[-2] != lk:
        raise ValueError(f"v has {lk} rows, k has {ka.shape[-2]} (one value per key)")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    scale_f = _check_scale(scale, dim)
    compute, result = resolve_dtypes(np.result_type(qa.dtype, ka.dtype, va.dtype), None)
    if mask is None:
        mask3, mask_batch = np.ones((1, 1, 1), dtype=np.bool_), ()
    else:
        mask3, mask_batch = _mask_operand(mask, lq, lk)
    shapes = [a.shape[:-2] for a in (qa, ka, va)] + [mask_batch]
    try:
        batch = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(
            f"the batch shapes of q {shapes[0]}, k {shapes[1]}, v {shapes[2]} and mask "
            f"{shapes[3]} do not broadcast"
        ) from None
    operands = [
        read_only(np.ascontiguousarray(a, dtype=compute)).reshape(
            (math.prod(a.shape[:-2]),) + a.shape[-2:]
        )
        for a in (qa, ka, va)
    ]
    maps = [_batch_map(s, batch) for s in shapes]
    mask3 = np.broadcast_to(mask3, (mask3.shape[0], lq, lk))
    out3 = np.empty((math.prod(batch), lq, dv), dtype=compute)
    if out3.size:
        # work ~ scores computed: batch x lq x lk
        blocks = serial_or_parallel(attention_blocks, out3.shape[0] * lq * lk)
        options = (mask is not None, bool(causal), compute.type(scale_f))
        blocks(*operands, mask3, tuple(maps), options, out3)
    return out3.reshape(batch + (lq, dv)).astype(result, copy=False)
