"""``numsoft.special`` against SciPy: its own test suite, and the drop-in contract."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import special as scipy_special

import numsoft
from numsoft import special

ROOT = Path(__file__).resolve().parents[1]


def _scipy_test_file() -> Path | None:
    spec = importlib.util.find_spec("scipy.special")
    path = Path(spec.origin).parent / "tests" / "test_logsumexp.py"
    return path if path.exists() else None


@pytest.mark.skipif(_scipy_test_file() is None, reason="this SciPy install has no tests")
def test_scipy_own_logsumexp_softmax_tests_pass(tmp_path):
    # SciPy's test_logsumexp.py (logsumexp, softmax, log_softmax; complex cases
    # included) with its three functions replaced by numsoft.special's. Its array-API
    # fixtures (xp) come from SciPy's conftest, loaded as a plugin; the decorators keep
    # looking up SciPy's own functions in SciPy's capability table.
    source = _scipy_test_file().read_text()
    source, replaced = re.subn(
        r"^from scipy\.special import log_softmax, logsumexp, softmax$",
        "from numsoft.special import log_softmax, logsumexp, softmax\n"
        "import scipy.special as _scipy_special",
        source, flags=re.M,
    )  # fmt: skip
    assert replaced == 1, "SciPy's test file changed its imports: update this adapter"
    source = re.sub(r"make_xp_test_case\((\w+)\)", r"make_xp_test_case(_scipy_special.\1)", source)
    (tmp_path / "test_numsoft_as_scipy.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "scipy.conftest", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-W", "ignore::DeprecationWarning", "--rootdir", str(tmp_path),
         str(tmp_path / "test_numsoft_as_scipy.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    summary = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert int(re.search(r"(\d+) passed", summary).group(1)) >= 300, summary


def test_positional_arguments_and_defaults_are_scipys():
    x = np.array([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5]])
    b = np.array([1.0, -2.0, 1.0])
    for args in [(x,), (x, 0), (x, 1, b), (x, None, b, True), (x, 1, b, False, True)]:
        got, want = special.logsumexp(*args), scipy_special.logsumexp(*args)
        np.testing.assert_allclose(got, want, rtol=1e-14)
    for f in ("softmax", "log_softmax"):
        np.testing.assert_allclose(getattr(special, f)(x), getattr(scipy_special, f)(x),
                                   rtol=1e-14)  # fmt: skip
        np.testing.assert_allclose(getattr(special, f)(x, 1), getattr(scipy_special, f)(x, 1),
                                   rtol=1e-14)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_result_types_are_scipys(dtype):
    x = np.ones((2, 3), dtype)
    for f in ("softmax", "log_softmax", "logsumexp"):
        got, want = getattr(special, f)(x), getattr(scipy_special, f)(x)
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype, f
    scalar = special.logsumexp(np.float32(2.0))
    assert isinstance(scalar, np.float32)


def test_longdouble_is_returned_as_longdouble():
    x = np.arange(4, dtype=np.longdouble)
    got = special.logsumexp(x)
    assert got.dtype == np.longdouble
    assert got == pytest.approx(float(scipy_special.logsumexp(x)), rel=1e-15)


def test_masked_arrays_main_api_honours_the_mask_special_ignores_it_as_scipy():
    # docs/differences.md: numsoft's main API reads an np.ma mask as where=; numsoft.special
    # and SciPy use the data under the mask (SciPy gives 0.0 for a fully masked row's
    # logsumexp, numsoft.special the logsumexp of the data).
    data = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = np.array([[False, True, False], [True, True, True]])
    x = np.ma.masked_array(data, mask=mask)
    np.testing.assert_allclose(numsoft.softmax(x), numsoft.softmax(data, where=~mask))
    np.testing.assert_array_equal(numsoft.softmax(x)[1], 0.0)
    np.testing.assert_allclose(numsoft.logsumexp(x), [scipy_special.logsumexp([1.0, 3.0]), -np.inf])
    np.testing.assert_allclose(special.softmax(x, axis=-1), scipy_special.softmax(data, axis=-1))
    np.testing.assert_allclose(
        special.logsumexp(x, axis=-1), scipy_special.logsumexp(data, axis=-1)
    )
    np.testing.assert_allclose(special.softmax(x, axis=-1), scipy_special.softmax(x, axis=-1))
    np.testing.assert_allclose(
        special.logsumexp(x, axis=-1)[0], scipy_special.logsumexp(x, axis=-1)[0]
    )
