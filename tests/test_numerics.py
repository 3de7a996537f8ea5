"""The numerics contract of SPEC §1: special values, masks, empty axes, dtypes, layouts."""

import numpy as np
import pytest
import scipy.special as sps

import numsoft
import oracle
from oracle import ALGORITHMS

inf, nan = np.inf, np.nan


@pytest.fixture(params=ALGORITHMS)
def algorithm(request):
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values(algorithm, dtype):
    x = np.array(
        [
            [1.0, nan, 2.0, 3.0],  # NaN anywhere → all NaN
            [1.0, inf, 2.0, inf],  # +inf entries share the mass
            [-inf, -inf, -inf, -inf],  # all -inf → NaN (softmax), -inf (logsumexp)
            [-inf, 0.0, -inf, 0.0],  # -inf entries are exact zeros
            [inf, nan, -inf, 0.0],  # NaN wins over inf
            [3e38, -3e38, 0.0, 3e38],  # huge finite values: no overflow
        ],
        dtype=dtype,
    )
    p = numsoft.softmax(x, algorithm=algorithm)
    lp = numsoft.log_softmax(x, algorithm=algorithm)
    lse = numsoft.logsumexp(x, algorithm=algorithm)
    assert np.isnan(p[0]).all() and np.isnan(lp[0]).all() and np.isnan(lse[0])
    np.testing.assert_array_equal(p[1], [0, 0.5, 0, 0.5])
    np.testing.assert_allclose(lp[1], [-inf, np.log(0.5), -inf, np.log(0.5)], rtol=1e-6)
    assert lse[1] == inf
    assert np.isnan(p[2]).all() and np.isnan(lp[2]).all() and lse[2] == -inf
    np.testing.assert_array_equal(p[3], [0, 0.5, 0, 0.5])
    np.testing.assert_allclose(lp[3], [-inf, np.log(0.5), -inf, np.log(0.5)], rtol=1e-6)
    np.testing.assert_allclose(lse[3], np.log(2.0), rtol=1e-6)
    assert np.isnan(p[4]).all() and np.isnan(lse[4])
    np.testing.assert_array_equal(p[5], [0.5, 0, 0, 0.5])
    np.testing.assert_allclose(lse[5], dtype(3e38), rtol=1e-6)


