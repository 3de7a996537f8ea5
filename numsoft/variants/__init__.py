"""The softmax variants of SPEC §4: public functions, one module per family.

- ``sparse``: sparsemax, entmax15, entmax (and the sparsemax/entmax15 backward passes)
- ``stable``: stablemax, log_stablemax, softpick (and stablemax_backward)
- ``scaled``: adaptive_softmax, ssmax, sa_softmax, multimax, rowmax_pot
- ``elementwise``: sigmoid_attention, softplus_l1
- ``sampling``: gumbel_softmax
- ``topk``: topk_softmax

Every function takes the common arguments of SPEC §1 (``axis``, ``out``, ``dtype``,
``where``, ``temperature``) through the core front door (``_run``). Their row kernels
and drivers are in ``numsoft.cpu.variants`` (one compiled path per variant), the
device kernels in ``numsoft.cuda.variants``, the ``@njit`` entry points in
``_overloads``.
"""

from __future__ import annotations

from .elementwise import sigmoid_attention, softplus_l1
from .sampling import gumbel_softmax
from .scaled import adaptive_softmax, multimax, rowmax_pot, sa_softmax, ssmax
from .sparse import entmax, entmax15, entmax15_backward, sparsemax, sparsemax_backward
from .stable import log_stablemax, softpick, stablemax, stablemax_backward
from .topk import topk_softmax

__all__ = [
    "adaptive_softmax",
    "ssmax",
    "sparsemax",
    "entmax15",
    "entmax",
    "stablemax",
    "log_stablemax",
    "softpick",
    "sa_softmax",
    "multimax",
    "sigmoid_attention",
    "softplus_l1",
    "gumbel_softmax",
    "topk_softmax",
    "rowmax_pot",
    "sparsemax_backward",
    "entmax15_backward",
    "stablemax_backward",
]
