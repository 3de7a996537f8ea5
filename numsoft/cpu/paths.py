"""Path constants: one compiled entry point per path, chosen in Python.

A *path* is one combination of function, pass structure, geometry and output kind. The
front door picks it in Python, before any jitted code runs, and calls an entry point
compiled for that path alone. Numba compiles every branch of a function whose branches
test run-time values, so a driver that switched on an integer code would compile every
pass structure and output on its first call (73 functions, 20-40 s).

Instead, a kernel names what distinguishes paths through module-level *path constants*
(``ALGORITHM``, ``LOG_OUTPUT``, ...) and tests them like ordinary globals::

    if ALGORITHM == TWO_PASS:
        softmax_row_two_pass(x, y, inv_t)

``specialize(kernel, ALGORITHM=2, LOG_OUTPUT=False)`` returns a copy of the kernel
whose globals bind those names to the given values; Numba's dead-branch pruning then
removes the untaken branches before typing, so their callees are never compiled. The
copy is made of every kernel in the call tree that (transitively) reads a constant;
kernels that read none (the single passes, the exp) are shared by all paths and
compiled once. Each copy has its own qualified name, hence its own on-disk cache entry
(Numba's cache key does not include a function's globals).

A kernel compiled without its constants bound fails to type (``PathConstant`` is not a
Numba type): every path goes through ``specialize``.
"""

from __future__ import annotations

import types

from ._jit import _jit


class PathConstant:
    """A compile-time constant of a kernel, bound per path by ``specialize``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<path constant {self.name}: bind it with numsoft.cpu.paths.specialize>"


#: Pass structure code (``numsoft.vocabulary.ALGORITHM_NAMES``).
ALGORITHM = PathConstant("ALGORITHM")
#: True for the log-domain function (log_softmax and its backward pass).
LOG_OUTPUT = PathConstant("LOG_OUTPUT")
#: True when every row has at most ``passes.SUM_BLOCK`` elements (short-row kernels).
SHORT_ROWS = PathConstant("SHORT_ROWS")
#: True when every row has at most ``rows.INLINE_ROW_BYTES`` bytes: no call per row
#: (softmax: one call per span of rows, pipelined across them; log_softmax not by the
#: group: the row kernel inlined into the drivers' row loop).
INLINE_ROWS = PathConstant("INLINE_ROWS")
#: 16-element blocks per row (1-4; 0: off) when float32 softmax rows go 16 at a time
#: with the rows as vector lanes (``lane_tiles``; ``rows.path_constants``).
LANE_TILES = PathConstant("LANE_TILES")
#: True when log_softmax rows take their logs by the group (``rows.LOG_GROUP_ITEMSIZE``).
LOG_GROUPS = PathConstant("LOG_GROUPS")
#: True when the output passes write with streaming stores (an output beyond the cache,
#: ``auto.streams_output``; ``passes.streamed``).
STREAM_OUTPUT = PathConstant("STREAM_OUTPUT")
#: Variant code (``numsoft.vocabulary``).
VARIANT = PathConstant("VARIANT")
#: True when a fused loss also writes its gradient (``numsoft.fused``); for a loss of
#: two arrays, the gradient with respect to the first.
GRADIENT = PathConstant("GRADIENT")
#: True when a loss of two arrays also writes the gradient with respect to the second.
SECOND_GRADIENT = PathConstant("SECOND_GRADIENT")
#: Which loss between two distributions a row computes (``fused.pair_rows``).
PAIR_LOSS = PathConstant("PAIR_LOSS")
#: The single pass a chunked (split-row) loop runs (``split``).
CHUNK_PASS = PathConstant("CHUNK_PASS")

_TEMPLATE_OPTIONS = "_numsoft_options"  # set by ``_jit`` on every numsoft kernel
_reads: dict = {}
_copies: dict = {}
#: specialize() results by (kernel, *values.items()) as called: the per-call lookup.
_specialized: dict = {}


def _names(code: types.CodeType):
    """Global names ``code`` (and the code nested in it) may load."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _path_globals(func):
    """(name, value) of the globals ``func`` loads that are path constants or kernels."""
    for name in set(_names(func.__code__)):
        value = func.__globals__.get(name)
        if isinstance(value, PathConstant) or hasattr(value, _TEMPLATE_OPTIONS):
            yield name, value


def reads(kernel) -> frozenset[str]:
    """Names of the unbound path constants ``kernel`` or any kernel it calls reads."""
    found = _reads.get(kernel)
    if found is None:
        _reads[kernel] = frozenset()  # a recursive call tree reads what the rest does
        names = set()
        for _, value in _path_globals(kernel.py_func):
            names |= {value.name} if isinstance(value, PathConstant) else reads(value)
        found = _reads[kernel] = frozenset(names)
    return found


def specialize(kernel, **values):
    """``kernel`` with the path constants it reads bound to ``values`` (others ignored).

    Copies are made once per process and kept; a kernel that reads none of the
    constants is returned as is. A parallel kernel's ``.serial`` twin is specialized
    alongside it.
    """
    call = (kernel, *values.items())  # the per-call fast path: one dictionary hit
    found = _specialized.get(call)
    if found is not None:
        return found
    bound = tuple(sorted((name, values[name]) for name in reads(kernel) if name in values))
    if not bound:
        found = kernel
    else:
        key = (kernel, bound)
        found = _copies.get(key)
        if found is None:
            found = _copies[key] = _copy(kernel, dict(bound))
    _specialized[call] = found
    return found


def copies() -> list:
    """Every specialized kernel made so far in this process (compiled or not)."""
    return list(_copies.values())


def _copy(kernel, values: dict):
    func = kernel.py_func
    glb = dict(func.__globals__)
    for name, value in _path_globals(func):
        if not isinstance(value, PathConstant):
            glb[name] = specialize(value, **values)
        elif value.name in values:
            glb[name] = values[value.name]
    suffix = "".join(f"__{name}_{int(value)}" for name, value in sorted(values.items()))
    clone = types.FunctionType(
        func.__code__, glb, func.__name__ + suffix, func.__defaults__, func.__closure__
    )
    clone.__qualname__ = func.__qualname__ + suffix
    clone.__doc__ = func.__doc__
    clone.__module__ = func.__module__
    copy = _jit(clone, **getattr(kernel, _TEMPLATE_OPTIONS))
    serial = getattr(kernel, "serial", None)
    if serial is not None:
        copy.serial = specialize(serial, **values)
    return copy
