"""numsoft: fast, portable softmax-family kernels built on Numba.

Importing numsoft compiles nothing: kernels compile on first use and are cached on
disk (``cache=True``), so later processes load them in milliseconds.
"""

from . import variants as _variants
from ._version import __version__  # noqa: F401  (numsoft.__version__)
from .core import log_softmax, log_softmax_backward, logsumexp, softmax, softmax_backward
from .fused import (
    attention,
    cross_entropy,
    entmax15_loss,
    entmax_bisect_loss,
    jsd,
    kl_div,
    linear_cross_entropy,
    margin_cross_entropy,
    sampled_cross_entropy,
    softmax_topk,
    sparsemax_loss,
)
from .variants import *  # noqa: F403  (the variants of SPEC §4: variants.__all__)

__all__ = ["softmax", "log_softmax", "logsumexp", "softmax_backward", "log_softmax_backward"]
__all__ += ["softmax_topk", "cross_entropy", "linear_cross_entropy", "attention"]
__all__ += ["sparsemax_loss", "entmax15_loss", "entmax_bisect_loss", "kl_div", "jsd"]
__all__ += ["margin_cross_entropy", "sampled_cross_entropy"]

from . import _overloads  # noqa: E402,F401  (registers the @njit entry points)
from .fused import _divergence_overloads as _divergence_overloads  # noqa: E402,F401
from .fused import _fenchel_young_overloads as _loss_overloads  # noqa: E402,F401
from .fused import _margin_overloads as _margin_overloads  # noqa: E402,F401
from .fused import _overloads as _fused_overloads  # noqa: E402,F401
from .fused import _sampled_overloads as _sampled_overloads  # noqa: E402,F401

__all__ += _variants.__all__

from . import gradients as _gradients  # noqa: E402,F401  (func.gradient: torch autograd)
from .groups import _overloads as _group_overloads  # noqa: E402,F401
from .variants import _overloads as _variant_overloads  # noqa: E402,F401

#: Public subpackages, imported on demand (``import numsoft.dask``).
_SUBPACKAGES = ["cuda", "dask", "fused", "groups", "special", "torch", "variants", "warmup"]


def __dir__() -> list[str]:
    """The public names only (the modules that register @njit overloads stay hidden)."""
    return sorted([*__all__, "__version__", *_SUBPACKAGES])
