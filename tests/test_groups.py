"""Groups of any length (SPEC §9): segment_softmax and kin against a NumPy oracle, their
numerics per group and their errors; the class-tree functions against a path product."""

import numba
import numpy as np
import pytest
import scipy.special as sps
from hypothesis import given, settings
from hypothesis import strategies as st

import numsoft
import numsoft.groups


def _oracle(x, offsets, axis, kind):
    """Each group through SciPy in float64, one group at a time."""
    x = np.moveaxis(np.asarray(x, np.float64), axis, 0)
    groups = len(offsets) - 1
    out = np.full((groups, *x.shape[1:]), -np.inf) if kind == "logsumexp" else np.empty_like(x)
    with np.errstate(all="ignore"):
        for g in range(groups):
            a, b = offsets[g], offsets[g + 1]
            if kind == "logsumexp":
                if b > a:
                    out[g] = sps.logsumexp(x[a:b], axis=0)
            elif b > a:
                out[a:b] = (sps.softmax if kind == "softmax" else sps.log_softmax)(x[a:b], axis=0)
    return np.moveaxis(out, 0, axis)


FUNCTIONS = {
    "softmax": numsoft.groups.segment_softmax,
    "log_softmax": numsoft.groups.segment_log_softmax,
    "logsumexp": numsoft.groups.segment_logsumexp,
}


