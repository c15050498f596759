"""What start-up saves must not change what a line means: the shortcuts taken to start faster
give what the slow way gives."""

from __future__ import annotations

import polars as pl

from logscope.parsers.lines import _groups, _wrapped
from logscope.parsers.patterns import PATTERNS


def test_group_names_from_the_schema_are_those_a_query_gives() -> None:
    assert PATTERNS
    for pattern in PATTERNS:
        struct = pl.Series(dtype=pl.String).str.extract_groups(_wrapped(pattern.regex)).dtype
        assert isinstance(struct, pl.Struct)
        assert _groups(pattern.regex) == tuple(f.name for f in struct.fields if f.name != "__m"), pattern.regex
