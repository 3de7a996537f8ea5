"""Algorithm names, their integer codes, and the rule behind ``algorithm="auto"``.

In cache, the cost is the exp: three-pass-store evaluates it once per element while
the others evaluate it twice, so store wins while a row fits in L2 (it re-reads y from
cache). Out of cache, the cost is memory traffic: two-pass and online move 3 elements
per element (2 reads, 1 write) against 4–5 for the three-pass forms. What matters is
whether one *row* stays in cache between passes, not the whole array.
"""

from __future__ import annotations

from ._jit import kernel

#: Public names of the pass structures (SPEC §2); a name's index is its code.
ALGORITHM_NAMES = ("three-pass-reload", "three-pass-store", "two-pass", "online")
THREE_PASS_RELOAD, THREE_PASS_STORE, TWO_PASS, ONLINE = range(4)

#: Rows up to this many bytes are treated as cache-resident (half of the 2 MiB L2).
IN_CACHE_ROW_BYTES = 1 << 20


def choose_algorithm(n: int, itemsize: int) -> int:
    """Code of the pass structure ``"auto"`` uses for rows of ``n`` elements."""
    if n * itemsize <= IN_CACHE_ROW_BYTES:
        return THREE_PASS_STORE
    return TWO_PASS


choose_algorithm_jit = kernel(choose_algorithm)


@kernel
def algorithm_code_jit(name, n, itemsize):
    """``algorithm`` name → code inside jitted callers; -1 for an unknown name."""
    if name == "auto":
        return choose_algorithm_jit(n, itemsize)
    for code, known in enumerate(ALGORITHM_NAMES):
        if name == known:
            return code
    return -1
