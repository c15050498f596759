"""What start-up saves must not change what a line means: the shortcuts taken to start faster
give what the slow way gives."""

from __future__ import annotations

from logscope.parsers.lines import _groups, _polars_groups
from logscope.parsers.patterns import PATTERNS


def test_group_names_read_with_re_are_polars_names() -> None:
    assert PATTERNS
    for pattern in PATTERNS:
        assert _groups(pattern.regex) == _polars_groups(pattern.regex), pattern.regex


def test_a_pattern_re_cannot_parse_is_asked_of_polars() -> None:
    # A Unicode class: Rust syntax that Python's re rejects.
    regex = r"(?P<host>\p{L}+):(?P<pid>\d+)"
    assert _groups(regex) == ("host", "pid")
