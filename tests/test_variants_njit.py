"""The SPEC §4 variants called from a user's @numba.njit function (SPEC §6)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numsoft

RANGES = (-1.0, 1.0, -2.0, 2.0)
TS = (0.5, 0.3, 0.1, 0.05)


# Every overload with its own argument handling; the parameterless variants share one
# overload factory (``_plain_overload``), of which sparsemax and rowmax_pot (with ``out``)
# stand for all. Each call site adds ~5 s of compilation to the caller.
@numba.njit
def all_variants(x, axis, out):
    return (
        numsoft.ssmax(x, 1.5, axis=axis),
        numsoft.sparsemax(x, axis=axis, temperature=0.5),
        numsoft.entmax(x, alpha=1.3, n_iter=40, axis=axis),
        numsoft.softpick(x, eps=1e-3, axis=axis),
        numsoft.sa_softmax(x, True, axis=axis),
        numsoft.multimax(x, RANGES, TS, axis=axis),
        numsoft.sigmoid_attention(x, axis=axis),
        numsoft.sigmoid_attention(x, bias=-0.5, axis=axis),
        numsoft.gumbel_softmax(x, 0.7, False, 11, axis=axis),
        numsoft.topk_softmax(x, 2, axis=axis),
        numsoft.rowmax_pot(x, axis=axis, out=out),
    )


def python_variants(x, axis):
    return (
        numsoft.ssmax(x, 1.5, axis=axis),
        numsoft.sparsemax(x, axis=axis, temperature=0.5),
        numsoft.entmax(x, alpha=1.3, n_iter=40, axis=axis),
        numsoft.softpick(x, eps=1e-3, axis=axis),
        numsoft.sa_softmax(x, True, axis=axis),
        numsoft.multimax(x, RANGES, TS, axis=axis),
        numsoft.sigmoid_attention(x, axis=axis),
        numsoft.sigmoid_attention(x, bias=-0.5, axis=axis),
        numsoft.gumbel_softmax(x, 0.7, False, 11, axis=axis),
        numsoft.topk_softmax(x, 2, axis=axis),
        numsoft.rowmax_pot(x, axis=axis),
    )


def test_njit_matches_python_float64_rows():
    x = np.random.default_rng(0).normal(size=(5, 7)) * 2
    out = np.empty_like(x)
    got = all_variants(x, -1, out)
    assert got[-1] is out or np.shares_memory(got[-1], out)
    for g, w in zip(got, python_variants(x, -1), strict=True):
        np.testing.assert_array_equal(g, w)


# Each @njit caller links and re-optimizes the variants' driver (about 10 s), so the
# float32 / middle-axis / backward / error cases share one function.
@numba.njit
def float32_cases(x, dy, which):
    if which == 1:
        numsoft.entmax(x, 0.5, axis=1)
    if which == 2:
        numsoft.topk_softmax(x, 99, axis=1)
    y = numsoft.sparsemax(x, axis=1)
    z = numsoft.entmax15(x, axis=1)
    return (
        y,
        numsoft.topk_softmax(x, 2, axis=1),
        numsoft.gumbel_softmax(x, 0.7, False, 11, axis=1),
        numsoft.gumbel_softmax(x, hard=True, axis=1),
        numsoft.sparsemax_backward(y, dy, axis=1),
        numsoft.entmax15_backward(z, dy, 1),
        numsoft.stablemax_backward(x, dy, axis=1),
    )


def test_njit_float32_middle_axis_backward_and_errors():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    dy = rng.normal(size=(3, 4, 5)).astype(np.float32)
    y, top, gum, unseeded, dsp, den, dst = float32_cases(x, dy, 0)
    for got in (y, top, gum, unseeded, dsp, den, dst):
        assert got.dtype == np.float32
    np.testing.assert_array_equal(y, numsoft.sparsemax(x, axis=1))
    np.testing.assert_array_equal(top, numsoft.topk_softmax(x, 2, axis=1))
    # the same noise; "auto" outside @njit takes two-pass on these narrow columns (AVX-512)
    want = numsoft.gumbel_softmax(x, 0.7, False, 11, axis=1)
    np.testing.assert_allclose(gum, want, rtol=2e-6, atol=0)  # oracle.RTOL[float32]
    np.testing.assert_array_equal(unseeded.sum(axis=1), 1.0)
    np.testing.assert_array_equal(dsp, numsoft.sparsemax_backward(y, dy, axis=1))
    np.testing.assert_array_equal(den, numsoft.entmax15_backward(numsoft.entmax15(x, axis=1),
                                                                 dy, axis=1))  # fmt: skip
    np.testing.assert_array_equal(dst, numsoft.stablemax_backward(x, dy, axis=1))
    with pytest.raises(ValueError, match="alpha"):
        float32_cases(x, dy, 1)
    with pytest.raises(ValueError, match="k must"):
        float32_cases(x, dy, 2)


def test_njit_unsupported_arguments_name_the_argument():
    x = np.zeros((2, 4))

    @numba.njit
    def with_where(x):
        return numsoft.sparsemax(x, where=1)

    @numba.njit
    def with_string_k(x):
        return numsoft.topk_softmax(x, "2")

    @numba.njit
    def with_fortran(x):
        return numsoft.stablemax(x)

    fortran = np.asfortranarray(np.zeros((3, 4)))
    cases = (
        (with_where, x, "where must be a boolean array"),
        (with_string_k, x, "k must"),
        (with_fortran, fortran, "x must"),
    )
    for func, arg, word in cases:
        with pytest.raises(TypeError, match=r"^numsoft\.\w+ inside @njit: " + word):
            func(arg)
