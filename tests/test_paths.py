"""One compiled path per call (numsoft.cpu.paths): constants bound in Python, untaken
branches never compiled, and each call compiling only the kernels of its own path."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


TEMPLATES = """
from numsoft.cpu._jit import kernel
from numsoft.cpu.paths import LOG_OUTPUT


@kernel
def leaf(x):
    return x + 1.0


@kernel
def unused_branch(x):
    return x * 2.0


@kernel
def template(x):
    if LOG_OUTPUT:
        return leaf(x)
    return unused_branch(x)


@kernel
def caller(x):
    return template(x) + 10.0
"""

PRUNING = """
import json
from numba.core.errors import TypingError
from numsoft.cpu import paths
from numsoft.cpu.paths import specialize
from templates import caller, leaf, template, unused_branch

out = {"reads": sorted(paths.reads(caller)), "leaf_reads": sorted(paths.reads(leaf))}
log = specialize(caller, LOG_OUTPUT=True)
out["memo"] = log is specialize(caller, LOG_OUTPUT=True, ALGORITHM=3)  # unread: ignored
out["leaf_shared"] = specialize(leaf, LOG_OUTPUT=True) is leaf  # reads nothing
out["log"] = log(1.0)
out["after_log"] = [len(leaf.signatures), len(unused_branch.signatures)]
out["plain"] = specialize(caller, LOG_OUTPUT=False)(3.0)
out["after_plain"] = len(unused_branch.signatures)
try:
    template(1.0)
    out["unbound"] = "compiled"
except TypingError as exc:
    out["unbound"] = "LOG_OUTPUT" in str(exc)
print(json.dumps(out))
"""


def test_specialize_binds_constants_and_prunes_untaken_branches(tmp_path):
    # A fresh process with an empty cache, so that what a path compiles is visible (a
    # path loaded from the cache compiles none of its callees).
    (tmp_path / "templates.py").write_text(TEMPLATES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"NUMBA_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", PRUNING], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["reads"] == ["LOG_OUTPUT"] and out["leaf_reads"] == []
    assert out["memo"] and out["leaf_shared"]
    assert out["log"] == 12.0
    # The untaken branch was pruned before typing: its callee never compiled.
    assert out["after_log"] == [1, 0]
    assert out["plain"] == 16.0 and out["after_plain"] == 1
    assert out["unbound"] is True  # an unbound template does not compile


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
    # the kernel it calls by address (numsoft._linked): the row driver, online, log output
    assert any(name.startswith("softmax_rows_at__ALGORITHM_3") for name in names), names
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
