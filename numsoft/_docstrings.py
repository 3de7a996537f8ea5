"""Docstrings that share sections: the common parameters written once, filled in.

A public function's docstring holds a line ``{name}`` where shared text goes. Python
3.13 strips the indentation of docstrings when it compiles them, earlier versions keep
it; both forms are normalized here (``inspect.cleandoc``) before the shared text, itself
dedented, replaces that line, so ``help()``, the doctests and the API pages read the same
on every Python.
"""

from __future__ import annotations

import inspect
import textwrap


def filled(name: str, text: str):
    """Decorator: the docstring with its ``{name}`` line replaced by ``text``.

    ``text`` is written as it sits in a function's docstring (parameters indented by 4
    spaces, their descriptions by 8); a docstring without exactly one such line is an
    error at import, not a page that shows the placeholder.
    """
    marker = "{" + name + "}"
    block = textwrap.dedent(text.strip("\n")).splitlines()

    def deco(func):
        lines = inspect.cleandoc(func.__doc__).splitlines()
        at = [i for i, line in enumerate(lines) if line.strip() == marker]
        if len(at) != 1:
            raise ValueError(f"{func.__qualname__}: its docstring needs one {marker} line")
        lines[at[0] : at[0] + 1] = block
        func.__doc__ = "\n".join(lines) + "\n"
        return func

    return deco
