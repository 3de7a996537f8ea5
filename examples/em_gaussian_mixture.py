"""EM for a 2-D Gaussian mixture, with logsumexp responsibilities inside @njit code.

The whole EM loop is one user ``@numba.njit`` function. Its E-step computes the log of
the joint density ``log π_k + log N(x_i | μ_k, Σ_k)`` for every point and component,
and ``numsoft.logsumexp(log_joint, axis=1)`` gives each point's log-likelihood; the
responsibilities are ``exp(log_joint - lse)``, never formed from raw densities, so
far-away points cannot underflow to 0/0.

The script samples data from a known mixture, fits it, prints the log-likelihood per
iteration (EM never decreases it; the script fails if it does) and the recovered
parameters next to the truth.

    python examples/em_gaussian_mixture.py            # 20 000 points
    python examples/em_gaussian_mixture.py --small    # 600 points, for CI
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numba
import numpy as np

import numsoft

TRUE_WEIGHTS = np.array([0.5, 0.3, 0.2])
TRUE_MEANS = np.array([[-4.0, 0.0], [3.0, 3.0], [2.0, -4.0]])
TRUE_COVS = np.array(
    [
        [[1.0, 0.3], [0.3, 0.8]],
        [[0.6, -0.2], [-0.2, 1.2]],
        [[1.5, 0.0], [0.0, 0.4]],
    ]
)


def sample_mixture(n: int, rng: np.random.Generator):
    """n points from the true mixture, with their component labels."""
    labels = rng.choice(len(TRUE_WEIGHTS), size=n, p=TRUE_WEIGHTS)
    x = np.empty((n, 2))
    for k in range(len(TRUE_WEIGHTS)):
        idx = np.flatnonzero(labels == k)
        x[idx] = rng.multivariate_normal(TRUE_MEANS[k], TRUE_COVS[k], size=idx.size)
    return x, labels


@numba.njit(cache=True)
def log_joint(x, weights, means, covs, out):
    """out[i, k] = log π_k + log N(x_i | μ_k, Σ_k), through a Cholesky factor of Σ_k."""
    n, dim = x.shape
    for k in range(weights.size):
        chol = np.linalg.cholesky(covs[k])
        log_det = 2.0 * np.sum(np.log(np.diag(chol)))
        const = np.log(weights[k]) - 0.5 * (dim * np.log(2.0 * np.pi) + log_det)
        for i in range(n):
            # Solve chol · z = x_i - μ_k by forward substitution; |z|² is the Mahalanobis term.
            sq = 0.0
            z = np.empty(dim)
            for a in range(dim):
                s = x[i, a] - means[k, a]
                for b in range(a):
                    s -= chol[a, b] * z[b]
                z[a] = s / chol[a, a]
                sq += z[a] * z[a]
            out[i, k] = const - 0.5 * sq


# No cache=True here: a cached function that calls numsoft's parallel drivers crashes when
# it is later loaded from the cache (Numba issue 8578; see docs/njit.md).
@numba.njit
def fit_em(x, weights, means, covs, max_iter, tol, reg):
    """Run EM from the given parameters (updated in place); returns the log-likelihoods."""
    n, dim = x.shape
    n_comp = weights.size
    xt = np.ascontiguousarray(x.T)  # (dim, n): contiguous columns for the M-step dots
    logp = np.empty((n, n_comp))
    resp = np.empty((n_comp, n))  # resp[k, i] = r_ik
    history = np.empty(max_iter)
    for it in range(max_iter):
        # E-step: responsibilities r_ik = exp(log p(x_i, k) - log p(x_i)).
        log_joint(x, weights, means, covs, logp)
        lse = numsoft.logsumexp(logp, axis=1)
        for i in range(n):
            for k in range(n_comp):
                resp[k, i] = np.exp(logp[i, k] - lse[i])
        history[it] = lse.sum()
        # M-step: weighted counts, means and covariances.
        for k in range(n_comp):
            nk = resp[k].sum()
            weights[k] = nk / n
            for a in range(dim):
                means[k, a] = np.dot(resp[k], xt[a]) / nk
            for a in range(dim):
                da = xt[a] - means[k, a]
                for b in range(dim):
                    db = xt[b] - means[k, b]
                    covs[k, a, b] = np.dot(resp[k], da * db) / nk
                covs[k, a, a] += reg
        if it > 0 and history[it] - history[it - 1] <= tol * abs(history[it]):
            return history[: it + 1]
    return history


def kmeans_plus_plus(x: np.ndarray, n_comp: int, rng: np.random.Generator) -> np.ndarray:
    """Initial means: k-means++ seeding (each next centre drawn ∝ squared distance)."""
    centres = [x[rng.integers(len(x))]]
    for _ in range(1, n_comp):
        d2 = np.min([np.sum((x - c) ** 2, axis=1) for c in centres], axis=0)
        centres.append(x[rng.choice(len(x), p=d2 / d2.sum())])
    return np.array(centres)


def match_components(means: np.ndarray) -> tuple[int, ...]:
    """The permutation of fitted components closest to the true ones (by mean)."""
    best = min(
        itertools.permutations(range(len(means))),
        key=lambda perm: np.sum((means[list(perm)] - TRUE_MEANS) ** 2),
    )
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="600 points (a CI-sized run)")
    parser.add_argument("--points", type=int, default=20_000, help="number of points")
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n = 600 if args.small else args.points

    rng = np.random.default_rng(args.seed)
    x, _ = sample_mixture(n, rng)
    n_comp = len(TRUE_WEIGHTS)
    weights = np.full(n_comp, 1.0 / n_comp)
    means = kmeans_plus_plus(x, n_comp, rng)
    covs = np.array([np.cov(x.T) for _ in range(n_comp)])

    history = fit_em(x, weights, means, covs, args.max_iter, 1e-10, 1e-6)

    print(f"EM for a {n_comp}-component 2-D Gaussian mixture, {n} points")
    print(f"{'iteration':>9}  {'log-likelihood':>16}  {'change':>12}")
    for it, ll in enumerate(history):
        change = "" if it == 0 else f"{ll - history[it - 1]:12.6f}"
        print(f"{it:9d}  {ll:16.6f}  {change:>12}")
    drops = np.diff(history) < -1e-9 * np.abs(history[1:])
    if drops.any():
        print(f"FAIL: the log-likelihood decreased at iteration {int(np.argmax(drops)) + 1}")
        return 1

    perm = list(match_components(means))
    weights, means, covs = weights[perm], means[perm], covs[perm]
    print("\nrecovered parameters (fitted vs true)")
    print(f"{'k':>2}  {'weight':^14}  {'mean':^33}  {'covariance (11, 12, 22)':^45}")
    for k in range(n_comp):
        c, tc = covs[k], TRUE_COVS[k]
        print(
            f"{k:2d}  {weights[k]:6.3f} vs {TRUE_WEIGHTS[k]:5.3f}  "
            f"({means[k, 0]:6.2f}, {means[k, 1]:5.2f}) vs ({TRUE_MEANS[k, 0]:5.2f}, "
            f"{TRUE_MEANS[k, 1]:5.2f})  "
            f"({c[0, 0]:5.2f}, {c[0, 1]:5.2f}, {c[1, 1]:5.2f}) vs "
            f"({tc[0, 0]:5.2f}, {tc[0, 1]:5.2f}, {tc[1, 1]:5.2f})"
        )
    mean_err = float(np.max(np.abs(means - TRUE_MEANS)))
    weight_err = float(np.max(np.abs(weights - TRUE_WEIGHTS)))
    print(f"\nmax |mean error| = {mean_err:.3f}, max |weight error| = {weight_err:.3f}")
    # Sampling error at n points is O(1/sqrt(n)); these bounds hold with a wide margin.
    if mean_err > 0.5 or weight_err > 0.1:
        print("FAIL: the fit did not recover the true mixture")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