@pytest.mark.parametrize("width", [40, 300, 1000])
def test_special_values_on_every_row_path(width):
    """The special rows of ``test_special_values`` repeated to ``width`` elements: rows
    of 40 run the short-row kernel inlined into the row loop, 300 the short-row kernel
    as a call, 1000 the long-row kernel (``rows.INLINE_ROW_BYTES``, ``passes.SUM_BLOCK``)."""
    base = np.array(
        [[1.0, nan, 2.0, 3.0], [1.0, inf, 2.0, inf], [-inf] * 4, [-inf, 0.0, -inf, 0.0],
         [3e38, -3e38, 0.0, 3e38], [0.5, -1.0, 2.0, 0.0]],
        dtype=np.float32,
    )  # fmt: skip
    x = np.tile(base, (1, width // 4))

    def share(pattern):  # 2/width at the positions of the pattern's two winners
        return np.where(np.tile(pattern, width // 4) == 1, np.float32(2 / width), 0)

    half = share([0, 1, 0, 1])
    p, lp, lse = numsoft.softmax(x), numsoft.log_softmax(x), numsoft.logsumexp(x)
    assert np.isnan(p[0]).all() and np.isnan(lp[0]).all() and np.isnan(lse[0])
    np.testing.assert_allclose(p[1], half, rtol=1e-6)
    assert lse[1] == inf
    assert np.isnan(p[2]).all() and np.isnan(lp[2]).all() and lse[2] == -inf
    np.testing.assert_allclose(p[3], half, rtol=1e-6)
    np.testing.assert_allclose(lse[3], np.log(width / 2), rtol=1e-6)
    np.testing.assert_allclose(p[4], share([1, 0, 0, 1]), rtol=1e-6)
    ref = oracle.softmax(x[5:], axis=-1)
    np.testing.assert_allclose(p[5:], ref, rtol=2e-6)
    np.testing.assert_allclose(lse[5], oracle.logsumexp(x[5]), rtol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_short_rows_by_the_group(dtype):
    """Short rows take their logs 16 at a time (``three_pass.logsumexp_short_rows_three_pass``):
    special rows at a group's first and last place, in full groups and a partial one,
    keep their values, and the regular rows around them match the oracle."""
    rng = np.random.default_rng(21)
    x = (4 * rng.standard_normal((41, 24))).astype(dtype)
    x[0, 3] = nan  # first row of the first group
    x[15, :] = -inf  # last row of the first group
    x[16, 5] = inf  # first row of the second group
    x[40, :] = -inf  # the partial group's only row
    x[33, :5] = -inf  # a regular row with masked entries
    lse = numsoft.logsumexp(x, axis=-1)
    assert np.isnan(lse[0]) and lse[15] == -inf and lse[16] == inf and lse[40] == -inf
    regular = np.setdiff1d(np.arange(41), [0, 15, 16, 40])
    ref = oracle.logsumexp(x[regular], axis=-1)
    rtol = 2e-6 if dtype == np.float32 else 4e-15
    np.testing.assert_allclose(lse[regular], ref, rtol=rtol)
    t = numsoft.logsumexp(x[regular], axis=-1, temperature=0.25)
    np.testing.assert_allclose(t, oracle.logsumexp(x[regular], temperature=0.25), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_short_rows_pipelined_across_rows(dtype, log):
    """Rows of at most 256 bytes run software-pipelined: row r+1's max, row r's
    exponentials and row r-1's output in one step
    (``three_pass.softmax_inline_rows_three_pass_store``). Each row's output must be
    the one it gets alone (bit for bit), with special rows first, last and next to
    regular ones, out of place and in place."""
    rng = np.random.default_rng(22)
    x = (4 * rng.standard_normal((37, 24))).astype(dtype)
    x[0, 3] = nan  # first row special, its successor regular
    x[7, :] = -inf  # special between two regular rows
    x[8, 2] = inf
    x[20, :5] = -inf  # regular with masked entries
    x[36, 1] = nan  # last row special after a regular one
    f = numsoft.log_softmax if log else numsoft.softmax
    alone = np.concatenate([f(x[i : i + 1]) for i in range(len(x))])
    np.testing.assert_array_equal(f(x), alone)
    inplace = x.copy()
    f(inplace, out=inplace)
    np.testing.assert_array_equal(inplace, alone)
    regular = np.setdiff1d(np.arange(37), [0, 7, 8, 36])
    ref = (oracle.log_softmax if log else oracle.softmax)(x[regular], axis=-1)
    rtol = 2e-6 if dtype == np.float32 else 4e-15
    # log outputs near 0 carry the absolute error of x - m - log Σ (|x - m| up to ~20)
    np.testing.assert_allclose(alone[regular], ref, rtol=rtol, atol=20 * rtol if log else 0)


def test_huge_and_tiny_logits(algorithm):
    x = np.array([[1e30, 1e30 - 1e15, -1e30], [1e-310, -1e-310, 0.0], [700.0, 710.0, 720.0]])
    p = numsoft.softmax(x, algorithm=algorithm)
    np.testing.assert_allclose(p[0], [1, 0, 0])
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-15)
    np.testing.assert_allclose(p[2], sps.softmax(x[2]), rtol=1e-13)
    np.testing.assert_allclose(numsoft.logsumexp(x[2], algorithm=algorithm), sps.logsumexp(x[2]))


def test_no_warnings_anywhere(algorithm):
    # pytest turns RuntimeWarning into errors (pyproject); also check NumPy's error state.
    x = np.array([[inf, -inf, nan], [-inf, -inf, -inf], [inf, inf, 1.0]])
    with np.errstate(all="raise"):
        numsoft.softmax(x, algorithm=algorithm)
        numsoft.log_softmax(x, algorithm=algorithm)
        numsoft.logsumexp(x, algorithm=algorithm)
        numsoft.softmax(x, where=np.isfinite(x), algorithm=algorithm)


def test_where_mask(algorithm):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 8))
    mask = rng.uniform(size=(5, 8)) > 0.4
    mask[2] = False  # a fully masked row
    mask[3] = [True] + [False] * 7
    x[~mask] = nan  # whatever hides under the mask must not leak
    x[0, ~mask[0]] = inf
    p = numsoft.softmax(x, where=mask, algorithm=algorithm)
    lp = numsoft.log_softmax(x, where=mask, algorithm=algorithm)
    lse = numsoft.logsumexp(x, where=mask, algorithm=algorithm)
    for i in range(5):
        if not mask[i].any():
            np.testing.assert_array_equal(p[i], 0.0)
            np.testing.assert_array_equal(lp[i], -inf)
            assert lse[i] == -inf
            continue
        xi = x[i, mask[i]]
        np.testing.assert_allclose(p[i, mask[i]], oracle.softmax(xi).astype(float), rtol=1e-13)
        np.testing.assert_array_equal(p[i, ~mask[i]], 0.0)
        np.testing.assert_allclose(lp[i, mask[i]], oracle.log_softmax(xi).astype(float), atol=1e-13)
        np.testing.assert_array_equal(lp[i, ~mask[i]], -inf)
        np.testing.assert_allclose(lse[i], float(oracle.logsumexp(xi)), rtol=1e-14)


def test_where_broadcasts_and_matches_scipy_where():
    x = np.random.default_rng(1).normal(size=(3, 4, 5))
    mask = np.array([True, False, True, True, False])
    np.testing.assert_allclose(
        numsoft.logsumexp(x, axis=(0, 2), where=mask),
        sps.logsumexp(x[..., mask], axis=(0, 2)),
        rtol=1e-14,
    )
    p = numsoft.softmax(x, axis=0, where=mask)
    np.testing.assert_allclose(p[..., mask], sps.softmax(x[..., mask], axis=0), rtol=1e-13)
    np.testing.assert_array_equal(p[..., ~mask], 0.0)


def test_empty_and_length_one_axes(algorithm):
    e = np.zeros((3, 0))
    assert numsoft.softmax(e, algorithm=algorithm).shape == (3, 0)
    assert numsoft.log_softmax(e, axis=0, algorithm=algorithm).shape == (3, 0)
    np.testing.assert_array_equal(numsoft.logsumexp(e, algorithm=algorithm), [-inf] * 3)
    assert numsoft.logsumexp(e, axis=0).shape == (0,)
    one = np.array([[5.0], [-inf], [nan]])
    np.testing.assert_array_equal(numsoft.softmax(one, algorithm=algorithm), [[1.0], [nan], [nan]])
    np.testing.assert_array_equal(numsoft.logsumexp(one, algorithm=algorithm), [5.0, -inf, nan])
    assert float(numsoft.softmax(np.float64(3.0), axis=None)) == 1.0


@pytest.mark.parametrize(
    "in_dtype, kw, expected",
    [
        (np.int64, {}, np.float64),
        (np.int8, {}, np.float64),
        (np.bool_, {}, np.float64),
        (np.float16, {}, np.float32),
        (np.float32, {}, np.float32),
        (np.float64, {}, np.float64),
        (np.float64, {"dtype": np.float32}, np.float32),
        (np.float32, {"dtype": np.float64}, np.float64),
        (np.float16, {"dtype": np.float16}, np.float16),
    ],
)
def test_dtype_rules(in_dtype, kw, expected):
    x = np.array([[0, 1, 2], [3, 1, 0]]).astype(in_dtype)
    for f in (numsoft.softmax, numsoft.log_softmax, numsoft.logsumexp):
        r = f(x, **kw)
        assert r.dtype == expected, f
    ref = oracle.softmax(x.astype(np.float64))
    tol = 1e-3 if expected == np.float16 else 2e-6
    np.testing.assert_allclose(numsoft.softmax(x, **kw).astype(float), ref.astype(float), rtol=tol)


def test_input_is_never_modified_and_read_only_works(algorithm):
    x = np.random.default_rng(2).normal(size=(4, 6))
    x.flags.writeable = False
    copy = x.copy()
    numsoft.softmax(x, algorithm=algorithm)
    numsoft.log_softmax(x, axis=0, algorithm=algorithm)
    numsoft.logsumexp(x, where=x > 0, algorithm=algorithm)
    np.testing.assert_array_equal(x, copy)


@pytest.mark.parametrize("axis", [-1, 0])
def test_out_and_in_place(algorithm, axis):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 40)).astype(np.float32)
    ref = numsoft.softmax(x, axis=axis, algorithm=algorithm)
    out = np.empty_like(x)
    assert numsoft.softmax(x, axis=axis, out=out, algorithm=algorithm) is out
    np.testing.assert_array_equal(out, ref)
    inplace = x.copy()
    assert numsoft.softmax(inplace, axis=axis, out=inplace, algorithm=algorithm) is inplace
    np.testing.assert_array_equal(inplace, ref)
    fortran_out = np.asfortranarray(np.empty_like(x))
    numsoft.softmax(x, axis=axis, out=fortran_out, algorithm=algorithm)
    np.testing.assert_array_equal(fortran_out, ref)


@pytest.mark.parametrize("function", [numsoft.softmax, numsoft.log_softmax])
def test_store_pass_gives_the_same_bits_in_every_output_layout(function):
    # Rows of several sum blocks: three-pass-store writes a unit-stride y in its exp
    # loop and any other y (in place, strided) through a stack block; the sums, and so
    # the results, must not depend on which.
    x = np.random.default_rng(8).normal(size=(3, 5000)).astype(np.float32)
    ref = function(x, algorithm="three-pass-store")
    inplace = x.copy()
    function(inplace, out=inplace, algorithm="three-pass-store")
    strided = np.empty((3, 10000), np.float32)[:, ::2]
    function(x, out=strided, algorithm="three-pass-store")
    fortran = np.asfortranarray(np.empty_like(x))
    function(x, out=fortran, algorithm="three-pass-store")
    for out in (inplace, strided, fortran):
        np.testing.assert_array_equal(out, ref)
    if function is numsoft.softmax:
        oracle.assert_close_prob(ref, oracle.softmax(x), np.float32)
    else:
        oracle.assert_close_log(ref, oracle.log_softmax(x), np.float32)


def test_out_overlapping_but_not_identical():
    x = np.arange(12.0).reshape(3, 4) / 7
    expected = numsoft.softmax(x.copy(), axis=0)
    buf = np.concatenate([x, x])
    src = buf[1:4]
    src[...] = x
    numsoft.softmax(src, axis=0, out=buf[0:3])
    np.testing.assert_allclose(buf[0:3], expected, rtol=1e-15)


def test_float16_out_and_logsumexp_out():
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    out16 = np.empty((3, 4), np.float16)
    numsoft.softmax(x.astype(np.float16), out=out16, dtype=np.float16)
    np.testing.assert_allclose(out16, sps.softmax(x, axis=-1), rtol=2e-3)
    lse_out = np.empty((3, 1))
    r = numsoft.logsumexp(x, out=lse_out, keepdims=True)
    assert r is lse_out
    np.testing.assert_allclose(lse_out, sps.logsumexp(x, axis=-1, keepdims=True), rtol=1e-14)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [-1, 0, 1, (0, 2), None])
