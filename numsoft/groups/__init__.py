"""Softmax over groups of any length (SPEC §9): ragged segments along an axis, given by
CSR ``offsets`` or ``segment_ids``, and trees of classes.

    import numsoft.groups
    numsoft.groups.segment_softmax(scores, offsets=ptr)

These take NumPy arrays and array-likes, the segment functions also inside ``@njit``
code (``_overloads``), Dask arrays (``route.dask_groups``, lazily) and device arrays
(``cuda.groups``); torch tensors through ``numsoft.torch.geometric.softmax``.
"""

from .hierarchy import hierarchical_cross_entropy, hierarchical_log_softmax, hierarchical_softmax
from .segments import (
    segment_log_softmax,
    segment_logsumexp,
    segment_softmax,
    segment_softmax_backward,
)

__all__ = [
    "segment_softmax",
    "segment_log_softmax",
    "segment_logsumexp",
    "segment_softmax_backward",
    "hierarchical_log_softmax",
    "hierarchical_softmax",
    "hierarchical_cross_entropy",
]
