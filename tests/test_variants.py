"""The SPEC §4 variants against independent NumPy/SciPy references (tests/_variant_refs.py).

Shapes are small and dtypes are float32 + float64 only: every new dtype/layout pair
compiles the variants' drivers once (cached on disk afterwards).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pytest
from _variant_refs import (
    apply_rows,
    ref_adaptive,
    ref_entmax,
    ref_log_stablemax,
    ref_multimax,
    ref_rowmax_pot,
    ref_sa,
    ref_sigmoid,
    ref_softmax,
    ref_softpick,
    ref_softplus_l1,
    ref_sparsemax,
    ref_ssmax,
    ref_stablemax,
    ref_topk,
)
from scipy.special import softmax

import numsoft
from numsoft.vocabulary import PUBLIC_VARIANTS

RANGES = (-1.0, 1.0, -2.0, 2.0)
TS = (0.5, 0.3, 0.1, 0.05)


#: SPEC §1: float32 ≤ 2e-6 relative, float64 ≤ 1e-13 (here a little tighter).
DEFAULT_TOL = {np.float32: (2e-6, 1e-7), np.float64: (1e-12, 1e-15)}


VARIANT_NAMED = {v.name: v for v in PUBLIC_VARIANTS}


@dataclass
class Case:
    """A variant, its reference on one row, and what kind of output it produces."""

    name: str
    func: object  # func(x, **common) -> ndarray
    ref: object  # ref(z) -> ndarray for one float64 row
    # relative / absolute tolerance per dtype (absolute for outputs with exact zeros,
    # where relative error means nothing next to a threshold)
    tol: dict = field(default_factory=lambda: DEFAULT_TOL)
    normalized: bool = True  # rows sum to 1
    # output of a row of only -inf without a mask: NaN where the definition divides by
    # Σ over no entry (softmax's rule, SPEC §1), else 0
    nan_if_all_minus_inf: bool = True
    elementwise: bool = False  # NaN stays local

    # output of a fully masked row; None: the variant table's (0 for other functions)
    fill: float | None = None

    def __post_init__(self):
        if self.fill is None:
            entry = VARIANT_NAMED.get(self.function_name)
            self.fill = 0.0 if entry is None else entry.fill

    @property
    def function_name(self) -> str:
        func = self.func.func if isinstance(self.func, partial) else self.func
        return func.__name__

    @property
    def variant(self):
        """The variant table's entry of ``func``."""
        return VARIANT_NAMED[self.function_name]


# Log outputs (SPEC §1, docs/numerics.md): absolute for magnitudes ≤ 1, relative beyond.
# log Σ exp(z - max) near 0 carries the sum's rounding (~1 ulp of 1.0 per addition) as
# an absolute error, so an output like -0.0156 cannot hold a relative 2e-6 in float32.
LOG_TOL = {np.float32: (2e-6, 2e-6), np.float64: (1e-12, 1e-13)}
SPARSE_TOL = {np.float32: (2e-6, 1e-6), np.float64: (1e-12, 1e-14)}
BISECT_TOL = {np.float32: (2e-6, 1e-6), np.float64: (1e-9, 1e-12)}
# adaptive/ssmax multiply z by a data-dependent scale rounded to float32: the output's
# relative error grows with |scale·(z - max z)|, up to ~10 in these tests.
SCALED_TOL = {np.float32: (6e-6, 1e-7), np.float64: (1e-12, 1e-15)}

