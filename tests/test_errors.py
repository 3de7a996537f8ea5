"""Bad input gives a clear TypeError/ValueError naming the argument (never a Numba error)."""

import numpy as np
import pytest

import numsoft

X = np.ones((2, 3))
FUNCS = [numsoft.softmax, numsoft.log_softmax, numsoft.logsumexp]


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"x": np.ones(3, complex)}, TypeError, "complex"),
        ({"x": np.array(["a", "b"])}, TypeError, "x must hold real numbers"),
        ({"x": np.array([object(), 1])}, TypeError, "x must hold real numbers"),
        ({"x": [[1, 2], [3]]}, TypeError, "x must be array-like"),
        ({"axis": 2}, np.exceptions.AxisError, "axis 2 is out of bounds"),
        ({"axis": -3}, np.exceptions.AxisError, "out of bounds"),
        ({"axis": (0, 0)}, ValueError, "repeated axis"),
        ({"axis": 1.0}, TypeError, "axis must be an int"),
        ({"algorithm": "fast"}, ValueError, "algorithm must be one of"),
        ({"temperature": 0.0}, ValueError, "temperature must be positive"),
        ({"temperature": -1.0}, ValueError, "temperature must be positive"),
        ({"temperature": np.inf}, ValueError, "temperature must be positive"),
        ({"temperature": np.nan}, ValueError, "temperature must be positive"),
        ({"temperature": "1"}, TypeError, "temperature must be a real number"),
        ({"temperature": 1e-300, "dtype": np.float32}, ValueError, "temperature"),
        ({"dtype": np.int32}, TypeError, "dtype must be float16, float32 or float64"),
        ({"dtype": "notadtype"}, TypeError, "dtype"),
        ({"where": np.ones((2, 3))}, TypeError, "where must be a boolean array"),
        ({"where": np.ones((3, 3), bool)}, ValueError, "where of shape"),
    ],
)
def test_bad_arguments(func, kwargs, exc, match):
    kwargs = dict(kwargs)
    x = kwargs.pop("x", X)
    with pytest.raises(exc, match=match):
        func(x, **kwargs)


@pytest.mark.parametrize("func", [numsoft.softmax, numsoft.log_softmax])
def test_bad_out(func):
    with pytest.raises(ValueError, match="out has shape"):
        func(X, out=np.empty((3, 2)))
    with pytest.raises(TypeError, match="out has dtype"):
        func(X, out=np.empty((2, 3), np.float32))
    with pytest.raises(TypeError, match="out must be a NumPy array"):
        func(X, out=[[0.0] * 3] * 2)
    ro = np.empty((2, 3))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        func(X, out=ro)


def test_bad_logsumexp_arguments():
    with pytest.raises(ValueError, match="b of shape"):
        numsoft.logsumexp(X, b=np.ones(4))
    with pytest.raises(TypeError, match="b: complex"):
        numsoft.logsumexp(X, b=np.ones(3, complex))
    with pytest.raises(ValueError, match="out has shape"):
        numsoft.logsumexp(X, out=np.empty(3))


def test_bad_backward_arguments():
    with pytest.raises(ValueError, match="do not broadcast"):
        numsoft.softmax_backward(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(TypeError, match="dy: complex"):
        numsoft.log_softmax_backward(np.ones(3), np.ones(3, complex))
