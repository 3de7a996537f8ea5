"""``python -m numsoft info``: what a bug report needs to know about this install.

Versions, the threading layer Numba runs numsoft's kernels on and why (TBB found where,
or not), threads, what numsoft read from the CPU, where compiled kernels are cached and
whether that is writable, and whether CUDA is available: like ``numba -s``,
``np.show_config()`` or ``torch.utils.collect_env``, for numsoft.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys
import tempfile


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _blas() -> str:
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # the layout of NumPy's build report is not a stable API
        return "unknown"
    return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()


def _writable(directory: str) -> bool:
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


def kernel_cache() -> tuple[str, str]:
    """(directory, state) of the on-disk cache numsoft's kernels use."""
    from .cpu.rows import span  # any numsoft kernel: all share one cache location

    cache = getattr(span, "_cache", None)
    path = getattr(cache, "_cache_path", None)
    if path is None:
        return "none", "kernels compile in every process (no writable location)"
    return path, "writable" if _writable(path) else "NOT writable: kernels are not saved"


def _layer() -> tuple[str, str]:
    """(layer Numba started, why), starting Numba's thread pool if it has not started."""
    import numba

    from .cpu import layers, threads

    numba.get_num_threads()  # starts the layer (no parallel region is run)
    layer = threads.current_layer() or "none"
    why = [f"requested: {layers.requested_layer()}", f"TBB: {layers.tbb_status}"]
    if layer == "omp":
        from numba.np.ufunc import omppool

        why.append(f"OpenMP vendor: {omppool.openmp_vendor}")
        why.append(f"OpenMP wait: {layers.openmp_status}")
    if layer not in threads.THREADSAFE_LAYERS:
        why.append("not thread-safe: numsoft lets one Python thread at a time into the pool")
    return layer, "; ".join(why)


def _cuda() -> str:
    if importlib.util.find_spec("numba.cuda") is None:
        return "numba-cuda not installed (pip install 'numba-cuda[cu13]')"
    try:
        from numba import cuda

        if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            return "the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
        if cuda.is_available():
            return f"available: {cuda.get_current_device().name}"
    except Exception as exc:  # a broken driver install must not break the report
        return f"not available ({type(exc).__name__}: {exc})"
    return "not available (no device or driver)"


def collect() -> dict[str, str]:
    """The report, as ordered (name, value) pairs of text."""
    import numba
    import numpy as np

    import numsoft

    from .cpu import machine, measured_plan, shipped

    layer, why = _layer()
    cache_dir, cache_state = kernel_cache()
    kib = 1 << 10
    return {
        "numsoft": f"{numsoft.__version__} ({os.path.dirname(numsoft.__file__)})",
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": f"{platform.platform()} {platform.machine()}",
        "in a venv": str(sys.prefix != sys.base_prefix),
        "numba": numba.__version__,
        "llvmlite": _version("llvmlite"),
        "numpy": f"{np.__version__} (BLAS: {_blas()})",
        "tbb": _version("tbb"),
        "threading layer": layer,
        "why": why,
        "threads": f"{numba.get_num_threads()} (NUMBA_NUM_THREADS "
        f"{numba.config.NUMBA_NUM_THREADS}, {os.cpu_count()} CPUs)",
        "cpu": f"{numba.config.CPU_NAME or _host_cpu()}, float32 lanes {machine.float32_lanes()}",
        "caches": f"L1d {machine.data_cache_bytes(1) // kib} KiB, L2 "
        f"{machine.data_cache_bytes(2) // kib} KiB, last level "
        f"{machine.last_level_cache_bytes() // kib} KiB"
        + ("" if machine.caches_read() else " (defaults: the system does not say)"),
        "kernels": shipped.status()[1],
        "auto": measured_plan.status(),
        "kernel cache": f"{cache_dir} ({cache_state})",
        "cuda": _cuda(),
    }


def _host_cpu() -> str:
    from llvmlite import binding as llvm

    return llvm.get_host_cpu_name()


def report() -> str:
    """The report as aligned ``name: value`` lines."""
    items = collect()
    width = max(map(len, items))
    return "\n".join(f"{name + ':':<{width + 1}} {value}" for name, value in items.items())
