"""What ``help()`` shows for every public function, on the Python that runs the tests.

The shared parameter sections are filled into the docstrings at import
(``numsoft._docstrings``); Python 3.13 strips docstring indentation at compile time,
which once left a literal ``{common}`` in ``help()``. Each public function's rendered
help must hold no placeholder and document every parameter of its signature.
"""

from __future__ import annotations

import importlib
import inspect
import pydoc
import re

import pytest

MODULES = ["numsoft", "numsoft.special", "numsoft.dask", "numsoft.variants.bisect"]


def public_functions():
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency (Dask) is missing
            continue
        for attr in getattr(module, "__all__", ()):
            func = getattr(module, attr)
            if callable(func):
                yield pytest.param(func, id=f"{name}.{attr}")


@pytest.mark.parametrize("func", list(public_functions()))
def test_help_shows_every_parameter(func):
    text = pydoc.render_doc(func, renderer=pydoc.plaintext)
    assert not re.search(r"\{(common|params)\}", text)
    doc = inspect.getdoc(func)
    assert "Parameters\n----------" in doc or not inspect.signature(func).parameters
    documented = set(re.findall(r"^(\w+)(?: :|$)", doc, flags=re.M))
    for param in inspect.signature(func).parameters:
        assert param in documented, f"{func.__name__}: {param} is not documented"
