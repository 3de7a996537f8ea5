"""An MLP classifier's forward pass: a matmul, then softmax in place, as users call it.

``Z = H @ W + b`` then ``numsoft.softmax(Z, axis=1, out=Z)``: the softmax runs right
after NumPy's BLAS has used every core. numsoft runs on Numba's TBB threading layer,
whose idle workers sleep, so the two thread pools do not fight over the cores
(docs/threads.md). The script times the whole forward pass per batch with numsoft, with
the NumPy softmax scikit-learn uses (``inplace_softmax``) and with
``scipy.special.softmax``, side by side in one run, and checks that they agree.

    python examples/mlp_forward.py            # batch 2000, 64 -> 100 classes
    python examples/mlp_forward.py --small    # a CI-sized run
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import special

import numsoft


def numpy_softmax_inplace(z):
    """scikit-learn's ``inplace_softmax``: plain NumPy, in place."""
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)


def forward(h, w, b, softmax_inplace):
    z = h @ w
    z += b
    softmax_inplace(z)
    return z


def median_time(fn, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="a CI-sized run")
    args = parser.parse_args(argv)
    batch, dim, classes, rounds = (200, 32, 10, 20) if args.small else (2000, 64, 100, 300)
    rng = np.random.default_rng(0)
    h = rng.standard_normal((batch, dim))
    w = rng.standard_normal((dim, classes)) / np.sqrt(dim)
    b = rng.standard_normal(classes)

    variants = {
        "numsoft.softmax(out=Z)": lambda z: numsoft.softmax(z, axis=1, out=z),
        "NumPy in place": numpy_softmax_inplace,
        "scipy.special.softmax": lambda z: np.copyto(z, special.softmax(z, axis=1)),
    }
    outputs = {name: forward(h, w, b, f) for name, f in variants.items()}  # warm-up
    ref = outputs["NumPy in place"]
    print(f"forward pass: ({batch} x {dim}) @ ({dim} x {classes}), then softmax; "
          f"median of {rounds}")  # fmt: skip
    base = None
    for name, f in variants.items():
        t = median_time(lambda f=f: forward(h, w, b, f), rounds)
        base = base or t
        print(f"{name:>24}  {t * 1e6:9.1f} us  ({t / base:.2f}x numsoft's time)")
        if not np.allclose(outputs[name], ref, rtol=1e-12, atol=1e-15):
            print(f"FAIL: {name} disagrees with NumPy")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
