"""The public functions called inside a user's @numba.njit function (SPEC §6)."""

import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.special as sps

import numsoft


@numba.njit
def _user_kernel(x, out):
    p = numsoft.softmax(x, axis=0)
    lp = numsoft.log_softmax(x, temperature=2.0, algorithm="online")
    numsoft.softmax(x, axis=-1, out=out, algorithm="two-pass")
    lse = numsoft.logsumexp(x, axis=1)
    lse_keep = numsoft.logsumexp(x, axis=0, keepdims=True)
    return p, lp, lse, lse_keep


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_njit_callers_match_python_api(dtype):
    # rows longer than rows.TILE_MAX_N: the same kernels inside and outside @njit
    x = np.random.default_rng(0).normal(size=(5, 17)).astype(dtype)
    out = np.empty_like(x)
    p, lp, lse, lse_keep = _user_kernel(x, out)
    # "auto" is store inside @njit; outside, narrow columns take two-pass on AVX-512
    np.testing.assert_array_equal(p, numsoft.softmax(x, axis=0, algorithm="three-pass-store"))
    np.testing.assert_array_equal(lp, numsoft.log_softmax(x, temperature=2.0, algorithm="online"))
    np.testing.assert_array_equal(out, numsoft.softmax(x, algorithm="two-pass"))
    np.testing.assert_array_equal(lse, numsoft.logsumexp(x, axis=1))
    assert lse_keep.shape == (1, 17)
    np.testing.assert_allclose(
        lse_keep, sps.logsumexp(x.astype(float), axis=0, keepdims=True), rtol=2e-6
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_njit_short_rows_agree_with_python_api_to_a_few_ulp(dtype):
    # Rows of at most rows.TILE_MAX_N elements run in row tiles from Python and in the
    # row kernel inside @njit (docs/njit.md): equal up to rounding.
    x = np.random.default_rng(0).normal(size=(300, 7)).astype(dtype)
    out = np.empty_like(x)
    p, lp, lse, _ = _user_kernel(x, out)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(out, numsoft.softmax(x, algorithm="two-pass"), rtol=4 * eps)
    np.testing.assert_allclose(lp, numsoft.log_softmax(x, temperature=2.0, algorithm="online"),
                               rtol=4 * eps, atol=4 * eps)  # fmt: skip
    np.testing.assert_allclose(lse, numsoft.logsumexp(x, axis=1), rtol=4 * eps)


def test_njit_em_style_loop_and_3d():
    @numba.njit
    def responsibilities(logp):
        total = 0.0
        for _ in range(3):
            total += numsoft.logsumexp(logp)
        return total, numsoft.softmax(logp.reshape((1, 2, 3)), axis=1)

    logp = np.log(np.array([0.2, 0.3, 0.5, 0.1, 0.6, 0.3]))
    total, r3 = responsibilities(logp)
    np.testing.assert_allclose(total, 3 * sps.logsumexp(logp), rtol=1e-14)
    np.testing.assert_allclose(r3, sps.softmax(logp.reshape(1, 2, 3), axis=1), rtol=1e-14)


def test_njit_backward():
    @numba.njit
    def grads(y, dy):
        return numsoft.softmax_backward(y, dy), numsoft.log_softmax_backward(np.log(y), dy, axis=0)

    y = numsoft.softmax(np.random.default_rng(1).normal(size=(3, 4)))
    dy = np.ones((3, 4))
    g1, g2 = grads(y, dy)
    np.testing.assert_allclose(g1, numsoft.softmax_backward(y, dy), atol=1e-15)
    np.testing.assert_allclose(g2, numsoft.log_softmax_backward(np.log(y), dy, axis=0), atol=1e-15)


def test_njit_unsupported_arguments_name_the_argument():
    @numba.njit
    def with_where(x):
        return numsoft.softmax(x, where=x)

    @numba.njit
    def with_tuple_axis(x):
        return numsoft.softmax(x, axis=(0, 1))

    @numba.njit
    def with_int_array(x):
        return numsoft.logsumexp(x)

    @numba.njit
    def with_column_slice(a):
        return numsoft.softmax(a[:, 0])

    @numba.njit
    def with_axis_3(x):
        return numsoft.softmax(x, axis=3)

    # numsoft's own message, alone: not wrapped in Numba's report of overload candidates
    first = r"^numsoft\.(softmax|logsumexp) inside @njit: "
    with pytest.raises(TypeError, match=first + "where must be a boolean array with the shape"):
        with_where(np.ones((2, 2)))
    with pytest.raises(TypeError, match=first + "axis must be an int"):
        with_tuple_axis(np.ones((2, 2)))
    with pytest.raises(TypeError, match=first + "x must be .* int64: convert with x.astype"):
        with_int_array(np.ones(3, np.int64))
    with pytest.raises(TypeError, match=first + "x must .* np.ascontiguousarray"):
        with_column_slice(np.ones((3, 4)))
    # a constant axis is checked while typing (nothing compiles), as the Python API says
    with pytest.raises(np.exceptions.AxisError,
                       match="^axis 3 is out of bounds for array of dimension 2$"):  # fmt: skip
        with_axis_3(np.ones((2, 2)))


def test_njit_runtime_errors():
    @numba.njit
    def bad(x, algorithm, t):
        return numsoft.softmax(x, algorithm=algorithm, temperature=t)

    with pytest.raises(ValueError, match=r"algorithm must be one of .*got 'nope'"):
        bad(np.ones(3), "nope", 1.0)
    with pytest.raises(ValueError, match="temperature"):
        bad(np.ones(3), "auto", 0.0)

    @numba.njit
    def reduce_along(x, axis):
        return numsoft.logsumexp(x, axis=axis)

    with pytest.raises(np.exceptions.AxisError,
                       match="^axis -2 is out of bounds for array of dimension 1$"):  # fmt: skip
        reduce_along(np.ones(3), -2)


@numba.njit(parallel=True)
def _softmax_each_row_in_user_prange(x):
    out = np.empty_like(x)
    for i in numba.prange(x.shape[0]):
        out[i] = numsoft.softmax(x[i])
    return out


def test_njit_inside_a_user_prange_loop():
    # numsoft runs serially inside @njit, so no parallel region nests in the user's.
    x = np.random.default_rng(2).normal(size=(64, 33))
    np.testing.assert_allclose(_softmax_each_row_in_user_prange(x), numsoft.softmax(x), rtol=1e-15)


CACHED_CALLER = """
import numba
import numpy as np

import numsoft


@numba.njit(cache=True)
def user(x, labels):
    # one entry point of each kind: core, variant, fused (a variant's caller links and
    # re-optimizes the drivers it calls, ~10 s apiece, so the script keeps to few), and
    # calls by symbol (numsoft._linked), which the reload must define again
    return (
        numsoft.softmax(x, axis=0),
        numsoft.sparsemax(x),
        numsoft.cross_entropy(x, labels),
        numsoft.logsumexp(x[1]),
        numsoft.cross_entropy(x[2], labels[2]),
    )


x = np.random.default_rng(0).normal(size=(4, 6))
labels = np.array([0, 1, 2, 5])
got = user(x, labels)
want = (
    numsoft.softmax(x, axis=0),
    numsoft.sparsemax(x),
    numsoft.cross_entropy(x, labels),
    numsoft.logsumexp(x[1]),
    numsoft.cross_entropy(x[2], labels[2]),
)
for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-14)
print("hits", sum(user.stats.cache_hits.values()))
"""


def test_a_cache_true_caller_is_reloaded_by_a_second_process(tmp_path):
    # numba#8578: a cached caller of a parallel=True function crashes when reloaded;
    # the overloads call only serial drivers, so the user's cache entry is safe.
    script = tmp_path / "cached_caller.py"
    script.write_text(CACHED_CALLER)
    runs = [
        subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=600
        )  # fmt: skip
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert runs[0].stdout.split() == ["hits", "0"]
    assert int(runs[1].stdout.split()[1]) > 0, "the second process compiled again"


def test_docs_list_every_function_callable_in_njit():
    # Every public function has an @njit overload; docs/njit.md's table must say so.
    table = (Path(__file__).resolve().parents[1] / "docs" / "njit.md").read_text()
    table = table.split("## What is supported", 1)[1].split("##", 1)[0]
    missing = [name for name in numsoft.__all__ if f"`{name}`" not in table]
    assert not missing, f"docs/njit.md does not list {missing}"
