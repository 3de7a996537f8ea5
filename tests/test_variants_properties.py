"""Properties of the SPEC §4 variants over generated inputs (hypothesis)."""

from __future__ import annotations

import numpy as np
from _variant_refs import (
    ref_entmax,
    ref_log_stablemax,
    ref_softpick,
    ref_sparsemax,
    ref_stablemax,
    ref_topk,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import numsoft

SETTINGS = settings(max_examples=60, deadline=None)

rows = st.integers(1, 24).flatmap(
    lambda n: arrays(np.float64, n, elements=st.floats(-20, 20, allow_subnormal=False))
)
alphas = st.floats(1.05, 4.0)


def threshold_margin(z, p, alpha):
    """Distance of each entry below the entmax threshold, in the (α-1)·z domain."""
    u = (alpha - 1.0) * z
    i = np.argmax(p)
    tau = u[i] - p[i] ** (alpha - 1.0)
    return tau - u


@SETTINGS
@given(z=rows, alpha=st.one_of(st.just(1.5), st.just(2.0), alphas))
def test_sparse_outputs_on_the_simplex_with_exact_zeros(z, alpha):
    if alpha == 2.0:
        y = numsoft.sparsemax(z)
    elif alpha == 1.5:
        y = numsoft.entmax15(z)
    else:
        y = numsoft.entmax(z, alpha=alpha)
    want = ref_sparsemax(z) if alpha == 2.0 else ref_entmax(z, alpha)
    assert np.all(y >= 0.0)
    np.testing.assert_allclose(y.sum(), 1.0, rtol=1e-13)
    np.testing.assert_allclose(y, want, atol=1e-10)
    # Entries clearly below the threshold are exactly zero, not merely tiny.
    below = threshold_margin(z, want, alpha) > 1e-9
    assert np.all(y[below] == 0.0)


@SETTINGS
@given(z=rows)
def test_entmax_endpoints_are_softmax_and_sparsemax(z):
    # Same softmax_row kernel, inlined in another driver: reductions may be ordered
    # differently by the vectorizer, so equal up to rounding.
    np.testing.assert_allclose(numsoft.entmax(z, alpha=1.0), numsoft.softmax(z), rtol=1e-15)
    np.testing.assert_array_equal(numsoft.entmax(z, alpha=2.0), numsoft.sparsemax(z))
    np.testing.assert_allclose(numsoft.entmax(z, alpha=1.5), numsoft.entmax15(z), atol=1e-12)
    np.testing.assert_allclose(numsoft.entmax(z, alpha=1.0005), numsoft.softmax(z), atol=5e-3)


extreme = st.one_of(st.sampled_from([-1000.0, 1000.0, 999.0, -999.0, 0.0]), st.floats(-5, 5))


@SETTINGS
@given(z=st.integers(1, 12).flatmap(lambda n: arrays(np.float64, n, elements=extreme)))
# A float32 softpick of 7.0e-46 (half the smallest subnormal) is correctly rounded to 0.
@example(z=np.array([1.40129846e-45, -1000.0, -1000.0]))
def test_stablemax_and_softpick_stable_at_plus_minus_1000(z):
    # softpick's atol is the output dtype's resolution at zero: a correctly rounded
    # float32 result may differ from the float64 reference by half a float32 subnormal.
    for dtype, rtol, atol in (
        (np.float64, 1e-12, 1e-300),
        (np.float32, 2e-6, float(np.finfo(np.float32).smallest_subnormal)),
    ):
        zz = z.astype(dtype)
        y = numsoft.stablemax(zz)
        assert np.all(np.isfinite(y))
        np.testing.assert_allclose(y, ref_stablemax(zz.astype(np.float64)), rtol=rtol)
        ly = numsoft.log_stablemax(zz)
        assert np.all(np.isfinite(ly))
        np.testing.assert_allclose(ly, ref_log_stablemax(zz.astype(np.float64)), rtol=rtol,
                                   atol=rtol)  # fmt: skip
        sp = numsoft.softpick(zz)
        assert np.all(np.isfinite(sp))
        np.testing.assert_allclose(sp, ref_softpick(zz.astype(np.float64)), rtol=rtol,
                                   atol=atol)  # fmt: skip


ties = st.integers(1, 16).flatmap(
    lambda n: arrays(np.float64, n, elements=st.integers(-2, 2).map(float))
)


@SETTINGS
@given(z=ties, data=st.data())
def test_topk_ties_resolved_by_lowest_index(z, data):
    k = data.draw(st.integers(1, z.size))
    y = numsoft.topk_softmax(z, k)
    want = ref_topk(z, k)
    np.testing.assert_array_equal(y > 0, want > 0)
    np.testing.assert_allclose(y, want, rtol=1e-14)
    assert np.count_nonzero(y) == k


@SETTINGS
@given(z=rows, seed=st.integers(0, 2**64 - 1), tau=st.floats(0.05, 5.0))
def test_gumbel_hard_is_the_argmax_of_soft(z, seed, tau):
    soft = numsoft.gumbel_softmax(z, tau=tau, seed=seed)
    hard = numsoft.gumbel_softmax(z, tau=tau, hard=True, seed=seed)
    np.testing.assert_allclose(soft.sum(), 1.0, rtol=1e-13)
    assert hard.sum() == 1.0 and np.count_nonzero(hard) == 1
    # soft can tie (or underflow) where hard picks the lowest index among equal maxima
    assert soft[np.argmax(hard)] == soft.max()
