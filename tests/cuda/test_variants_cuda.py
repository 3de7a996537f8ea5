"""The row-local variants on the CUDA backend against the CPU backend (itself tested
against float64 references in tests/test_variants.py), in every whole-row launch regime.

Tolerances: float64 1e-13 for the closed forms; the bisection-based maps (α-entmax with
a general α, renormalized) 1e-9. float32 rows reduce in float32 on the device (the CPU
accumulates in float64), so float32 agrees to 2e-6 relative plus 1e-6 absolute
(sparsemax/entmax thresholds are computed from float32 sums over the support).
"""

import numpy as np
import pytest
from numba import cuda
from test_core_cuda import assert_same_error_on_the_gpu

import numsoft
from numsoft.cuda import launch
from numsoft.vocabulary import PUBLIC_VARIANTS

#: (rows, n, axis) per regime under the tiny launch constants of conftest.py; the
#: variants never split a row, so a 40-element row runs block-whole.
REGIMES = {"warp": ((3, 7), -1), "block": ((2, 40), -1), "column": ((6, 3), 0)}

#: name → keyword arguments, for each variant with a CUDA kernel (the variant table's).
ARGUMENTS = {"ssmax": {"s": 0.7}, "entmax": {"alpha": 1.3}, "topk_softmax": {"k": 3}}
VARIANTS = {v.name: ARGUMENTS.get(v.name, {}) for v in PUBLIC_VARIANTS if v.cuda}
TOL = {np.float32: dict(rtol=2e-6, atol=1e-6), np.float64: dict(rtol=1e-13, atol=1e-13)}
BISECTION_TOL = dict(rtol=1e-9, atol=1e-12)


def tol(name, dtype):
    if name == "entmax" and dtype == np.float64:
        return BISECTION_TOL
    return TOL[dtype]


def run(name, x, **kw):
    return getattr(numsoft, name)(x, **VARIANTS[name], **kw)


def check(name, x, dtype=np.float64, **kw):
    got = run(name, x, target="cuda", **kw)
    want = run(name, x, **kw)
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **tol(name, dtype))
    return got


