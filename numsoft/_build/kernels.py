"""Compile numsoft's default warmup set for x86-64 levels into the folder a wheel ships.

``python -m numsoft._build.kernels OUT [LEVEL ...]`` writes ``OUT/<level>/``: Numba's
cache files of every path the default warmup set reaches (``numsoft.warmup``), in the
package's folder layout, and ``manifest.json`` (the level, Numba's version, the Python
tag, the code generator's magic tuple, the digest of the sources, the number of paths),
which ``numsoft.cpu.shipped`` reads. Each level compiles in a process of its own with
``NUMBA_CPU_NAME=<level>`` and no host features, so nothing of the building CPU is in
the code; the build runs the calls it compiles, so it needs a CPU of each level it
builds (a level this CPU lacks is skipped, with a line saying so).

The levels: ``host`` (the highest of ``DEFAULT_LEVELS`` this CPU runs: what a source
install on this machine needs, and the build backend's default) or ``all``
(``DEFAULT_LEVELS``: a release wheel, ``pip wheel -C levels=all``), or level names.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_LEVELS = ("x86-64-v3", "x86-64-v4")


def _copy_cache(cache: pathlib.Path, out: pathlib.Path) -> int:
    """Copy the cache files under ``cache`` (Numba's layout: a folder per source folder,
    named by a hash of its absolute path) to ``out`` in the package's layout; returns
    the number of compiled entries."""
    from numba.core.caching import _CacheLocator

    entries = 0
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]:
        sub = cache / _CacheLocator.get_suitable_cache_subpath(str(folder / "x.py"))
        files = sorted(sub.glob("*.nb[ic]")) if sub.is_dir() else []
        if not files:
            continue
        target = out / folder.relative_to(PACKAGE)
        target.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy2(f, target / f.name)
            entries += f.suffix == ".nbc"
    return entries


def write_level(cache: pathlib.Path, out: pathlib.Path, sources: str) -> int:
    """Copy the cache ``cache`` that this process's target (``NUMBA_CPU_NAME``) filled
    from sources of digest ``sources`` to ``out``, with its manifest; returns the number
    of paths."""
    import numba
    from numba.core.registry import cpu_target

    from ..cpu.shipped import python_tag

    out.mkdir(parents=True, exist_ok=True)
    paths = _copy_cache(cache, out)
    manifest = {
        "level": numba.config.CPU_NAME,
        "numba": numba.__version__,
        "python": python_tag(),
        "magic": list(cpu_target.target_context.codegen().magic_tuple()),
        "sources": sources,
        "paths": paths,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return paths


def build_this_level(out: pathlib.Path) -> None:
    """In a process started with ``NUMBA_CPU_NAME`` set: warm up into a fresh cache,
    copy it to ``out`` and write the manifest."""
    import numba

    from ..cpu.cache_entries import package_source_digest
    from ..warmup import warmup

    sources = package_source_digest()  # the stamp the workers' cache entries carry
    seconds = warmup()
    paths = write_level(pathlib.Path(numba.config.CACHE_DIR), out, sources)
    level = numba.config.CPU_NAME
    print(f"numsoft kernels: {level}: {paths} paths compiled in {seconds:.0f} s", flush=True)


def chosen_levels(names, runnable) -> tuple[str, ...]:
    """The levels ``names`` stands for (``host``, ``all`` or level names), given the
    levels this CPU can run (``runnable``, highest first)."""
    if list(names) == ["host"]:
        return tuple(lv for lv in runnable if lv in DEFAULT_LEVELS)[:1]
    if list(names) == ["all"]:
        return DEFAULT_LEVELS
    return tuple(names)


def build(out: pathlib.Path, levels=DEFAULT_LEVELS) -> list[str]:
    """Build each of ``levels`` (``chosen_levels``) this CPU can run into
    ``out/<level>``, each in its own process with an empty cache; says what it compiles
    and how long it took (``pip install -v`` shows it); returns the levels built."""
    from ..cpu.machine import host_features, supported_levels

    runnable = supported_levels(host_features())
    levels = chosen_levels(levels, runnable)
    if not levels:
        print("numsoft kernels: none (this CPU runs none of " + ", ".join(DEFAULT_LEVELS) + ")")
    built = []
    for level in levels:
        if level not in runnable:
            print(f"numsoft kernels: {level} skipped (this CPU cannot run its code)")
            continue
        print(
            f"numsoft kernels: compiling the common paths for {level}, to ship in the wheel "
            f"(about 1.5-2.5 minutes on 2 cores; NUMSOFT_BUILD_KERNELS=0 skips this, and "
            f"they then compile on first use)",
            flush=True,
        )
        with tempfile.TemporaryDirectory(prefix=f"numsoft-{level}-") as cache:
            env = dict(
                os.environ,
                NUMBA_CPU_NAME=level,
                NUMBA_CPU_FEATURES="",
                NUMBA_CACHE_DIR=cache,
                PYTHONPATH=os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]),
                # Compile every path: load none from a level built before (or a checkout's).
                NUMSOFT_SHIPPED_KERNELS="0",
            )
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "numsoft._build.kernels", "--this-level", str(out / level)],
                env=env,
                cwd=PACKAGE.parent,
                check=True,
            )
            print(f"numsoft kernels: {level} took {time.perf_counter() - t0:.0f} s", flush=True)
        built.append(level)
    return built


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m numsoft._build.kernels", description=__doc__)
    parser.add_argument("out", type=pathlib.Path, help="folder to write <level>/ into")
    parser.add_argument(
        "levels", nargs="*", default=["all"], help="x86-64 levels, or 'host' or 'all'"
    )
    parser.add_argument("--this-level", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.this_level:
        build_this_level(args.out)
    else:
        build(args.out, tuple(args.levels))


if __name__ == "__main__":
    main()
