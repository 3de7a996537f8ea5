"""softmax / log_softmax / logsumexp on the CUDA backend vs a float64 NumPy reference
and the CPU backend, in every launch regime and pass structure."""

import os
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import numsoft
from numsoft.cuda import launch

FUNCS = ("softmax", "log_softmax", "logsumexp")
ALGOS = ("online", "two-pass", "three-pass-reload")
#: (rows, n) per regime under the tiny launch constants of conftest.py.
REGIMES = {"warp-whole": (3, 7), "block-whole": (2, 12), "block-split": (2, 40)}
TOL = {np.float32: dict(rtol=2e-6, atol=2e-6), np.float64: dict(rtol=1e-13, atol=1e-13)}


# ---------------------------------------------------------------- reference (float64)


def _ref_row(v, func):
    """The SPEC §1 definition on one float64 row (masked entries already -inf)."""
    with np.errstate(all="ignore"):
        nan = np.full(v.shape, np.nan)
        if np.isnan(v).any():
            return np.nan if func == "logsumexp" else nan
        hits = v == np.inf
        if hits.any():
            if func == "logsumexp":
                return np.inf
            p = hits / hits.sum()
            return np.log(p) if func == "log_softmax" else p
        if not (v > -np.inf).any():
            return -np.inf if func == "logsumexp" else nan
        m = v.max()
        s = np.exp(v - m).sum()
        if func == "logsumexp":
            return m + np.log(s)
        return (v - m) - np.log(s) if func == "log_softmax" else np.exp(v - m) / s


def reference(func, x, axis=-1, where=None, temperature=1.0):
    z = np.asarray(x, dtype=np.float64) / temperature
    if where is not None:
        z = np.where(where, z, -np.inf)
    z = np.moveaxis(z, axis, -1)
    rows = z.reshape(-1, z.shape[-1])
    out = [_ref_row(r, func) for r in rows]
    if func == "logsumexp":
        res = np.array(out, dtype=np.float64).reshape(z.shape[:-1]) * temperature
    else:
        res = np.moveaxis(np.array(out).reshape(z.shape), -1, axis)
    if where is not None:
        empty = ~np.any(np.broadcast_to(where, np.shape(x)), axis=axis, keepdims=True)
        if func != "logsumexp":
            res = np.where(empty, 0.0 if func == "softmax" else -np.inf, res)
    return res


def call(func, x, **kw):
    return getattr(numsoft, func)(x, **kw)


def check(func, got, x, dtype, **kw):
    """``got`` agrees with the float64 reference and with the CPU backend."""
    got = np.asarray(got)
    want = reference(func, x, **{k: v for k, v in kw.items() if k != "algorithm"})
    np.testing.assert_allclose(got, want, **TOL[dtype])
    cpu = call(func, x, **kw)
    np.testing.assert_allclose(got, cpu, **TOL[dtype])
    assert got.dtype == np.asarray(cpu).dtype


