"""Calls from a user's ``@njit`` function into numsoft's compiled kernels, by C symbol.

Numba compiles a jitted function's jitted callees into it: their optimized code is
linked into the caller's module, optimized and turned into machine code once more, in
every process that compiles the caller. A user's function that called
``numsoft.logsumexp`` once per row compiled in 1.26 s against 0.14 s for the same loop
written by hand, with numsoft's own kernels cached (Zen 4, NumPy 2.4, Numba 0.68).

Here a kernel of ``numsoft.cpu.by_address`` (arrays as data addresses, lengths and
scalars as numbers) is compiled, cached and shipped as every kernel is, and its C
wrapper (the entry Numba makes for every compiled function) is registered with LLVM
under a symbol of its own (``llvmlite.binding.add_symbol``). The overloads call
``linked(kernel, **constants)``, an intrinsic that declares that symbol and emits one
call: the user's function compiles its own code and a call instruction.

A user's function cached on disk (``cache=True``) holds that call by name. Numba
re-runs the ``reload_init`` hooks of a cached function before it loads the function's
machine code in a later process; ``LinkedKernel`` is such a hook: it loads (or
compiles) the kernel and registers the symbol again.
"""

from __future__ import annotations

import functools
import importlib
from typing import NamedTuple

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.codegen import CodeLibrary
from numba.extending import intrinsic

from .cpu.paths import specialize

#: Part of every symbol: raised when a ``by_address`` kernel's arguments change, so that
#: a user's function cached against another numsoft finds no symbol of the old meaning.
ABI = 1

#: Whether this Numba keeps reload hooks per code library (0.68 does, 0.62 does not),
#: which a cached caller needs to define its symbols again. Without them the kernels
#: are linked in, as any jitted callee is: the caller compiles them into its own code.
BY_SYMBOL = "_reload_init" in CodeLibrary.__init__.__code__.co_names

#: symbol → address of the C entry registered under it in this process.
_registered: dict[str, int] = {}


class LinkedKernel(NamedTuple):
    """One compiled kernel (function, path constants, argument types) and its symbol.

    Picklable by value: Numba stores it with a cached caller and calls it on reload.
    """

    module: str
    name: str
    constants: tuple  # sorted (name, value) pairs, as ``paths.specialize`` binds them
    argtypes: tuple  # Numba type names

    @property
    def symbol(self) -> str:
        consts = "".join(f".{k}={int(v)}" for k, v in self.constants)
        return f"numsoft{ABI}.{self.name}{consts}({','.join(self.argtypes)})"

    def compiled(self):
        """The kernel's compile result (loaded from the cache, or compiled now)."""
        try:
            base = getattr(importlib.import_module(self.module), self.name)
        except (ImportError, AttributeError):
            raise RuntimeError(
                f"numsoft: a cached @njit function calls {self.symbol}, which this numsoft "
                f"({self.module}) does not have: it was compiled against another version. "
                "Remove its cache files (the *.nbi/*.nbc beside your module in "
                "__pycache__, or in NUMBA_CACHE_DIR) so that it compiles anew."
            ) from None
        dispatcher = specialize(base, **dict(self.constants))
        signature = tuple(getattr(types, name) for name in self.argtypes)
        dispatcher.compile(signature)
        return dispatcher.overloads[signature]

    def __call__(self) -> types.Type:
        """Load or compile the kernel, register its C entry under ``symbol``; return the
        kernel's result type."""
        compiled = self.compiled()
        if self.symbol not in _registered:
            address = compiled.library.get_pointer_to_function(
                compiled.fndesc.llvm_cfunc_wrapper_name
            )
            llvm.add_symbol(self.symbol, address)
            _registered[self.symbol] = address
        return compiled.signature.return_type


def _entry_type(arg: types.Type) -> types.Type | None:
    """How an argument of the intrinsic reaches the kernel: an array as its address."""
    if isinstance(arg, (types.Array, types.Integer)):
        return types.int64
    if isinstance(arg, types.Float):
        return arg
    return None


def linked(kernel, **constants):
    """An intrinsic that calls ``specialize(kernel, **constants)`` through its symbol.

    Call it with the kernel's arguments, arrays in place of addresses: the arrays (which
    must be C-contiguous) are passed as their data addresses and stay referenced by the
    caller for the call's duration; integers go as int64.
    """
    return _linked(getattr(kernel, "py_func", kernel), tuple(sorted(constants.items())))


@functools.cache  # one intrinsic per path: Numba's typing caches are per intrinsic
def _linked(func, bound: tuple):
    @intrinsic
    def call_linked(typingctx, *args):
        entry_types = tuple(_entry_type(a) for a in args)
        if any(t is None for t in entry_types):
            return None
        target = LinkedKernel(func.__module__, func.__name__, bound, tuple(map(str, entry_types)))
        restype = target()  # compiled (or loaded) now: the caller links to its address

        def codegen(context, builder, sig, values):
            passed = []
            values = cgutils.unpack_tuple(builder, values[0])  # *args come as one tuple
            for arg, value, entry in zip(args, values, entry_types, strict=True):
                if isinstance(arg, types.Array):
                    data = context.make_array(arg)(context, builder, value=value).data
                    passed.append(builder.ptrtoint(data, ir.IntType(64)))
                else:
                    passed.append(context.cast(builder, value, arg, entry))
            if not BY_SYMBOL:
                compiled = target.compiled()
                context.add_linking_libs([compiled.library])
                return context.call_internal(builder, compiled.fndesc, compiled.signature, passed)
            fnty = ir.FunctionType(
                context.get_value_type(restype), [context.get_value_type(t) for t in entry_types]
            )
            fn = cgutils.get_or_insert_function(builder.module, fnty, target.symbol)
            # Defines the symbol again before a cached caller's code loads (numba's reload_init).
            context.active_code_library._reload_init.add(target)
            return builder.call(fn, passed)

        return restype(types.StarArgTuple(args)), codegen

    return call_linked
