"""scikit-learn's ``MLPClassifier.fit`` with and without numsoft's softmax, alternating
in one process: does a faster call make the estimator faster?

    python asv_bench/mlp_fit.py [--rounds 7] [--threads 2]

The fit (batch 200, 10 classes, float64, 50 epochs of 3000 samples: 750 softmax calls
on (200, 10), in place) runs with scikit-learn's own ``inplace_softmax`` and with
``numsoft.softmax(X, axis=1, out=X)`` in its place, the two taking turns. Prints the
best and median fit time of each, their ratio, and the time of the 750 calls alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402


def numsoft_inplace_softmax(X):
    numsoft.softmax(X, axis=1, out=X)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2, help="numsoft's and BLAS's threads")
    args = ap.parse_args(argv)
    import numba
    from sklearn.datasets import make_classification
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier, _base
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    X, y = make_classification(3000, 20, n_informative=12, n_classes=10, random_state=0)
    theirs = _base.ACTIVATIONS["softmax"]
    variants = {"scikit-learn": theirs, "numsoft": numsoft_inplace_softmax}

    def fit(activation):
        _base.ACTIVATIONS["softmax"] = activation
        model = MLPClassifier((100,), batch_size=200, max_iter=50, tol=0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            model.fit(X, y)
            return time.perf_counter() - t0, model

    times = {name: [] for name in variants}
    with threadpool_limits(args.threads):
        _, reference = fit(theirs)
        _, ours = fit(numsoft_inplace_softmax)  # compiles, and checks the result
        np.testing.assert_allclose(ours.coefs_[0], reference.coefs_[0], rtol=1e-6, atol=1e-9)
        for r in range(args.rounds):
            order = list(variants) if r % 2 == 0 else list(variants)[::-1]
            for name in order:
                times[name].append(fit(variants[name])[0])
        z = np.random.default_rng(0).normal(size=(200, 10))
        calls = {}
        for name, activation in variants.items():
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(750):
                    activation(z.copy())
                best = min(best, time.perf_counter() - t0)
            calls[name] = best
    _base.ACTIVATIONS["softmax"] = theirs
    print(f"{'':14s} {'best fit s':>10s} {'median s':>9s} {'750 calls ms':>13s}")
    for name in variants:
        print(
            f"{name:14s} {min(times[name]):10.3f} {statistics.median(times[name]):9.3f} "
            f"{1e3 * calls[name]:13.2f}"
        )
    ratio = min(times["scikit-learn"]) / min(times["numsoft"])
    median = statistics.median(times["scikit-learn"]) / statistics.median(times["numsoft"])
    print(f"scikit-learn ÷ numsoft: best {ratio:.3f}, median {median:.3f} (> 1: numsoft faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
