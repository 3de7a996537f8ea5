"""A pytest plugin: SciPy's own tests of softmax, log_softmax and logsumexp, run on
``numsoft.special`` (``tests/test_array_api.py`` starts them, under
``SCIPY_ARRAY_API=1``, on every array library SciPy's ``xp`` fixture finds)::

    SCIPY_ARRAY_API=1 PYTHONPATH=tests python -m pytest -p scipy_on_numsoft \\
        --pyargs scipy.special.tests.test_logsumexp

Each collected test module's ``softmax``, ``log_softmax`` and ``logsumexp`` become
numsoft's; SciPy's tags for its lazy-backend checks (a Dask graph must not be computed
by the call) are copied onto them, so those checks hold numsoft to the same rule.
"""

import pytest

import numsoft.special

NAMES = ("softmax", "log_softmax", "logsumexp")


def pytest_collection_modifyitems(items):
    patched = set()
    for module in {item.module for item in items if getattr(item, "module", None)}:
        for name in NAMES:
            theirs = getattr(module, name, None)
            if theirs is None:
                continue
            ours = getattr(numsoft.special, name)
            tags = getattr(theirs, "_lazy_xp_function", None)
            if tags is not None:
                ours._lazy_xp_function = tags
            setattr(module, name, ours)
            patched.add(name)
    if items and patched != set(NAMES):  # SciPy's tests moved: say so, never pass empty
        raise pytest.UsageError(f"no SciPy test module uses {sorted(set(NAMES) - patched)}")