CASES = [
    Case("sparsemax", numsoft.sparsemax, ref_sparsemax, tol=SPARSE_TOL),
    Case("entmax15", numsoft.entmax15, partial(ref_entmax, alpha=1.5), tol=SPARSE_TOL),
    Case(
        "entmax_1.3",
        partial(numsoft.entmax, alpha=1.3),
        partial(ref_entmax, alpha=1.3),
        tol=BISECT_TOL,
    ),
    Case(
        "entmax_2.5",
        partial(numsoft.entmax, alpha=2.5),
        partial(ref_entmax, alpha=2.5),
        tol=BISECT_TOL,
    ),
    Case("stablemax", numsoft.stablemax, ref_stablemax),
    Case(
        "log_stablemax",
        numsoft.log_stablemax,
        ref_log_stablemax,
        tol=LOG_TOL,
        normalized=False,
    ),
    Case("softpick", numsoft.softpick, ref_softpick, normalized=False, nan_if_all_minus_inf=False),
    Case("adaptive_softmax", numsoft.adaptive_softmax, ref_adaptive, tol=SCALED_TOL),
    Case("ssmax", partial(numsoft.ssmax, s=1.5), partial(ref_ssmax, s=1.5), tol=SCALED_TOL),
    Case("sa_softmax", numsoft.sa_softmax, ref_sa, normalized=False),
    Case(
        "sa_softmax_normalized",
        partial(numsoft.sa_softmax, normalized=True),
        partial(ref_sa, normalized=True),
        normalized=False,
    ),
    Case(
        "multimax",
        partial(numsoft.multimax, ranges=RANGES, ts=TS),
        partial(ref_multimax, ranges=RANGES, ts=TS),
    ),
    Case(
        "sigmoid_attention",
        numsoft.sigmoid_attention,
        ref_sigmoid,
        normalized=False,
        elementwise=True,
        nan_if_all_minus_inf=False,
    ),
    Case(
        "sigmoid_attention_bias",
        partial(numsoft.sigmoid_attention, bias=-0.5),
        partial(ref_sigmoid, bias=-0.5),
        normalized=False,
        elementwise=True,
        nan_if_all_minus_inf=False,
    ),
    Case("softplus_l1", numsoft.softplus_l1, ref_softplus_l1),
    Case("topk_softmax", partial(numsoft.topk_softmax, k=3), partial(ref_topk, k=3)),
    Case("rowmax_pot", numsoft.rowmax_pot, ref_rowmax_pot),
]
BY_NAME = {c.name: c for c in CASES}
DTYPES = [np.float32, np.float64]


def logits(shape, dtype, seed=0, scale=2.0):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(dtype)