def _ids(offsets):
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 7), min_size=1, max_size=8),
    heads=st.sampled_from([0, 1, 3]),
    shuffle=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_random_partitions_match_the_oracle(sizes, heads, shuffle, dtype, seed):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n = int(offsets[-1])
    shape = (n,) if heads == 0 else (n, heads)
    x = (rng.normal(size=shape) * 4).astype(dtype)
    tol = {np.float32: 2e-6, np.float64: 1e-13}[dtype]
    ids = _ids(offsets)
    if shuffle:  # unsorted ids: the same groups, entries in another order
        perm = rng.permutation(n)
        x, ids = x[perm], ids[perm]
    for kind, f in FUNCTIONS.items():
        got = f(x, ids, num_segments=len(sizes))
        order = np.argsort(ids, kind="stable")
        want_sorted = _oracle(x[order], offsets, 0, kind)
        if kind == "logsumexp":
            want = want_sorted
        else:
            want = np.empty_like(want_sorted)
            want[order] = want_sorted
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        if not shuffle:
            np.testing.assert_array_equal(f(x, offsets=offsets), got)


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_other_axes_are_independent_along_any_axis(kind):
    rng = np.random.default_rng(1)
    offsets = np.array([0, 3, 3, 10, 11])
    x = rng.normal(size=(2, 11, 5))
    got = FUNCTIONS[kind](x, offsets=offsets, axis=1)
    np.testing.assert_allclose(got, _oracle(x, offsets, 1, kind), rtol=1e-13, atol=1e-15)
    xt = np.ascontiguousarray(np.moveaxis(x, 1, -1))  # grouped axis last
    got_last = FUNCTIONS[kind](xt, offsets=offsets, axis=-1)
    np.testing.assert_allclose(np.moveaxis(got_last, -1, 1), got, rtol=1e-14, atol=1e-15)
    fortran = np.asfortranarray(x)  # any memory layout
    np.testing.assert_allclose(FUNCTIONS[kind](fortran, offsets=offsets, axis=1), got, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equal_groups_equal_softmax_of_the_reshaped_array(dtype):
    x = np.random.default_rng(2).normal(size=(6 * 40, 3)).astype(dtype)
    offsets = np.arange(0, 241, 40)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(
        numsoft.groups.segment_softmax(x, offsets=offsets),
        numsoft.softmax(x.reshape(6, 40, 3), axis=1).reshape(240, 3),
        rtol=4 * eps,
        atol=eps,
    )
    np.testing.assert_allclose(
        numsoft.groups.segment_logsumexp(x, offsets=offsets),
        numsoft.logsumexp(x.reshape(6, 40, 3), axis=1),
        rtol=4 * eps,
    )


def test_special_values_stay_in_their_group():
    x = np.array([np.nan, 1.0, 2.0, np.inf, np.inf, 0.0, -np.inf, -np.inf, 1e308, -1e308])
    offsets = [0, 2, 3, 6, 8, 10]
    with np.errstate(all="raise"):  # no floating-point warning either
        y = numsoft.groups.segment_softmax(x, offsets=offsets)
        lse = numsoft.groups.segment_logsumexp(x, offsets=offsets)
    assert np.isnan(y[:2]).all()
    assert y[2] == 1.0
    np.testing.assert_array_equal(y[3:6], [0.5, 0.5, 0.0])
    assert np.isnan(y[6:8]).all()  # a group of only -inf, as SciPy's softmax
    np.testing.assert_array_equal(y[8:], [1.0, 0.0])
    assert np.isnan(lse[0]) and lse[1] == 2.0 and lse[2] == np.inf and lse[3] == -np.inf
    assert lse[4] == 1e308


def test_where_masks_entries_and_whole_groups():
    x = np.arange(6.0)
    where = np.array([True, False, False, False, True, True])
    offsets = [0, 2, 4, 6]
    y = numsoft.groups.segment_softmax(x, offsets=offsets, where=where)
    np.testing.assert_allclose(y, [1.0, 0.0, 0.0, 0.0, *sps.softmax([4.0, 5.0])])
    ly = numsoft.groups.segment_log_softmax(x, np.array([0, 0, 1, 1, 2, 2]), where=where)
    np.testing.assert_array_equal(ly[:4], [0.0, -np.inf, -np.inf, -np.inf])
    lse = numsoft.groups.segment_logsumexp(x, offsets=offsets, where=where)
    np.testing.assert_allclose(lse, [0.0, -np.inf, sps.logsumexp([4.0, 5.0])])


def test_temperature_dtype_out_and_integer_input():
    x = np.array([1, 2, 3, 4], np.int64)
    ids = np.array([0, 0, 1, 1])
    np.testing.assert_allclose(
        numsoft.groups.segment_softmax(x, ids, temperature=2.0),
        np.concatenate([sps.softmax([0.5, 1.0]), sps.softmax([1.5, 2.0])]),
    )
    out = np.empty(4, np.float32)
    res = numsoft.groups.segment_log_softmax(x, ids, out=out, dtype=np.float32)
    assert res is out
    pair = np.log(np.array([1, np.e]) / (1 + np.e))
    np.testing.assert_allclose(out, np.tile(pair, 2), rtol=1e-6)
    lse_out = np.empty(3)
    assert numsoft.groups.segment_logsumexp(x, ids, num_segments=3, out=lse_out) is lse_out
    assert lse_out[2] == -np.inf


def test_empty_input_and_empty_groups():
    assert numsoft.groups.segment_softmax(np.empty(0), offsets=[0]).shape == (0,)
    np.testing.assert_array_equal(
        numsoft.groups.segment_logsumexp(np.empty((0, 2)), np.empty(0, int), num_segments=2),
        np.full((2, 2), -np.inf),
    )


def test_backward_is_the_vector_jacobian_product():
    rng = np.random.default_rng(3)
    offsets = np.array([0, 1, 4, 4, 9])
    ids = _ids(offsets)
    perm = rng.permutation(9)
    for x, dy, groups in (
        (rng.normal(size=(9, 2)), rng.normal(size=(9, 2)), {"offsets": offsets}),
        (rng.normal(size=9), rng.normal(size=9), {"segment_ids": ids[perm]}),
    ):
        y = numsoft.groups.segment_softmax(x, **groups)
        dx = numsoft.groups.segment_softmax_backward(y, dy, **groups)
        order = np.argsort(ids[perm], kind="stable") if "segment_ids" in groups else np.arange(9)
        want = np.empty_like(dx)
        ys, dys = y[order], dy[order]
        for g in range(4):
            a, b = offsets[g], offsets[g + 1]
            want[order[a:b]] = ys[a:b] * (dys[a:b] - (ys[a:b] * dys[a:b]).sum(axis=0))
        np.testing.assert_allclose(dx, want, rtol=1e-13, atol=1e-15)
        # against a finite difference of the forward pass
        h = 1e-6
        e = np.zeros_like(x)
        e.flat[4] = h
        fd = (
            (
                numsoft.groups.segment_softmax(x + e, **groups)
                - numsoft.groups.segment_softmax(x - e, **groups)
            )
            * dy
        ).sum() / (2 * h)
        np.testing.assert_allclose(dx.flat[4], fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    ("groups", "error", "match"),
    [
        ({}, ValueError, "exactly one of segment_ids and offsets"),
        ({"segment_ids": [0, 0, 1], "offsets": [0, 3]}, ValueError, "exactly one"),
        ({"offsets": [0, 2]}, ValueError, "offsets must start at 0 and end"),
        ({"offsets": [1, 3]}, ValueError, "offsets must start at 0"),
        ({"offsets": [0, 2, 1, 3]}, ValueError, "offsets must be non-decreasing"),
        ({"offsets": [[0, 3]]}, ValueError, "offsets must be 1-D"),
        ({"offsets": [0.0, 3.0]}, TypeError, "offsets must hold integers"),
        ({"segment_ids": [0, 1]}, ValueError, "one id per entry"),
        ({"segment_ids": [0, -1, 1]}, ValueError, "segment_ids must be >= 0"),
        ({"segment_ids": [0, 1, 2], "num_segments": 2}, ValueError, "num_segments=2"),
        ({"segment_ids": [0.0, 1.0, 1.0]}, TypeError, "segment_ids must hold integers"),
        ({"segment_ids": [True, False, True]}, TypeError, "segment_ids must hold integers"),
        ({"segment_ids": [0, 1, 1], "num_segments": 2.0}, TypeError, "num_segments must be an int"),
        ({"offsets": [0, 3], "num_segments": 1}, ValueError, "num_segments goes with"),
        ({"offsets": [0, 3], "axis": (0,)}, TypeError, "axis must be an int"),
    ],
)
def test_bad_groups_name_the_argument(groups, error, match):
    x = np.array([1.0, 2.0, 3.0])
    out = np.zeros(3)
    for f in FUNCTIONS.values():
        with pytest.raises(error, match=match):
            f(x, **groups, out=None if f is numsoft.groups.segment_logsumexp else out)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out, 0.0)


