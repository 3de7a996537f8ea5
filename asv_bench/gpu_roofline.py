"""GPU roofline: numsoft's CUDA kernels in GB/s against a device-to-device copy.

For each shape, dtype, function and pass structure this reports the bandwidth of

- ``kernel``: the driver (``numsoft.cuda.rows``) on preallocated device arrays, i.e. the
  kernels alone (launches are asynchronous; timed with CUDA events over many calls);
- ``api``: the public function on a device array (``numsoft.softmax(d_x, out=d_y)``),
  including the front door's Python work per call;

as bytes that must move (softmax: read x + write y; logsumexp: read x) per second,
and as a fraction of the bandwidth of a device-to-device copy of the same array
(``copy``: read + write of the same bytes). torch and CuPy are timed the same way when
installed. Exits 0 with a message when no CUDA device is present (or under the
simulator, unless ``--smoke``). Usage::

    python asv_bench/gpu_roofline.py [--quick] [--json results.json]

``--smoke`` runs every code path of this script once, on tiny float32 arrays with one
pass structure; the simulator is allowed (its timings are meaningless). It finds a broken
script before GPU time is spent on it: ``tests/cuda/test_gpu_roofline.py`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SHAPES = [  # (shape, axis): warp-, block-, split-row and column regimes
    ((4096, 4096), -1),
    ((8192, 8192), -1),
    ((65536, 256), -1),
    ((32, 1 << 21), -1),
    ((4096, 4096), 0),
]
QUICK_SHAPES = [((4096, 4096), -1), ((65536, 256), -1), ((32, 1 << 21), -1)]
SMOKE_SHAPES = [((4, 40), -1), ((24, 3), 0)]
ALGOS = ("online", "two-pass", "three-pass-reload")
FUNCS = ("softmax", "log_softmax", "logsumexp")


def _per_call(batch, min_seconds=0.2, min_reps=10, batches=5, warmup=True):
    """Median seconds per call, where ``batch(reps)`` times ``reps`` calls.

    After a warm-up call, ``reps`` grows 4× until a batch lasts ``min_seconds``;
    the median of ``batches`` batches of that size is returned.
    """
    if warmup:
        batch(1)
    reps = min_reps
    while min_seconds > 0 and batch(reps) < min_seconds and reps < 10_000:
        reps *= 4
    return max(1e-9, float(np.median([batch(reps) / reps for _ in range(batches)])))


def _time(fn, cuda, **timing):
    """Seconds per call of ``fn`` (GPU work included), CUDA events around each batch."""

    def batch(reps):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / 1e3

    return _per_call(batch, **timing)


def _time_host_synced(fn, sync, **timing):
    """Seconds per call for libraries on their own streams (torch, CuPy)."""

    def batch(reps):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        return time.perf_counter() - t0

    return _per_call(batch, **timing)


def _others(func, x_host, axis):
    """{name: callable} of torch / CuPy equivalents on device copies of ``x_host``."""
    found = {}
    try:
        import torch

        if torch.cuda.is_available():
            tx = torch.from_numpy(x_host).cuda()
            op = {
                "softmax": lambda: torch.softmax(tx, dim=axis),
                "log_softmax": lambda: torch.log_softmax(tx, dim=axis),
                "logsumexp": lambda: torch.logsumexp(tx, dim=axis),
            }[func]
            found["torch"] = (op, torch.cuda.synchronize)
    except ImportError:
        pass
    try:
        import cupy
        import cupyx.scipy.special as cs

        cx = cupy.asarray(x_host)
        op = {
            "softmax": lambda: cs.softmax(cx, axis=axis),
            "log_softmax": lambda: cs.log_softmax(cx, axis=axis),
            "logsumexp": lambda: cs.logsumexp(cx, axis=axis),
        }[func]
        found["cupy"] = (op, cupy.cuda.Device().synchronize)
    except ImportError:
        pass
    return found


class _Case:
    """One function and pass structure on preallocated device arrays."""

    def __init__(self, func, algorithm, d_x, d_y, x3, y3, axis):
        from numba import cuda

        from numsoft.cuda.auto import device_algorithm
        from numsoft.frontdoor.arguments import extexp_bound

        self.func, self.algorithm, self.axis = func, algorithm, axis
        self.d_x, self.d_y, self.x3, self.y3 = d_x, d_y, x3, y3
        self.algo = device_algorithm(algorithm)
        ft = x3.dtype.type
        self.inv_t, self.bound = ft(1.0), extexp_bound(x3.dtype)
        self.d_out = cuda.device_array((x3.shape[0], x3.shape[2]), dtype=x3.dtype)

    def kernel(self):
        """The driver alone (``numsoft.cuda.rows``)."""
        from numsoft.cuda.rows import logsumexp_rows, softmax_rows

        if self.func == "logsumexp":
            logsumexp_rows(self.x3, self.d_out, self.algo, self.inv_t, self.inv_t, self.bound)
        else:
            log = self.func == "log_softmax"
            softmax_rows(self.x3, self.y3, self.algo, self.inv_t, log, self.bound)

    def api(self):
        """The public function on the device array (front door included)."""
        import numsoft

        if self.func == "logsumexp":
            numsoft.logsumexp(self.d_x, axis=self.axis, algorithm=self.algorithm)
        else:
            getattr(numsoft, self.func)(
                self.d_x, axis=self.axis, out=self.d_y, algorithm=self.algorithm
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three shapes, float32 only")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny float32 arrays, one call each (simulator allowed)",
    )
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and not args.smoke:
        print("gpu_roofline: skipped under the CUDA simulator")
        return 0
    try:
        from numba import cuda
    except ImportError:
        print("gpu_roofline: skipped, numba-cuda is not installed")
        return 0
    if not cuda.is_available():
        print("gpu_roofline: skipped, no CUDA device is available")
        return 0

    from numsoft.cuda import launch

    dev = cuda.get_current_device()
    name = getattr(dev, "name", "CUDA device")
    name = name.decode() if isinstance(name, bytes) else name
    print(f"# {name}, cc {getattr(dev, 'compute_capability', '?')}")
    print(
        "| shape | axis | dtype | function | algorithm | regime | kernel GB/s | kernel/copy "
        "| api GB/s | api/copy | others (GB/s, /copy) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows_out = []
    shapes = SMOKE_SHAPES if args.smoke else QUICK_SHAPES if args.quick else SHAPES
    dtypes = (np.float32,) if args.quick or args.smoke else (np.float32, np.float64)
    timing = dict(min_seconds=0.0, min_reps=1, batches=1, warmup=False) if args.smoke else {}
    algorithms = ALGOS[:1] if args.smoke else ALGOS
    for shape, axis in shapes:
        for dtype in dtypes:
            x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
            d_x = cuda.to_device(x)
            d_y = cuda.device_array_like(d_x)
            nbytes = x.nbytes
            copy_s = _time(lambda d_y=d_y, d_x=d_x: d_y.copy_to_device(d_x), cuda, **timing)
            copy_gbs = 2 * nbytes / copy_s / 1e9
            rows, n = (shape[0], shape[1]) if axis == -1 else (shape[1], shape[0])
            x3 = d_x.reshape(shape[0], shape[1], 1) if axis == -1 else d_x.reshape(1, *shape)
            y3 = d_y.reshape(x3.shape)
            inner = x3.shape[2]
            regime = launch.plan(x3.shape[0] * inner, x3.shape[1], inner).regime
            for func in FUNCS:
                moved = nbytes if func == "logsumexp" else 2 * nbytes
                others = _others(func, x, axis)
                other_txt = []
                for name, (op, sync) in others.items():
                    gbs = moved / _time_host_synced(op, sync, **timing) / 1e9
                    other_txt.append(f"{name} {gbs:.0f}, {gbs / copy_gbs:.2f}")
                for algorithm in algorithms:
                    case = _Case(func, algorithm, d_x, d_y, x3, y3, axis)
                    k_gbs = moved / _time(case.kernel, cuda, **timing) / 1e9
                    a_gbs = moved / _time(case.api, cuda, **timing) / 1e9
                    row = dict(shape=list(shape), axis=axis, dtype=np.dtype(dtype).name,
                               function=func, algorithm=algorithm, regime=regime,
                               kernel_gbs=k_gbs, api_gbs=a_gbs, copy_gbs=copy_gbs,
                               others="; ".join(other_txt))  # fmt: skip
                    rows_out.append(row)
                    print(f"| {shape[0]}x{shape[1]} | {axis} | {row['dtype']} | {func} "
                          f"| {algorithm} | {regime} | {k_gbs:.0f} | {k_gbs / copy_gbs:.2f} "
                          f"| {a_gbs:.0f} | {a_gbs / copy_gbs:.2f} | {row['others']} |",
                          flush=True)  # fmt: skip
            print(f"| {shape[0]}x{shape[1]} | {axis} | {np.dtype(dtype).name} | copy (D2D) "
                  f"| | | {copy_gbs:.0f} | 1.00 | | | |")  # fmt: skip
            del d_x, d_y
    _report_target(rows_out)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows_out, fh, indent=1)
    return 0


def _report_target(rows_out) -> None:
    """Print the verdict on the target: softmax of 4096x4096 float32 (last axis)
    at >= 85% of the device-to-device copy bandwidth, for the best pass structure."""
    cases = [r for r in rows_out if r["shape"] == [4096, 4096] and r["axis"] == -1
             and r["dtype"] == "float32" and r["function"] == "softmax"]  # fmt: skip
    if not cases:
        return
    best = max(cases, key=lambda r: r["kernel_gbs"])
    ratio = best["kernel_gbs"] / best["copy_gbs"]
    verdict = "met" if ratio >= 0.85 else "not met"
    print(f"target: softmax 4096x4096 float32 ({best['algorithm']}) at {ratio:.0%} of the "
          f"copy bandwidth; goal >= 85%: {verdict}")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
