"""The roofline model of numsoft's softmax: where each pass structure sits against the
two limits of the machine, memory bandwidth and exp throughput.

A softmax of n elements evaluates ``e`` exponentials per element and moves ``m``
elements per element through memory when a row does not fit in cache (SPEC §2:
three-pass-reload e = 2, m = 4; three-pass-store 1, 5; two-pass 2, 3; online 2, 3).
Its operational intensity is ``I = e / (m · itemsize)`` exponentials per byte, and its
attained rate ``e · n / time`` exponentials per second can exceed neither roof:

* the memory roof ``I · B``, with ``B`` the bandwidth of ``np.copyto`` on the same
  array (it moves 2 elements per element, the least any softmax can);
* the compute roof ``P``, the rate of ``exp_nonpositive`` over an array that stays in
  L1 (the kernels' exp, vectorized, nothing else in the loop; ``exp_cost.py``).

Each measured point is a pass structure at one out-of-cache shape; its height under
the lower roof is the efficiency. Ratios are from one run (copy and exp peak measured
beside the kernels).

    python asv_bench/roofline_model.py --json docs/roofline-model.json \
        --plot docs/img/roofline-model.png
    python asv_bench/roofline_model.py --quick          # small arrays (smoke test)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402
from asv_bench.exp_cost import exp_rate  # noqa: E402
from asv_bench.roofline import add_output_options, best_time, replotted  # noqa: E402

#: algorithm → (exponentials per element, elements moved per element out of cache).
TRAFFIC = {
    "three-pass-reload": (2, 4),
    "three-pass-store": (1, 5),
    "two-pass": (2, 3),
    "online": (2, 3),
}
FULL_CASES = (("8192x8192", (8192, 8192)), ("1x2^26", (1, 1 << 26)))
QUICK_CASES = (("512x512", (512, 512)),)


def exp_peak(dtype, threads: int, repeat: int, min_time: float) -> float:
    """Exponentials per second of the kernels' exp on an L1-resident array, per thread,
    times ``threads`` (the kernels run one such loop per thread)."""
    return threads * exp_rate("exp_nonpositive", dtype, repeat, min_time)


def _measure_case(x, threads, label, peak, repeat, min_time):
    """Rows of every pass structure on ``x``, with the copy of ``x`` measured beside."""
    out = np.empty_like(x)
    t_copy = best_time(lambda: np.copyto(out, x), repeat, min_time)
    bandwidth = 2 * x.nbytes / t_copy
    rows = []
    for algorithm, (e, m) in TRAFFIC.items():
        run = lambda a=algorithm: numsoft.softmax(x, out=out, algorithm=a)  # noqa: E731
        t = best_time(run, repeat, min_time)
        intensity = e / (m * x.itemsize)
        attained = e * x.size / t
        roof = min(intensity * bandwidth, peak)
        rows.append(dict(threads=threads, dtype=x.dtype.name, case=label, algorithm=algorithm,
                         intensity=intensity, attained=attained, bandwidth=bandwidth, peak=peak,
                         roof=roof, vs_copy=t / t_copy))  # fmt: skip
        print(f"{threads}T {x.dtype.name:8s} {label:10s} {algorithm:18s} "
              f"I={intensity:.3f} exp/B  {attained / 1e9:6.2f} Gexp/s  "
              f"roof {roof / 1e9:6.2f} ({attained / roof:4.0%})  {t / t_copy:5.2f}x copy",
              flush=True)  # fmt: skip
    return rows


def measure(cases, dtypes, thread_counts, repeat, min_time):
    rows = []
    for threads in thread_counts:
        numba.set_num_threads(threads)
        for dtype in dtypes:
            peak = exp_peak(dtype, threads, repeat, min_time)
            for label, shape in cases:
                x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
                rows += _measure_case(x, threads, label, peak, repeat, min_time)
    return rows


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    dtypes = sorted({r["dtype"] for r in rows})
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(len(dtypes), len(threads), figsize=(5.2 * len(threads),
                             4.2 * len(dtypes)), squeeze=False)  # fmt: skip
    markers = dict(zip(TRAFFIC, "osD^", strict=True))
    colors = dict(zip(sorted({r["case"] for r in rows}), ("tab:blue", "tab:orange"), strict=False))
    for (i, dtype), (j, nthreads) in itertools.product(enumerate(dtypes), enumerate(threads)):
        ax = axes[i][j]
        sel = [r for r in rows if (r["dtype"], r["threads"]) == (dtype, nthreads)]
        peak = sel[0]["peak"]
        grid = np.geomspace(0.01, 0.5, 200)
        for case, color in colors.items():
            bw = next(r["bandwidth"] for r in sel if r["case"] == case)
            ax.plot(grid, np.minimum(grid * bw, peak) / 1e9, color=color, lw=1.5,
                    label=f"roof, copy {bw / 1e9:.0f} GB/s ({case})")  # fmt: skip
        for r in sel:
            ax.plot(r["intensity"], r["attained"] / 1e9, markers[r["algorithm"]],
                    color=colors[r["case"]], ms=7,
                    label=r["algorithm"] if r["case"] == next(iter(colors)) else None)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("operational intensity (exp per byte moved)")
        ax.set_ylabel("attained G exp/s")
        ax.set_title(f"{dtype}, {nthreads} thread(s); exp peak {peak / 1e9:.2f} G/s", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.set_xticks([0.01, 0.02, 0.05, 0.1, 0.2, 0.5])
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(ScalarFormatter())
        ax.tick_params(which="minor", labelsize=7)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small arrays, few repeats")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtypes", default="float32,float64")
    add_output_options(ap)
    args = ap.parse_args(argv)
    if replotted(args, plot, "roofline-model.png"):
        return 0
    repeat, min_time = (3, 0.05) if args.quick else (7, 0.5)
    threads = [min(int(t), numba.config.NUMBA_NUM_THREADS) for t in args.threads.split(",")]
    dtypes = [np.dtype(d).type for d in args.dtypes.split(",")]
    print(f"# numba {numba.__version__}, load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = measure(QUICK_CASES if args.quick else FULL_CASES, dtypes, threads, repeat, min_time)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
