"""The one place that decides how numsoft's CPU kernels are compiled.

``fastmath=True`` would add ``nnan``/``ninf``, letting LLVM assume no NaN or inf and
breaking the numerics contract (SPEC §1). The flag set below keeps NaN/inf semantics
while allowing reassociation, so reductions still vectorize.

Kernels are cached on disk (``cache=True``). Numba picks the cache location when a
function is decorated, i.e. at import; where no location is writable (a read-only
install and no writable home or ``NUMBA_CACHE_DIR``) it raises. numsoft then falls
back to compiling in each process, with one warning, instead of failing to import.
"""

from __future__ import annotations

import contextlib
import os
import types
import warnings

try:
    import fcntl
except ImportError:  # Windows: no advisory locks (Numba's own behaviour)
    fcntl = None

import numba
from numba.core import types as nbtypes
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import _pass_registry, register_pass
from numba.core.imputils import impl_ret_borrowed
from numba.core.typed_passes import NativeLowering, NativeParforLowering
from numba.core.types import unliteral
from numba.extending import intrinsic

from . import shipped
from .cache_entries import CacheFaultWarning, CacheUnavailableWarning, source_stamp
from .threads import run_parallel

#: fastmath flags that keep NaN/inf semantics (no ``nnan``/``ninf``).
SAFE_FASTMATH = {"reassoc", "contract", "arcp", "nsz", "afn"}

#: LLVM function attribute on every kernel: vectorize with 512-bit registers where the
#: CPU has them. LLVM's tuning for recent Intel server cores (and the ``rocketlake``
#: model some virtual machines report) sets ``prefer-256-bit``, so Numba's loops got
#: ymm code on AVX-512 hosts; exp-bound kernels ran 1.6x slower for it (measured, see
#: docs/performance.md). The attribute is per function, so the user's own Numba code
#: keeps its CPU's tuning; on CPUs without AVX-512, LLVM caps it at their widest vector.
PREFER_VECTOR_WIDTH = '"prefer-vector-width"="512"'


def _keep_linked_code_private(library):
    """Give the functions ``library`` links in from other kernels internal linkage.

    Numba links each callee's compiled module into its caller's with ``linkonce_odr``
    linkage (weak symbols in the object code), then optimizes the caller's module
    again. In the process that compiled them, the JIT resolves a weak symbol to the
    first definition it loaded: the callee's own, optimized once. A later process
    loads the caller from the cache alone and runs the caller's re-optimized copy,
    whose vectorized sums may add in another order: the same call gave results an ulp
    apart in the first process and in later ones (and, with the serial and parallel
    drivers of one call compiled in different processes, an ulp apart by thread
    count). Internal copies are the caller's own in every process.
    """
    if getattr(library, "_numsoft_private_links", False):
        return
    library._numsoft_private_links = True
    finalize, optimize = library.finalize, library._optimize_final_module
    own = set()

    def finalize_recording_own():
        own.update(f.name for f in library._final_module.functions if not f.is_declaration)
        finalize()

    def optimize_privately():
        for f in library._final_module.functions:
            if not f.is_declaration and f.name not in own:
                f.linkage = "internal"
        optimize()

    library.finalize, library._optimize_final_module = finalize_recording_own, optimize_privately


def _prefer_wide_vectors(function) -> None:
    """Put ``PREFER_VECTOR_WIDTH`` on an ``llvmlite.ir`` function."""
    # llvmlite's attribute set knows only keyword attributes; LLVM IR also takes
    # "key"="value" strings, which it prints as they are.
    set.add(function.attributes, PREFER_VECTOR_WIDTH)


def _libraries_prefer_wide_vectors(codegen):
    """While active, every library ``codegen`` creates puts ``PREFER_VECTOR_WIDTH`` on
    the functions of each module added to it.

    A ``prange`` loop's body becomes a function of its own (Numba's gufunc), lowered
    and optimized by Numba's own pipeline in a library of its own before the driver
    links it in; the spans inlined into it hold the driver's hot loops. Without the
    attribute there, a CPU tuned for 256-bit vectors got ymm loops in every parallel
    driver: float64 log_softmax of rows of 32 took 1.25 ms against 0.95 (2^21 elements,
    2 threads, compiled for ``x86-64-v4`` on a Zen 5). Compilation holds Numba's global
    lock, so no other thread creates a library meanwhile.
    """
    create = codegen.create_library

    def create_wide(name, **kwargs):
        library = create(name, **kwargs)
        add = library.add_ir_module

        def add_wide(ir_module):
            for function in ir_module.functions:
                if not function.is_declaration:
                    _prefer_wide_vectors(function)
            add(ir_module)

        library.add_ir_module = add_wide
        return library

    @contextlib.contextmanager
    def active():
        outer = codegen.__dict__.get("create_library")  # set by an enclosing lowering
        codegen.create_library = create_wide
        try:
            yield
        finally:
            if outer is None:
                del codegen.create_library  # the class's method again
            else:
                codegen.create_library = outer

    return active()


