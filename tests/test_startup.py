"""What start-up saves must not change what a line means: the shortcuts taken to start faster
give what the slow way gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl

from logscope.parsers.classify import _groups, _wrapped
from logscope.parsers.patterns import PATTERNS


def test_group_names_from_the_schema_are_those_a_query_gives() -> None:
    assert PATTERNS
    for pattern in PATTERNS:
        struct = pl.Series(dtype=pl.String).str.extract_groups(_wrapped(pattern.regex)).dtype
        assert isinstance(struct, pl.Struct)
        assert _groups(pattern.regex) == tuple(f.name for f in struct.fields if f.name != "__m"), pattern.regex


def test_the_catalogue_reads_the_same_without_tomli() -> None:
    # tomli is only faster; where it cannot be imported the standard library's tomllib reads it.
    from logscope.knowledge import catalogue
    from logscope.knowledge.catalogue import CATALOGUE

    assert catalogue.tomllib.__name__ == "tomli"  # a dependency: the fast parser is the one in use
    code = ("import sys; sys.modules['tomli'] = None\n"
            "from logscope.knowledge import catalogue as c\n"
            "assert c.tomllib.__name__ == 'tomllib', c.tomllib\n"
            "print(repr(c.CATALOGUE))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == repr(CATALOGUE)
