"""A new process's first calls, from a wheel installed with its shipped kernels.

The common calls of a script (softmax, log_softmax, logsumexp × float32/float64 × rows
of 3, 10, 32, 100, 4096, axis=0 of (64, 100), 1-D of 10 and 1000), and what a torch
user's first step with numsoft.torch runs (sparsemax, entmax15, their backward passes
and losses, the bisection maps at α = 1.5 and 2, on rows of 100 and 4096), with an
empty Numba cache: prints the import and call times and fails if any call compiled
(Numba's compile events) or the kernels are not the shipped ones. Then a user's @njit
function that calls numsoft per row: it compiles itself and numsoft's overloads (the
code that calls the kernels), and must compile none of numsoft's kernels. Times are printed,
not checked (CI's machine is shared).
"""

import time

t0 = time.perf_counter()
import numpy as np  # noqa: E402

import numsoft  # noqa: E402

t_import = time.perf_counter() - t0

from numba.core import event  # noqa: E402

from numsoft.cpu import shipped  # noqa: E402
from numsoft.variants import bisect  # noqa: E402

rng = np.random.default_rng(0)
calls = []
for dtype in (np.float32, np.float64):
    calls += [(rng.normal(size=(64, n)).astype(dtype), -1) for n in (3, 10, 32, 100, 4096)]
    calls += [(rng.normal(size=(64, 100)).astype(dtype), 0)]
    calls += [(rng.normal(size=n).astype(dtype), -1) for n in (10, 1000)]
t1 = time.perf_counter()
with event.install_recorder("numba:compile") as compiles:
    for x, axis in calls:
        for function in (numsoft.softmax, numsoft.log_softmax, numsoft.logsumexp):
            function(x, axis=axis)
    for dtype in (np.float32, np.float64):  # numsoft.torch's sparse maps
        for n in (100, 4096):
            x = rng.normal(size=(64, n)).astype(dtype)
            labels = np.zeros(64, np.int64)
            for forward, backward, loss in (
                (numsoft.sparsemax, numsoft.sparsemax_backward, numsoft.sparsemax_loss),
                (numsoft.entmax15, numsoft.entmax15_backward, numsoft.entmax15_loss),
            ):
                backward(forward(x), x)
                loss(x, labels, reduction="none")
                loss(x, labels, return_grad=True)
            for alpha in (1.5, 2.0):
                bisect.entmax_bisect(x, alpha)
t_calls = time.perf_counter() - t1
compiled = sorted({e.data["dispatcher"].py_func.__qualname__ for _, e in compiles.buffer})
print(f"kernels: {shipped.status()[1]}")
print(f"import numsoft {t_import:.2f} s; {3 * len(calls)} first calls and 40 of the sparse "
      f"maps' {t_calls:.2f} s; {len(compiled)} compiled")  # fmt: skip
assert shipped.status()[0] is not None, "the wheel's kernels are not used"
assert not compiled, f"compiled: {compiled}"


import numba  # noqa: E402


@numba.njit
def per_row(x, labels, y, out):
    for i in range(x.shape[0]):
        out[i] = numsoft.logsumexp(x[i]) + numsoft.cross_entropy(x[i], labels[i])
        numsoft.softmax(x[i], out=y[i])
        numsoft.log_softmax(x[i], out=y[i])


numba.njit(lambda: 0)()  # Numba's own start-up, which any jitted function pays
for dtype in (np.float32, np.float64):
    x = rng.normal(size=(8, 5)).astype(dtype)
    t2 = time.perf_counter()
    with event.install_recorder("numba:compile") as compiles:
        per_row(x, np.zeros(8, np.int64), np.empty_like(x), np.empty(8, dtype))
    seconds = time.perf_counter() - t2
    # numsoft's kernels are its cached functions; the overloads' bodies and the small
    # register_jitable helpers they call are compiled into the caller, like Numba's own.
    kernels = sorted(
        {
            f"{d.py_func.__module__}.{d.py_func.__qualname__}"
            for d in (e.data["dispatcher"] for _, e in compiles.buffer)
            if d.py_func.__module__.startswith("numsoft") and type(d._cache).__name__ != "NullCache"
        }
    )
    print(f"@njit per-row caller, {np.dtype(dtype).name}: compiled in {seconds:.2f} s")
    assert not kernels, f"the caller compiled numsoft's kernels from {kernels}"
