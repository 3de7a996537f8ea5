"""Peak memory and time of linear_cross_entropy against the naive logits path.

Not a unit test: a measurement script. Run from the repository root, with NumPy's BLAS
left at its own CPU settings (see NUMBA-NOTES: unset the OpenBLAS overrides only here):

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=$PWD \\
        python asv_bench/fused_memory.py [--n 2048 --d 64 --v 32000 --chunks 512 1024]

For N×D hidden states and a V×D classifier (float32) it reports, after a warm-up call
(Numba compilation is excluded):

- the peak memory traced by ``tracemalloc`` during one call (NumPy registers its
  allocations with tracemalloc; Numba's kernels here allocate nothing), for the
  forward loss and for loss + gradients, against the N·V·4 bytes of the logits;
- the best-of-``--repeat`` wall time, against the naive NumPy ``h @ W.T`` followed by
  a logsumexp (max, exp, sum, log) and the label gather — and, for the gradient, the
  naive softmax − one-hot followed by the two matmuls.

The fused sweep alternates BLAS calls and Numba parallel kernels once per chunk. Both
thread pools spin-wait after their work (OpenBLAS workers, and libgomp's unless
``OMP_WAIT_POLICY=PASSIVE``), so on a small, shared machine each hand-over costs
cores; compare runs with ``OMP_WAIT_POLICY=PASSIVE`` and/or ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numba
import numpy as np

import numsoft


def naive_loss(h, W, labels):
    logits = h @ W.T
    m = logits.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    return np.mean(lse - logits[np.arange(h.shape[0]), labels])


def naive_loss_and_grad(h, W, labels):
    logits = h @ W.T
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(h.shape[0])
    loss = np.mean(m[:, 0] + np.log(s[:, 0]) - logits[rows, labels])
    g = e / s
    g[rows, labels] -= 1.0
    g /= h.shape[0]
    return loss, g @ W, g.T @ h


def peak_bytes(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return peak


def best_time(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--v", type=int, default=32000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunks", type=int, nargs="*", default=[None])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    h = rng.standard_normal((args.n, args.d), dtype=np.float32)
    W = rng.standard_normal((args.v, args.d), dtype=np.float32) * np.float32(0.1)
    labels = rng.integers(0, args.v, args.n)
    logits_mb = args.n * args.v * 4 / 1e6
    print(f"N={args.n} D={args.d} V={args.v} float32; logits would take {logits_mb:.1f} MB")
    env = {k: os.environ.get(k, "-") for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS")}
    print(f"numba threads {numba.get_num_threads()}, {env}, load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"outputs with gradients: dW {args.v * args.d * 4 / 1e6:.2f} MB, "
          f"dh {args.n * args.d * 4 / 1e6:.2f} MB")  # fmt: skip

    ref = naive_loss(h, W, labels)
    ref_grad = naive_loss_and_grad(h, W, labels)
    t_naive = best_time(lambda: naive_loss(h, W, labels), args.repeat)
    t_naive_g = best_time(lambda: naive_loss_and_grad(h, W, labels), args.repeat)
    m_naive = peak_bytes(lambda: naive_loss(h, W, labels))
    m_naive_g = peak_bytes(lambda: naive_loss_and_grad(h, W, labels))
    print(f"{'':24s} {'peak MB':>9s} {'% logits':>9s} {'time ms':>9s} {'vs naive':>9s}")

    def row(name, mem, t, t_ref):
        print(f"{name:24s} {mem / 1e6:9.2f} {100 * mem / 1e6 / logits_mb:8.1f}% "
              f"{t * 1e3:9.1f} {t / t_ref:8.2f}x")  # fmt: skip

    row("naive loss", m_naive, t_naive, t_naive)
    row("naive loss+grad", m_naive_g, t_naive_g, t_naive_g)
    for chunk in args.chunks:

        def fwd(chunk=chunk):
            return numsoft.linear_cross_entropy(h, W, labels, chunk_size=chunk)

        def fwd_bwd(chunk=chunk):
            return numsoft.linear_cross_entropy(h, W, labels, chunk_size=chunk,
                                                return_grad=True)  # fmt: skip

        loss = fwd()  # compile / load from cache
        _, dh, dW = fwd_bwd()
        err = abs(float(loss) - float(ref)) / abs(float(ref))
        err_g = max(np.abs(dh - ref_grad[1]).max() / np.abs(ref_grad[1]).max(),
                    np.abs(dW - ref_grad[2]).max() / np.abs(ref_grad[2]).max())  # fmt: skip
        label = "default" if chunk is None else str(chunk)
        row(f"fused loss (chunk {label})", peak_bytes(fwd), best_time(fwd, args.repeat), t_naive)
        row(f"fused +grad (chunk {label})", peak_bytes(fwd_bwd),
            best_time(fwd_bwd, args.repeat), t_naive_g)  # fmt: skip
        print(f"{'':24s} rel. error vs naive: loss {err:.1e}, grads {err_g:.1e}")


if __name__ == "__main__":
    main()