# ---------------------------------------------------------------- class trees

#: 0, 1 roots; 2, 3 children of 0; 4, 5, 6 children of 2; 7 child of 1.
PARENTS = np.array([-1, -1, 0, 0, 2, 2, 2, 1])
LEAVES = [3, 4, 5, 6, 7]


def _path_product(x, parents):
    """p of each node: the product of sibling softmaxes along its path (a plain loop)."""
    p = np.empty(len(parents))
    for i in range(len(parents)):
        prob, node = 1.0, i
        while node >= 0:
            sib = np.flatnonzero(parents == parents[node])
            prob *= np.exp(x[node]) / np.exp(x[sib]).sum()
            node = parents[node]
        p[i] = prob
    return p


def test_tree_probabilities_against_a_path_product():
    x = np.random.default_rng(4).normal(size=(3, 8))
    p = numsoft.groups.hierarchical_softmax(x, PARENTS)
    for row, probs in zip(x, p, strict=True):
        np.testing.assert_allclose(probs, _path_product(row, PARENTS), rtol=1e-13)
    np.testing.assert_allclose(p[:, LEAVES].sum(axis=1), 1.0, rtol=1e-13)
    for node in range(8):  # each node's p is the sum of its children's
        children = np.flatnonzero(node == PARENTS)
        if children.size:
            np.testing.assert_allclose(p[:, node], p[:, children].sum(axis=1), rtol=1e-13)
    lp = numsoft.groups.hierarchical_log_softmax(x.T, PARENTS, axis=0, dtype=np.float32)
    assert lp.dtype == np.float32
    np.testing.assert_allclose(np.exp(lp), p.T, rtol=1e-5)


@pytest.mark.parametrize(
    ("parents", "match"),
    [
        ([-1, 2, 1, 0, 0, 0, 0, 0], "cycle"),
        ([0, -1, -1, -1, -1, -1, -1, -1], "cycle"),  # a node its own parent
        ([-1, 8, 0, 0, 0, 0, 0, 0], "parents must be -1"),
        ([-1, -2, 0, 0, 0, 0, 0, 0], "parents must be -1"),
        ([-1, 0], "one entry per class"),
    ],
)
def test_bad_trees_name_parents(parents, match):
    with pytest.raises(ValueError, match=match):
        numsoft.groups.hierarchical_log_softmax(np.zeros(8), parents)


