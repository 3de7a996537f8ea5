"""One compiled path per call (numsoft.cpu.paths): constants bound in Python, untaken
branches never compiled, and each call compiling only the kernels of its own path."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba.core.errors import TypingError

from numsoft.cpu import paths
from numsoft.cpu._jit import kernel
from numsoft.cpu.paths import LOG_OUTPUT, specialize

ROOT = Path(__file__).resolve().parents[1]


@kernel
def _leaf(x):
    return x + 1.0


@kernel
def _unused_branch(x):
    return x * 2.0


@kernel
def _template(x):
    if LOG_OUTPUT:
        return _leaf(x)
    return _unused_branch(x)


@kernel
def _caller(x):
    return _template(x) + 10.0


def test_specialize_binds_constants_through_the_call_tree():
    assert paths.reads(_caller) == {"LOG_OUTPUT"}
    assert paths.reads(_leaf) == frozenset()
    log, plain = specialize(_caller, LOG_OUTPUT=True), specialize(_caller, LOG_OUTPUT=False)
    assert log is specialize(_caller, LOG_OUTPUT=True, ALGORITHM=3)  # unread ones ignored
    assert specialize(_leaf, LOG_OUTPUT=True) is _leaf  # reads nothing: shared as is
    assert log(1.0) == 12.0
    # The untaken branch was pruned before typing: its callee never compiled.
    assert _leaf.signatures != [] and _unused_branch.signatures == []
    assert plain(3.0) == 16.0 and _unused_branch.signatures != []


def test_an_unbound_template_does_not_compile():
    with pytest.raises(TypingError, match="LOG_OUTPUT"):
        _template(1.0)


def _compiled_paths(call: str) -> list[str]:
    """Names of the specialized kernels a fresh process compiles (or loads) for ``call``."""
    code = f"""
        import json
        import numpy as np, numba, numsoft
        from numsoft.cpu.paths import copies
        x = np.random.default_rng(0).standard_normal((64, 100)).astype(np.float32)
        {call}
        print(json.dumps([k.py_func.__qualname__ for k in copies() if k.signatures]))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_call_compiles_only_its_own_path():
    names = _compiled_paths("numsoft.softmax(x, algorithm='two-pass')")
    assert any(name.startswith("softmax_rows") for name in names), names
    for name in names:
        assert "__ALGORITHM_" not in name or "__ALGORITHM_2" in name, name  # two-pass only
        assert "__LOG_OUTPUT_1" not in name, name  # no log_softmax
        assert "split" not in name and "blocks" not in name, name  # no other geometry


def test_a_user_njit_function_compiles_only_the_path_it_calls():
    call = """
        @numba.njit
        def user(a):
            return numsoft.log_softmax(a, axis=1, algorithm="online")
        user(x)
    """
    names = _compiled_paths(textwrap.indent(textwrap.dedent(call), " " * 8).strip())
    assert any(name.startswith("softmax_rows_parallel_serial") for name in names), names
    for name in names:
        assert "__ALGORITHM_" not in name or "__ALGORITHM_3" in name, name
        assert "__LOG_OUTPUT_0" not in name, name
        assert "blocks" not in name, name  # axis=1 of a 2-D array: the row drivers only


def test_njit_algorithm_from_a_variable_is_typed_as_a_constant():
    import numba

    import numsoft

    @numba.njit
    def user(a, algorithm):
        return numsoft.softmax(a, algorithm=algorithm)

    x = np.random.default_rng(1).standard_normal((3, 7))
    for algorithm in ("two-pass", "three-pass-reload"):
        np.testing.assert_allclose(user(x, algorithm), numsoft.softmax(x), rtol=1e-14)
    with pytest.raises(ValueError, match="algorithm must be one of .*'fastest'"):
        user(x, "fastest")
