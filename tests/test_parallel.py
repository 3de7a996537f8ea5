"""Drivers and vectorized passes: serial path, rows in parallel, long rows split across
threads, thread counts, and the accuracy of the blocked/lane accumulators on long rows."""

import numba
import numpy as np
import pytest

import numsoft
import oracle
from numsoft.cpu import rows, split
from numsoft.cpu.limits import SPLIT_MIN_ROW
from numsoft.cpu.online import merge_online, online_stats
from numsoft.cpu.passes import LAST_READ_FIRST_BYTES
from oracle import ALGORITHMS

inf, nan = np.inf, np.nan
THREADS = numba.config.NUMBA_NUM_THREADS
needs_two_threads = pytest.mark.skipif(THREADS < 2, reason="needs 2 threads")

#: A row long enough to be split across threads, and not a multiple of any block size;
#: on two threads each chunk's output pass takes two or more pieces, the last one short
#: (``passes.last_piece``).
LONG = 2 * (LAST_READ_FIRST_BYTES // 4) + 4099
assert LONG >= SPLIT_MIN_ROW


@pytest.fixture
def threads():
    """Run the test body with a chosen thread count, restoring it afterwards."""
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


def float64_softmax(x):
    """Float64 reference, enough for float32 results (the longdouble oracle is slow)."""
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_plan_rows_modes(threads):
    threads(min(2, THREADS))
    assert rows.plan_rows(4, 100) == (rows.SERIAL, 1)
    threads(1)
    assert rows.plan_rows(1, 1 << 24) == (rows.SERIAL, 1)
    if THREADS >= 2:
        threads(2)
        assert rows.plan_rows(1, SPLIT_MIN_ROW) == (rows.SPLIT, 2)
        assert rows.plan_rows(1000, 1000) == (rows.PARALLEL, 2)
        assert rows.plan_rows(1, SPLIT_MIN_ROW - 1)[0] == rows.PARALLEL


@needs_two_threads
@pytest.mark.parametrize(("shape", "expected"), [((96, 100), "serial"), ((96, 1100), "parallel")])
def test_a_call_with_one_task_runs_the_serial_twin(threads, monkeypatch, shape, expected):
    """96x100 along axis 0 is past SERIAL_MAX_ELEMENTS but one column block: one task,
    so the serial twin runs (its parallel driver is neither compiled nor entered)."""
    threads(2)
    calls = []
    real = rows.specialize

    class Recorder:
        def __init__(self, driver):
            self.driver = driver

        def __call__(self, *args):
            calls.append("parallel")
            return self.driver(*args)

        def serial(self, *args):
            calls.append("serial")
            return self.driver.serial(*args)

    monkeypatch.setattr(rows, "specialize", lambda kernel, **c: Recorder(real(kernel, **c)))
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y = numsoft.softmax(x, axis=0)
    assert calls == [expected]
    np.testing.assert_allclose(y, float64_softmax(x.T).T, rtol=2e-6, atol=0)


def test_chunk_bounds_cover_the_row():
    for n, chunks in [(LONG, 2), (LONG, 3), (1000, 7), (17, 2)]:
        bounds = [split.chunk_bounds(c, chunks, n) for c in range(chunks)]
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        for (_, hi), (lo, _) in zip(bounds, bounds[1:]):
            assert hi == lo and lo % 16 == 0


@needs_two_threads
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_row_matches_one_thread_and_oracle(threads, dtype):
    x = (np.random.default_rng(0).standard_normal((1, LONG)) * 4).astype(dtype)
    ref = float64_softmax(x)
    lse_ref = np.log(np.exp(x.astype(np.float64)).sum())
    rtol = oracle.RTOL[np.dtype(dtype)]
    for algorithm in ALGORITHMS:
        got = {}
        for t in (1, 2):
            threads(t)
            got[t] = (
                numsoft.softmax(x, algorithm=algorithm),
                numsoft.log_softmax(x, algorithm=algorithm),
                numsoft.logsumexp(x, algorithm=algorithm),
            )
        for t in (1, 2):
            p, lp, lse = got[t]
            oracle.assert_close_prob(p, ref, dtype)  # the float32 gap rule applies
            np.testing.assert_allclose(lp, np.log(ref), rtol=0, atol=50 * rtol)
            np.testing.assert_allclose(lse, lse_ref, rtol=rtol)
        # Split and serial runs differ only in summation order.
        np.testing.assert_allclose(got[1][0], got[2][0], rtol=2 * rtol)


@needs_two_threads
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_split_row_special_values(threads, algorithm):
    threads(2)
    n = LONG
    base = np.random.default_rng(1).standard_normal(n)
    lead_masked = base.copy()
    lead_masked[: n // 2 + 100] = -inf  # the first chunk holds only -inf
    nan_late = base.copy()
    nan_late[-3] = nan
    inf_second = base.copy()
    inf_second[n - 10] = inf
    inf_second[n - 20] = inf
    x = np.stack([lead_masked, nan_late, inf_second, np.full(n, -inf)])[:, None, :]
    for r in range(x.shape[0]):  # one row per call, so each is split
        p = numsoft.softmax(x[r], algorithm=algorithm)[0]
        lse = numsoft.logsumexp(x[r], algorithm=algorithm)[0]
        if r == 0:
            keep = slice(n // 2 + 100, None)
            np.testing.assert_array_equal(p[: n // 2 + 100], 0.0)
            np.testing.assert_allclose(p[keep], float64_softmax(base[keep]), rtol=1e-13)
            np.testing.assert_allclose(lse, np.log(np.exp(base[keep]).sum()), rtol=1e-14)
        elif r == 1:
            assert np.isnan(p).all() and np.isnan(lse)
        elif r == 2:
            expected = np.zeros(n)
            expected[[n - 20, n - 10]] = 0.5
            np.testing.assert_array_equal(p, expected)
            assert lse == inf
        else:
            assert np.isnan(p).all() and lse == -inf


@needs_two_threads
def test_split_two_pass_falls_back_out_of_domain(threads):
    threads(2)
    x = np.random.default_rng(2).standard_normal((1, LONG)).astype(np.float32)
    x[0, 5] = 5000.0  # beyond the float32 (M, E) split's range: online path
    p = numsoft.softmax(x, algorithm="two-pass")
    expected = np.zeros(LONG, np.float32)
    expected[5] = 1.0
    np.testing.assert_array_equal(p[0], expected)
    np.testing.assert_allclose(numsoft.logsumexp(x, algorithm="two-pass"), [5000.0])


@needs_two_threads
@pytest.mark.parametrize("axis", [-1, 0])
def test_many_rows_one_vs_two_threads(threads, axis):
    x = np.random.default_rng(3).standard_normal((300, 257)).astype(np.float32)
    ref = oracle.softmax(x, axis=axis).astype(np.float64)
    for algorithm in ALGORITHMS:
        threads(1)
        one = numsoft.softmax(x, axis=axis, algorithm=algorithm)
        threads(2)
        two = numsoft.softmax(x, axis=axis, algorithm=algorithm)
        # Rows are independent: the thread count changes nothing.
        np.testing.assert_array_equal(one, two)
        np.testing.assert_allclose(two, ref, rtol=2e-6)


def test_serial_path_small_input(threads):
    threads(THREADS)
    x = np.random.default_rng(4).standard_normal((3, 50))
    assert rows.plan_rows(*x.shape)[0] == rows.SERIAL
    for algorithm in ALGORITHMS:
        np.testing.assert_allclose(
            numsoft.softmax(x, algorithm=algorithm), oracle.softmax(x), rtol=1e-13
        )


@pytest.mark.parametrize("order", ["random", "ascending", "descending"])
def test_long_float32_row_accuracy(order):
    # 2^22 elements: every block size and lane count is exercised many times over; an
    # ascending row rescales the online sum at every block.
    x = np.random.default_rng(5).uniform(-8.0, 8.0, 1 << 22).astype(np.float32)
    if order != "random":
        x.sort()
        x = x if order == "ascending" else x[::-1].copy()
    ref = float64_softmax(x[None])[0]
    for algorithm in ALGORITHMS:
        p = numsoft.softmax(x, algorithm=algorithm)
        np.testing.assert_allclose(p, ref, rtol=2e-6, atol=0, err_msg=algorithm)


def test_online_stats_blocks_and_merge():
    x = np.random.default_rng(6).standard_normal(10_000)
    x[:3000] = -inf
    m, d = online_stats(x, 1.0)
    assert m == x.max()
    np.testing.assert_allclose(d, np.exp(x - m).sum(), rtol=1e-14)
    m1, d1 = online_stats(x[:3000], 1.0)  # only -inf
    assert (m1, d1) == (-inf, 0.0)
    m2, d2 = online_stats(x[3000:], 1.0)
    assert merge_online(m1, d1, m2, d2, 1.0) == (m2, d2)
    assert merge_online(m2, d2, m1, d1, 1.0) == (m2, d2)
    assert merge_online(m1, d1, m1, d1, 1.0) == (-inf, 0.0)
    mm, dm = merge_online(*online_stats(x[:6000], 1.0), *online_stats(x[6000:], 1.0), 1.0)
    assert mm == m
    np.testing.assert_allclose(dm, d, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_blocks_special_values_and_layouts(dtype):
    # axis=0 of a C-ordered array: the column-block kernels, with special columns.
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((37, 600)) * 3).astype(dtype)  # two blocks of columns
    x[:, 3] = nan
    x[5, 7] = inf
    x[:, 9] = -inf
    x[:20, 11] = -inf
    x[[2, 4], 513] = inf
    big = x.astype(np.float64)
    with np.errstate(invalid="ignore"):  # the reference itself meets NaN and inf - inf
        ref = float64_softmax(big.T).T
    ref[:, [3, 9]] = nan
    ref[:, 7] = x[:, 7] == inf
    ref[:, 513] = np.where(x[:, 513] == inf, 0.5, 0.0)
    rtol = oracle.RTOL[np.dtype(dtype)]
    for algorithm in ALGORITHMS:
        p = numsoft.softmax(x, axis=0, algorithm=algorithm)
        np.testing.assert_allclose(p, ref, rtol=rtol, err_msg=algorithm)
        inplace = x.copy()
        numsoft.softmax(inplace, axis=0, out=inplace, algorithm=algorithm)
        np.testing.assert_array_equal(inplace, p)
        strided = numsoft.softmax(np.repeat(x, 2, axis=1)[:, ::2], axis=0, algorithm=algorithm)
        np.testing.assert_array_equal(strided, p)
        lse = numsoft.logsumexp(x, axis=0, algorithm=algorithm)
        finite = [0, 1, 11, 599]
        expected = np.log(np.exp(big[:, finite] - big[:, finite].max(0)).sum(0))
        np.testing.assert_allclose(lse[finite], expected + big[:, finite].max(0), rtol=rtol)
        assert np.isnan(lse[3]) and lse[7] == inf and lse[9] == -inf


def test_column_blocks_two_pass_out_of_domain_falls_back():
    x = np.random.default_rng(8).standard_normal((50, 40)).astype(np.float32)
    x[3, 5] = 5000.0
    p = numsoft.softmax(x, axis=0, algorithm="two-pass")
    np.testing.assert_allclose(p, float64_softmax(x.astype(np.float64).T).T, rtol=2e-6)


@pytest.fixture
def tiny_cache(monkeypatch):
    """A 64 KiB last-level cache: the out-of-cache column path runs on small arrays.
    Yields the list of what each slab's ``softmax_slab`` returned."""
    from numsoft.cpu import auto

    monkeypatch.setattr(auto, "last_level_cache_bytes", lambda: 64 << 10)
    returned = []

    def recording(real):
        def slab(*args):
            returned.append(real(*args))
            return returned[-1]

        return slab

    for name in ("softmax_slab", "logsumexp_slab"):
        monkeypatch.setattr(rows, name, recording(getattr(rows, name)))
    return returned


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_chunks_out_of_cache(tiny_cache, threads, dtype, monkeypatch):
    # axis=0 out of cache: full-width chunks of rows, online partials (column_chunks);
    # 1300 rows are three chunks, the last one a different size, each written in pieces
    # of 100 rows from the last (a short one) back.
    from numsoft.cpu import column_chunks

    assert column_chunks.chunk_count(1300) == 3
    monkeypatch.setattr(column_chunks, "LAST_READ_FIRST_BYTES", 100 * 70 * np.dtype(dtype).itemsize)
    x = (np.random.default_rng(9).standard_normal((1300, 70)) * 4).astype(dtype)
    assert column_chunks.piece_rows(x) == 100
    x[:700, 5] = -inf  # a chunk of only -inf in a regular column
    ref = float64_softmax(x.astype(np.float64).T).T
    rtol = oracle.RTOL[np.dtype(dtype)]
    threads(1)
    one = numsoft.softmax(x, axis=0)
    oracle.assert_close_prob(one, ref, dtype)  # logit gaps reach ~35 here
    log = numsoft.log_softmax(x, axis=0)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(log, np.log(ref), rtol=rtol, atol=rtol)
    threads(min(2, THREADS))
    np.testing.assert_array_equal(numsoft.softmax(x, axis=0), one)  # chunks fixed by shape
    inplace = x.copy()
    numsoft.softmax(inplace, axis=0, out=inplace)
    np.testing.assert_array_equal(inplace, one)
    x3 = np.stack([x, x[::-1]])  # two slabs: axis=1 of a 3-D array
    np.testing.assert_array_equal(numsoft.softmax(x3, axis=1)[0], one)
    big = x.astype(np.float64)
    lse = np.log(np.exp(big - big.max(0)).sum(0)) + big.max(0)
    np.testing.assert_allclose(numsoft.logsumexp(x, axis=0), lse, rtol=rtol)
    hot = numsoft.softmax(x, axis=0, temperature=0.25)  # exp(4(x - m)) down to 1e-38
    ref = float64_softmax(4 * x.astype(np.float64).T).T
    np.testing.assert_allclose(hot, ref, rtol=rtol, atol=1e-12)
    assert tiny_cache == [True] * 8  # every call and slab took the chunks


def test_column_chunks_leave_special_columns_to_the_blocks(tiny_cache):
    x = np.random.default_rng(10).standard_normal((1300, 40)).astype(np.float32)
    x[1000, 3] = nan
    x[[10, 900], 7] = inf
    got = numsoft.softmax(x, axis=0)
    lse = numsoft.logsumexp(x, axis=0)
    assert tiny_cache == [False, False]  # left to the column blocks, nothing written
    assert np.isnan(lse[3]) and lse[7] == inf
    assert np.isnan(got[:, 3]).all()
    np.testing.assert_array_equal(got[:, 7], np.where(x[:, 7] == inf, 0.5, 0.0))
    regular = [0, 1, 39]
    ref = float64_softmax(x[:, regular].astype(np.float64).T).T
    np.testing.assert_allclose(got[:, regular], ref, rtol=2e-6)


def test_a_pool_slow_to_wake_keeps_mid_size_calls_on_one_thread(monkeypatch):
    # GNU OpenMP and workqueue (threads.SLOW_POOLS): up to the floor every call stays
    # on one thread, the core functions' (whatever the plan sets) and the variants'
    from numsoft.cpu import limits, threads

    for name in ("_one_thread_floor", "serial_max_elements", "variant_serial_max_elements"):
        monkeypatch.setattr(limits, name, getattr(limits, name))
    monkeypatch.setattr(threads, "usable_threads", lambda: 2)
    limits.use(limits.BUILTIN)
    assert threads.core_threads_for(1 << 19) == threads.threads_for(1 << 19) == 2
    limits.keep_on_one_thread(limits.SLOW_POOL_SERIAL_MAX_ELEMENTS)
    assert threads.core_threads_for(1 << 19) == threads.threads_for(1 << 19) == 1
    limits.use({**limits.BUILTIN, "serial_max_elements": 4096})  # a plan's, read later
    assert threads.core_threads_for(1 << 20) == 1
    assert threads.core_threads_for((1 << 20) + 1) == 2
    limits.use(limits.BUILTIN)