def logits(shape, dtype, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


# ---------------------------------------------------------------- regimes × structures


@pytest.mark.parametrize("regime", REGIMES)
def test_regimes_are_reached(regime):
    rows, n = REGIMES[regime]
    assert launch.plan(rows, n, 1).regime == regime


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("func", FUNCS)
def test_host_input_matches_reference(func, algorithm, regime, dtype):
    x = logits(REGIMES[regime], dtype)
    got = call(func, x, target="cuda", algorithm=algorithm)
    assert isinstance(got, np.ndarray)
    check(func, got, x, dtype, algorithm=algorithm)


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize(
    ("shape", "axis", "dtype"),
    [((3, 5, 2), 1, np.float64), ((40, 3), 0, np.float64), ((40, 3), 0, np.float32)],
)
def test_middle_axis_columns(func, algorithm, shape, axis, dtype):
    # One thread per column: a 40-element column is 5 register tiles (float32) or 10
    # (float64) of one thread, so the tile loops' carries across tiles are exercised.
    x = logits(shape, dtype, seed=1)
    outer, n, inner = shape[0] if axis else 1, shape[axis], shape[-1]
    assert launch.plan(outer * inner, n, inner).regime.startswith("column")
    got = call(func, x, axis=axis, target="cuda", algorithm=algorithm)
    check(func, got, x, dtype, axis=axis, algorithm=algorithm)


# ---------------------------------------------------------------- special values


def special_rows(n):
    rows = np.zeros((7, n))
    rows[:] = np.linspace(-2.0, 2.0, n)
    rows[0, 3] = np.nan  # NaN → NaN row
    rows[1, 2] = np.inf  # one +inf → one-hot
    rows[2, [1, n - 1]] = np.inf  # two +inf → split equally
    rows[3] = -np.inf  # all -inf → NaN (logsumexp -inf)
    rows[4, ::2] = -np.inf  # some -inf → zero weight
    rows[5, 1], rows[5, 4] = np.inf, np.nan  # NaN wins over +inf
    rows[6, : n // 2] = -np.inf  # leading tiles with nothing finite, then a rising max
    rows[6, n // 2 :] = np.linspace(-50.0, 50.0, n - n // 2)
    return rows


@pytest.mark.parametrize("n", [7, 40])
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("func", FUNCS)
def test_special_values(func, algorithm, n):
    x = special_rows(n)
    got = call(func, x, target="cuda", algorithm=algorithm)
    check(func, got, x, np.float64, algorithm=algorithm)


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("func", FUNCS)
def test_special_values_across_tiles(func, algorithm):
    # Columns of 40 (one thread each): the special entries fall in different tiles.
    x = special_rows(40).T.astype(np.float32)
    got = call(func, x, axis=0, target="cuda", algorithm=algorithm)
    check(func, got, x, np.float32, axis=0, algorithm=algorithm)


@pytest.mark.parametrize("n", [7, 40])
@pytest.mark.parametrize("func", FUNCS)
def test_two_pass_out_of_range_falls_back(func, n):
    # float32 with |x| beyond the extended-exponent bound (2839): the online fallback.
    x = logits((3, n), np.float32)
    x[0, 1] = 5000.0
    x[1] -= 4000.0
    x[2, 0] = -1e30
    got = call(func, x, target="cuda", algorithm="two-pass")
    check(func, got, x, np.float32, algorithm="two-pass")


# ---------------------------------------------------------------- common arguments


@pytest.mark.parametrize("algorithm", ["online", "two-pass"])
@pytest.mark.parametrize("func", FUNCS)
def test_where_mask_with_empty_row(func, algorithm):
    x = logits((3, 7), np.float64, seed=2)
    x[0, 0] = np.nan  # hidden under the mask: must not leak
    where = np.ones((3, 7), dtype=bool)
    where[0, 0] = where[1, ::2] = False
    where[2] = False  # fully masked row: softmax 0, log_softmax -inf, logsumexp -inf
    got = call(func, x, where=where, target="cuda", algorithm=algorithm)
    check(func, got, x, np.float64, where=where, algorithm=algorithm)
    d_got = call(func, cuda.to_device(x), where=where, algorithm=algorithm)
    np.testing.assert_allclose(d_got.copy_to_host(), got, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("func", FUNCS)
def test_temperature(func, dtype):
    x = logits((2, 40), dtype, seed=3)
    got = call(func, x, temperature=0.25, target="cuda")
    check(func, got, x, dtype, temperature=0.25)


@pytest.mark.parametrize("func", FUNCS)
def test_empty_axes(func):
    for shape in [(3, 0), (0, 5)]:
        x = np.zeros(shape)
        got = call(func, x, target="cuda")
        np.testing.assert_array_equal(got, call(func, x))
        d_got = call(func, cuda.to_device(x)).copy_to_host()
        np.testing.assert_array_equal(d_got, call(func, x))


def test_dtypes_follow_spec():
    x16 = logits((2, 7), np.float16)
    assert numsoft.softmax(x16, target="cuda").dtype == np.float32
    got16 = numsoft.softmax(x16, target="cuda", dtype=np.float16)
    assert got16.dtype == np.float16
    np.testing.assert_allclose(got16, reference("softmax", x16), rtol=1e-3)
    xi = np.arange(14).reshape(2, 7)
    gi = numsoft.log_softmax(xi, target="cuda")
    assert gi.dtype == np.float64
    check("log_softmax", gi, xi, np.float64)


# ---------------------------------------------------------------- device arrays


@pytest.mark.parametrize("func", FUNCS)
def test_device_input_stays_on_device(func):
    x = logits((3, 7), np.float32, seed=4)
    d_x = cuda.to_device(x)
    got = call(func, d_x)  # no target: chosen from the device array
    assert cuda.devicearray.is_cuda_ndarray(got)
    check(func, got.copy_to_host(), x, np.float32)
    np.testing.assert_array_equal(d_x.copy_to_host(), x)  # input untouched


@pytest.mark.parametrize("func", ["softmax", "log_softmax"])
def test_device_out_and_in_place(func):
    x = logits((2, 40), np.float64, seed=5)
    want = call(func, x)
    d_out = cuda.device_array_like(x)
    assert call(func, cuda.to_device(x), out=d_out) is d_out
    np.testing.assert_allclose(d_out.copy_to_host(), want, rtol=1e-13, atol=1e-13)
    for algorithm in ALGOS:  # split rows, in place (two-pass runs as online there)
        d_x = cuda.to_device(x)
        call(func, d_x, out=d_x, algorithm=algorithm)
        np.testing.assert_allclose(d_x.copy_to_host(), want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("func", FUNCS)
def test_device_strided_layouts(func):
    base = logits((4, 3, 6), np.float64, seed=6)
    cases = [
        (np.asfortranarray(base), -1),  # Fortran order: a strided view, no copy
        (base[:, :, ::-1], -1),  # reversed: copied on the device
        (base, (0, 2)),  # axes that merge into no single stride: copied
        (base, None),
    ]
    for host, axis in cases:
        d = cuda.to_device(np.ascontiguousarray(host)) if host.flags.c_contiguous else None
        if d is None:
            d = cuda.to_device(np.asfortranarray(host)) if host.flags.f_contiguous else None
        if d is None:  # a reversed view of a device array
            d = cuda.to_device(base)[:, :, ::-1]
        got = call(func, d, axis=axis).copy_to_host()
        want = call(func, host, axis=axis)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_device_logsumexp_shapes():
    x = logits((3, 4, 5), np.float64, seed=7)
    d = cuda.to_device(x)
    for axis in [0, 1, -1, (0, 2), None]:
        for keepdims in (False, True):
            got = numsoft.logsumexp(d, axis=axis, keepdims=keepdims)
            want = numsoft.logsumexp(x, axis=axis, keepdims=keepdims)
            assert got.shape == np.shape(want)
            np.testing.assert_allclose(got.copy_to_host(), want, rtol=1e-13)
    b = np.linspace(-1.0, 1.0, 5)
    lse, sign = numsoft.logsumexp(d, b=b, return_sign=True)
    want_lse, want_sign = numsoft.logsumexp(x, b=b, return_sign=True)
    np.testing.assert_allclose(lse.copy_to_host(), want_lse, rtol=1e-13)
    np.testing.assert_array_equal(sign.copy_to_host(), want_sign)


def test_device_dtype_conversion():
    x = logits((2, 7), np.float16, seed=8)
    got = numsoft.softmax(cuda.to_device(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.copy_to_host(), numsoft.softmax(x), rtol=2e-6)
    got16 = numsoft.logsumexp(cuda.to_device(x), dtype=np.float16)
    assert got16.dtype == np.float16
    np.testing.assert_array_equal(got16.copy_to_host(), numsoft.logsumexp(x, dtype=np.float16))


# ---------------------------------------------------------------- errors


BAD_ARGS = [
    dict(axis=2),
    dict(axis=1.5),
    dict(axis=(1, 1)),
    dict(axis=(0, -3)),
    dict(axis="1"),
    dict(temperature=0.0),
    dict(temperature=np.inf),
    dict(temperature=1e-39, dtype=np.float32),  # 1/t overflows float32
    dict(algorithm="fastest"),
    dict(dtype=np.int32),
    dict(where=np.ones(3, dtype=bool)),
    dict(where=np.ones((2, 7))),
    dict(out=np.empty((2, 6))),
    dict(out=np.empty((2, 7), dtype=np.float32)),
    dict(temperature="hot"),
    dict(temperature=-1.0),
    dict(algorithm=3),
    dict(dtype="complex128"),
]

#: logsumexp's own arguments, on top of ``BAD_ARGS``.
BAD_LSE_ARGS = [dict(keepdims=1), dict(return_sign="no"), dict(out=np.empty(3))]


@pytest.mark.parametrize("x_dtype", [np.complex128, np.dtype("U1"), object])
def test_same_input_errors_as_cpu(x_dtype):
    # A device array cannot hold strings or objects: those are checked on the host.
    x = np.zeros((2, 3), dtype=x_dtype)
    with pytest.raises(Exception) as cpu_err:
        numsoft.softmax(x)
    inputs = [x] + ([cuda.to_device(x)] if x.dtype.kind == "c" else [])
    for arg in inputs:
        with pytest.raises(cpu_err.type) as err:
            numsoft.softmax(arg, target="cuda")
        assert str(err.value) == str(cpu_err.value)


def assert_same_error_on_the_gpu(func, x, kw):
    """``func(x, **kw)`` raises on the GPU, for ``x`` on the host and on the device, the
    error it raises on the CPU, word for word (an ``out`` goes to the device with ``x``)."""
    with pytest.raises(Exception) as cpu_err:
        func(x, **kw)
    for arg in (x, cuda.to_device(x)):
        call_kw = dict(kw)
        if "out" in kw and arg is not x:
            call_kw["out"] = cuda.device_array(kw["out"].shape, dtype=kw["out"].dtype)
        with pytest.raises(cpu_err.type) as err:
            func(arg, target="cuda", **call_kw)
        assert str(err.value) == str(cpu_err.value)


@pytest.mark.parametrize("kw", BAD_ARGS + BAD_LSE_ARGS, ids=lambda kw: next(iter(kw)))
def test_same_logsumexp_errors_as_cpu(kw):
    assert_same_error_on_the_gpu(numsoft.logsumexp, logits((2, 7), np.float64), kw)


@pytest.mark.parametrize("kw", BAD_ARGS, ids=lambda kw: next(iter(kw)))
def test_same_errors_as_cpu(kw):
    assert_same_error_on_the_gpu(numsoft.softmax, logits((2, 7), np.float64), kw)


def test_device_errors_name_the_argument():
    d = cuda.to_device(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="out must be a device array"):
        numsoft.softmax(d, out=np.empty((2, 3)))
    with pytest.raises(TypeError, match="out has dtype"):
        numsoft.softmax(d, out=cuda.device_array((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="complex"):
        numsoft.softmax(cuda.to_device(np.zeros(3, dtype=np.complex128)))
    with pytest.raises(ValueError, match="target"):
        numsoft.softmax(np.zeros(3), target="gpu")


# ---------------------------------------------------------------- properties


@settings(max_examples=12, deadline=None)
@given(
    rows=st.integers(1, 3),
    n=st.integers(1, 20),
    func=st.sampled_from(FUNCS),
    algorithm=st.sampled_from(ALGOS),
    seed=st.integers(0, 2**16),
)
def test_random_shapes(rows, n, func, algorithm, seed):
    x = logits((rows, n), np.float64, seed=seed, scale=10.0)
    got = call(func, x, target="cuda", algorithm=algorithm)
    check(func, got, x, np.float64, algorithm=algorithm)


# ---------------------------------------------------------------- production sizes (GPU)


@pytest.mark.default_launch
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize(
    ("shape", "axis"), [((300, 1000), -1), ((64, 5000), -1), ((2, 300_000), -1), ((2000, 3), 0)]
)
def test_production_launch_sizes(shape, axis, algorithm):
    x = logits(shape, np.float32, seed=9)
    for func in FUNCS:
        got = call(func, cuda.to_device(x), axis=axis, algorithm=algorithm).copy_to_host()
        cpu = call(func, x, axis=axis, algorithm=algorithm)
        np.testing.assert_allclose(got, cpu, rtol=2e-5, atol=2e-6)


# ---------------------------------------------------------------- other libraries' device arrays


SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
if SIMULATED:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _SimulatedArray
else:
    _SimulatedArray = object


class _LibraryArray(_SimulatedArray):
    """A device array of a library other than Numba (as CuPy's or torch's), simulated:
    its own type, namespace and device."""

    device = "gpu:0"

    def __array_namespace__(self, api_version=None):
        return _LIBRARY


def _library_asarray(obj, device=None):
    assert device == "gpu:0"
    return _LibraryArray(obj._ary)


_LIBRARY = types.ModuleType("devicelib")  # the library's namespace
_LIBRARY.asarray = _library_asarray


@pytest.mark.skipif(not SIMULATED, reason="builds a library's array from the simulator's")
def test_another_librarys_device_array_comes_back_as_its_type():
    x = np.random.default_rng(3).normal(size=(4, 6))
    lib = _LibraryArray(x.copy())
    for name in ("softmax", "log_softmax", "logsumexp"):
        got = getattr(numsoft, name)(lib)
        assert type(got) is _LibraryArray, name
        np.testing.assert_allclose(got._ary, getattr(numsoft, name)(x), rtol=1e-12)
    out = _LibraryArray(np.empty_like(x))
    assert numsoft.softmax(lib, out=out) is out
    np.testing.assert_allclose(out._ary, numsoft.softmax(x), rtol=1e-12)
    assert type(numsoft.sparsemax(lib)) is _LibraryArray