def test_tree_cross_entropy_and_its_gradient():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 8))
    labels = np.array([4, 0, -100, 7])  # a leaf, a coarse class, ignored, a leaf
    lp = numsoft.groups.hierarchical_log_softmax(x, PARENTS)
    per_row = numsoft.groups.hierarchical_cross_entropy(x, labels, PARENTS, reduction="none")
    np.testing.assert_allclose(per_row, [-lp[0, 4], -lp[1, 0], 0.0, -lp[3, 7]], rtol=1e-14)
    loss, grad = numsoft.groups.hierarchical_cross_entropy(x, labels, PARENTS, return_grad=True)
    np.testing.assert_allclose(loss, per_row.sum() / 3, rtol=1e-14)
    h = 1e-6
    for i, j in [(0, 2), (0, 5), (0, 7), (1, 0), (1, 3), (2, 4), (3, 1), (3, 6)]:
        e = np.zeros_like(x)
        e[i, j] = h
        fd = (
            numsoft.groups.hierarchical_cross_entropy(x + e, labels, PARENTS)
            - numsoft.groups.hierarchical_cross_entropy(x - e, labels, PARENTS)
        ) / (2 * h)
        np.testing.assert_allclose(grad[i, j], fd, atol=1e-8)
    assert np.isnan(numsoft.groups.hierarchical_cross_entropy(x[2:3], labels[2:3], PARENTS))
    with pytest.raises(ValueError, match="labels must lie in"):
        numsoft.groups.hierarchical_cross_entropy(x, np.array([8, 0, 0, 0]), PARENTS)