def _numsoft_lowering(base):
    """Numba's lowering pass ``base`` (serial or parfor), lowering with
    ``PREFER_VECTOR_WIDTH`` on the function and on the ``prange`` bodies compiled
    during its lowering, and the code it links in kept private."""
    lower_base = base().lowering_class

    class NumsoftLower(lower_base):
        def lower(self):
            with _libraries_prefer_wide_vectors(self.context.codegen()):
                super().lower()

        def post_lower(self):
            super().post_lower()
            _prefer_wide_vectors(self.function)
            _keep_linked_code_private(self.library)

    class NumsoftLowering(base):
        _name = "numsoft_" + base._name

        @property
        def lowering_class(self):
            return NumsoftLower

    info = _pass_registry.get(base)
    return register_pass(info.mutates_CFG, info.analysis_only)(NumsoftLowering)


#: Numba's lowering passes and numsoft's replacements.
_LOWERINGS = {base: _numsoft_lowering(base) for base in (NativeLowering, NativeParforLowering)}


class WideVectorCompiler(CompilerBase):
    """Numba's nopython pipeline with numsoft's lowering (``_numsoft_lowering``): the
    serial one, or for ``parallel=True`` the parfor one, whose loop body Numba compiles
    apart and links in (kept private with the rest)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(_LOWERINGS.get(cls, cls), why) for cls, why in pm.passes]
        pm.finalize()
        return [pm]


#: Options every CPU kernel is compiled with (besides ``cache``).
JIT_OPTIONS = {
    "fastmath": SAFE_FASTMATH,
    "error_model": "numpy",
    "nogil": True,
    "pipeline_class": WideVectorCompiler,
}


_warned = False
_faults_warned: set[str] = set()


def _warn_cache_fault(kind: str, message: str) -> None:
    if kind not in _faults_warned:  # once per kind and process: not once per kernel
        _faults_warned.add(kind)
        warnings.warn(f"numsoft: {message}", CacheFaultWarning, stacklevel=2)


def _compile_unliteral(dispatcher):
    """Make jitted callers compile ``dispatcher`` for plain types, never for literals.

    Numba types a constant argument (``f(x, 0)``, ``f(x, False)``, a module-level code)
    as a literal and compiles a separate specialization for each value; a driver called
    with the constant 0 and with a variable was compiled twice, its whole call tree
    included. numsoft's kernels never need a literal argument.
    """
    get_call_template = dispatcher.get_call_template

    def plain_call_template(args, kws):
        plain_kws = {name: unliteral(t) for name, t in kws.items()}
        return get_call_template(tuple(unliteral(t) for t in args), plain_kws)

    dispatcher.get_call_template = plain_call_template
    return dispatcher


class ParallelDriver:
    """A ``parallel=True`` dispatcher, called from Python through
    ``threads.run_parallel`` (which falls back to ``serial`` where Numba's layer cannot
    take two Python threads at once); other attributes are the dispatcher's."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        #: The same driver compiled without ``parallel=True`` (set by the decorator).
        self.serial = None

    def __call__(self, *args):
        return run_parallel(self.dispatcher, self.serial, args)

    def __getattr__(self, name):
        if name == "dispatcher":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.dispatcher, name)


def _jit(func, **options):
    dispatcher = _compile_unliteral(_jit_cached(func, **options))
    # How to compile a copy of it with path constants bound (``paths.specialize``).
    dispatcher._numsoft_options = options
    return ParallelDriver(dispatcher) if options.get("parallel") else dispatcher


def _lock_cache_writes(dispatcher):
    """Serialize ``dispatcher``'s cache writes across processes (an advisory file lock).

    Numba saves a compiled kernel by reading the function's index file, choosing a free
    data-file name and writing both back. Two processes compiling different signatures
    of one kernel at once (test workers, ``python -m numsoft warmup``, Dask workers)
    can pick the same data-file name and leave an index entry pointing at the other's
    code. Under the lock the read-modify-write is atomic; reads need no lock (files are
    replaced atomically).
    """
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None or fcntl is None:
        return
    save = cache_file.save
    lock_path = os.path.join(cache_file._cache_path, "numsoft-cache.lock")

    def locked_save(key, data):
        try:
            lock = open(lock_path, "a")  # noqa: SIM115 (held across the save)
        except OSError:
            return save(key, data)  # an unwritable cache fails (and is handled) in save
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return save(key, data)

    cache_file.save = locked_save


