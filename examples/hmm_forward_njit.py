"""The forward algorithm of a hidden Markov model in a user's ``@njit`` function.

``log α_t(j) = log b_j(o_t) + logsumexp_i(log α_{t-1}(i) + log A_ij)``: one logsumexp
over the previous states per time step and state. The jitted version calls
``numsoft.logsumexp`` on a (states x states) block per step inside the user's own loop
(numsoft runs in the caller's thread there); the reference is the same recursion in
NumPy with ``scipy.special.logsumexp``, as hmmlearn's pure-Python path writes it. The
script prints both times and checks the log-likelihoods agree.

    python examples/hmm_forward_njit.py            # 64 states, 20 000 steps
    python examples/hmm_forward_njit.py --small    # a CI-sized run
"""

from __future__ import annotations

import argparse
import sys
import time

import numba
import numpy as np
from scipy import special

import numsoft


@numba.njit
def forward_njit(log_start, log_trans, log_emit):
    """Log-likelihood of the observations (log_emit[t, j] = log b_j(o_t))."""
    steps, states = log_emit.shape
    alpha = log_start + log_emit[0]
    block = np.empty((states, states))  # block[j, i] = log α(i) + log A_ij
    trans_t = np.ascontiguousarray(log_trans.T)
    for t in range(1, steps):
        for j in range(states):
            block[j] = alpha + trans_t[j]
        alpha = numsoft.logsumexp(block, axis=1) + log_emit[t]
    return numsoft.logsumexp(alpha, axis=0)


def forward_scipy(log_start, log_trans, log_emit):
    alpha = log_start + log_emit[0]
    for t in range(1, log_emit.shape[0]):
        alpha = special.logsumexp(alpha[:, None] + log_trans, axis=0) + log_emit[t]
    return special.logsumexp(alpha)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a CI-sized run")
    args = parser.parse_args(argv)
    states, steps = (8, 200) if args.small else (64, 20_000)
    rng = np.random.default_rng(0)
    log_start = np.log(rng.dirichlet(np.ones(states)))
    log_trans = np.log(rng.dirichlet(np.ones(states), size=states))
    log_emit = rng.normal(-3.0, 1.0, size=(steps, states))

    t0 = time.perf_counter()
    forward_njit(log_start, log_trans, log_emit[:2])
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = forward_njit(log_start, log_trans, log_emit)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = forward_scipy(log_start, log_trans, log_emit)
    t_ref = time.perf_counter() - t0

    print(f"HMM forward pass, {states} states, {steps} steps")
    print(f"  @njit + numsoft.logsumexp   {t_ours:8.4f} s  log-lik {ours:.10f}"
          f"  (first call, compiling or loading: {compile_s:.2f} s)")  # fmt: skip
    print(f"  NumPy + scipy logsumexp     {t_ref:8.4f} s  log-lik {ref:.10f}")
    print(f"  numsoft inside @njit: {t_ref / t_ours:.1f}x faster")
    if not np.isclose(ours, ref, rtol=1e-10):
        print("FAIL: the log-likelihoods differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
