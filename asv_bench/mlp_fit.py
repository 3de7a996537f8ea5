"""scikit-learn's ``MLPClassifier.fit`` with and without numsoft's softmax, alternating
in one process: does a faster call make the estimator faster?

    python asv_bench/mlp_fit.py [--rounds 5] [--threads 2] [--processes 3]
    NUMBA_THREADING_LAYER=omp python asv_bench/mlp_fit.py --classes 100 --batch 2000

numsoft takes scikit-learn's place as a user would put it there:
``_base.ACTIVATIONS["softmax"]`` replaced by ``numsoft.softmax(X, axis=1, out=X,
dtype=X.dtype)``, scikit-learn's own spelling of its in-place softmax. Prints the cost
of one such call on (4, 8) and (200, 10) float64 beside scikit-learn's
``inplace_softmax``, then the fit (50 000 × 32 blobs, 10 classes, float64,
``MLPClassifier(hidden_layer_sizes=(64,), max_iter=3, batch_size=200)``: 750 softmax
calls on (200, 10) per fit; ``--classes`` and ``--batch`` change both) with each
activation in turn, best and median of ``--rounds``, and their ratio. Run it under each
threading layer (``NUMBA_THREADING_LAYER``): a softmax right after BLAS's matmul is where
a spinning pool costs most. ``--processes N`` runs it in N fresh processes one after
the other and prints each one's ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import timeit
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402


def numsoft_inplace_softmax(X):
    numsoft.softmax(X, axis=1, out=X, dtype=X.dtype)


def call_costs(variants: dict) -> dict[tuple, dict[str, float]]:
    """Best µs per in-place call of each activation on (4, 8), (200, 10) and (2000, 100)
    float64."""
    rng = np.random.default_rng(0)
    costs = {}
    for shape in ((4, 8), (200, 10), (2000, 100)):
        z = rng.normal(size=shape)
        costs[shape] = {
            name: min(timeit.repeat(lambda f=f, z=z: f(z), number=2000, repeat=9)) / 2000 * 1e6
            for name, f in variants.items()
        }
    return costs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="numsoft's and BLAS's threads")
    ap.add_argument("--processes", type=int, default=1, help="fresh processes, one by one")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=200)
    args = ap.parse_args(argv)
    if args.processes > 1:
        for _ in range(args.processes):
            command = [sys.executable, __file__, "--rounds", str(args.rounds)]
            command += ["--classes", str(args.classes), "--batch", str(args.batch)]
            subprocess.run([*command, "--threads", str(args.threads)], check=True)
        return 0
    import numba
    from sklearn.datasets import make_blobs
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier, _base
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    X, y = make_blobs(50_000, 32, centers=args.classes, random_state=0)
    theirs = _base.ACTIVATIONS["softmax"]
    variants = {"scikit-learn": theirs, "numsoft": numsoft_inplace_softmax}

    def fit(activation):
        _base.ACTIVATIONS["softmax"] = activation
        model = MLPClassifier((64,), max_iter=3, batch_size=args.batch, random_state=0)
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
        costs = call_costs(variants)
    _base.ACTIVATIONS["softmax"] = theirs
    for shape, cost in costs.items():
        mine, sk = cost["numsoft"], cost["scikit-learn"]
        print(f"one call {shape}: numsoft {mine:.2f} µs, scikit-learn {sk:.2f} µs", end="")
        print(f" (numsoft ÷ scikit-learn {mine / sk:.2f})")
    print(f"{'fit':14s} {'best s':>8s} {'median s':>9s}")
    for name in variants:
        print(f"{name:14s} {min(times[name]):8.3f} {statistics.median(times[name]):9.3f}")
    ratio = min(times["scikit-learn"]) / min(times["numsoft"])
    median = statistics.median(times["scikit-learn"]) / statistics.median(times["numsoft"])
    print(f"scikit-learn ÷ numsoft: best {ratio:.3f}, median {median:.3f} (> 1: numsoft faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