def _survive_cache_faults(dispatcher):
    """Let ``dispatcher`` compile whatever its on-disk cache does.

    A cache write that fails (disk full, a directory turned read-only: ``OSError``)
    would fail the call although the kernel compiled: the call returns and a warning
    says the kernel was not saved. A cache file that cannot be read back (truncated or
    garbled index or data: ``UnpicklingError``, ``EOFError``, an LLVM error) would fail
    every later process: its index is removed, the kernel compiles and is saved anew.
    """
    cache = getattr(dispatcher, "_cache", None)
    if cache is None or not hasattr(cache, "_cache_file"):
        return
    load, save = cache.load_overload, cache.save_overload

    def load_or_forget(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception as exc:  # any failure to rebuild means: compile instead
            index = cache._cache_file._index_path
            with contextlib.suppress(OSError):
                os.unlink(index)
            _warn_cache_fault(
                "load",
                f"unreadable cache entry {index!r} ({type(exc).__name__}: {exc}); "
                "recompiling and replacing it",
            )
            return None

    def save_or_warn(sig, data):
        try:
            save(sig, data)
        except OSError as exc:
            _warn_cache_fault(
                "save",
                f"could not write Numba's cache ({exc}); compiled kernels are not saved "
                "for later processes",
            )

    cache.load_overload, cache.save_overload = load_or_forget, save_or_warn


def _stamp_with_package_sources(dispatcher):
    """Make ``dispatcher``'s cache entries valid only for this exact numsoft source.

    Numba keeps a cache entry while the kernel's own file keeps its modification time
    and size, and the kernel's own bytecode is unchanged: it does not look at the
    files of the kernels it calls. A kernel whose callee changed in another file (a new
    ``exp_fast`` in ``expfast.py``, say) was loaded from the cache with the old callee
    compiled in, wherever the caller's file kept its time stamp: installs that preserve
    file times (pip from a wheel, asv's history runs) ran a previous version's code.
    The stamp Numba compares is replaced by a digest of all of numsoft's sources, so any
    change of any file recompiles every kernel once. The digest is taken on the first
    cache load or save (the first call), not while numsoft is imported.
    """
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None:
        return
    load, save = cache.load_overload, cache.save_overload

    def stamp():
        cache_file._source_stamp = source_stamp()

    def stamped_load(sig, target_context):
        stamp()
        return load(sig, target_context)

    def stamped_save(sig, data):
        stamp()
        return save(sig, data)

    cache.load_overload, cache.save_overload = stamped_load, stamped_save


def _load_shipped_first(dispatcher):
    """Make ``dispatcher`` look for a kernel shipped in the wheel (``shipped``) before
    its on-disk cache. Also where no cache location is writable: a read-only install
    still loads what it ships."""
    cache = dispatcher._cache
    load = cache.load_overload
    py_func = dispatcher.py_func

    def shipped_or_cached(sig, target_context):
        found = shipped.load(py_func, sig, target_context)
        return found if found is not None else load(sig, target_context)

    cache.load_overload = shipped_or_cached


def _jit_cached(func, **options):
    global _warned
    try:
        dispatcher = numba.njit(cache=True, **JIT_OPTIONS, **options)(func)
        _stamp_with_package_sources(dispatcher)
        _lock_cache_writes(dispatcher)
        _survive_cache_faults(dispatcher)
        _load_shipped_first(dispatcher)
        return dispatcher
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
        if not _warned:
            _warned = True
            warnings.warn(
                f"numsoft: {exc}; kernels will be compiled in every process "
                "(set NUMBA_CACHE_DIR to a writable directory to cache them)",
                CacheUnavailableWarning,
                stacklevel=3,
            )
        dispatcher = numba.njit(cache=False, **JIT_OPTIONS, **options)(func)
        _load_shipped_first(dispatcher)
        return dispatcher


def kernel(func=None, **options):
    """Decorator for row kernels and helpers called from them (serial code).

    Use bare (``@kernel``) or with extra ``numba.njit`` options (``@kernel(inline=...)``).
    """
    if func is None:
        return lambda f: _jit(f, **options)
    return _jit(func, **options)


def _serial_twin(func):
    """A copy of ``func`` under another qualified name (its own on-disk cache entry).

    Numba's cache key does not include ``parallel=``, so the serial and the parallel
    compilation of one function must not share a name.
    """
    twin = types.FunctionType(
        func.__code__,
        func.__globals__,
        func.__name__ + "_serial",
        func.__defaults__,
        func.__closure__,
    )
    twin.__qualname__ = func.__qualname__ + "_serial"
    twin.__doc__ = func.__doc__
    return twin


def parallel_kernel(func=None, **options):
    """Decorator for drivers that parallelize over rows with ``prange``.

    The dispatcher carries ``.serial``: the same driver compiled without
    ``parallel=True`` (``prange`` runs as ``range``), compiled only if used. The ``@njit``
    entry points call it, so that numsoft inside a user's jitted function runs in the
    caller's thread: it may then sit inside the user's own ``prange`` loop (no nested
    parallel region), and the user's function may be ``cache=True`` (a cached caller of
    a ``parallel=True`` function crashes on reload, numba#8578).
    """
    if func is None:
        return lambda f: parallel_kernel(f, **options)
    dispatcher = _jit(func, parallel=True, **options)
    dispatcher.serial = _jit(_serial_twin(func), **options)
    return dispatcher


@intrinsic
def read_only_array(typingctx, arr):
    """``arr`` typed read-only, inside jitted code (no copy, same data).

    The Python API hands every kernel its inputs as read-only views
    (``numsoft.cpu.memory.read_only``) and Numba compiles read-only and writable arrays
    separately; the ``@njit`` entry points pass their inputs through this so that they
    reuse the same compiled (and cached) kernels.
    """
    if not isinstance(arr, nbtypes.Array):
        return None
    frozen = arr.copy(readonly=True)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, frozen, args[0])

    return frozen(arr), codegen
