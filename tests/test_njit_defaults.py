"""Every public function inside a user's ``@numba.njit`` function, as a user first writes
the call: only the required arguments, then once with each option a user sets that
changes what the call computes or returns (``where=``, ``bias=``, ``mask=``,
``return_lse=True``, ``return_grad=True``), on float32 and float64.

The cases derive from the public signatures (``numsoft.__all__``; the variants'
through the variant table), so a new function or option is called here without an
edit. Each result is compared with the Python API's for the same arguments. Each case
compiles one user function per dtype; the functions it calls are numsoft's cached
kernels, shared with the rest of the suite.
"""

from __future__ import annotations

import inspect
import warnings

import numba
import numpy as np
import pytest
from numba.core.errors import NumbaExperimentalFeatureWarning

import numsoft
from numsoft.vocabulary import PUBLIC_VARIANTS

ROWS, COLS, VOCAB = 4, 6, 5
#: The options a user sets, with the value they pass.
OPTIONS = {
    "where": lambda a: np.arange(ROWS * COLS).reshape(ROWS, COLS) % 3 != 1,
    "bias": lambda a: np.linspace(-0.5, 0.5, VOCAB, dtype=a.dtype),
    "mask": lambda a: np.tril(np.ones((ROWS, ROWS), dtype=bool)),
    "return_lse": lambda a: True,
    "return_grad": lambda a: True,
}
#: Options of one function that take another value than ``OPTIONS`` gives.
OPTION_OVERRIDES = {
    ("sigmoid_attention", "bias"): lambda a: -0.5,
    # a label may not name a class left out: the mask keeps each row's label
    ("cross_entropy", "where"): lambda a: (
        OPTIONS["where"](a) | (np.arange(COLS) == _labels(a)[:, None])
    ),
    ("margin_cross_entropy", "where"): lambda a: (
        OPTIONS["where"](a) | (np.arange(COLS) == _labels(a)[:, None])
    ),
}


def _array(dtype, seed=0, shape=(ROWS, COLS)):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _labels(a):
    return np.arange(ROWS, dtype=np.int64) % VOCAB


#: A value for each required parameter, by name; ``(function, name)`` first.
REQUIRED = {
    "x": _array,
    "logits": _array,
    "student_logits": _array,
    "cos_logits": lambda dtype: np.tanh(_array(dtype)),
    "sampled": lambda dtype: np.array([0, 2, 4, 2], dtype=np.int64),
    "teacher_logits": lambda dtype: _array(dtype, seed=3),
    "h": _array,
    "y": lambda dtype: numsoft.softmax(_array(dtype)),
    "y_log": lambda dtype: numsoft.log_softmax(_array(dtype)),
    "dy": lambda dtype: _array(dtype, seed=1),
    "labels": lambda dtype: _labels(None),
    "W": lambda dtype: _array(dtype, seed=2, shape=(VOCAB, COLS)),
    "k": lambda dtype: 2,
    "ranges": lambda dtype: (-1.0, 1.0, -2.0, 2.0),
    "ts": lambda dtype: (0.5, 0.3, 0.1, 0.05),
    ("attention", "q"): _array,
    ("attention", "k"): lambda dtype: _array(dtype, seed=1),
    ("attention", "v"): lambda dtype: _array(dtype, seed=2),
}
#: Results that are random for the same arguments (no seed given): checked as a
#: distribution per row instead of against the Python API.
RANDOM = {"gumbel_softmax"}


def _public_functions():
    names = [name for name in numsoft.__all__ if callable(getattr(numsoft, name))]
    variants = {v.name for v in PUBLIC_VARIANTS}
    variants |= {f"{v.name}_backward" for v in PUBLIC_VARIANTS if v.backward}
    assert variants <= set(names)  # the table's functions are all public
    return names


def _cases():
    for name in _public_functions():
        params = inspect.signature(getattr(numsoft, name)).parameters
        yield name, None
        yield from ((name, option) for option in OPTIONS if option in params)


CASES = list(_cases())


def _required(name):
    """The names of ``numsoft.<name>``'s parameters without a default."""
    params = inspect.signature(getattr(numsoft, name)).parameters.values()
    return [p.name for p in params if p.default is inspect.Parameter.empty]


def _required_arguments(name, dtype):
    return tuple(REQUIRED.get((name, p), REQUIRED.get(p))(dtype) for p in _required(name))


def _user_function(name, option):
    """A user's @njit function calling ``numsoft.<name>`` with its required arguments
    and ``option``: a literal ``True`` where it decides the result type, else the value
    passed in."""
    extra = ""
    if option in ("return_lse", "return_grad"):
        extra = f", {option}=True"
    elif option is not None:
        extra = f", {option}=value"
    # Spelled out: Numba takes no keyword beside *args.
    positional = ", ".join(f"args[{i}]" for i in range(len(_required(name))))
    namespace = {"func": getattr(numsoft, name)}
    exec(f"def user(args, value):\n    return func({positional}{extra})", namespace)
    return numba.njit(namespace["user"])


def _flat(result):
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize(
    ("name", "option"), CASES, ids=[f"{n}-{o or 'defaults'}" for n, o in CASES]
)
def test_public_function_inside_njit(name, option):
    user = _user_function(name, option)
    for dtype in (np.float32, np.float64):
        args = _required_arguments(name, dtype)
        value = None
        kwargs = {}
        if option is not None:
            value = OPTION_OVERRIDES.get((name, option), OPTIONS[option])(args[0])
            kwargs = {option: value}
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaExperimentalFeatureWarning)
            got = user(args, value if value is not None else 0)
        want = getattr(numsoft, name)(*args, **kwargs)
        assert len(_flat(got)) == len(_flat(want)), f"{name}({option}): result count"
        rtol = 1e-5 if dtype == np.float32 else 1e-12
        for g, w in zip(_flat(got), _flat(want), strict=True):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape
            if name in RANDOM:
                np.testing.assert_allclose(g.sum(axis=-1), 1.0, rtol=rtol * 10)
            else:
                np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


def test_cases_cover_the_options_users_set():
    names = {name for name, _ in CASES}
    assert {"softmax", "linear_cross_entropy", "attention", "gumbel_softmax"} <= names
    assert ("linear_cross_entropy", "return_grad") in CASES
    assert ("linear_cross_entropy", "bias") in CASES
    assert ("cross_entropy", "return_lse") in CASES
    assert ("sparsemax", "where") in CASES


def test_a_runtime_return_grad_names_the_argument_and_the_fix():
    @numba.njit
    def user(h, W, labels, flag):
        return numsoft.linear_cross_entropy(h, W, labels, return_grad=flag)

    h, W = _array(np.float64), _array(np.float64, 2, (VOCAB, COLS))
    with pytest.raises(TypeError, match=r"return_grad .*constant \(return_grad=True\)"):
        user(h, W, _labels(None), True)
