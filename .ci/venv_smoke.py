"""numsoft as a pip user gets it: run with the Python of a fresh venv holding the wheel.

Checks that numsoft was imported from the venv (not the source tree), that Numba runs
on TBB on Linux x86-64 with the venv's own ``libtbb`` (the loader does not search
``<venv>/lib``: issue 38), that a forced ``workqueue`` layer survives four Python
threads and Dask's threaded scheduler, and reports matmul-then-softmax beside BLAS over
one thread (alternating processes; reported, not failed on: CI machines are shared).
Exits non-zero on a failed check.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

CHECK_LAYER = """
    import numba, numpy as np, numsoft, os, sys
    numsoft.softmax(np.ones((512, 4096), np.float32))
    maps = open("/proc/self/maps").read() if os.path.exists("/proc/self/maps") else ""
    libtbb = sorted({l.split()[-1] for l in maps.splitlines() if "libtbb.so" in l})
    print(numsoft.__file__, numba.threading_layer(), ",".join(libtbb) or "-")
"""

WORKQUEUE = """
    from concurrent.futures import ThreadPoolExecutor
    import numba, numpy as np, numsoft
    x = np.random.default_rng(0).normal(size=(1024, 2048)).astype(np.float32)
    ref = numsoft.softmax(x)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: numsoft.softmax(x), range(16)))
    same = all(np.array_equal(y, ref) for y in got)
    import dask.array as da
    import numsoft.dask
    d = da.from_array(np.vstack([x] * 4), chunks=(512, 1024))
    y = numsoft.dask.softmax(d).compute(scheduler="threads")
    print(numba.threading_layer(), same, np.allclose(y, np.vstack([ref] * 4), rtol=1e-5, atol=1e-7))
"""

BESIDE_BLAS = """
    import time, numpy as np, numsoft
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((2000, 64)), rng.standard_normal((64, 100))
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        z = a @ w
        numsoft.softmax(z, axis=1, out=z)
        times.append(time.perf_counter() - t0)
    print(np.median(times[20:]))
"""


def run(code: str, **env_extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")} | env_extra
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"FAILED (exit {proc.returncode}):\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def main() -> int:
    failures = []
    prefix = os.path.realpath(sys.prefix)
    where, layer, libtbb = run(CHECK_LAYER).split()
    print(f"numsoft from {where}; layer {layer}; libtbb {libtbb}")
    if not os.path.realpath(where).startswith(prefix):
        failures.append("numsoft was not imported from the venv")
    if sys.platform.startswith("linux") and platform.machine() == "x86_64":
        own = all(os.path.realpath(p).startswith(prefix) for p in libtbb.split(","))
        if layer != "tbb" or not own:
            failures.append(f"expected TBB from {prefix}/lib, got {layer} with {libtbb}")

    layer, threads_ok, dask_ok = run(WORKQUEUE, NUMBA_THREADING_LAYER="workqueue").split()
    print(f"forced {layer}: 4 Python threads {threads_ok}, Dask threaded scheduler {dask_ok}")
    if (layer, threads_ok, dask_ok) != ("workqueue", "True", "True"):
        failures.append("the workqueue run gave wrong results")

    pairs = [(float(run(BESIDE_BLAS)), float(run(BESIDE_BLAS, NUMBA_NUM_THREADS="1")))
             for _ in range(3)]  # fmt: skip
    ratios = [default / one for default, one in pairs]
    print("matmul-then-softmax, default threads / one thread (3 alternating rounds): "
          + ", ".join(f"{r:.2f}" for r in ratios) + " (target <= 1.2; reported only)")  # fmt: skip
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
