"""Kernels compiled when the wheel was built, loaded instead of compiling.

A release wheel carries, under ``numsoft/_kernels/<level>/``, Numba cache files of the
default warmup set compiled for an x86-64 microarchitecture level (``x86-64-v3``: AVX2
and FMA; ``x86-64-v4``: AVX-512), each level in a build process of its own with that CPU
name and no host features (``numsoft._build``). A kernel's first call in a process looks
there first, at the highest level this CPU supports, then in the user's Numba cache,
and compiles only what neither holds.

Numba keys a cache entry by the signature, the code generator's *magic tuple* (target
triple, CPU name, features) and the bytecode; the index file also holds Numba's version
and the source stamp (numsoft's: a digest of all its sources, ``_jit``). A shipped entry
is looked up with the level's magic tuple, recorded in the level's ``manifest.json``, so
it matches on any CPU of that level. The folder is only read: no lock, no write, no
writability test. Everything that keeps an entry from matching (another Numba or
Python, other sources, another CPU family, a path not shipped) means: the next place is
asked, without a word. A shipped file that cannot be read is skipped with one
``CacheFaultWarning`` per process. ``NUMSOFT_SHIPPED_KERNELS=0`` turns shipped kernels
off.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import pathlib
import sys
import types
import warnings
from typing import NamedTuple

from .cache_entries import CacheFaultWarning, package_source_digest, source_stamp
from .machine import LEVELS, host_features, supported_levels

#: The package's root folder: kernels lie under a level's folder as their sources do here.
PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[1]
#: The folder that holds the shipped kernels, one subfolder per level.
KERNELS_DIR = PACKAGE_DIR / "_kernels"
#: Set to ``0`` to load no shipped kernel (every path compiles or comes from the user's cache).
ENV_SWITCH = "NUMSOFT_SHIPPED_KERNELS"


def python_tag() -> str:
    """The part of Numba's cache file names that names the Python (``py311``)."""
    return f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"


class Shipment(NamedTuple):
    """The shipped kernels of one level that this process can load."""

    level: str
    folder: pathlib.Path
    magic: tuple  # the level's codegen magic tuple, as the build recorded it
    paths: int  # cache entries shipped at this level


def _manifest(level: str) -> dict | None:
    try:
        return json.loads((KERNELS_DIR / level / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


@functools.cache
def status() -> tuple[Shipment | None, str]:
    """(the shipment this process loads from, or None; a line saying which and why)."""
    import numba

    manifests = {lv: m for lv in LEVELS if (m := _manifest(lv)) is not None}
    if not manifests:
        return None, "compiled on first use (this install ships no kernels)"
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return None, f"compiled on first use (shipped kernels turned off: {ENV_SWITCH}=0)"
    usable = [lv for lv in supported_levels(host_features()) if lv in manifests]
    if not usable:
        shipped = ", ".join(manifests)
        return None, f"compiled on first use (shipped for {shipped}, which this CPU is not)"
    level = usable[0]
    m = manifests[level]
    if m.get("numba") != numba.__version__:
        return None, (
            f"compiled on first use (shipped for Numba {m.get('numba')}, "
            f"this is {numba.__version__})"
        )
    if m.get("python") != python_tag():
        return (
            None,
            f"compiled on first use (shipped for {m.get('python')}, this is {python_tag()})",
        )
    if m.get("sources") != package_source_digest():
        return None, "compiled on first use (the kernels were built from other sources)"
    shipment = Shipment(level, KERNELS_DIR / level, tuple(m["magic"]), int(m["paths"]))
    return shipment, f"shipped for {level} (Numba {m['numba']}), {shipment.paths} paths"


def filename_base(py_func) -> str:
    """Numba's cache file name of ``py_func`` without its suffix (as ``_CacheImpl``
    names it: module file stem, qualified name, first line, Python)."""
    modname = os.path.splitext(os.path.basename(inspect.getfile(py_func)))[0]
    fullname = f"{modname}.{py_func.__qualname__}".replace("<", "").replace(">", "")
    return f"{fullname}-{py_func.__code__.co_firstlineno}.{python_tag()}"


def relative_folder(py_func) -> pathlib.PurePosixPath:
    """The folder of ``py_func``'s source file, relative to the package root: where
    its entries lie under a level's folder."""
    source = pathlib.Path(inspect.getfile(py_func)).resolve().parent
    return pathlib.PurePosixPath(source.relative_to(PACKAGE_DIR).as_posix())


class _LevelCodegen:
    """Stands for the code generator in Numba's index key: the level's magic tuple."""

    def __init__(self, magic: tuple):
        self._magic = magic

    def magic_tuple(self) -> tuple:
        return self._magic


_faults_warned = False


def _warn_fault(path: pathlib.Path, exc: Exception) -> None:
    global _faults_warned
    if not _faults_warned:
        _faults_warned = True
        warnings.warn(
            f"numsoft: unreadable shipped kernel {str(path)!r} ({type(exc).__name__}: {exc}); "
            "compiling instead",
            CacheFaultWarning,
            stacklevel=4,
        )


def load(py_func, sig, target_context):
    """The shipped compile result of ``py_func`` for ``sig``, or None."""
    shipment, _ = status()
    if shipment is None:
        return None
    from numba.core import compiler
    from numba.core.caching import Cache, IndexDataCacheFile

    try:
        folder = shipment.folder / relative_folder(py_func)
    except ValueError:  # a function outside the package (a user's closure, a copy)
        return None
    base = filename_base(py_func)
    if not (folder / f"{base}.nbi").is_file():
        return None
    index = IndexDataCacheFile(
        cache_path=str(folder),
        filename_base=base,
        source_stamp=source_stamp(),
    )
    key = Cache._index_key(
        types.SimpleNamespace(_py_func=py_func), sig, _LevelCodegen(shipment.magic)
    )
    try:
        payload = index.load(key)
        if payload is None:
            return None
        target_context.refresh()
        return compiler.CompileResult._rebuild(target_context, *payload)
    except Exception as exc:  # a damaged file: compile instead, as for the user's cache
        _warn_fault(folder / base, exc)
        return None
