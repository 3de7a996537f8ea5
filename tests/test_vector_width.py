"""numsoft's kernels ask LLVM for 512-bit vectors (``_jit.PREFER_VECTOR_WIDTH``); the
user's own Numba functions keep their CPU's tuning."""

import re

import numba
import numpy as np
import pytest
from llvmlite import binding as llvm

from numsoft.cpu._jit import JIT_OPTIONS, PREFER_VECTOR_WIDTH
from numsoft.cpu.expfast import exp_fast

HAS_AVX512 = llvm.get_host_cpu_features().get("avx512f", False)


def sum_exp(x):
    s = x.dtype.type(0.0)
    for i in range(x.size):
        s += exp_fast(x[i])
    return s


def compiled(**options):
    f = numba.njit(cache=False, **options)(sum_exp)
    x = np.linspace(-3, 3, 100, dtype=np.float32)
    np.testing.assert_allclose(f(x), np.exp(x.astype(np.float64)).sum(), rtol=1e-6)
    (sig,) = f.signatures
    return f.inspect_llvm(sig), f.inspect_asm(sig)


def test_kernels_carry_the_attribute_and_user_code_does_not():
    ir, _ = compiled(**JIT_OPTIONS)
    assert PREFER_VECTOR_WIDTH in ir
    user_ir, _ = compiled()
    assert "prefer-vector-width" not in user_ir


@pytest.mark.skipif(not HAS_AVX512, reason="the host has no AVX-512")
def test_kernel_loops_use_zmm_registers_on_avx512_hosts():
    _, asm = compiled(**JIT_OPTIONS)
    assert re.search(r"v\w+ps\s.*%zmm", asm)


def test_float64_exp_needs_no_float_to_int_conversion():
    """2**n is made from exponent bits without ``fptosi``: a float64 -> int64 conversion
    has no AVX2 instruction, and LLVM scalarized the whole vector loop's tail around it
    (before: 8 ``vcvttsd2si`` per 4 lanes; float64 exp_fast took 1.46x as long)."""
    f = numba.njit(cache=False, **JIT_OPTIONS)(sum_exp)
    x = np.linspace(-700.0, 700.0, 1001)
    expected = np.exp(x - 700.0).sum() * np.exp(700.0)
    np.testing.assert_allclose(f(x), expected, rtol=1e-13)
    (sig,) = f.signatures
    assert "fptosi" not in f.inspect_llvm(sig)
