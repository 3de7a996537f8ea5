"""numsoft's kernels ask LLVM for 512-bit vectors (``_jit.PREFER_VECTOR_WIDTH``); the
user's own Numba functions keep their CPU's tuning."""

import re

import numba
import numpy as np
import pytest
from llvmlite import binding as llvm
from numba import prange

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


def scaled_rows(x, y):
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = exp_fast(x[i, j])


def attribute_groups(ir: str) -> dict[str, str]:
    return dict(re.findall(r"^attributes (#\d+) = \{(.*)\}$", ir, flags=re.M))


def test_prange_bodies_carry_the_attribute():
    """A ``prange`` body is compiled by Numba's own pipeline into a function of its own
    (the parfor gufunc), where the inlined row loops sit: it must ask for wide vectors
    too, or a CPU tuned for 256-bit vectors (Intel's server cores, ``x86-64-v4``) gets
    ymm loops in every parallel driver."""
    f = numba.njit(cache=False, parallel=True, **JIT_OPTIONS)(scaled_rows)
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16)
    y = np.empty_like(x)
    f(x, y)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)
    (sig,) = f.signatures
    ir = f.inspect_llvm(sig)
    groups = attribute_groups(ir)
    bodies = re.findall(r"^define .*numba_parfor_gufunc\S*\(.*\)(.*)\{$", ir, flags=re.M)
    assert bodies, "no parfor gufunc in the driver's module"
    for tail in bodies:
        refs = re.findall(r"#\d+", tail)
        assert any(PREFER_VECTOR_WIDTH in groups[r] for r in refs), tail


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
