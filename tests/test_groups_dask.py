"""The segment functions on Dask arrays (SPEC §9): groups split across chunks of the
grouped axis are merged by their partial statistics and agree with the NumPy API on
the whole array (float64: 1e-13 relative, or equal where a group lies in one chunk);
the call builds a graph and computes nothing."""

from __future__ import annotations

import numpy as np
import pytest

import numsoft.groups as G

da = pytest.importorskip("dask.array")

RNG = np.random.default_rng(3)
FUNCTIONS = ["segment_softmax", "segment_log_softmax", "segment_logsumexp"]


def _graph():
    sizes = RNG.integers(0, 9, size=40)
    sizes[7] = 30  # a group across several chunks of 7
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    x = RNG.standard_normal((offsets[-1], 3))
    return x, offsets, np.repeat(np.arange(sizes.size), sizes)


def _agree(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14, equal_nan=True)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("form", ["offsets", "sorted ids", "unsorted ids", "dask ids"])
def test_groups_across_chunks_equal_the_numpy_api(name, form):
    x, offsets, ids = _graph()
    f = getattr(G, name)
    if form == "offsets":
        kwargs = {"offsets": offsets}
    else:
        if form != "sorted ids":
            order = RNG.permutation(ids.size)
            x, ids = x[order], ids[order]
        kwargs = {"segment_ids": ids, "num_segments": 40}
    want = f(x, **kwargs, temperature=0.7)
    if form == "dask ids":
        kwargs["segment_ids"] = da.from_array(ids, chunks=13)
    got = f(da.from_array(x, chunks=(7, 2)), **kwargs, temperature=0.7)
    assert isinstance(got, da.Array)
    _agree(got.compute(), want)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_and_masks_follow_the_numpy_api(name):
    x, offsets, _ = _graph()
    a, b = offsets[7], offsets[8]  # the long group: +inf in two chunks, NaN elsewhere
    x[a + 1, 0] = x[b - 2, 0] = np.inf
    x[a : b - 5, 1] = -np.inf
    x[offsets[3], 2] = np.nan
    keep = RNG.random(x.shape) > 0.3
    f = getattr(G, name)
    for extra in ({}, {"where": keep}):
        want = f(x, offsets=offsets, **extra)
        got = f(da.from_array(x, chunks=(5, 3)), offsets=offsets, **extra).compute()
        _agree(got, want)
    if name != "segment_logsumexp":
        y = f(da.from_array(x, chunks=(5, 3)), offsets=offsets).compute()
        assert y[a + 1, 0] == y[b - 2, 0] == (0.5 if name == "segment_softmax" else np.log(0.5))


def test_float32_dtype_and_the_heads_axis():
    x, offsets, _ = _graph()
    x32 = np.ascontiguousarray(x.T).astype(np.float32)  # (heads, edges), groups on axis 1
    want = G.segment_softmax(x32, offsets=offsets, axis=1)
    got = G.segment_softmax(da.from_array(x32, chunks=(2, 9)), offsets=offsets, axis=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.compute(), want, rtol=2e-6, atol=1e-7)
    half = G.segment_log_softmax(da.from_array(x32, chunks=(1, 50)), offsets=offsets, axis=1,
                                 dtype=np.float16)  # fmt: skip
    assert half.compute().dtype == np.float16


def test_the_call_computes_nothing_and_bad_arguments_raise_now():
    x, offsets, ids = _graph()
    calls = []

    def count(block):
        calls.append(block.size)  # Dask calls it once on an empty block for its meta
        return block

    lazy = da.from_array(x, chunks=(7, 3)).map_blocks(count, dtype=x.dtype)
    y = G.segment_softmax(lazy, offsets=offsets)
    assert not any(calls) and y.shape == x.shape
    dx = da.from_array(x, chunks=(7, 3))
    with pytest.raises(ValueError, match="num_segments"):
        G.segment_softmax(dx, da.from_array(ids, chunks=7))
    with pytest.raises(ValueError, match="offsets must start at 0"):
        G.segment_softmax(dx, offsets=offsets[:-1])
    with pytest.raises(TypeError, match="out is not supported"):
        G.segment_softmax(dx, offsets=offsets, out=np.empty(x.shape))
    with pytest.raises(ValueError, match="temperature"):
        G.segment_logsumexp(dx, offsets=offsets, temperature=0.0)


@pytest.mark.parametrize("form", ["offsets", "unsorted ids"])
def test_the_backward_pass_across_chunks_equals_the_numpy_api(form):
    x, offsets, ids = _graph()
    kwargs = {"offsets": offsets}
    if form != "offsets":
        order = RNG.permutation(ids.size)
        x, ids = x[order], ids[order]
        kwargs = {"segment_ids": ids, "num_segments": 40}
    y = G.segment_softmax(x, **kwargs)
    dy = RNG.standard_normal(x.shape)
    want = G.segment_softmax_backward(y, dy, **kwargs)
    got = G.segment_softmax_backward(
        da.from_array(y, chunks=(9, 2)), da.from_array(dy, chunks=(5, 3)), **kwargs
    )
    assert isinstance(got, da.Array)
    _agree(got.compute(), want)
    row = G.segment_softmax_backward(da.from_array(y, chunks=(9, 3)), dy[:1, :1], **kwargs)
    _agree(row.compute(), G.segment_softmax_backward(y, dy[:1, :1], **kwargs))
