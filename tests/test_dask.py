"""numsoft.dask against independent references, for rows within one chunk and split across chunks.

References are written here in np.longdouble (finite inputs) or from the rules of
SPEC §1 (special values); the Dask results must match them whatever the chunking.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import dask  # noqa: E402
from dask.core import get_deps  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import numsoft  # noqa: E402
import numsoft.dask as nd  # noqa: E402

RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}
SHAPE = (4, 6, 9)
#: Whole rows in every block, and every axis split (some chunks of one element).
CHUNKINGS = {"one-chunk": SHAPE, "split": (3, 4, 2)}
AXES = [-1, 0, 1, (0, 2), None]


# ---------------------------------------------------------------- references


def _axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


def ref_log_softmax(x, axis=-1, temperature=1.0):
    z = np.asarray(x, dtype=np.longdouble) / np.longdouble(temperature)
    axis = _axes(axis, z.ndim)
    d = z - np.max(z, axis=axis, keepdims=True)
    return d - np.log(np.sum(np.exp(d), axis=axis, keepdims=True))


def ref_softmax(x, axis=-1, temperature=1.0):
    return np.exp(ref_log_softmax(x, axis, temperature))


def ref_logsumexp(x, axis=-1, temperature=1.0, keepdims=False):
    z = np.asarray(x, dtype=np.longdouble) / np.longdouble(temperature)
    axis = _axes(axis, z.ndim)
    m = np.max(z, axis=axis, keepdims=True)
    r = (m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))) * temperature
    return r if keepdims else np.squeeze(r, axis=axis)


def ref_special_softmax(row, log=False):
    """One 1-D row with NaN/±inf under the rules of SPEC §1."""
    row = np.asarray(row, dtype=np.float64)
    if np.isnan(row).any() or np.all(row == -np.inf):
        return np.full(row.shape, np.nan)
    k = np.count_nonzero(row == np.inf)
    if k:
        hit = row == np.inf
        if log:
            return np.where(hit, -np.log(k), -np.inf)
        return np.where(hit, 1.0 / k, 0.0)
    out = ref_log_softmax(row).astype(np.float64)
    return out if log else np.exp(out)


def ref_special_logsumexp(row):
    row = np.asarray(row, dtype=np.float64)
    if np.isnan(row).any():
        return np.nan
    if (row == np.inf).any():
        return np.inf
    if np.all(row == -np.inf):
        return -np.inf
    return float(ref_logsumexp(row))


def assert_close(y, ref, dtype):
    dtype = np.dtype(dtype)
    assert y.dtype == dtype
    rtol = RTOL[dtype]
    np.testing.assert_allclose(y.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=rtol)


def logits(dtype, shape=SHAPE, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


# ---------------------------------------------------------------- core functions


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("axis", AXES)
def test_softmax_and_log_softmax_match_reference(dtype, chunking, axis):
    x = logits(dtype)
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    y = nd.softmax(dx, axis=axis)
    assert isinstance(y, da.Array) and y.chunks == dx.chunks
    assert_close(y.compute(), ref_softmax(x, axis), dtype)
    assert_close(nd.log_softmax(dx, axis=axis).compute(), ref_log_softmax(x, axis), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_reference(dtype, chunking, axis, keepdims):
    x = logits(dtype)
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    got = nd.logsumexp(dx, axis=axis, keepdims=keepdims)
    ref = ref_logsumexp(x, axis, keepdims=keepdims)
    assert got.shape == ref.shape
    assert_close(np.asarray(got.compute()), np.asarray(ref), dtype)


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("temperature", [0.05, 7.0])
def test_temperature(chunking, temperature):
    x = logits(np.float64)
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    for axis in (-1, (0, 1)):
        ref = ref_softmax(x, axis, temperature)
        assert_close(nd.softmax(dx, axis, temperature=temperature).compute(), ref, np.float64)
        ref = ref_logsumexp(x, axis, temperature)
        got = nd.logsumexp(dx, axis, temperature=temperature).compute()
        assert_close(got, ref, np.float64)


def test_long_row_split_into_many_chunks_float32():
    # The merge of many partials (a tree of several levels) keeps float32 accuracy.
    x = logits(np.float32, shape=(3, 4000), seed=1, scale=5.0)
    dx = da.from_array(x, chunks=(2, 37))
    assert_close(nd.softmax(dx).compute(), ref_softmax(x), np.float32)
    assert_close(nd.logsumexp(dx).compute(), ref_logsumexp(x), np.float32)


def test_large_offsets_keep_float32_accuracy():
    # exp((x - M)/t) with M an element of x: a float32 lse of magnitude 1e4 would not.
    x = (logits(np.float32, shape=(2, 64), seed=2) + np.float32(1e4)).astype(np.float32)
    dx = da.from_array(x, chunks=(1, 5))
    assert_close(nd.softmax(dx).compute(), ref_softmax(x), np.float32)


# ---------------------------------------------------------------- special values

SPECIAL_ROWS = np.array(
    [
        [1.0, 2.0, 3.0, np.nan, 4.0, 5.0],  # NaN in one chunk → all NaN
        [np.inf, 0.0, 1.0, 2.0, 3.0, np.inf],  # +inf in the first and last chunk
        [0.0, 1.0, np.inf, 2.0, 3.0, 4.0],  # one +inf
        [-np.inf] * 6,  # all -inf → NaN (logsumexp -inf)
        [-np.inf, -np.inf, -np.inf, 0.0, 1.0, -np.inf],  # -inf pieces, finite elsewhere
        [np.nan, np.inf, -np.inf, 1.0, 2.0, 3.0],  # NaN beats +inf
        [-np.inf, -np.inf, 5.0, -np.inf, -np.inf, -np.inf],  # one finite entry
    ]
)


@pytest.mark.parametrize("chunks", [(7, 6), (2, 2), (3, 1), (1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values_across_chunks(chunks, dtype):
    x = SPECIAL_ROWS.astype(dtype)
    dx = da.from_array(x, chunks=chunks)
    sm = nd.softmax(dx).compute()
    ls = nd.log_softmax(dx).compute()
    lse = nd.logsumexp(dx).compute()
    for i, row in enumerate(x):
        assert_close(sm[i], ref_special_softmax(row), dtype)
        assert_close(ls[i], ref_special_softmax(row, log=True), dtype)
        np.testing.assert_allclose(lse[i], ref_special_logsumexp(row), rtol=RTOL[np.dtype(dtype)])


def test_special_values_along_a_middle_axis():
    # The normalized axis in the middle of a 3-D array goes through the column tiles.
    x = np.stack([SPECIAL_ROWS.T, SPECIAL_ROWS.T[::-1]], axis=0)  # (2, 6, 7), axis=1
    dx = da.from_array(x, chunks=(1, 2, 3))
    sm = nd.softmax(dx, axis=1).compute()
    lse = nd.logsumexp(dx, axis=1).compute()
    for o in range(2):
        for j in range(7):
            np.testing.assert_allclose(sm[o, :, j], ref_special_softmax(x[o, :, j]), rtol=1e-13)
            assert np.allclose(lse[o, j], ref_special_logsumexp(x[o, :, j]), equal_nan=True)


@settings(max_examples=25, deadline=None)
@given(
    row=st.lists(
        st.sampled_from([np.nan, np.inf, -np.inf, -1.5, 0.0, 0.25, 3.0, 40.0]),
        min_size=1,
        max_size=12,
    ),
    chunk=st.integers(1, 5),
)
def test_any_split_of_a_special_row(row, chunk):
    x = np.array([row])
    dx = da.from_array(x, chunks=(1, chunk))
    np.testing.assert_allclose(
        nd.softmax(dx).compute()[0], ref_special_softmax(row), rtol=1e-13, atol=1e-300
    )
    np.testing.assert_allclose(
        nd.log_softmax(dx).compute()[0], ref_special_softmax(row, log=True), rtol=1e-13, atol=1e-13
    )
    np.testing.assert_allclose(nd.logsumexp(dx).compute()[0], ref_special_logsumexp(row))


# ---------------------------------------------------------------- where, b, dtypes


def ref_masked_softmax(x, w, log=False):
    """Softmax over the True entries of each row (last axis); fully masked rows 0/-inf."""
    out = np.full(x.shape, -np.inf if log else 0.0)
    for i in np.ndindex(x.shape[:-1]):
        if w[i].any():
            out[i][w[i]] = ref_special_softmax(x[i][w[i]], log=log)
    return out


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("mask_kind", ["numpy", "dask-other-chunks", "broadcast-row"])
def test_where(chunking, mask_kind):
    x = logits(np.float64)
    rng = np.random.default_rng(5)
    if mask_kind == "broadcast-row":
        w = rng.random(SHAPE[-1]) < 0.6
        full = np.broadcast_to(w, SHAPE)
    else:
        w = rng.random(SHAPE) < 0.5
        w[0, 0] = False  # a fully masked row
        w[1, 2] = False
        w[1, 2, 4] = True  # a single unmasked entry
        full = w
    if mask_kind == "dask-other-chunks":
        w = da.from_array(w, chunks=(1, 5, 4))
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    assert_close(nd.softmax(dx, where=w).compute(), ref_masked_softmax(x, full), np.float64)
    got = nd.log_softmax(dx, where=w).compute()
    assert_close(got, ref_masked_softmax(x, full, log=True), np.float64)
    lse = nd.logsumexp(dx, where=w).compute()
    ref = np.array([[ref_special_logsumexp(x[i, j][full[i, j]]) if full[i, j].any()
                     else -np.inf for j in range(SHAPE[1])] for i in range(SHAPE[0])])  # fmt: skip
    assert_close(lse, ref, np.float64)


def test_masked_special_values_do_not_leak():
    x = np.array([[np.nan, 1.0, np.inf, 2.0], [np.inf, np.inf, 0.0, 1.0]])
    w = np.array([[False, True, False, True], [False, True, True, True]])
    for chunks in [(2, 4), (1, 1)]:
        dx = da.from_array(x, chunks=chunks)
        got = nd.softmax(dx, where=w).compute()
        np.testing.assert_allclose(got, ref_masked_softmax(x, w), rtol=1e-13)


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("return_sign", [False, True])
def test_logsumexp_weights_match_scipy(chunking, return_sign):
    special = pytest.importorskip("scipy.special")
    x = logits(np.float64)
    b = np.random.default_rng(3).standard_normal(SHAPE)
    b[0, 0] = 0.0  # an all-zero weight row: -inf (sign 0)
    b[1] = np.abs(b[1])
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    db = da.from_array(b, chunks=(2, 3, 9))
    for axis in (-1, (0, 2)):
        got = nd.logsumexp(dx, axis, b=db, return_sign=return_sign)
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = special.logsumexp(x, axis, b=b, return_sign=return_sign)
        if return_sign:
            got, sign = dask.compute(*got)
            ref, ref_sign = ref
            np.testing.assert_array_equal(sign, ref_sign)
        else:
            got = got.compute()
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_logsumexp_return_sign_without_b():
    x = np.array([[1.0, 2.0], [-np.inf, -np.inf], [np.nan, 1.0]])
    lse, sign = nd.logsumexp(da.from_array(x, chunks=1), return_sign=True)
    np.testing.assert_array_equal(sign.compute(), [1.0, 0.0, np.nan])
    np.testing.assert_allclose(lse.compute(), [np.logaddexp(1.0, 2.0), -np.inf, np.nan])


@pytest.mark.parametrize(
    ("in_dtype", "dtype", "result"),
    [
        (np.int64, None, np.float64),
        (np.bool_, None, np.float64),
        (np.float16, None, np.float32),
        (np.float32, np.float16, np.float16),
        (np.float32, np.float64, np.float64),
    ],
)
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
def test_dtypes(in_dtype, dtype, result, chunking):
    x = (np.arange(np.prod(SHAPE)).reshape(SHAPE) % 5).astype(in_dtype)
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    y = nd.softmax(dx, dtype=dtype)
    assert y.dtype == result
    got = y.compute()
    assert got.dtype == result
    rtol = 1e-3 if result == np.float16 else RTOL[np.dtype(np.float32)]
    np.testing.assert_allclose(got, ref_softmax(x.astype(np.float64)), rtol=rtol)
    assert nd.logsumexp(dx, dtype=dtype).compute().dtype == result


def test_empty_axis_and_empty_array():
    x = da.zeros((3, 0), chunks=(2, 1))
    assert nd.softmax(x).compute().shape == (3, 0)
    np.testing.assert_array_equal(nd.logsumexp(x).compute(), [-np.inf] * 3)
    y = da.zeros((0, 5), chunks=(1, 2))
    assert nd.softmax(y).compute().shape == (0, 5)
    assert nd.logsumexp(y).compute().shape == (0,)


def test_input_is_not_modified():
    x = logits(np.float64)
    keep = x.copy()
    nd.softmax(da.from_array(x, chunks=(1, 2, 3)), axis=(0, 2)).compute()
    nd.log_softmax(da.from_array(x, chunks=SHAPE), axis=1).compute()
    np.testing.assert_array_equal(x, keep)


# ---------------------------------------------------------------- laziness and graph


def _counting_array(counter, chunks):
    def block(block_info=None):
        counter.append(1)
        loc = block_info[None]["array-location"]
        return np.add.outer(np.arange(*loc[0]), np.arange(*loc[1])).astype(np.float64) / 7

    return da.map_blocks(block, chunks=chunks, dtype=np.float64, meta=np.empty((0, 0)))


@pytest.mark.parametrize("chunks", [((2, 2), (6,)), ((2, 2), (2, 2, 2))])
def test_nothing_is_computed_before_compute(chunks):
    calls = []
    x = _counting_array(calls, chunks)
    results = [
        nd.softmax(x),
        nd.log_softmax(x, temperature=2.0),
        nd.logsumexp(x, keepdims=True),
        nd.logsumexp(x, b=np.ones(6), return_sign=True)[1],
        nd.ssmax(x),
        nd.stablemax(x),
        nd.softplus_l1(x),
    ]
    assert calls == []
    dense = np.add.outer(np.arange(4), np.arange(6)) / 7
    assert_close(results[0].compute(), ref_softmax(dense), np.float64)
    assert calls


def test_split_axis_is_two_passes_without_rechunking():
    x = da.ones((4, 12), chunks=(2, 3))
    y = nd.softmax(x)
    layers = list(y.dask.layers)
    assert not any("rechunk" in name for name in layers)
    # Every input block feeds exactly two tasks: its partial and its normalization.
    _, dependents = get_deps(dict(y.__dask_graph__()))
    keys = [k for row in x.__dask_keys__() for k in row]
    assert len(keys) == 8
    assert all(len(dependents[k]) == 2 for k in keys)


# ---------------------------------------------------------------- variants


def ref_normalized(f, axis):
    return f / np.sum(f, axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("axis", [-1, (0, 2)])
def test_variants_match_definitions(dtype, chunking, axis):
    x = logits(dtype, scale=2.0)
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    t = 1.5
    z = x.astype(np.longdouble) / t
    n = np.prod([SHAPE[a] for a in np.atleast_1d(axis)])
    s = 0.7
    ssmax_ref = ref_softmax(z * np.longdouble(s * np.log(n)), axis)
    assert_close(nd.ssmax(dx, axis, s=s, temperature=t).compute(), ssmax_ref, dtype)
    stable = np.where(z >= 0, z + 1, 1 / (1 - z))
    got = nd.stablemax(dx, axis, temperature=t).compute()
    assert_close(got, ref_normalized(stable, axis), dtype)
    softplus = np.log1p(np.exp(z))
    got = nd.softplus_l1(dx, axis, temperature=t).compute()
    assert_close(got, ref_normalized(softplus, axis), dtype)


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
def test_ssmax_counts_unmasked_entries(chunking):
    x = logits(np.float64)
    w = np.random.default_rng(9).random(SHAPE) < 0.6
    w[0, 1] = False
    dx = da.from_array(x, chunks=CHUNKINGS[chunking])
    got = nd.ssmax(dx, where=w).compute()
    ref = np.zeros(SHAPE)
    for i in np.ndindex(SHAPE[:-1]):
        k = np.count_nonzero(w[i])
        if k:
            ref[i][w[i]] = ref_softmax(x[i][w[i]] * np.log(k))
    assert_close(got, ref, np.float64)


@pytest.mark.parametrize("chunks", [(5, 4), (1, 1)])
def test_variants_special_values(chunks):
    x = np.array(
        [
            [1.0, np.nan, 2.0, 3.0],
            [np.inf, 1.0, np.inf, -2.0],
            [-np.inf, -np.inf, -np.inf, -np.inf],
            [-800.0, -801.0, -np.inf, -800.0],  # softplus underflows in the linear domain
            [1e300, 1e300, -1e300, 0.0],  # stablemax sum overflows in the linear domain
        ]
    )
    dx = da.from_array(x, chunks=chunks)
    nan, half = [np.nan] * 4, [0.5, 0.0, 0.5, 0.0]
    sp = nd.softplus_l1(dx).compute()
    st_ = nd.stablemax(dx).compute()
    for got in (sp, st_):
        np.testing.assert_array_equal(got[:3], [nan, half, nan])
    e = np.exp([0.0, -1.0, 0.0])
    np.testing.assert_allclose(sp[3], [e[0] / e.sum(), e[1] / e.sum(), 0.0, e[2] / e.sum()])
    np.testing.assert_allclose(st_[4], [0.5, 0.5, 0.0, 0.0], atol=1e-300)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"out": np.empty(SHAPE)}, TypeError, "out"),
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"temperature": 1e-300, "dtype": np.float32}, ValueError, "temperature"),
        ({"axis": 3}, np.exceptions.AxisError, "axis"),
        ({"axis": (0, 0)}, ValueError, "axis"),
        ({"axis": 1.0}, TypeError, "axis"),
        ({"where": np.ones(SHAPE, dtype=np.int8)}, TypeError, "where"),
        ({"where": np.ones((3, 9), dtype=bool)}, ValueError, "where"),
        ({"where": np.ones((2, *SHAPE), dtype=bool)}, ValueError, "where"),
        ({"dtype": np.int32}, TypeError, "dtype"),
        ({"algorithm": "fast"}, ValueError, "algorithm"),
    ],
)
def test_bad_arguments_raise_before_any_graph_runs(kwargs, error, match):
    x = logits(np.float64)
    dx = da.from_array(x, chunks=(2, 3, 4))
    for func in (nd.softmax, nd.log_softmax, nd.logsumexp, nd.stablemax):
        with pytest.raises(error, match=match) as err:
            func(dx, **kwargs)
        if "out" not in kwargs and func is not nd.stablemax:  # NumPy's error, word for word
            with pytest.raises(error) as cpu_err:
                getattr(numsoft, func.__name__)(x, **kwargs)
            assert str(err.value) == str(cpu_err.value)


def test_bad_inputs():
    with pytest.raises(TypeError, match="complex"):
        nd.softmax(da.ones(3, dtype=np.complex128))
    with pytest.raises(TypeError, match="real"):
        nd.softmax(da.from_array(np.array(["a", "b"])))
    x = da.ones(10, chunks=5)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        nd.softmax(x[x > 0])
    with pytest.raises(ValueError, match="b of shape"):
        nd.logsumexp(x, b=np.ones(3))
    with pytest.raises(TypeError, match="s must be"):
        nd.ssmax(x, s=float("inf"))


def test_numsoft_does_not_import_dask():
    import subprocess
    import sys

    code = "import sys, numsoft; numsoft.softmax([1.0, 2.0]); print('dask' in sys.modules)"
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr


# ---------------------------------------------------------------- distributed scheduler


def _numsoft_location():
    import numsoft

    return numsoft.__file__


@pytest.mark.distributed
def test_local_cluster_with_processes(monkeypatch):
    """Two spawned worker processes run a chunked softmax; both do part of the work."""
    distributed = pytest.importorskip("dask.distributed")
    root = pathlib.Path(__file__).resolve().parents[1]
    paths = [str(root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))  # workers import numsoft
    x = logits(np.float32, shape=(64, 3000), seed=4)
    dx = da.from_array(x, chunks=(16, 700))
    graphs = (nd.softmax(dx), nd.logsumexp(dx, keepdims=True))
    dask.compute(*graphs, scheduler="sync")  # compiles here once: workers load the disk cache
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        located = client.run(_numsoft_location)
        with distributed.get_task_stream(client) as stream:
            y, lse = dask.compute(*graphs)
    assert len(located) == 2
    assert all(pathlib.Path(f).resolve().is_relative_to(root) for f in located.values())
    assert len({task["worker"] for task in stream.data}) == 2
    assert_close(y, ref_softmax(x), np.float32)
    assert_close(lse, ref_logsumexp(x, keepdims=True), np.float32)


@pytest.mark.distributed
def test_large_softmax_example_small_size():
    """examples/dask_large_softmax.py at a CI size: it checks its own results."""
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    script = root / "examples" / "dask_large_softmax.py"
    args = ["--size-gb", "0.01", "--row-length", "65536", "--chunk-mb", "1"]
    out = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    assert "GB/s" in out.stdout and out.stdout.rstrip().endswith("OK")
