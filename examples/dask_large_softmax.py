"""Softmax over an array larger than this machine's memory, on a Dask LocalCluster.

The logits are generated lazily, block by block (``dask.array.random`` with a fixed
seed), so the full array never exists anywhere; each row is split across several
chunks, so ``numsoft.dask.softmax`` takes its two-pass path (per-chunk online partials,
a tree merge, then a blockwise normalization). The result is consumed by a row sum,
which is checked against 1 for every row; a sample of rows is also recomputed in
NumPy (float64) and compared elementwise.

Usage::

    python examples/dask_large_softmax.py                  # 32 GB of float32 logits
    python examples/dask_large_softmax.py --size-gb 0.05   # a quick check (CI)

Prints the throughput in GB of float32 logits normalized per second (wall clock,
generation included), next to the rate of generating and summing the same logits
alone, which bounds it from above.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import dask
import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
import numsoft.dask  # noqa: E402

TEMPERATURE = 0.1  # softmax(U / 0.1) for U ~ Uniform[0, 1): a spread of e**10 per row


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-gb", type=float, default=32.0, help="logits size in GB (1e9 bytes)")
    p.add_argument("--row-length", type=int, default=2**20, help="elements per row")
    p.add_argument("--row-chunks", type=int, default=4, help="chunks each row is split into")
    p.add_argument("--chunk-mb", type=float, default=64.0, help="target chunk size in MB")
    p.add_argument("--workers", type=int, default=2, help="worker processes")
    p.add_argument("--sample-rows", type=int, default=3, help="rows checked elementwise")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--small", action="store_true", help="CI size: 0.05 GB, rows of 2^16 (docs/check.sh)"
    )
    args = p.parse_args(argv)
    if args.small:
        args.size_gb, args.row_length, args.chunk_mb = 0.05, 2**16, 4.0
    return args


def logits(args) -> da.Array:
    """The lazy float32 logits: (rows, row_length), each row in ``row_chunks`` chunks."""
    n = args.row_length
    rows = max(1, round(args.size_gb * 1e9 / (4 * n)))
    piece = -(-n // args.row_chunks)
    rows_per_chunk = int(min(rows, max(1, args.chunk_mb * 1e6 // (4 * piece))))
    rng = da.random.default_rng(args.seed)
    return rng.random((rows, n), chunks=(rows_per_chunk, piece), dtype=np.float32)


def timed(label: str, graph, nbytes: int):
    start = time.perf_counter()
    value = graph.compute()
    seconds = time.perf_counter() - start
    print(f"{label}: {seconds:7.2f} s  {nbytes / seconds / 1e9:6.2f} GB/s", flush=True)
    return value


def reference_rows(x: np.ndarray) -> np.ndarray:
    """Softmax of float32 rows, in float64 NumPy (independent of numsoft)."""
    z = x.astype(np.float64) / TEMPERATURE
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    x = logits(args)
    nbytes = x.nbytes
    print(
        f"logits: {x.shape[0]} x {x.shape[1]} float32 = {nbytes / 1e9:.2f} GB "
        f"in {x.npartitions} chunks of {x.chunksize}, rows split in {len(x.chunks[1])}",
        flush=True,
    )
    y = numsoft.dask.softmax(x, axis=-1, temperature=TEMPERATURE)
    # Workers are spawned: they import numsoft from this checkout, one Numba thread
    # each (Dask runs one task per core already).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    )
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"NUMBA_NUM_THREADS": "1"},
        ) as cluster,
        Client(cluster),
    ):
        # Warm-up on a few rows: Numba kernels load from the disk cache (or compile).
        numsoft.dask.softmax(x[:1], temperature=TEMPERATURE).sum().compute()
        timed("generate + row sums (baseline)", x.sum(axis=-1, dtype=np.float64), nbytes)
        sums = timed("softmax + row sums           ", y.sum(axis=-1, dtype=np.float64), nbytes)
        rows = np.random.default_rng(args.seed).choice(x.shape[0], args.sample_rows, False)
        rows.sort()
        sample_x, sample_y = dask.compute(x[rows], y[rows])
    worst_sum = float(np.max(np.abs(sums - 1.0)))
    ref = reference_rows(sample_x)
    worst_rel = float(np.max(np.abs(sample_y - ref) / ref))
    print(f"max |row sum - 1| over all {sums.size} rows: {worst_sum:.2e}")
    print(f"max relative error on rows {rows.tolist()} vs NumPy float64: {worst_rel:.2e}")
    ok = worst_sum < 1e-4 and worst_rel < 1e-5
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
