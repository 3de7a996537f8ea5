"""The names both backends share: pass structures and variant codes.

The front door (``numsoft._frontend``) validates a name against these; the CPU kernels
(``numsoft.cpu``) and the CUDA kernels (``numsoft.cuda``) receive the codes, so a name
means the same thing on either target. Nothing here imports a backend.
"""

from __future__ import annotations

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

#: The variants whose output depends on the order of a row's entries (top-k cuts a tie
#: at the lowest index, Gumbel noise is keyed by position): their rows are read in C
#: index order whatever the memory layout (``_frontend.plan_layout(index_order=True)``).
INDEX_ORDER = frozenset({GUMBEL, TOPK})

#: The variants that end in the core softmax of their row (``cpu.rows.softmax_row``):
#: only these depend on the pass structure of the call.
ENDS_IN_SOFTMAX = frozenset({SOFTMAX, ADAPTIVE, SSMAX, MULTIMAX, GUMBEL})
