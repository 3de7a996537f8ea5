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
