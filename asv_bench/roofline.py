"""Roofline measurement: numsoft softmax against the memory-copy bound and other libraries.

For each dtype, size and thread count, prints the effective bandwidth of every softmax
(``2 * x.nbytes / time``: one read of x and one write of y, the least any softmax moves)
next to ``np.copyto`` on the same array, which moves exactly those bytes. Ratios
``time / copy time`` are taken within one run, so machine load shifts both alike; each
time is the best of several repeats.

    python asv_bench/roofline.py                 # full sizes, 1 and 2 threads
    python asv_bench/roofline.py --quick         # small sizes (CI smoke test)
    python asv_bench/roofline.py --json out.json --plot docs/img/roofline.png

Time NumPy/SciPy with ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` unset (only in this
command, never in tests or CI): ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numsoft  # noqa: E402

ALGORITHMS = ("auto", "three-pass-reload", "three-pass-store", "two-pass", "online")

#: (label, shape, axis): in cache (8 MiB of float32) up to far out of cache (L3 = 32 MiB).
FULL_CASES = (
    ("16384x128", (16384, 128), -1),
    ("1024x1024", (1024, 1024), -1),
    ("4096x4096", (4096, 4096), -1),
    ("4096x4096 axis=0", (4096, 4096), 0),
    ("8192x8192", (8192, 8192), -1),
    ("1x2^20", (1, 1 << 20), -1),
    ("1x2^24", (1, 1 << 24), -1),
    ("1x2^26", (1, 1 << 26), -1),
)
QUICK_CASES = (
    ("64x128", (64, 128), -1),
    ("512x512", (512, 512), -1),
    ("512x512 axis=0", (512, 512), 0),
    ("1x2^18", (1, 1 << 18), -1),
)


def best_time(fn, repeat: int, min_time: float) -> float:
    """Best wall time of ``fn()`` over at least ``repeat`` calls and ``min_time`` seconds."""
    fn()  # warm up (compilation, page faults of fresh outputs)
    times = []
    start = time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 20 * repeat:
            break
    return min(times)


def contenders(x, axis, out, threads):
    """(name, callable) of everything timed on ``x``."""
    import scipy.special

    items = [("copy", lambda: np.copyto(out, x))]
    sm = numsoft.softmax
    for algo in ALGORITHMS:
        items.append((f"{algo} out=", lambda a=algo: sm(x, axis, out=out, algorithm=a)))
        items.append((f"{algo}", lambda a=algo: sm(x, axis, algorithm=a)))
    items.append(("scipy", lambda: scipy.special.softmax(x, axis=axis)))

    def numpy_softmax():
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        return e

    items.append(("numpy", numpy_softmax))
    try:
        import torch
    except ImportError:
        return items
    torch.set_num_threads(threads)
    tx = torch.from_numpy(x)
    items.append(("torch", lambda: torch.softmax(tx, dim=axis)))
    return items


def measure(cases, dtypes, thread_counts, repeat, min_time, skip_slow):
    rows = []
    for threads in thread_counts:
        numba.set_num_threads(threads)
        for dtype in dtypes:
            for label, shape, axis in cases:
                x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
                out = np.empty_like(x)
                nbytes = 2 * x.nbytes
                t_copy = None
                for name, fn in contenders(x, axis, out, threads):
                    if skip_slow and name in ("scipy", "numpy") and x.nbytes > (64 << 20):
                        continue
                    t = best_time(fn, repeat, min_time)
                    t_copy = t if name == "copy" else t_copy
                    rows.append(
                        dict(
                            threads=threads,
                            dtype=np.dtype(dtype).name,
                            case=label,
                            bytes=x.nbytes,
                            name=name,
                            seconds=t,
                            gbps=nbytes / t / 1e9,
                            vs_copy=t / t_copy,
                        )
                    )
                    print(
                        f"{threads}T {np.dtype(dtype).name:8s} {label:18s} {name:24s} "
                        f"{t * 1e3:9.3f} ms {nbytes / t / 1e9:7.1f} GB/s {t / t_copy:6.2f}x copy",
                        flush=True,
                    )
                del x, out
    return rows


def markdown_table(rows, threads, dtype):
    """One markdown table: rows = contenders, columns = cases, cells = GB/s (× copy time)."""
    sel = [r for r in rows if r["threads"] == threads and r["dtype"] == dtype]
    cases = list(dict.fromkeys(r["case"] for r in sel))
    names = list(dict.fromkeys(r["name"] for r in sel))
    cell = {(r["name"], r["case"]): r for r in sel}
    lines = [
        f"| {dtype}, {threads} thread(s) | " + " | ".join(cases) + " |",
        "|---" * (len(cases) + 1) + "|",
    ]
    for name in names:
        vals = []
        for case in cases:
            r = cell.get((name, case))
            vals.append("–" if r is None else f"{r['gbps']:.1f} ({r['vs_copy']:.2f}×)")
        lines.append(f"| {name} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def targets(rows):
    """The issue's targets, computed from the measured rows (2 threads where present)."""
    threads = max(r["threads"] for r in rows)
    out = []

    def get(dtype, case, name, t=threads):
        for r in rows:
            if (r["threads"], r["dtype"], r["case"], r["name"]) == (t, dtype, case, name):
                return r
        return None

    numsoft_names = [f"{a} out=" for a in ALGORITHMS[1:]]
    r = [get("float32", "8192x8192", n) for n in numsoft_names]
    r = [v for v in r if v]
    if r:
        b = min(r, key=lambda v: v["seconds"])
        out.append(
            f"float32 8192x8192, {threads}T: best {b['name']} = {b['vs_copy']:.2f}x copy "
            f"(target <= 1.6)"
        )
    for case in ("1x2^26", "1x2^24", "8192x8192"):
        for dtype in ("float32", "float64"):
            a, b = get(dtype, case, "two-pass out="), get(dtype, case, "three-pass-reload out=")
            if a and b:
                out.append(
                    f"{dtype} {case}, {threads}T: three-pass-reload / two-pass = "
                    f"{b['seconds'] / a['seconds']:.2f} (target >= 1.15)"
                )
    for t in sorted({r["threads"] for r in rows}):
        for ref in ("scipy", "torch"):
            worst = None
            for r in rows:
                if r["threads"] != t or r["name"] != ref:
                    continue
                ns = get(r["dtype"], r["case"], "auto", t)
                if ns:
                    ratio = r["seconds"] / ns["seconds"]
                    if worst is None or ratio < worst[0]:
                        worst = (ratio, r["dtype"], r["case"])
            if worst:
                want = "5" if ref == "scipy" else "1"
                out.append(
                    f"{t}T: slowest speed-up of auto (allocating) over {ref}: "
                    f"{worst[0]:.2f}x at {worst[1]} {worst[2]} (target >= {want})"
                )
    return out


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(
        len(dtypes), len(threads), figsize=(6.5 * len(threads), 4.5 * len(dtypes)), squeeze=False
    )
    shown = ["copy", *[f"{a} out=" for a in ALGORITHMS[1:]], "scipy", "numpy", "torch"]
    for i, dtype in enumerate(dtypes):
        for j, t in enumerate(threads):
            ax = axes[i][j]
            sel = [
                r
                for r in rows
                if r["dtype"] == dtype and r["threads"] == t and "axis=0" not in r["case"]
            ]
            cases = sorted(dict.fromkeys((r["bytes"], r["case"]) for r in sel))
            where = {case: i for i, (_, case) in enumerate(cases)}
            for name in shown:
                pts = sorted((where[r["case"]], r["gbps"]) for r in sel if r["name"] == name)
                if not pts:
                    continue
                style = dict(lw=3, color="black") if name == "copy" else dict(marker="o")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, **style)
            ax.set_xticks(range(len(cases)))
            ax.set_xticklabels([f"{c}\n{b >> 20} MiB" for b, c in cases], fontsize=7)
            ax.set_xlabel("shape, bytes of x (L3 = 32 MiB)")
            ax.set_ylabel("GB/s (2·bytes / time)")
            ax.set_title(f"softmax {dtype}, {t} thread(s)")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def add_output_options(ap: argparse.ArgumentParser) -> None:
    """``--json``, ``--plot`` and ``--replot`` (shared with ``roofline_model.py``)."""
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--plot", help="write the plot here, a PNG (needs matplotlib)")
    ap.add_argument("--replot", metavar="JSON", help="only plot measurements saved by --json")