@pytest.mark.parametrize("heads", [0, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_agrees_with_pyg(heads, dtype):
    torch = pytest.importorskip("torch")
    pyg_utils = pytest.importorskip("torch_geometric.utils")
    rng = np.random.default_rng(6)
    sizes = rng.integers(0, 9, 40)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    index = rng.permutation(_ids(offsets))  # edges in any order, as PyG takes them
    n = index.size
    x = rng.normal(size=(n, heads) if heads else n).astype(dtype) * 3
    tx = torch.from_numpy(x)
    tol = {np.float32: 1e-6, np.float64: 1e-12}[dtype]
    want = pyg_utils.softmax(tx, torch.from_numpy(index), num_nodes=sizes.size, dim=0).numpy()
    got = numsoft.groups.segment_softmax(x, index, num_segments=sizes.size)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    xs = x[np.argsort(index, kind="stable")]  # PyG's ptr form: edges sorted by node
    want = pyg_utils.softmax(torch.from_numpy(xs), ptr=torch.from_numpy(offsets), dim=0).numpy()
    got = numsoft.groups.segment_softmax(xs, offsets=offsets)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if heads:  # dim: the grouped axis elsewhere (PyG's ptr form needs torch-scatter there)
        xt = np.ascontiguousarray(x.T)
        tindex = torch.from_numpy(index)
        want = pyg_utils.softmax(torch.from_numpy(xt), tindex, num_nodes=sizes.size, dim=1)
        got = numsoft.groups.segment_softmax(xt, index, num_segments=sizes.size, axis=1)
        np.testing.assert_allclose(got, want.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("special", ["nan", "inf", "all -inf", "masked group", "none"])
def test_unsorted_ids_give_the_values_of_sorted_ones(special):
    # Unsorted ids read x in its own order; a group with special values falls back to
    # the gathered row kernels: both must give what the same groups in order give.
    rng = np.random.default_rng(7)
    offsets = np.array([0, 3, 3, 7, 8, 12])
    ids = _ids(offsets)
    x = rng.normal(size=(12, 2))
    where = None
    if special == "nan":
        x[4, 1] = np.nan
    elif special == "inf":
        x[[4, 5], 0] = np.inf
    elif special == "all -inf":
        x[8:12] = -np.inf
    elif special == "masked group":
        where = np.ones((12, 2), bool)
        where[:3] = False
    perm = rng.permutation(12)
    inverse = np.argsort(perm)
    mask_perm = None if where is None else where[perm]
    for kind, f in FUNCTIONS.items():
        sorted_result = f(x, offsets=offsets, where=where)
        got = f(x[perm], ids[perm], where=mask_perm)
        want = sorted_result if kind == "logsumexp" else sorted_result[perm]
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
        if kind != "logsumexp":
            np.testing.assert_allclose(got[inverse], sorted_result, rtol=1e-14, atol=1e-15)


@numba.njit
def _segments_in_njit(x, ids, offsets):
    return (
        numsoft.groups.segment_softmax(x, offsets=offsets),
        numsoft.groups.segment_log_softmax(x, ids, temperature=2.0),
        numsoft.groups.segment_logsumexp(x, ids, num_segments=offsets.size),
    )


@numba.njit
def _segments_along_axis(x, ids, axis):
    return (
        numsoft.groups.segment_softmax(x, ids, axis=axis),
        numsoft.groups.segment_logsumexp(x, ids, axis=axis),
    )


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inside_njit_gives_the_python_api_values(shuffle, dtype):
    rng = np.random.default_rng(8)
    offsets = np.array([0, 3, 3, 7, 20, 21])
    ids = _ids(offsets)
    x = rng.normal(size=21).astype(dtype)
    if shuffle:
        perm = rng.permutation(21)
        x, ids = x[perm], ids[perm]
    got = _segments_in_njit(x, ids, offsets)
    want = (
        numsoft.groups.segment_softmax(x, offsets=offsets),
        numsoft.groups.segment_log_softmax(x, ids, temperature=2.0),
        numsoft.groups.segment_logsumexp(x, ids, num_segments=offsets.size),
    )
    eps = np.finfo(dtype).eps
    for g, w in zip(got, want, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=4 * eps, atol=eps)
    heads = rng.normal(size=(21, 3)).astype(dtype)
    for axis, arr in ((0, heads), (1, np.ascontiguousarray(heads.T))):
        got = _segments_along_axis(arr, ids, axis)
        want = (
            numsoft.groups.segment_softmax(arr, ids, axis=axis),
            numsoft.groups.segment_logsumexp(arr, ids, axis=axis),
        )
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=4 * eps, atol=eps)


def test_inside_njit_bad_groups_raise():
    @numba.njit
    def by_offsets(x, offsets):
        return numsoft.groups.segment_softmax(x, offsets=offsets)

    @numba.njit
    def by_ids(x, ids):
        return numsoft.groups.segment_softmax(x, ids, num_segments=2)

    x = np.zeros(3)
    with pytest.raises(ValueError, match="offsets must be non-decreasing"):
        by_offsets(x, np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError, match="offsets must start at 0"):
        by_offsets(x, np.array([0, 2]))
    with pytest.raises(ValueError, match="segment_ids must lie in"):
        by_ids(x, np.array([0, 1, 2]))
    for call, match in (
        (lambda: numba.njit(lambda a: numsoft.groups.segment_softmax(a))(x), "exactly one"),
        (
            lambda: numba.njit(lambda a: numsoft.groups.segment_softmax(a, offsets=a))(x),
            "offsets must be a 1-D integer array",
        ),
        (
            lambda: numba.njit(
                lambda a, o: numsoft.groups.segment_softmax(a, offsets=o, dtype=np.float32)
            )(x, np.array([0, 3])),
            "dtype= is not supported there",
        ),
        (
            lambda: numba.njit(lambda a, o: numsoft.groups.segment_softmax(a, offsets=o, where=o))(
                x, np.array([0, 3])
            ),
            "where must be a boolean array",
        ),
    ):
        with pytest.raises(TypeError, match=match):
            call()


@numba.njit
def _masked_into_out(x, ids, keep, out, lse_out):
    numsoft.groups.segment_log_softmax(x, ids, num_segments=4, where=keep, out=out)
    return numsoft.groups.segment_logsumexp(x, ids, num_segments=4, where=keep, out=lse_out)


def test_inside_njit_where_and_out_give_the_python_api_values():
    rng = np.random.default_rng(9)
    ids = rng.integers(0, 4, size=30)  # not in group order
    x = rng.normal(size=(30, 2))
    keep = rng.random((30, 2)) > 0.5
    keep[ids == 2, 0] = False  # a group with every entry masked in one head
    out, lse_out = np.empty_like(x), np.empty((4, 2))
    got = _masked_into_out(x, ids, keep, out, lse_out)
    assert got is lse_out or np.shares_memory(got, lse_out)
    kwargs = {"num_segments": 4, "where": keep}
    np.testing.assert_array_equal(out, numsoft.groups.segment_log_softmax(x, ids, **kwargs))
    np.testing.assert_array_equal(lse_out, numsoft.groups.segment_logsumexp(x, ids, **kwargs))
    assert (out[ids == 2, 0] == -np.inf).all()
    with pytest.raises(ValueError, match="where must have the shape of x"):
        _masked_into_out(x, ids, keep[:, :1].copy(), out, lse_out)