def logits(shape, dtype=np.float64, seed=0, scale=2.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def test_variant_plans_keep_rows_whole():
    assert launch.plan(2, 40, 1, split=False).regime == "block-whole"
    assert launch.plan(2, 40, 1).regime == "block-split"


#: float64 in every regime; float32 (its own kernel specialization and tolerance) where
#: the reduction is a warp's and where it is a block's. The simulator runs each device
#: thread in Python, so the column regime is not repeated for float32.
CASES = [("warp", np.float32), ("block", np.float32)] + [(r, np.float64) for r in REGIMES]


@pytest.mark.parametrize(("regime", "dtype"), CASES, ids=lambda c: getattr(c, "__name__", c))
@pytest.mark.parametrize("name", VARIANTS)
def test_matches_cpu(name, regime, dtype):
    shape, axis = REGIMES[regime]
    check(name, logits(shape, dtype, seed=len(name)), dtype, axis=axis)


@pytest.mark.parametrize("name", VARIANTS)
def test_special_rows(name):
    x = np.array(
        [
            [1.0, np.nan, 0.0, 2.0, -1.0],
            [np.inf, 0.0, np.inf, 1.0, -np.inf],
            [-np.inf] * 5,
            [-np.inf, 3.0, -np.inf, -np.inf, -np.inf],
            [1e30, -1e30, 0.0, 5.0, 1e30],
            [-1e30, -1e30, -1e30, 3.0, -1e30],
            [2.0, 2.0, 2.0, 2.0, 1.0],  # ties (top-k cuts by index)
            [-800.0, -801.0, -802.0, -900.0, -np.inf],  # softplus underflows in float64
        ]
    )
    with np.errstate(all="ignore"):
        check(name, x)


# The first sum overflows on purpose; the simulator reports that as a RuntimeWarning.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["stablemax", "log_stablemax", "softplus_l1"])
def test_sum_overflow_is_rescaled(name):
    x = np.array([[1e308, 1e308, 1.0], [-1.0, 1.7e308, 1.7e308]])
    check(name, x)


@pytest.mark.parametrize("name", VARIANTS)
def test_where_mask_and_empty_row(name):
    x = logits((3, 6), seed=3)
    where = np.ones(x.shape, dtype=bool)
    where[0, ::2] = False
    where[2] = False
    check(name, x, where=where)


@pytest.mark.parametrize("name", ["softpick", "entmax15", "topk_softmax", "ssmax"])
def test_temperature_and_dtypes(name):
    x = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
    check(name, x, temperature=2.5)
    check(name, x.astype(np.float16), np.float32)


@pytest.mark.parametrize("name", ["sparsemax", "topk_softmax", "log_stablemax"])
def test_device_input_stays_on_device_and_in_place(name):
    x = logits((3, 7), seed=7)
    want = run(name, x)
    d_x = cuda.to_device(x)
    got = run(name, d_x)  # no target: chosen from the device array
    assert cuda.devicearray.is_cuda_ndarray(got)
    np.testing.assert_allclose(got.copy_to_host(), want, **TOL[np.float64])
    np.testing.assert_array_equal(d_x.copy_to_host(), x)  # input untouched
    assert run(name, d_x, out=d_x) is d_x
    np.testing.assert_allclose(d_x.copy_to_host(), want, **TOL[np.float64])


def test_topk_ties_take_the_lowest_indices():
    x = np.array([[1.0, 3.0, 2.0, 3.0, 2.0, 2.0, 0.0, 2.0, 2.0]])
    for k in range(1, x.shape[1] + 1):
        got = numsoft.topk_softmax(x, k=k, target="cuda")
        np.testing.assert_allclose(got, numsoft.topk_softmax(x, k=k), rtol=1e-13, atol=1e-15)
        assert np.count_nonzero(got) == k


@pytest.mark.parametrize("axis", [None, (0, 1), 0])
def test_topk_ties_by_index_in_any_memory_layout(axis):
    """A Fortran-ordered array (host or device) cuts ties at the lowest C index too."""
    x = np.random.default_rng(2).integers(0, 2, size=(4, 3)).astype(np.float64)
    want = numsoft.topk_softmax(x, k=3, axis=axis)
    f = np.asfortranarray(x)
    np.testing.assert_array_equal(numsoft.topk_softmax(f, k=3, axis=axis, target="cuda"), want)
    got = numsoft.topk_softmax(cuda.to_device(f), k=3, axis=axis)
    np.testing.assert_array_equal(got.copy_to_host(), want)


def test_entmax_alpha_limits_and_errors():
    x = logits((2, 9), seed=9)
    for alpha in (1.0, 2.0):
        got = numsoft.entmax(x, alpha=alpha, target="cuda")
        np.testing.assert_allclose(got, numsoft.entmax(x, alpha=alpha), rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="alpha"):
        numsoft.entmax(x, alpha=0.5, target="cuda")
    with pytest.raises(ValueError, match="k"):
        numsoft.topk_softmax(x, k=10, target="cuda")
    with pytest.raises(ValueError, match="target"):
        numsoft.sparsemax(x, target="tpu")


@pytest.mark.parametrize(
    "kw",
    [dict(axis=2), dict(axis=(1, 1)), dict(temperature=0.0), dict(dtype=np.int32),
     dict(where=np.ones(3, dtype=bool)), dict(out=np.empty((2, 6))),
     dict(out=np.empty((2, 7), dtype=np.float32))],
    ids=lambda kw: next(iter(kw)),
)  # fmt: skip
def test_same_errors_as_cpu(kw):
    # The variants go through the same argument handling on both targets.
    assert_same_error_on_the_gpu(numsoft.sparsemax, logits((2, 7)), kw)