def replotted(args, plot_rows, default_path: str) -> bool:
    """Plot the measurements of ``--replot`` and return True, if it was given."""
    if not args.replot:
        return False
    with open(args.replot) as f:
        plot_rows(json.load(f), args.plot or default_path)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (CI)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--repeat", type=int, default=None, help="minimum repeats per timing")
    ap.add_argument("--min-time", type=float, default=None, help="minimum seconds per timing")
    ap.add_argument("--skip-slow", action="store_true", help="no scipy/numpy above 64 MiB")
    add_output_options(ap)
    args = ap.parse_args(argv)
    if replotted(args, plot, "roofline.png"):
        return 0
    cases = QUICK_CASES if args.quick else FULL_CASES
    repeat = args.repeat or (3 if args.quick else 10)
    min_time = args.min_time if args.min_time is not None else (0.05 if args.quick else 0.5)
    thread_counts = [min(int(t), numba.config.NUMBA_NUM_THREADS) for t in args.threads.split(",")]
    dtypes = [np.dtype(d).type for d in args.dtypes.split(",")]
    print(
        f"# numba {numba.__version__}, numpy {np.__version__}, load average "
        f"{os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rows = measure(cases, dtypes, thread_counts, repeat, min_time, args.skip_slow)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    for t in thread_counts:
        for d in dtypes:
            print()
            print(markdown_table(rows, t, np.dtype(d).name))
    print()
    for line in targets(rows):
        print("#", line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0 if all(math.isfinite(r["seconds"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
