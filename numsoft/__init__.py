"""numsoft: fast, portable softmax-family kernels built on Numba.

Importing numsoft compiles nothing: kernels compile on first use and are cached on
disk (``cache=True``), so later processes load them in milliseconds.
"""

from .core import log_softmax, log_softmax_backward, logsumexp, softmax, softmax_backward
from .fused import attention, cross_entropy, linear_cross_entropy, softmax_topk
from .variants import (
    adaptive_softmax,
    entmax,
    entmax15,
    entmax15_backward,
    gumbel_softmax,
    log_stablemax,
    multimax,
    rowmax_pot,
    sa_softmax,
    sigmoid_attention,
    softpick,
    softplus_l1,
    sparsemax,
    sparsemax_backward,
    ssmax,
    stablemax,
    stablemax_backward,
    topk_softmax,
)

__version__ = "0.1.0"

__all__ = ["softmax", "log_softmax", "logsumexp", "softmax_backward", "log_softmax_backward"]
__all__ += ["softmax_topk", "cross_entropy", "linear_cross_entropy", "attention"]

from . import _overloads  # noqa: E402,F401  (registers the @njit entry points)
from .fused import _overloads as _fused_overloads  # noqa: E402,F401

__all__ += [  # the variants of SPEC §4
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

from .variants import _overloads as _variant_overloads  # noqa: E402,F401

#: Public subpackages, imported on demand (``import numsoft.dask``).
_SUBPACKAGES = ["cuda", "dask", "fused", "special", "variants", "warmup"]


def __dir__() -> list[str]:
    """The public names only (the modules that register @njit overloads stay hidden)."""
    return sorted([*__all__, "__version__", *_SUBPACKAGES])