@pytest.mark.parametrize("order", ["C", "F"])
def test_logsumexp_out_gives_the_fresh_results_bits(axis, keepdims, order):
    # out= is written by the kernels directly when its memory is the result buffer, and
    # through a copy otherwise (F order, a permuted result, a result in float32).
    x = np.asarray(np.random.default_rng(5).normal(size=(3, 4, 5)), order=order)
    fresh = numsoft.logsumexp(x, axis=axis, keepdims=keepdims)
    for out in (np.empty_like(fresh, order="C"), np.empty_like(fresh, order="F")):
        assert numsoft.logsumexp(x, axis=axis, keepdims=keepdims, out=out) is out
        np.testing.assert_array_equal(out, fresh)


def test_logsumexp_out_overlapping_x():
    x = np.random.default_rng(6).normal(size=(6, 5))
    expected = numsoft.logsumexp(x, axis=1)
    buf = x.copy()
    # the result's memory is x's first row and a bit of the second: written only after
    # every row is read
    out = buf.reshape(-1)[:6]
    assert numsoft.logsumexp(buf, axis=1, out=out) is out
    np.testing.assert_array_equal(out, expected)


def test_lists_scalars_and_0d():
    np.testing.assert_allclose(numsoft.softmax([1, 2, 3]), sps.softmax([1.0, 2.0, 3.0]))
    assert float(numsoft.logsumexp(2.0, axis=None)) == 2.0
    with pytest.raises(np.exceptions.AxisError):
        numsoft.softmax(2.0)


