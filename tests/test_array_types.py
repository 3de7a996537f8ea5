"""Each array type comes back as it went in: Dask (lazy), torch CPU tensors,
``array_api_strict`` arrays, NumPy; mixed and bad combinations raise ``TypeError``.

The values are checked against the NumPy API on the same data (itself tested against
the float64 / longdouble oracle elsewhere): what is tested here is the type, dtype,
laziness and memory of what comes back.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import numsoft
import numsoft.special

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(46)
X = RNG.normal(size=(6, 8))
CORE = ("softmax", "log_softmax", "logsumexp")


def close(got, want, dtype=np.float64):
    rtol = 1e-12 if np.dtype(dtype) == np.float64 else 2e-6
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=0)


# ---------------------------------------------------------------- Dask


da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import numsoft.dask as nd  # noqa: E402
from numsoft.route import dask_calls  # noqa: E402


def _refuse_compute(dsk, keys, **kwargs):
    raise AssertionError("the call computed its Dask graph")


@pytest.fixture
def lazy_only():
    """Any compute inside the block fails the test."""
    with dask.config.set(scheduler=_refuse_compute):
        yield


def dask_x(chunks=(3, 4)):
    return da.from_array(X, chunks=chunks)


@pytest.mark.parametrize("name", CORE)
@pytest.mark.parametrize("chunks", [(3, 8), (3, 4)], ids=["whole-rows", "split-rows"])
def test_core_functions_on_dask_stay_lazy(name, chunks, lazy_only):
    func = getattr(numsoft, name)
    y = func(dask_x(chunks), axis=-1, temperature=1.5)
    assert isinstance(y, da.Array)
    with dask.config.set(scheduler="sync"):
        close(y.compute(), func(X, axis=-1, temperature=1.5))


def test_logsumexp_options_on_dask(lazy_only):
    b = RNG.uniform(-1, 1, size=8)
    lse, sign = numsoft.logsumexp(dask_x(), b=b, keepdims=True, return_sign=True, axis=1)
    want, want_sign = numsoft.logsumexp(X, b=b, keepdims=True, return_sign=True, axis=1)
    assert isinstance(lse, da.Array) and isinstance(sign, da.Array)
    with dask.config.set(scheduler="sync"):
        close(lse.compute(), want)
        np.testing.assert_array_equal(sign.compute(), want_sign)


def test_logsumexp_on_dask_broadcasts_x_with_b_as_numpy():
    x, b = RNG.normal(size=(1, 8)), RNG.uniform(0.5, 1, size=(5, 1))
    got = numsoft.logsumexp(da.from_array(x, chunks=(1, 4)), b=b, axis=1)
    close(got.compute(), numsoft.logsumexp(x, b=b, axis=1))


@pytest.mark.parametrize("name", ["ssmax", "stablemax", "softplus_l1"])
def test_variants_with_a_lazy_form_take_split_rows(name, lazy_only):
    y = getattr(numsoft, name)(dask_x((3, 4)))
    assert isinstance(y, da.Array)
    with dask.config.set(scheduler="sync"):
        close(y.compute(), getattr(numsoft, name)(X))


#: One call of each row-wise variant that has no chunked form (beyond ``x``).
ROW_VARIANT_ARGS = {
    "adaptive_softmax": {},
    "entmax": {"alpha": 1.3},
    "entmax15": {},
    "log_stablemax": {},
    "multimax": {"ranges": [-1.0, 0.0, 0.5, 1.0], "ts": [0.5, 1.0, 1.5, 2.0]},
    "rowmax_pot": {},
    "sa_softmax": {"normalized": True},
    "sigmoid_attention": {},
    "softpick": {},
    "sparsemax": {},
    "topk_softmax": {"k": 3},
}


@pytest.mark.parametrize("name", sorted(ROW_VARIANT_ARGS))
def test_row_variants_map_over_blocks_of_whole_rows(name, lazy_only):
    func, kwargs = getattr(numsoft, name), ROW_VARIANT_ARGS[name]
    where = X > -1.0
    y = func(dask_x((3, 8)), **kwargs, where=where)
    assert isinstance(y, da.Array)
    with dask.config.set(scheduler="sync"):
        close(y.compute(), func(X, **kwargs, where=where))
    with pytest.raises(ValueError, match=r"axis 1 is split into 2 chunks.*rechunk\(\{1: -1\}\)"):
        func(dask_x((3, 4)), **kwargs)


def test_row_variant_argument_errors_are_raised_by_the_call(lazy_only):
    with pytest.raises(ValueError, match="k must satisfy"):
        numsoft.topk_softmax(dask_x((3, 8)), 9)
    with pytest.raises(ValueError, match="temperature"):
        numsoft.sparsemax(dask_x((3, 8)), temperature=-1.0)
    with pytest.raises(TypeError, match="out is not supported"):
        numsoft.sparsemax(dask_x((3, 8)), out=np.empty_like(X))


@pytest.mark.parametrize(
    "name, forward",
    [
        ("softmax_backward", "softmax"),
        ("log_softmax_backward", "log_softmax"),
        ("sparsemax_backward", "sparsemax"),
        ("entmax15_backward", "entmax15"),
        ("stablemax_backward", None),
    ],
)
def test_backward_passes_map_over_blocks(name, forward, lazy_only):
    a = X if forward is None else getattr(numsoft, forward)(X)
    dy = RNG.normal(size=8)  # NumPy beside Dask, broadcast as in the NumPy API
    got = getattr(numsoft, name)(da.from_array(a, chunks=(2, 8)), dy)
    assert isinstance(got, da.Array)
    with dask.config.set(scheduler="sync"):
        close(got.compute(), getattr(numsoft, name)(a, dy))


@pytest.mark.parametrize("name", sorted(dask_calls.NO_DASK_FORM))
def test_functions_without_a_dask_form_say_so(name):
    with pytest.raises(TypeError, match=f"{name} has no Dask form.*compute"):
        getattr(numsoft, name)(dask_x(), dask_x())


def test_every_public_function_has_a_dask_rule():
    rules = set(nd.__all__) | dask_calls.BLOCKWISE_ROWS | dask_calls.BLOCKWISE_PAIRS
    rules |= set(dask_calls.NO_DASK_FORM)
    assert set(numsoft.__all__) == rules


def test_dask_rejects_out_and_the_gpu():
    with pytest.raises(TypeError, match="out is not supported"):
        numsoft.softmax(dask_x(), out=np.empty_like(X))
    with pytest.raises(ValueError, match="target='cuda'"):
        numsoft.softmax(dask_x(), target="cuda")


def test_numpy_input_with_a_dask_mask_is_an_error_not_a_compute(lazy_only):
    with pytest.raises(TypeError, match="where is a dask array but the input is NumPy's"):
        numsoft.softmax(X, where=dask_x() > 0)


# ---------------------------------------------------------------- xarray


def test_xarray_apply_ufunc_keeps_labels_and_laziness(lazy_only):
    xr = pytest.importorskip("xarray")
    arr = xr.DataArray(X, dims=("batch", "vocab"), coords={"batch": np.arange(6) * 10})
    lazy = arr.chunk({"batch": 3})
    y = xr.apply_ufunc(
        numsoft.softmax,
        lazy,
        input_core_dims=[["vocab"]],
        output_core_dims=[["vocab"]],
        dask="allowed",
    )
    assert isinstance(y.data, da.Array) and y.dims == ("batch", "vocab")
    np.testing.assert_array_equal(y.coords["batch"], arr.coords["batch"])
    with dask.config.set(scheduler="sync"):
        close(y.values, numsoft.softmax(X))
    # core dims moved last whatever their place: softmax along "batch"
    along_batch = xr.apply_ufunc(
        numsoft.softmax, arr, input_core_dims=[["batch"]], output_core_dims=[["batch"]]
    )
    close(along_batch.transpose("batch", "vocab").values, numsoft.softmax(X, axis=0))


# ---------------------------------------------------------------- torch CPU tensors


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", CORE)
def test_torch_in_torch_out(name, dtype):
    torch = _torch()
    x = X.astype(dtype)
    t = torch.from_numpy(x.copy())
    y = getattr(numsoft, name)(t, axis=-1)
    assert isinstance(y, torch.Tensor)
    assert y.dtype == getattr(torch, dtype) and y.device == t.device
    close(y.numpy(), getattr(numsoft, name)(x), dtype)
    np.testing.assert_array_equal(t.numpy(), x)  # the input is untouched


def test_torch_result_shares_the_kernels_buffer():
    torch = _torch()
    y = numsoft.softmax(torch.from_numpy(X.copy()))
    y_np = y.numpy()  # a view: writing it is visible in the tensor (no copy made)
    y_np[0, 0] = 7.0
    assert y[0, 0].item() == 7.0


def test_torch_input_is_read_without_a_copy():
    torch = _torch()
    from numsoft.route.array_api import read_host

    t = torch.from_numpy(X.copy())
    assert np.shares_memory(read_host(t, "x"), t.numpy())


def test_torch_out_where_b_and_tuples():
    torch = _torch()
    t = torch.from_numpy(X.copy())
    out = torch.empty_like(t)
    assert numsoft.log_softmax(t, out=out) is out
    close(out.numpy(), numsoft.log_softmax(X))
    mask = X > 0
    y = numsoft.softmax(t, where=torch.from_numpy(mask))
    close(y.numpy(), numsoft.softmax(X, where=mask))
    b = RNG.uniform(-1, 1, size=8)
    lse, sign = numsoft.logsumexp(t, b=torch.from_numpy(b), return_sign=True)
    want, want_sign = numsoft.logsumexp(X, b=b, return_sign=True)
    assert isinstance(lse, torch.Tensor) and isinstance(sign, torch.Tensor)
    close(lse.numpy(), want)
    np.testing.assert_array_equal(sign.numpy(), want_sign)
    scalar = numsoft.logsumexp(t, axis=None)
    assert isinstance(scalar, torch.Tensor) and scalar.shape == ()
    values, index = numsoft.softmax_topk(t, 3)
    assert values.dtype == torch.float64 and index.dtype == torch.int64
    labels = torch.from_numpy(RNG.integers(0, 8, size=6))
    loss = numsoft.cross_entropy(t, labels)
    close(loss.numpy(), numsoft.cross_entropy(X, labels.numpy()))


@pytest.mark.parametrize("name", sorted(ROW_VARIANT_ARGS) + ["ssmax", "stablemax"])
def test_torch_variants(name):
    torch = _torch()
    func, kwargs = getattr(numsoft, name), ROW_VARIANT_ARGS.get(name, {})
    y = func(torch.from_numpy(X.copy()), **kwargs)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float64
    close(y.numpy(), func(X, **kwargs))


def test_torch_dtype_rule():
    torch = _torch()
    ints = torch.arange(6).reshape(2, 3)
    assert numsoft.softmax(ints).dtype == torch.float64  # as for NumPy integers
    for dtype in (torch.float16, torch.bfloat16):  # computed in float32, returned as given
        half = (torch.arange(6.0).reshape(2, 3) / 4).to(dtype)
        y = numsoft.softmax(half)
        assert y.dtype == dtype
        want = torch.softmax(half.float(), -1).to(dtype)
        torch.testing.assert_close(y, want, rtol=0, atol=0)
        assert numsoft.softmax(half, dtype=np.float64).dtype == torch.float64
        out = torch.empty(2, 3, dtype=dtype)
        assert numsoft.softmax(half, out=out) is out
        torch.testing.assert_close(out, want, rtol=0, atol=0)
        assert numsoft.logsumexp(half).dtype == dtype
        values, indices = numsoft.softmax_topk(half, 2)
        assert values.dtype == dtype and indices.dtype == torch.int64
    assert numsoft.softmax(np.ones(3, np.float16)).dtype == np.float32  # NumPy: SPEC §1


def test_torch_bad_and_mixed_inputs():
    torch = _torch()
    t = torch.from_numpy(X.copy())
    with pytest.raises(TypeError, match="out is a NumPy array but the input is a torch"):
        numsoft.softmax(t, out=np.empty_like(X))
    with pytest.raises(TypeError, match="where is a NumPy array but the input is a torch"):
        numsoft.softmax(t, where=X > 0)
    with pytest.raises(TypeError, match="dy is a dask array but the input is a torch"):
        numsoft.softmax_backward(t, dask_x())
    with pytest.raises(TypeError, match="out must be a NumPy array, got Tensor"):
        numsoft.softmax(X, out=t)
    with pytest.raises(TypeError, match="b is a torch array but the input is NumPy's"):
        numsoft.logsumexp(X, b=t)


# ---------------------------------------------------------------- array_api_strict


def _strict():
    return pytest.importorskip("array_api_strict")


@pytest.mark.parametrize("name", CORE)
def test_array_api_strict_in_and_out(name):
    xs = _strict()
    a = xs.asarray(X, device=xs.Device("device1"))
    y = getattr(numsoft, name)(a)
    assert type(y) is type(a) and y.device == a.device
    close(np.from_dlpack(xs.asarray(y, device=xs.Device("CPU_DEVICE"))), getattr(numsoft, name)(X))


def test_array_api_strict_out_is_written():
    xs = _strict()
    a, out = xs.asarray(X), xs.empty((6, 8), dtype=xs.float64)
    assert numsoft.sparsemax(a, out=out) is out
    close(np.from_dlpack(out), numsoft.sparsemax(X))


def test_libraries_do_not_mix():
    torch, xs = _torch(), _strict()
    with pytest.raises(TypeError, match="where is a torch array but the input is a array_api"):
        numsoft.softmax(xs.asarray(X), where=torch.from_numpy(X > 0))


# ---------------------------------------------------------------- numsoft.special


@pytest.mark.parametrize("name", CORE)
def test_special_without_scipy_array_api_returns_numpy(name, monkeypatch):
    torch = _torch()
    monkeypatch.delenv("SCIPY_ARRAY_API", raising=False)
    got = getattr(numsoft.special, name)(torch.from_numpy(X.copy()), axis=1)
    assert type(got) is np.ndarray  # as SciPy: np.asarray of the tensor
    close(got, getattr(numsoft.special, name)(X, axis=1))
    lazy = getattr(numsoft.special, name)(dask_x(), axis=1)
    assert type(lazy) is np.ndarray  # SciPy computes a Dask array here too


@pytest.mark.parametrize("name", CORE)
def test_special_with_scipy_array_api_follows_the_input(name, monkeypatch):
    torch, xs = _torch(), _strict()
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    func = getattr(numsoft.special, name)
    want = func(X, axis=1)
    t = func(torch.from_numpy(X.astype(np.float32)), axis=1)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    close(t.numpy(), want, np.float32)
    ints = func(torch.arange(6).reshape(2, 3), axis=1)
    assert ints.dtype == torch.get_default_dtype()  # SciPy: the library's default float
    s = func(xs.asarray(X), axis=1)
    assert type(s) is type(xs.asarray(X))
    close(np.from_dlpack(s), want)
    with dask.config.set(scheduler=_refuse_compute):
        lazy = func(dask_x(), axis=1)
    assert isinstance(lazy, da.Array)
    with dask.config.set(scheduler="sync"):
        close(lazy.compute(), want)


def test_special_logsumexp_matches_scikit_learns_array_api_helper(monkeypatch):
    """scikit-learn's ``_logsumexp(x, axis, xp)`` (its stand-in for SciPy's, in the
    estimators' array-API paths) and ``numsoft.special.logsumexp(x, axis)`` agree in
    type, dtype and value, so numsoft.special serves those calls as it is."""
    torch, xs = _torch(), _strict()
    sklearn = pytest.importorskip("sklearn")
    from sklearn.utils._array_api import _logsumexp

    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    for a in (torch.from_numpy(X), torch.from_numpy(X.astype(np.float32)), xs.asarray(X)):
        with sklearn.config_context(array_api_dispatch=True):
            ref = _logsumexp(a, axis=1)
        got = numsoft.special.logsumexp(a, axis=1)
        assert type(got) is type(ref) and got.dtype == ref.dtype
        close(np.from_dlpack(got), np.from_dlpack(ref), np.from_dlpack(ref).dtype)


def test_scipys_array_api_tests_pass_on_numsoft_special():
    """SciPy's own tests of the three functions (its ``xp`` fixture: NumPy, torch,
    array_api_strict, Dask, as installed), with numsoft.special in their place."""
    pytest.importorskip("array_api_strict")
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "tests"), ROOT])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "scipy_on_numsoft", "-p", "no:cacheprovider"]
    cmd += ["-W", "ignore::pytest.PytestUnknownMarkWarning", "--rootdir", ROOT]
    cmd += ["-c", os.devnull, "--pyargs", "scipy.special.tests.test_logsumexp"]
    run = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert re.search(r"\b[1-9]\d* passed", run.stdout) and not re.search(r"\d failed", run.stdout)


# ---------------------------------------------------------------- NumPy


def test_numpy_and_array_likes_are_unchanged():
    assert type(numsoft.softmax(X)) is np.ndarray
    assert type(numsoft.softmax(X.tolist())) is np.ndarray
    masked = np.ma.masked_array(X, mask=X > 1)
    assert type(numsoft.softmax(masked)) is np.ndarray


def test_every_public_function_follows_the_input_type():
    for name in numsoft.__all__:
        func = getattr(numsoft, name)
        assert inspect.unwrap(func) is not func, name


def test_the_array_input_may_be_passed_by_name():
    torch = _torch()
    y = numsoft.softmax(X)
    dy = RNG.normal(size=X.shape)
    want = numsoft.softmax_backward(y, dy)
    close(numsoft.softmax_backward(y=y, dy=dy), want)
    got = numsoft.softmax_backward(y=torch.from_numpy(y), dy=torch.from_numpy(dy))
    assert isinstance(got, torch.Tensor)
    close(got.numpy(), want)
    labels = RNG.integers(0, 8, size=6)
    close(numsoft.cross_entropy(logits=X, labels=labels), numsoft.cross_entropy(X, labels))
    q = RNG.normal(size=(4, 8))
    close(numsoft.attention(q=q, k=q, v=q), numsoft.attention(q, q, q))
    close(numsoft.special.logsumexp(a=X), numsoft.special.logsumexp(X))
    assert isinstance(numsoft.softmax(x=dask_x()), da.Array)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        numsoft.softmax()