def assert_matches(case, got, want, dtype):
    rtol, atol = case.tol[dtype]
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- values, axes, layouts


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_reference(case, axis, dtype):
    x = logits((6, 11), dtype)
    assert_matches(case, case.func(x, axis=axis), apply_rows(case.ref, x, axis), dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_3d_axes_and_tuple_axes(case):
    x = logits((3, 5, 4), np.float64, seed=1)
    for axis in (1, (0, 2), None):
        want = apply_rows(case.ref, x, axis if axis is not None else (0, 1, 2))
        assert_matches(case, case.func(x, axis=axis), want, np.float64)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_temperature(case):
    x = logits((4, 9), np.float64, seed=2)
    want = apply_rows(case.ref, x, temperature=0.7)
    assert_matches(case, case.func(x, temperature=0.7), want, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_where_excludes_entries(case, dtype):
    x = logits((6, 10), dtype, seed=3)
    where = np.random.default_rng(4).random((6, 10)) > 0.35
    where[2] = False  # a fully masked row
    where[3, 1:] = False  # a single unmasked entry
    got = case.func(x, where=where)
    want = apply_rows(case.ref, x, where=where, fill=case.fill)
    assert_matches(case, got, want, dtype)
    assert np.all(got[~where] == case.fill)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_out_in_place_and_input_untouched(case):
    x = logits((5, 8), np.float64, seed=5)
    want = case.func(x)
    frozen = x.copy()
    frozen.flags.writeable = False
    assert np.array_equal(case.func(frozen), want)
    out = np.empty_like(x)
    assert case.func(x, out=out) is out
    np.testing.assert_array_equal(out, want)
    xc = x.copy()
    assert case.func(xc, out=xc) is xc
    # In place, LLVM runs the non-vectorized loop (x and y alias), so reductions are
    # summed in another order: equal up to rounding, not bit for bit.
    np.testing.assert_allclose(xc, want, rtol=1e-15, atol=1e-300)
    assert np.array_equal(frozen, x)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_strided_and_reversed_input(case):
    base = logits((6, 18), np.float64, seed=6)
    x = base[::-1, ::-2]
    assert_matches(case, case.func(x), apply_rows(case.ref, x), np.float64)
    assert_matches(case, case.func(x, axis=0), apply_rows(case.ref, x, 0), np.float64)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_dtypes_of_the_result(case):
    x16 = logits((3, 6), np.float16, seed=7)
    got = case.func(x16)
    assert got.dtype == np.float32
    assert_matches(case, got, apply_rows(case.ref, x16.astype(np.float32)), np.float32)
    assert case.func(x16, dtype=np.float16).dtype == np.float16
    xi = np.arange(12).reshape(3, 4) % 5
    got = case.func(xi)
    assert got.dtype == np.float64
    assert_matches(case, got, apply_rows(case.ref, xi), np.float64)
    assert case.func(xi.astype(np.float32), dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_empty_and_length_one_axes(case):
    if case.name == "topk_softmax":
        pytest.skip("k = 3 needs 3 entries; k out of range: test_bad_arguments_name_the_argument")
    assert case.func(np.empty((3, 0))).shape == (3, 0)
    assert case.func(np.empty((0, 4))).shape == (0, 4)
    x = logits((4, 1), np.float64)
    assert_matches(case, case.func(x), apply_rows(case.ref, x), np.float64)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_nan_rows(case):
    x = logits((3, 6), np.float64, seed=8)
    x[1, 2] = np.nan
    got = case.func(x)
    if case.elementwise:
        assert np.isnan(got[1, 2]) and not np.isnan(np.delete(got[1], 2)).any()
    else:
        assert np.isnan(got[1]).all()
    assert not np.isnan(got[[0, 2]]).any()


INF_SHARE = [
    "sparsemax",
    "entmax15",
    "entmax_1.3",
    "entmax_2.5",
    "stablemax",
    "softpick",
    "adaptive_softmax",
    "ssmax",
    "sa_softmax_normalized",
    "multimax",
    "softplus_l1",
    "topk_softmax",
    "rowmax_pot",
]


@pytest.mark.parametrize("name", INF_SHARE)
def test_posinf_entries_share_the_mass(name):
    x = np.array([[1.0, np.inf, -2.0, np.inf, 0.5], [np.inf, 0.0, 1.0, 2.0, 3.0]])
    want = np.array([[0, 0.5, 0, 0.5, 0], [1.0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(BY_NAME[name].func(x), want)


def test_posinf_entries_other_variants():
    x = np.array([1.0, np.inf, -2.0, np.inf])
    np.testing.assert_array_equal(
        numsoft.log_stablemax(x), [-np.inf, -math.log(2), -np.inf, -math.log(2)]
    )
    np.testing.assert_array_equal(numsoft.sa_softmax(x), [0, np.inf, 0, np.inf])
    assert numsoft.sigmoid_attention(x)[1] == 1.0


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_all_minus_inf_row_without_mask(case):
    got = case.func(np.full((2, 4), -np.inf))
    if case.nan_if_all_minus_inf:
        assert np.isnan(got).all()
    else:
        np.testing.assert_array_equal(got, 0.0)


# ---------------------------------------------------------------- variant-specific numerics


@pytest.mark.parametrize("dtype", DTYPES)
def test_stable_at_plus_minus_1000(dtype):
    x = np.array([[1000.0, -1000.0, 0.0, 999.0], [-1000.0, -1000.0, -999.0, 0.5]], dtype=dtype)
    for case in (BY_NAME[n] for n in ("stablemax", "log_stablemax", "softpick")):
        got = case.func(x)
        assert np.all(np.isfinite(got[:, [0, 2, 3]]))
        assert_matches(case, got, apply_rows(case.ref, x), dtype)


def test_stablemax_sum_overflow_is_rescaled():
    x = np.array([3e38, 3e38, 1.0], dtype=np.float32)
    np.testing.assert_allclose(numsoft.stablemax(x), [0.5, 0.5, 2 / 6e38], rtol=1e-6)
    np.testing.assert_allclose(numsoft.log_stablemax(x), np.log([0.5, 0.5, 2 / 6e38]), rtol=1e-6)
    np.testing.assert_allclose(numsoft.softplus_l1(x), [0.5, 0.5, 0.0], atol=1e-30)


def test_softpick_small_logits_keep_relative_accuracy():
    x = np.array([1e-4, 3e-6, -1e-5, 2.0], dtype=np.float32)
    np.testing.assert_allclose(numsoft.softpick(x), ref_softpick(x.astype(np.float64)), rtol=2e-6)


def test_softpick_eps_zero_on_a_zero_row():
    np.testing.assert_array_equal(numsoft.softpick(np.zeros(4), eps=0.0), 0.0)


def test_sa_softmax_normalized_zero_row():
    np.testing.assert_array_equal(numsoft.sa_softmax(np.zeros(3), normalized=True), 0.0)


def test_rowmax_pot_weights_are_powers_of_two():
    x = logits((4, 16), np.float64, seed=9)
    y = numsoft.rowmax_pot(x)
    ratio = y / y.max(axis=-1, keepdims=True)
    assert np.array_equal(np.exp2(np.round(np.log2(ratio))), ratio)


def test_ssmax_counts_only_unmasked_entries():
    x = np.array([1.0, 0.0, -1.0, 2.0])
    where = np.array([True, True, True, False])
    np.testing.assert_allclose(numsoft.ssmax(x, where=where)[:3], ref_ssmax(x[:3]), rtol=1e-13)
    np.testing.assert_allclose(
        numsoft.ssmax(np.array([1.0, 0.0, -1.0, -np.inf]))[:3], ref_ssmax(x[:3]), rtol=1e-13
    )


def test_multimax_limits_at_infinity():
    x = np.array([0.0, np.inf, 1.0])
    # t3 > 0: sigma(+inf) = +inf takes all the mass.
    np.testing.assert_array_equal(numsoft.multimax(x, RANGES, TS), [0, 1, 0])
    # t1 = -1, t3 = 0: sigma(z) = b1 for z >= b1 (and b3), so +inf maps to b1.
    ranges, ts = (-1.0, 1.0, -2.0, 2.0), (0.0, -1.0, 0.0, 0.0)
    want = ref_multimax(np.array([0.0, 1.0, 1.0]), ranges, ts)
    np.testing.assert_allclose(numsoft.multimax(x, ranges, ts), want, rtol=1e-13)


def test_adaptive_softmax_leaves_confident_rows_alone():
    x = np.array([[10.0, 0.0, 0.0], [0.1, 0.0, 0.05]])
    y = numsoft.adaptive_softmax(x)
    np.testing.assert_allclose(y[0], ref_softmax(x[0]), rtol=1e-13)  # entropy < 0.5
    assert y[1].max() > ref_softmax(x[1]).max()  # flat row: sharpened


def test_entmax_alpha_1_and_2_dispatch():
    x = logits((5, 9), np.float64, seed=10)
    np.testing.assert_allclose(numsoft.entmax(x, alpha=1.0), numsoft.softmax(x), rtol=1e-15)
    np.testing.assert_array_equal(numsoft.entmax(x, alpha=2.0), numsoft.sparsemax(x))
    np.testing.assert_allclose(numsoft.entmax(x, alpha=1.5), numsoft.entmax15(x), atol=1e-14)


def test_entmax_n_iter_caps_the_bisection():
    x = logits((3, 12), np.float64, seed=11)
    coarse = numsoft.entmax(x, alpha=1.7, n_iter=3)
    np.testing.assert_allclose(coarse.sum(axis=-1), 1.0, rtol=1e-14)
    err = np.abs(coarse - apply_rows(partial(ref_entmax, alpha=1.7), x)).max()
    assert 1e-6 < err < 0.2


def test_topk_ties_lowest_index_first():
    x = np.array([[1.0, 3.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    y = numsoft.topk_softmax(x, k=2)
    np.testing.assert_array_equal(y, [[0, 0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0, 0]])
    y = numsoft.topk_softmax(x, k=2, axis=0)
    np.testing.assert_allclose(y, apply_rows(partial(ref_topk, k=2), x, 0), rtol=1e-15)


#: The same values in other memory: Fortran order, reversed strides, a strided slice,
#: and a transposed copy viewed back (a C array whose axes run in another order).
MEMORY_LAYOUTS = {
    "F": np.asfortranarray,
    "reversed": lambda a: np.ascontiguousarray(a[::-1, ::-1, ::-1])[::-1, ::-1, ::-1],
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    "transposed": lambda a: np.ascontiguousarray(a.transpose(2, 0, 1)).transpose(1, 2, 0),
}


@pytest.mark.parametrize("layout", MEMORY_LAYOUTS)
@pytest.mark.parametrize("axis", [None, (1, 2), (2, 0), 0, -1])
def test_order_dependent_variants_ignore_memory_layout(layout, axis):
    """top-k cuts ties at the lowest C index and Gumbel noise is keyed by C index, so both
    give the same output for the same values in any memory (the rows are read in index
    order, not memory order)."""
    x = np.random.default_rng(5).integers(0, 3, size=(3, 4, 5)).astype(np.float64)  # ties
    other = MEMORY_LAYOUTS[layout](x)
    assert np.array_equal(other, x)
    topk = numsoft.topk_softmax(other, k=3, axis=axis)
    np.testing.assert_array_equal(topk, numsoft.topk_softmax(x, k=3, axis=axis))
    rows = (0, 1, 2) if axis is None else axis
    np.testing.assert_allclose(topk, apply_rows(partial(ref_topk, k=3), x, rows), rtol=1e-15)
    gumbel = numsoft.gumbel_softmax(other, tau=0.5, seed=3, axis=axis)
    np.testing.assert_array_equal(gumbel, numsoft.gumbel_softmax(x, tau=0.5, seed=3, axis=axis))


def test_topk_fewer_unmasked_than_k():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    where = np.array([True, False, True, False])
    y = numsoft.topk_softmax(x, k=3, where=where)
    np.testing.assert_allclose(y, [ref_softmax(x[[0, 2]])[0], 0, ref_softmax(x[[0, 2]])[1], 0])


# ---------------------------------------------------------------- Gumbel-softmax


def test_gumbel_matches_documented_noise():
    from _variant_refs import gumbel_noise

    x = logits((7, 13), np.float64, seed=12)
    g = gumbel_noise(1234, x.size).reshape(x.shape)
    want = softmax((x / 0.8 + g) / 0.5, axis=-1)
    got = numsoft.gumbel_softmax(x, tau=0.5, seed=1234, temperature=0.8)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(
        numsoft.gumbel_softmax(x32, tau=0.5, seed=1234),
        softmax((x32 + g) / 0.5, axis=-1),
        rtol=5e-6,
    )
    # axis=0 goes through the column driver: the noise of element (i, j) is still g[i, j].
    want0 = softmax((x + g) / 0.5, axis=0)
    np.testing.assert_allclose(numsoft.gumbel_softmax(x, 0.5, seed=1234, axis=0), want0, rtol=1e-12)
    hard = numsoft.gumbel_softmax(x, hard=True, seed=1234)
    np.testing.assert_array_equal(hard, np.eye(13)[np.argmax(x + g, axis=-1)])
    # Axes (0, 2) are not adjacent: the noise is that of x with them moved to the end.
    x3 = logits((3, 4, 5), np.float64, seed=13)
    g3 = np.moveaxis(gumbel_noise(99, x3.size).reshape(4, 3, 5), 0, 1)
    got3 = numsoft.gumbel_softmax(x3, 1.0, seed=99, axis=(0, 2))
    np.testing.assert_allclose(got3, softmax(x3 + g3, axis=(0, 2)), rtol=1e-12)


def test_gumbel_same_seed_same_output_any_thread_count():
    import numba

    x = logits((64, 33), np.float32, seed=13)
    ref = numsoft.gumbel_softmax(x, seed=7)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = numsoft.gumbel_softmax(x, seed=7)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one, ref)
    assert not np.array_equal(numsoft.gumbel_softmax(x, seed=8), ref)
    gen = numsoft.gumbel_softmax(x, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(gen, numsoft.gumbel_softmax(x, seed=np.random.default_rng(3)))
    assert not np.array_equal(numsoft.gumbel_softmax(x), numsoft.gumbel_softmax(x))


def test_gumbel_argmax_frequencies_follow_softmax():
    p = np.array([0.4, 0.25, 0.2, 0.1, 0.05])
    n = 50_000
    x = np.broadcast_to(np.log(p), (n, p.size))
    hard = numsoft.gumbel_softmax(x, hard=True, seed=2024)
    assert np.array_equal(hard.sum(axis=1), np.ones(n))
    counts = hard.sum(axis=0)
    chi2 = np.sum((counts - n * p) ** 2 / (n * p))
    assert chi2 < 30.0  # 4 degrees of freedom: P(chi2 > 30) ≈ 5e-6; the seed is fixed
    soft = numsoft.gumbel_softmax(x, tau=0.3, seed=2024)
    np.testing.assert_array_equal(np.argmax(soft, axis=1), np.argmax(hard, axis=1))


def test_gumbel_masked_entries_are_never_selected():
    x = logits((200, 6), np.float64, seed=14)
    where = np.random.default_rng(15).random(x.shape) > 0.5
    where[0] = False
    hard = numsoft.gumbel_softmax(x, hard=True, seed=3, where=where)
    soft = numsoft.gumbel_softmax(x, seed=3, where=where)
    assert np.all(hard[~where] == 0) and np.all(soft[~where] == 0)
    rows = where.any(axis=1)
    np.testing.assert_array_equal(hard.sum(axis=1), rows.astype(float))
    np.testing.assert_allclose(soft.sum(axis=1), rows.astype(float), rtol=1e-13)


# ---------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    ("call", "exc", "words"),
    [
        (lambda x: numsoft.entmax(x, alpha=0.9), ValueError, "alpha"),
        (lambda x: numsoft.entmax(x, alpha=np.nan), ValueError, "alpha"),
        (lambda x: numsoft.entmax(x, alpha="1.5"), TypeError, "alpha"),
        (lambda x: numsoft.entmax(x, n_iter=0), ValueError, "n_iter"),
        (lambda x: numsoft.entmax(x, n_iter=2.5), TypeError, "n_iter"),
        (lambda x: numsoft.topk_softmax(x, 0), ValueError, "k"),
        (lambda x: numsoft.topk_softmax(x, 6), ValueError, "k"),
        (lambda x: numsoft.topk_softmax(x, 2.0), TypeError, "k"),
        (lambda x: numsoft.gumbel_softmax(x, tau=0.0), ValueError, "tau"),
        (lambda x: numsoft.gumbel_softmax(x, hard=1), TypeError, "hard"),
        (lambda x: numsoft.gumbel_softmax(x, seed=-1), ValueError, "seed"),
        (lambda x: numsoft.gumbel_softmax(x, seed="a"), TypeError, "seed"),
        (lambda x: numsoft.ssmax(x, s=0.0), ValueError, "s must"),
        (lambda x: numsoft.softpick(x, eps=-1e-6), ValueError, "eps"),
        (lambda x: numsoft.multimax(x, (0, 1, 2), TS), ValueError, "ranges"),
        (lambda x: numsoft.multimax(x, RANGES, (0, 1, np.nan, 0)), ValueError, "ts"),
        (lambda x: numsoft.multimax(x, RANGES, "abcd"), TypeError, "ts"),
        (lambda x: numsoft.sigmoid_attention(x, bias=np.inf), ValueError, "bias"),
        (lambda x: numsoft.sigmoid_attention(x, bias="0"), TypeError, "bias"),
        (lambda x: numsoft.sa_softmax(x, normalized=1), TypeError, "normalized"),
        (lambda x: numsoft.sparsemax(x, temperature=0.0), ValueError, "temperature"),
        (lambda x: numsoft.stablemax(x + 1j), TypeError, "complex"),
        (lambda x: numsoft.rowmax_pot(x, axis=2), np.exceptions.AxisError, "axis"),
        (lambda x: numsoft.softplus_l1(x, out=np.empty((2, 4))), ValueError, "out"),
        (lambda x: numsoft.sparsemax_backward(x, np.ones((3, 5))), ValueError, "dy"),
    ],
)
def test_bad_arguments_name_the_argument(call, exc, words):
    with pytest.raises(exc, match=words):
        call(np.zeros((2, 5)))


# ---------------------------------------------------------------- backward passes


def numeric_vjp(f, x, dy, h=1e-6):
    """dyᵀ·J by central differences, one coordinate at a time."""
    g = np.empty_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = np.sum(dy * (f(x + e) - f(x - e))) / (2 * h)
    return g


def test_sparsemax_backward_analytic_jacobian():
    x = logits((4, 9), np.float64, seed=16, scale=0.6)
    dy = logits((4, 9), np.float64, seed=17)
    y = numsoft.sparsemax(x)
    for r in range(4):
        s = (y[r] > 0).astype(float)
        jac = np.diag(s) - np.outer(s, s) / s.sum()
        np.testing.assert_allclose(numsoft.sparsemax_backward(y, dy)[r], jac @ dy[r], atol=1e-15)


@pytest.mark.parametrize(
    ("forward", "backward", "from_x"),
    [
        (numsoft.sparsemax, numsoft.sparsemax_backward, False),
        (numsoft.entmax15, numsoft.entmax15_backward, False),
        (numsoft.stablemax, numsoft.stablemax_backward, True),
    ],
)
def test_backward_matches_finite_differences(forward, backward, from_x):
    x = logits((3, 7), np.float64, seed=18, scale=0.8)
    dy = logits((3, 7), np.float64, seed=19)
    a = x if from_x else forward(x)
    np.testing.assert_allclose(backward(a, dy), numeric_vjp(forward, x, dy), atol=2e-8)
    # axis=0 runs the column driver of the backward passes.
    a0 = x if from_x else forward(x, axis=0)
    want0 = numeric_vjp(partial(forward, axis=0), x, dy)
    np.testing.assert_allclose(backward(a0, dy, axis=0), want0, atol=2e-8)
    got32 = backward(a.astype(np.float32), dy.astype(np.float32))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, backward(a, dy), atol=2e-6)


def test_stablemax_backward_needs_the_logits():
    # Same output (½, ½), different Jacobians: y alone cannot determine dx.
    dy = np.array([1.0, 0.0])
    a = numsoft.stablemax_backward(np.array([0.0, 0.0]), dy)
    b = numsoft.stablemax_backward(np.array([-1.0, -1.0]), dy)
    np.testing.assert_allclose(a, [0.25, -0.25], rtol=1e-15)
    np.testing.assert_allclose(b, [0.125, -0.125], rtol=1e-15)
