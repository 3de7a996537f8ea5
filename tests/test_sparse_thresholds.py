"""sparsemax and 1.5-entmax at every support size, against the sorted references.

The row kernels find τ by Newton steps over the support candidates, not by sorting
(``numsoft.cpu.variants.sparse``). Small-scale logits (attention scores early in
training) put almost every entry in the support; ties, heavy tails and log-spaced
rows change how many steps the refinement takes. Each is checked against the
independent references of ``_variant_refs`` (a full sort; Brent's method).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _variant_refs import ref_entmax, ref_sparsemax

import numsoft
from numsoft.cpu.variants.sparse import MAX_REFINE_STEPS, refined_threshold, sorted_threshold

MAPS = {
    "sparsemax": (numsoft.sparsemax, ref_sparsemax),
    "entmax15": (numsoft.entmax15, partial(ref_entmax, alpha=1.5)),
}
# float64: τ from float64 sums, so the reference's own rounding dominates; float32: the
# output pass runs in float32 (SPEC §1's 2e-6, with an absolute floor for entries ~0).
TOL = {np.float32: (2e-6, 1e-6), np.float64: (1e-11, 1e-14)}


def rows(kind, n, scale, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        z = rng.normal(size=(3, n))
    elif kind == "uniform":
        z = rng.uniform(size=(3, n))
    elif kind == "exponential":
        z = -rng.exponential(size=(3, n))
    elif kind == "log-spaced":
        z = -np.tile(np.logspace(-6, 0, n), (3, 1))
    elif kind == "cauchy":
        z = rng.standard_cauchy(size=(3, n))
    else:  # ties: a few distinct values, each many times
        z = rng.integers(0, 4, size=(3, n)).astype(np.float64) / 4
    return z * scale


KINDS = ["normal", "uniform", "exponential", "log-spaced", "cauchy", "ties"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 1000, 5003])
@pytest.mark.parametrize("scale", [3.0, 0.3, 0.01])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(MAPS))
def test_every_support_size_matches_the_sorted_reference(name, kind, scale, n, dtype):
    func, ref = MAPS[name]
    x = rows(kind, n, scale).astype(dtype)
    got = func(x)
    want = np.array([ref(row) for row in x.astype(np.float64)])
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=4 * rtol * max(1, n**0.5))


@pytest.mark.parametrize("q", [1, 2])
@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_refinement_past_its_step_limit_sorts(q, scale):
    """With too few steps allowed, the threshold comes from the sort, and equals it."""
    c = 1.0 if q == 1 else 0.5
    z = np.random.default_rng(1).normal(size=2000) * scale
    top = float(z.max())
    candidates = z[c * (z - top) >= -1.0]
    sorted_tau = sorted_threshold(candidates.copy(), candidates.size, top, c, q)
    for steps in (1, 2, MAX_REFINE_STEPS):
        tau = refined_threshold(candidates.copy(), candidates.size, top, c, q, -1.0, steps)
        assert tau == pytest.approx(sorted_tau, rel=1e-13, abs=1e-15)
    # the sorted threshold is the reference's: p sums to one
    u = c * (z - top)
    assert np.sum(np.maximum(u - sorted_tau, 0.0) ** q) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("name", sorted(MAPS))
def test_huge_logits(name):
    """The bound from the row's mean loses everything to rounding at 1e20-1e30: the
    rows still come out as the reference gives them."""
    func, ref = MAPS[name]
    x = np.array([[-1e20], [1e30], [-1e30]])
    np.testing.assert_array_equal(func(x), np.ones((3, 1)))
    x = np.array([[1e30, -1e30, 0.0, 5.0, 1e30], [1e30, 1e30 * (1 + 1e-15), 1e30, -1e30, 0.0]])
    want = np.array([ref(row) for row in x])
    np.testing.assert_allclose(func(x), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("q", [1, 2])
def test_a_start_above_the_root_is_refused(q):
    """Newton's steps climb from below; a start above τ is reported, not stepped from."""
    c = 1.0 if q == 1 else 0.5
    z = np.random.default_rng(2).normal(size=50)
    top = float(z.max())
    tau = sorted_threshold(z.copy(), z.size, top, c, q)
    assert np.isnan(refined_threshold(z.copy(), z.size, top, c, q, tau / 2, MAX_REFINE_STEPS))
    assert refined_threshold(z.copy(), z.size, top, c, q, -1.0, MAX_REFINE_STEPS) == (
        pytest.approx(tau, rel=1e-13)
    )
