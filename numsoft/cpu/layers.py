"""Which threading layer Numba runs numsoft's parallel kernels on, and why.

Numba picks its layer (TBB, then OpenMP, then workqueue) when the first parallel region
of the process starts, and takes TBB only where the dynamic loader finds
``libtbb.so.12`` (``tbb12.dll`` on Windows). PyPI's ``tbb`` wheel puts that file in
``<prefix>/lib``, which the loader searches for a system Python but not for a
``python -m venv``, a ``--user`` install or most non-system interpreters, and Numba's
``tbbpool`` extension carries no RPATH (numba/numba#6108): in a venv Numba silently
ran GNU OpenMP, whose spinning workers made a matmul-then-softmax loop 15.7x slower
than on one thread (docs/threads.md). ``make_tbb_loadable`` loads the library of the
installed ``tbb`` distribution by its path, before Numba looks, so that Numba's own
search finds it already loaded.

Numba's PyPI wheels for macOS and Linux arm64 carry no TBB layer at all (only OpenMP
and workqueue), so there the ``tbb`` dependency would do nothing and is not declared.

Where Numba will run OpenMP instead (no TBB, or the user asked for it) and the user set
no wait policy, ``make_openmp_passive`` loads Numba's OpenMP runtime just before its
pool starts (``start_openmp_passively`` puts it in front of Numba's pool launch, which
numsoft's first parallel call, ``numba.set_num_threads`` and the user's own parallel
code all go through) with ``OMP_WAIT_POLICY=passive`` in the environment, which the
runtime reads once, when it loads: its idle workers then sleep instead of spinning beside BLAS's
threads (a softmax right after a matmul: 11.7x the one-thread time with GNU OpenMP's
default, 0.87x passive; docs/threads.md). The variable is removed again at once, so
OpenMP runtimes that other libraries (torch, scikit-learn) bring and load later keep
their own defaults.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numba
import numba.np.ufunc.parallel as _numba_parallel

#: File name of the TBB runtime Numba's ``tbbpool`` links to, per platform.
_TBB_LIBRARY = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib", "win32": "tbb12.dll"}

#: Layers a user may request that never use TBB: nothing is loaded for them.
_LAYERS_WITHOUT_TBB = {"omp", "workqueue"}

#: What ``make_tbb_loadable`` found and did, for ``python -m numsoft info``.
tbb_status = "not looked for"

#: What ``make_openmp_passive`` found and did, for ``python -m numsoft info``.
openmp_status = "not looked for"

#: True once ``make_openmp_passive`` has loaded Numba's OpenMP runtime with a passive
#: wait policy.
openmp_made_passive = False

#: The environment variables by which a user sets OpenMP's wait policy (GNU's and the
#: LLVM/Intel runtime's).
WAIT_POLICY_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")

_dll_directory = None  # Windows: keeps the added DLL search directory alive


def requested_layer() -> str:
    """The layer the user asked Numba for (``NUMBA_THREADING_LAYER``): ``'default'``,
    a layer name or a property (``'safe'``, ``'threadsafe'``, ``'forksafe'``)."""
    return str(numba.config.THREADING_LAYER).lower()


def numba_started_a_layer() -> bool:
    """Numba has started its threading layer in this process (its first parallel
    region, or ``numba.get_num_threads()``, has run)."""
    return bool(getattr(_numba_parallel, "_is_initialized", False))


def _installed_tbb_library() -> str | None:
    """Path of the TBB runtime the ``tbb`` distribution installed, or None."""
    import importlib.metadata

    name = _TBB_LIBRARY.get("linux" if sys.platform.startswith("linux") else sys.platform)
    try:
        files = importlib.metadata.distribution("tbb").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == name:
            path = os.path.normpath(str(file.locate()))
            if os.path.isfile(path):
                return path
    return None


def make_tbb_loadable() -> str:
    """Load the installed ``tbb`` wheel's runtime so that Numba can pick TBB.

    Does nothing when the user chose a layer without TBB, when Numba has already started
    its layer, or when no ``tbb`` distribution is installed (Numba's own search then
    applies: conda and system installs). A failure is not an error: Numba then picks
    what it finds, as without numsoft. Returns (and keeps in ``tbb_status``) a line
    saying what happened.
    """
    global tbb_status, _dll_directory
    requested = requested_layer()
    if requested in _LAYERS_WITHOUT_TBB:
        tbb_status = f"not loaded: NUMBA_THREADING_LAYER={requested}"
    elif numba_started_a_layer():
        tbb_status = "not loaded: Numba had started its layer before numsoft was imported"
    else:
        path = _installed_tbb_library()
        if path is None:
            tbb_status = "no 'tbb' package installed here (Numba searches the system)"
        else:
            try:
                if sys.platform == "win32":
                    _dll_directory = os.add_dll_directory(os.path.dirname(path))
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError as exc:
                tbb_status = f"could not load {path}: {exc}"
            else:
                tbb_status = f"loaded {path}"
    return tbb_status


def _may_pick_openmp() -> bool:
    """Whether Numba's first parallel region could start its OpenMP layer: asked for by
    name, or by a property or the default order, which tries TBB first and takes OpenMP
    where TBB does not load."""
    requested = requested_layer()
    if requested == "omp":
        return True
    if requested not in ("default", "threadsafe", "forksafe"):
        return False
    try:
        from numba.np.ufunc import tbbpool  # noqa: F401  (what Numba tries first)
    except ImportError:
        return True
    return False


def _openmp_runtime_loaded() -> bool:
    """Whether an OpenMP runtime is already mapped into this process (Linux: read from
    ``/proc/self/maps``; elsewhere assumed not)."""
    try:
        with open("/proc/self/maps") as maps:
            return any(name in line for line in maps for name in ("libgomp", "libomp", "libiomp"))
    except OSError:
        return False


def make_openmp_passive() -> str:
    """Where Numba's pool is about to start on OpenMP and no wait policy is set, load
    Numba's OpenMP runtime now with ``OMP_WAIT_POLICY=passive`` (module docstring).

    Does nothing when the user set a wait policy (``WAIT_POLICY_VARIABLES``), when Numba
    has already started its layer or loaded its OpenMP extension, when Numba will take
    TBB or workqueue, or when an OpenMP runtime is already loaded (another library's:
    its policy was read when it loaded, and may be the one Numba's pool would share).
    Returns (and keeps in ``openmp_status``) a line saying what happened.
    """
    global openmp_status, openmp_made_passive
    if numba_started_a_layer() or "numba.np.ufunc.omppool" in sys.modules:
        return openmp_status
    if any(os.environ.get(name) for name in WAIT_POLICY_VARIABLES):
        openmp_status = "the user's wait policy"
    elif not _may_pick_openmp():
        openmp_status = "not used (Numba takes another layer)"
    elif _openmp_runtime_loaded():
        openmp_status = "default (an OpenMP runtime was loaded before numsoft's first call)"
    else:
        os.environ["OMP_WAIT_POLICY"] = "passive"
        try:
            from numba.np.ufunc import omppool  # noqa: F401  (loads the runtime)
        except ImportError as exc:
            openmp_status = f"not loadable: {exc}"
        else:
            openmp_made_passive = True
            openmp_status = "passive (OMP_WAIT_POLICY=passive, set by numsoft for Numba's pool)"
        finally:
            del os.environ["OMP_WAIT_POLICY"]
    return openmp_status


def start_openmp_passively() -> None:
    """Run ``make_openmp_passive`` before Numba starts its pool, whoever starts it: put
    it in front of Numba's pool launch (``numba.np.ufunc.parallel._launch_threads``,
    looked up by name at each call). Does nothing once the pool has started."""
    launch = getattr(_numba_parallel, "_launch_threads", None)
    if launch is None or numba_started_a_layer() or getattr(launch, "_numsoft", False):
        return

    def launch_after_openmp_is_passive():
        if not numba_started_a_layer():
            make_openmp_passive()
        return launch()

    launch_after_openmp_is_passive._numsoft = True
    _numba_parallel._launch_threads = launch_after_openmp_is_passive
