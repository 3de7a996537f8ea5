"""The names both backends share: pass structures and variant codes.

The front door (``numsoft.frontdoor``) validates a name against these; the CPU kernels
(``numsoft.cpu``) and the CUDA kernels (``numsoft.cuda``) receive the codes, so a name
means the same thing on either target. Nothing here imports a backend.
"""

from __future__ import annotations

import math
from typing import NamedTuple

#: Public names of the pass structures (SPEC §2); a name's index is its code.
ALGORITHM_NAMES = ("three-pass-reload", "three-pass-store", "two-pass", "online")
THREE_PASS_RELOAD, THREE_PASS_STORE, TWO_PASS, ONLINE = range(4)
#: What ``algorithm=`` accepts.
ALGORITHMS = ("auto", *ALGORITHM_NAMES)

# Integer codes of the row-local variants, resolved once per call by the Python
# wrappers. Each variant compiles a path of its own (``numsoft.cpu.paths``: the code is
# the ``VARIANT`` path constant); its parameters travel in a small float64 array whose
# layout is given next to the code.
SOFTMAX = 0  # plain softmax (entmax with alpha = 1); no parameters
ADAPTIVE = 1  # no parameters
SSMAX = 2  # (s,)
SPARSEMAX = 3  # no parameters
ENTMAX15 = 4  # no parameters
ENTMAX = 5  # (alpha, n_iter): bisection
STABLEMAX = 6  # no parameters
LOG_STABLEMAX = 7  # no parameters
SOFTPLUS_L1 = 8  # no parameters
SOFTPICK = 9  # (eps,)
SA_SOFTMAX = 10  # (normalized,)
MULTIMAX = 11  # (b0, b1, b2, b3, t0, t1, t2, t3)
SIGMOID_ATTENTION = 12  # (has_bias, bias)
GUMBEL = 13  # (tau, hard)
TOPK = 14  # (k,)
ROWMAX_POT = 15  # no parameters


class Variant(NamedTuple):
    """One row-local variant, declared once. The lists that name variants derive from
    this table: the CUDA kernels' set, the index-order and pass-structure sets, the
    fill of fully masked rows, the backward passes and their ``@njit`` overloads, the
    ``@njit`` overloads of the variants without parameters, the warmup set; tests
    check the public functions, ``numsoft.variants.__all__`` and the docs against it.
    """

    name: str  # the public function, ``numsoft.<name>`` (defined in ``numsoft.variants.<family>``)
    code: int
    family: str  # the module of ``numsoft.variants`` and ``numsoft.cpu.variants`` holding it
    params: tuple[str, ...] = ()  # its own parameters, in the order of the params array
    fill: float = 0.0  # the output of a row with no unmasked entry
    backward: str = ""  # ``<name>_backward`` exists and reads this array ("y" or "x")
    cuda: bool = False  # has a kernel in ``numsoft.cuda.variants``
    index_order: bool = False  # rows read in C index order (``frontdoor.layout.plan_layout``)
    ends_in_softmax: bool = False  # ends in the core softmax: takes the pass structure
    warmup: tuple | None = ()  # positional arguments of the warmup's call; None: not warmed


#: Every variant code's entry. ``SOFTMAX`` is entmax at alpha = 1 (not a function of
#: its own: ``public`` is False for it only).
VARIANTS = (
    Variant("softmax", SOFTMAX, "sparse", cuda=True, ends_in_softmax=True, warmup=None),
    Variant("adaptive_softmax", ADAPTIVE, "scaled", ends_in_softmax=True),
    Variant("ssmax", SSMAX, "scaled", ("s",), cuda=True, ends_in_softmax=True),
    Variant("sparsemax", SPARSEMAX, "sparse", backward="y", cuda=True),
    Variant("entmax15", ENTMAX15, "sparse", backward="y", cuda=True),
    Variant("entmax", ENTMAX, "sparse", ("alpha", "n_iter"), cuda=True, warmup=None),
    Variant("stablemax", STABLEMAX, "stable", backward="x", cuda=True),
    Variant("log_stablemax", LOG_STABLEMAX, "stable", fill=-math.inf, cuda=True),
    Variant("softplus_l1", SOFTPLUS_L1, "elementwise", cuda=True),
    Variant("softpick", SOFTPICK, "stable", ("eps",), cuda=True),
    Variant("sa_softmax", SA_SOFTMAX, "scaled", ("normalized",)),
    Variant("multimax", MULTIMAX, "scaled", ("ranges", "ts"), ends_in_softmax=True, warmup=None),
    Variant("sigmoid_attention", SIGMOID_ATTENTION, "elementwise", ("bias",), cuda=True),
    Variant(
        "gumbel_softmax",
        GUMBEL,
        "sampling",
        ("tau", "hard", "seed"),
        index_order=True,
        ends_in_softmax=True,
    ),
    Variant("topk_softmax", TOPK, "topk", ("k",), cuda=True, index_order=True, warmup=(2,)),
    Variant("rowmax_pot", ROWMAX_POT, "scaled"),
)

#: The entry of each code.
BY_CODE = {v.code: v for v in VARIANTS}
#: The public variant functions, in the table's order.
PUBLIC_VARIANTS = tuple(v for v in VARIANTS if v.code != SOFTMAX)
#: The codes that have a CUDA kernel (``numsoft.cuda.variants.variant_rows``).
CUDA_VARIANTS = frozenset(v.code for v in VARIANTS if v.cuda)
#: The variants whose output depends on the order of a row's entries (top-k cuts a tie
#: at the lowest index, Gumbel noise is keyed by position): their rows are read in C
#: index order whatever the memory layout (``frontdoor.layout.plan_layout(index_order=True)``).
INDEX_ORDER = frozenset(v.code for v in VARIANTS if v.index_order)
#: The variants that end in the core softmax of their row (``cpu.rows.softmax_row``):
#: only these depend on the pass structure of the call.
ENDS_IN_SOFTMAX = frozenset(v.code for v in VARIANTS if v.ends_in_softmax)
