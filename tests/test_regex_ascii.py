r"""``\d`` and ``\w`` spelled as ASCII classes (logscope.parsers.regex_ascii)."""

from __future__ import annotations

import re
from importlib import resources

import polars as pl
import pytest
import tomli as tomllib
from hypothesis import given
from hypothesis import strategies as st

from logscope.knowledge import RECOGNISERS
from logscope.parsers import coll_groups, lines, prefix_stack, prefixes, timestamps
from logscope.parsers.regex_ascii import ascii_classes


@pytest.mark.parametrize(("regex", "expected"), [
    (r"^a\d+b", r"^a[0-9]+b"),
    (r"(?P<x>\w+)", r"(?P<x>[0-9A-Za-z_]+)"),
    (r"[\w.-]+:\d+", r"[0-9A-Za-z_.-]+:[0-9]+"),
    (r"[^\d\s]", r"[^0-9\s]"),
    (r"\\d", r"\\d"),  # an escaped backslash, then a plain "d"
    (r"\\\d", r"\\[0-9]"),
    (r"[]\d]x\d", r"[]0-9]x[0-9]"),  # a ']' first in a class is a literal
    (r"[^]\w]", r"[^]0-9A-Za-z_]"),
    (r"\[\d+\] \S+ \s \b\.", r"\[[0-9]+\] \S+ \s \b\."),  # escaped brackets open no class
    (r"plain (?i)text", r"plain (?i)text"),
])
def test_digits_and_word_characters_become_ascii_classes(regex: str, expected: str) -> None:
    assert ascii_classes(regex) == expected


def test_the_regexes_handed_to_polars_have_no_unicode_classes() -> None:
    for regex in (prefixes.PREFIX_STACK, prefixes.ONE_PREFIX, timestamps.ANY_LEADING_TIME, coll_groups.COLL_HEAD_BODY,
                  coll_groups.STAMPED_COLL, lines._RECORD_START):
        assert not re.search(r"(?<!\\)(?:\\\\)*\\[dw]", regex), regex


def test_every_pattern_reads_the_same_on_ascii_lines_and_compiles_in_both_engines() -> None:
    body = pl.DataFrame({"body": ["x"]})
    for message in RECOGNISERS:
        assert message.match is not None
        rewritten = ascii_classes(message.match)
        assert re.compile(rewritten).groupindex == re.compile(message.match).groupindex
        body.select(pl.col("body").str.extract_groups(rewritten))  # raises on a regex polars refuses


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40))
def test_on_ascii_text_the_rewritten_regex_matches_alike(text: str) -> None:
    for regex in (r"(\d+)[:\s](\w*)", r"[\w.-]+:\d{1,3}", r"[^\d\w]+", prefix_stack._ALTERNATIVES):
        original = re.search(regex, text)
        rewritten = re.search(ascii_classes(regex), text)
        assert (original and original.group(0)) == (rewritten and rewritten.group(0))


def test_digits_of_other_scripts_are_no_longer_digits() -> None:
    assert re.fullmatch(r"\d", "٣") and not re.fullmatch(ascii_classes(r"\d"), "٣")
    assert re.fullmatch(r"\w", "é") and not re.fullmatch(ascii_classes(r"\w"), "é")


# Text of the blanks both engines' \s knows (NEL and the no-break space among them), letters,
# parentheses and colons: what a field at the end of a line is made of.
_END_TEXT = st.text(alphabet=st.sampled_from([*"ab():x ", "\t", "\r", "\x0b", "\x0c", "\xa0", "\x85", "é"]),
                    max_size=24)


def _fragment(name: str) -> str:
    """A fragment of the catalogue's [fragments] table, as its matches use it."""
    table = tomllib.loads(resources.files("logscope.knowledge").joinpath("messages.toml").read_text(encoding="utf-8"))
    return str(table["fragments"][name])


@given(head=st.sampled_from(["what():", "what(): ", "x: "]), rest=_END_TEXT)
def test_a_field_to_the_end_of_the_line_is_the_lazy_field(head: str, rest: str) -> None:
    r"""The catalogue's to_end fragment before ``\s*$`` takes what a lazy ``.*?`` took, in Python and in
    polars."""
    _TO_END = _fragment("to_end")

    line = head + rest
    lazy, greedy = rf"^{re.escape(head)}(?P<f>.*?)\s*$", rf"^{re.escape(head)}(?P<f>{_TO_END})\s*$"
    python = [(m.group("f") if m else None) for m in (re.search(lazy, line), re.search(greedy, line))]
    assert python[0] == python[1]
    frame = pl.DataFrame({"body": [line]})
    polars = [frame.select(pl.col("body").str.extract(regex, 1)).item() for regex in (lazy, greedy)]
    assert polars[0] == polars[1]
