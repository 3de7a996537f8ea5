"""The variant table (``numsoft.vocabulary.VARIANTS``) against what it declares.

Each variant is declared once, in the table; these tests check that the public
functions, the package's ``__all__``, the ``@njit`` and CUDA support and the docs
agree with it, so a new entry without its function (or a function without its entry)
fails here.
"""

import inspect
import pathlib

import numpy as np
import pytest

import numsoft
from numsoft import variants
from numsoft.vocabulary import BY_CODE, PUBLIC_VARIANTS, VARIANTS

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
NAMES = [v.name for v in PUBLIC_VARIANTS]


def test_codes_are_unique_and_indexed():
    assert len(BY_CODE) == len(VARIANTS)
    assert sorted(BY_CODE) == list(range(len(VARIANTS)))


def test_all_lists_the_table():
    backward = [f"{v.name}_backward" for v in PUBLIC_VARIANTS if v.backward]
    assert sorted(variants.__all__) == sorted(NAMES + backward)
    assert set(variants.__all__) <= set(numsoft.__all__)


@pytest.mark.parametrize("v", PUBLIC_VARIANTS, ids=NAMES)
def test_function_matches_its_entry(v):
    func = getattr(numsoft, v.name)
    assert func.__module__ == f"numsoft.variants.{v.family}"
    names = list(inspect.signature(func).parameters)
    assert names[0] == "x"
    assert tuple(names[1 : names.index("axis")]) == v.params
    assert ("target" in names) == v.cuda
    if v.backward:
        backward = inspect.signature(getattr(numsoft, f"{v.name}_backward"))
        assert list(backward.parameters)[:2] == [v.backward, "dy"]


@pytest.mark.parametrize(
    "v", [v for v in PUBLIC_VARIANTS if v.warmup is not None], ids=lambda v: v.name
)
def test_fully_masked_row_gives_the_fill(v):
    x = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, 3.0]])
    where = np.array([[False] * 3, [True] * 3])
    y = getattr(numsoft, v.name)(x, *v.warmup, where=where)
    np.testing.assert_array_equal(y[0], v.fill)


def test_every_variant_has_reference_cases():
    from test_variants import CASES

    # gumbel_softmax is random: its tests compare it with the softmax of x plus the
    # same noise (test_variants.py's test_gumbel_*), not with a reference case.
    assert {case.variant.name for case in CASES} == set(NAMES) - {"gumbel_softmax"}


@pytest.mark.parametrize("page", ["api-variants.md", "njit.md"])
def test_docs_name_every_variant(page):
    text = (DOCS / page).read_text()
    missing = [name for name in NAMES if f"`{name}`" not in text and f".{name}" not in text]
    assert not missing