@pytest.fixture
def tiny_last_level_cache(monkeypatch):
    """A 64 KiB last-level cache: outputs of a few hundred KiB are 'beyond the cache'."""
    from numsoft.cpu import auto, rows

    monkeypatch.setattr(auto, "last_level_cache_bytes", lambda: 64 << 10)
    rows._default_plans.clear()  # its plans depend on the cache size
    yield
    rows._default_plans.clear()


@pytest.mark.parametrize(
    ("shape", "axis", "algorithm", "log", "kernel"),
    [((1, 1 << 16), -1, "two-pass", False, "_write_chunks"),
     ((5, 20000), -1, "three-pass-reload", True, "softmax_rows"),
     ((5, 20000), -1, "three-pass-store", False, "softmax_rows"),
     ((600, 300), 0, "online", False, "write_column_chunks")],
    ids=["split-two-pass", "rows-reload-log", "rows-store", "column-chunks"],
)  # fmt: skip
def test_streamed_out_equals_a_new_output(tiny_last_level_cache, shape, axis, algorithm, log,
                                          kernel):  # fmt: skip
    """An ``out=`` beyond the cache is written by streaming stores (``auto.streams_output``);
    the values are those of the call that allocates (ordinary stores), bit for bit,
    whatever the output's alignment, with special rows and in place. three-pass-store
    then stores its exponentials in a scratch row (``softmax_row_three_pass_store_via``);
    the column chunks stream row by row, their per-column statistics cut with the rows
    (``passes.part``)."""
    from numsoft.cpu.paths import copies

    f = numsoft.log_softmax if log else numsoft.softmax
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    regular = list(range(shape[0]))
    if shape[0] > 1 and axis == -1:
        x[1, 17] = np.inf  # a special row between regular ones
        regular.remove(1)
    want = f(x, axis=axis, algorithm=algorithm)
    ref = (sps.log_softmax if log else sps.softmax)(x[regular].astype(np.float64), axis=axis)
    np.testing.assert_allclose(want[regular], ref, rtol=1e-5, atol=1e-6 if log else 0)
    for offset in (0, 1, 5):
        buf = np.zeros(x.size + offset, np.float32)
        out = buf[offset:].reshape(shape)
        assert f(x, axis=axis, algorithm=algorithm, out=out) is out
        np.testing.assert_array_equal(out, want)
    names = [k.py_func.__name__ for k in copies()]
    assert any(kernel in name and "STREAM_OUTPUT_1" in name for name in names)
    y = x.copy()
    f(y, axis=axis, algorithm=algorithm, out=y)  # in place
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(
    ("n", "log"), [(16, False), (32, False), (48, False), (32, True)],
    ids=["16", "32", "48", "32-log_softmax"],
)  # fmt: skip
def test_short_float32_rows_as_vector_lanes(n, log):
    """float32 softmax rows of 16·q elements go 16 rows at a time with the rows as
    vector lanes (``cpu.lane_tiles``) where the CPU has 16 float32 lanes: the oracle's
    values, a tile holding a special row (NaN, +inf, only -inf) computed row at a time
    as a lone row is, the rows after the last whole tile, and in place."""
    from numsoft.cpu import machine, rows

    f = numsoft.log_softmax if log else numsoft.softmax
    if machine.float32_lanes() >= 16:
        assert rows.path_constants(1, log, n, 4)["LANE_TILES"] == n // 16
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((16 * 7 + 5, n)) * 6).astype(np.float32)
    x[2, 3:7] = -np.inf  # masked entries in a regular row
    want = f(x.astype(np.float64))
    y = f(x)
    if log:  # log_softmax: accurate to an ulp of the largest |term| (x - m, log Σ)
        finite = np.isfinite(want)
        np.testing.assert_allclose(y[finite], want[finite], rtol=0, atol=2e-5)
        assert np.array_equal(np.isfinite(y), finite)
    else:
        rtol = oracle.RTOL[np.dtype(np.float32)] * 2
        np.testing.assert_allclose(y, want.astype(np.float32), rtol=rtol, atol=1e-30)
    x[20, 5], x[40, :], x[41, 1], x[16 * 7 + 2, 0] = np.nan, -np.inf, np.inf, np.inf
    y = f(x)
    for r in range(x.shape[0]):
        lone = f(x[r : r + 1])[0]
        if r in (20, 40, 41, 16 * 7 + 2):
            np.testing.assert_array_equal(y[r], lone)  # the row kernel's special path
        else:
            np.testing.assert_allclose(y[r], lone, rtol=4e-7, atol=4e-6 if log else 1e-30)
    z = x.copy()
    assert f(z, out=z) is z
    np.testing.assert_array_equal(z, y)
    # a temperature takes the general path (strided row views of the 3-D layout)
    hot = f(x[:32], temperature=2.0)
    np.testing.assert_allclose(hot, f(x[:32].astype(np.float64) / 2.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [16, 48])
def test_short_float32_rows_logsumexp_as_vector_lanes(n):
    """float32 logsumexp of rows of 16·q elements takes the softmax's lane tiles (16 rows
    at a time, ``cpu.lane_tiles.logsumexp_lane_tiles``): SciPy's float64 values, a tile
    with a special row computed as a lone row is, the rows after the last whole tile
    (here 5), and a temperature."""
    from numsoft.cpu import machine, rows

    if machine.float32_lanes() >= 16:
        assert rows.path_constants(1, False, n, 4)["LANE_TILES"] == n // 16
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((16 * 7 + 5, n)) * 6 + 40).astype(np.float32)
    x[2, 3:7] = -np.inf  # masked entries in a regular row
    want = sps.logsumexp(x.astype(np.float64), axis=-1)
    got = numsoft.logsumexp(x, axis=-1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6 / 40, atol=2e-6)  # 2e-6 of |m| ~ 40
    hot = numsoft.logsumexp(x, axis=-1, temperature=0.5)
    np.testing.assert_allclose(hot, 0.5 * sps.logsumexp(x / 0.5, axis=-1), rtol=0, atol=4e-6)
    x[20, 5], x[40, :], x[41, 1], x[16 * 7 + 2, 0] = np.nan, -np.inf, np.inf, np.inf
    got = numsoft.logsumexp(x, axis=-1)
    for r in range(x.shape[0]):
        lone = numsoft.logsumexp(x[r : r + 1], axis=-1)[0]
        if r in (20, 40, 41, 16 * 7 + 2):
            np.testing.assert_array_equal(got[r], lone)  # the row kernel's special path
        else:
            np.testing.assert_allclose(got[r], lone, rtol=0, atol=4e-6)
