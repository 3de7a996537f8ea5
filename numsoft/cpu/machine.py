"""What numsoft reads from the machine it runs on: vector width and data cache sizes.

Each is read once and falls back to the values of the machine the defaults were tuned
on when they cannot be read. The cache size is read on first use; the vector width at
import of the kernels (0.3 ms), since ``simd.CHAIN_LANES``, a compile-time constant of
the kernels, is a multiple of it.

>>> float32_lanes() in (4, 8, 16)
True
>>> last_level_cache_bytes() >= data_cache_bytes(2) > data_cache_bytes(1) > 0
True
"""

from __future__ import annotations

import functools
import os
import pathlib

from llvmlite import binding as llvm

#: Last-level cache assumed where the system does not say (Linux's ``/sys`` is read).
DEFAULT_LAST_LEVEL_CACHE = 32 << 20
#: Level-1 and level-2 data caches assumed where the system does not say.
DEFAULT_DATA_CACHE = {1: 32 << 10, 2: 1 << 20}

_CACHE_DIR = pathlib.Path("/sys/devices/system/cpu/cpu0/cache")

#: The x86-64 levels a wheel may carry (``shipped``), highest first, with the CPU features each
#: requires beyond the one below it (LLVM's names, as ``get_host_cpu_features`` gives).
LEVEL_FEATURES = {
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"),
    "x86-64-v2": ("cx16", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"),
}
LEVELS = tuple(LEVEL_FEATURES)


def level_features(level: str) -> frozenset[str]:
    """The features every CPU of ``level`` has (its own and the levels below it)."""
    below = LEVELS[LEVELS.index(level) :]
    return frozenset(f for lv in below for f in LEVEL_FEATURES[lv])


def supported_levels(features) -> tuple[str, ...]:
    """The levels (highest first) of a CPU with ``features`` (names it has)."""
    return tuple(lv for lv in LEVELS if level_features(lv) <= set(features))


def host_features() -> set[str]:
    """The features this CPU has (LLVM's names)."""
    return {name for name, on in llvm.get_host_cpu_features().items() if on}


def target_features() -> set[str]:
    """The CPU features the kernels compile for: this CPU's, or, where Numba is told to
    compile for a named CPU (``NUMBA_CPU_NAME``, as the wheel build does for an x86-64
    level), that level's features and those ``NUMBA_CPU_FEATURES`` adds. A constant
    compiled into a kernel derives from these, so that a shipped kernel's constants
    are its level's, not the building machine's."""
    from numba.core import config

    if config.CPU_NAME is None:
        return host_features()
    features = set(level_features(config.CPU_NAME)) if config.CPU_NAME in LEVELS else set()
    for flag in (config.CPU_FEATURES or "").split(","):
        if flag[:1] == "+":
            features.add(flag[1:])
        elif flag[:1] == "-":
            features.discard(flag[1:])
    return features


@functools.cache
def float32_lanes() -> int:
    """float32 lanes of the widest vector the kernels compile to (``target_features``):
    16 with AVX-512, 8 with AVX2 (or AVX), 4 otherwise (SSE, NEON)."""
    features = target_features()
    if "avx512f" in features:
        return 16
    if "avx2" in features or "avx" in features:
        return 8
    return 4


def _size_bytes(text: str) -> int:
    """``"16384K"`` / ``"32M"`` / ``"512"`` (as ``/sys`` writes cache sizes) in bytes."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _data_caches():
    """(level, bytes) of CPU 0's data and unified caches, from ``/sys``."""
    for index in _CACHE_DIR.glob("index*"):
        try:
            if (index / "type").read_text().strip() in ("Data", "Unified"):
                level = int((index / "level").read_text())
                yield level, _size_bytes((index / "size").read_text())
        except (OSError, ValueError):
            continue


@functools.cache
def caches_read() -> bool:
    """True when the cache sizes come from the system, False where defaults apply."""
    return any(_data_caches())


@functools.cache
def last_level_cache_bytes() -> int:
    """Size of the largest data (or unified) cache of CPU 0, from ``/sys``; the
    default where it cannot be read."""
    return max((size for _, size in _data_caches()), default=DEFAULT_LAST_LEVEL_CACHE)


@functools.cache
def data_cache_bytes(level: int) -> int:
    """Size of CPU 0's level-``level`` (1 or 2) data or unified cache, from ``/sys``;
    the default where it cannot be read."""
    sizes = [size for lv, size in _data_caches() if lv == level]
    return min(sizes, default=DEFAULT_DATA_CACHE[level])


def other_running_threads() -> int | None:
    """Threads running on the machine outside this process now (Linux's /proc: the
    running count of /proc/loadavg less this process's running threads); None where it
    cannot be read. A sign of a busy machine for timings (the demo, ``tune``)."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        ours = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/stat") as f:
                ours += f.read().rsplit(")", 1)[1].split()[0] == "R"
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - ours)
