"""The examples in the API docstrings run (doctest): every module of shallowflow whose source
holds a ``>>>`` example is imported and its examples are checked against their printed output."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL


def with_examples() -> list[str]:
    """The dotted names of the modules whose source has a doctest prompt."""
    return sorted(".".join(p.relative_to(SRC).with_suffix("").parts)
                  for p in (SRC / "shallowflow").rglob("*.py") if ">>> " in p.read_text())


def test_the_api_has_examples():
    assert len(with_examples()) >= 5, with_examples()


@pytest.mark.parametrize("name", with_examples())
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS, verbose=False)
    assert result.attempted > 0 and result.failed == 0, result
