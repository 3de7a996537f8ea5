"""A Numba user's loops: one numsoft call per row inside ``@njit``, and the same loop
written by hand (a max pass, an exp-sum pass), as source text.

Shared by ``bench_jit.py`` (asv: time per row) and ``asv_bench/njit_calls.py`` (the
per-row table, and the compile time of a caller in fresh processes, which needs the
functions as source). Nothing here is a benchmark.
"""

from __future__ import annotations

import textwrap

#: function → (the loop calling numsoft, the loop by hand). Each defines ``loop(X, Y,
#: labels, out)`` over the rows of the C-contiguous 2-D ``X``.
LOOPS = {
    "logsumexp": (
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                out[i] = numsoft.logsumexp(X[i])
        """,
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                r = X[i]
                m = -np.inf
                for v in r:
                    m = max(m, v)
                s = 0.0
                for v in r:
                    s += np.exp(v - m)
                out[i] = m + np.log(s)
        """,
    ),
    "softmax out=": (
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                numsoft.softmax(X[i], out=Y[i])
        """,
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                r, y = X[i], Y[i]
                m = -np.inf
                for v in r:
                    m = max(m, v)
                s = 0.0
                for j in range(r.size):
                    e = np.exp(r[j] - m)
                    y[j] = e
                    s += e
                for j in range(r.size):
                    y[j] /= s
        """,
    ),
    "softmax": (
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                out[i] = numsoft.softmax(X[i])[-1]  # a new array per row
        """,
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                r = X[i]
                y = np.empty_like(r)
                m = -np.inf
                for v in r:
                    m = max(m, v)
                s = 0.0
                for j in range(r.size):
                    e = np.exp(r[j] - m)
                    y[j] = e
                    s += e
                for j in range(r.size):
                    y[j] /= s
                out[i] = y[-1]
        """,
    ),
    "log_softmax out=": (
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                numsoft.log_softmax(X[i], out=Y[i])
        """,
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                r, y = X[i], Y[i]
                m = -np.inf
                for v in r:
                    m = max(m, v)
                s = 0.0
                for v in r:
                    s += np.exp(v - m)
                shift = m + np.log(s)
                for j in range(r.size):
                    y[j] = r[j] - shift
        """,
    ),
    "cross_entropy": (
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                out[i] = numsoft.cross_entropy(X[i], labels[i])
        """,
        """
        def loop(X, Y, labels, out):
            for i in range(X.shape[0]):
                r = X[i]
                m = -np.inf
                for v in r:
                    m = max(m, v)
                s = 0.0
                for v in r:
                    s += np.exp(v - m)
                out[i] = m + np.log(s) - r[labels[i]]
        """,
    ),
}

#: Which loop: numsoft's or the hand-written one.
SIDES = ("numsoft", "by hand")


def source(function: str, side: str, cache: bool = False) -> str:
    """The module source that defines the jitted ``loop`` (``cache``: ``cache=True``)."""
    body = textwrap.dedent(LOOPS[function][SIDES.index(side)])
    decorator = "@numba.njit(cache=True)" if cache else "@numba.njit"
    return f"import numba\nimport numpy as np\nimport numsoft\n\n{decorator}{body}"


def compile_loop(function: str, side: str):
    """The jitted ``loop`` of ``function``'s ``side`` (compiled on its first call)."""
    namespace: dict = {}
    exec(compile(source(function, side), f"<njit loop: {function}, {side}>", "exec"), namespace)
    return namespace["loop"]


def inputs(rows: int, n: int, dtype):
    """(X, Y, labels, out) for ``rows`` rows of ``n``: normal logits, the outputs."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, n)).astype(dtype)
    labels = rng.integers(0, n, rows)
    return x, np.empty_like(x), labels, np.empty(rows, dtype)
