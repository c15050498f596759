"""What a regex can tell of a line's digits (logscope.ingest.digit_regex).

digit_blind and digit_relaxed (as the progress prefilter asks them), and digit_reads: golden cases
(a year's first digits tell it apart, the digits behind them do not; ``^`` holds where the string
begins; a back-reference cannot be followed), and what it promises, on lines of the forms a job log
holds (launcher tags, loggers' times, NCCL's, glog's, syslog's, epoch seconds) with random digits: a
line whose digits differ only where the regex is not told them is matched alike, by the prefix
stack, by a search for times (where each search stopped), and, with ``any_digit``, whatever the
digits it was asked of.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logscope.ingest.digit_regex import digit_blind, digit_reads, digit_relaxed
from logscope.parsers.prefix_stack import PREFIX_STACK, TIME_LEAD
from logscope.parsers.time_forms import BODY_TIME_START


@pytest.mark.parametrize(("pattern", "blind"), [
    (r"iteration\s+(\d+)/\s*(\d+)", True), (r"[0-9]{2}:\d\d", True), (r"\bloss\b[^|]*\|", True),
    (r"(?:19|2\d)\d\d-\d\d", False), (r"1[5-9]\d{8}", False), (r"-> 5", False), (r"[^5]x", False),
    (r"(a)\1", False), (r"[\D]", True), (r"(?i)epoch (?P<e1>\d+)", True),
])
def test_digit_blind(pattern: str, blind: bool) -> None:
    assert digit_blind(pattern) is blind


def test_a_group_opened_by_flags_is_read_as_polars_reads_it() -> None:
    # (Python takes global flags only at a pattern's start; polars for the rest of the group)
    assert digit_blind(r"(?:(?i)step (\d+))|x") and not digit_blind(r"(?:(?i)step 5)|x")
    assert digit_reads(r"(?:(?i)STEP 5)", "step 5", [0]) == {5}


def test_digit_relaxed_matches_where_the_regex_does_and_tells_no_digits_apart() -> None:
    import re

    for pattern, text, other in [(r"^(?:19|2\d)\d\d-\d\d", "2026-11", "1850-11"), (r"^1[5-9]\d{8}", "1714557600",
                                                                                    "1014557600")]:
        relaxed = digit_relaxed(pattern)
        assert relaxed is not None and digit_blind(relaxed)
        assert re.search(pattern, text) and not re.search(pattern, other)
        assert re.search(relaxed, text) and re.search(relaxed, other)
    assert digit_relaxed(r"[^0-4]") is None and digit_relaxed(r"(a)\1") is None
    assert digit_relaxed(r"a{1,3}(?P<x1>b)") == r"a{1,3}(?P<x1>b)"


@pytest.mark.parametrize(("pattern", "text", "kwargs", "told"), [
    (r"(?:19|2\d)\d\d", "2025", {}, {0}),  # '1' and '2' test the first digit; \d the others
    (r"(?:19|2\d)\d\d", "2025", {"any_digit": True}, {0, 1}),  # were it a 1: '9' tests the second
    (r"\d\d:\d\d", "12:30", {}, set()),
    (r"1[5-9]\d{8}", "1714557600", {}, {0, 1}),
    (r"1[5-9]\d{8}", "2714557600", {}, {0}),  # no way goes past the first
    (r"^5", "a5", {"starts": [0, 1], "begin": 1}, {1}),
    (r"^5", "a5", {"starts": [0, 1]}, set()),  # '^' holds at 0 only: 'a' is tested there
    (r"x[0-4]{1,3}y", "x12345y", {}, {1, 2, 3, 4, 5}),  # (a count's upper bound taken as none: wide)
    (r"(?=\d7)\d", "17", {}, {1}),  # a lookahead's tests count
])
def test_digit_reads_golden(pattern: str, text: str, kwargs: dict, told: set[int]) -> None:
    starts = kwargs.pop("starts", [0])
    assert digit_reads(pattern, text, starts, **kwargs) == told


def test_digit_reads_cannot_follow_a_back_reference() -> None:
    assert digit_reads(r"(\d)\1", "11", [0]) is None
    assert digit_reads(r"(unclosed", "x", [0]) is None


# Lines of a job log, '#' a digit (some drawn from those a time's form tells apart).
_FORMS = [
    "[default#]:####-##-## ##:##:##,### - INFO - iteration ####/ ##### | lm loss: #.##E+## |",
    "#: DLL ####-##-## ##:##:##.###### - Iteration #### | train_loss : #.####",
    "[rank##]:[E#### ##:##:##.######### ProcessGroupNCCL.cpp:####] [PG ID # PG GUID #] Watchdog caught",
    "host##:#####:##### [#] NCCL INFO Channel ##/## : # #",
    "####-##-##T##:##:##.###Z [##,#]<stdout>: step ##, loss #.###",
    "I#### ##:##:##.###### ##### trainer.cc:###] epoch ## done",
    "Oct ## ##:##:## gpu-node## kernel: NVRM: Xid (PCI:0000:##:00): ##, pid=#####",
    "########## ## ##:##:## ##/##/#### ##:##:## - note",
    "##/##/#### ##:##:## rank ## >> started",
]
_DIGITS_DRAWN = "0123456789" * 3 + "1925"  # (1 and 2 and 9 more often: years and epochs)


def _line(rng: random.Random, form: str) -> str:
    return "".join(rng.choice(_DIGITS_DRAWN) if char == "#" else char for char in form)


def _changed_but_at(rng: random.Random, line: str, kept: set[int]) -> str:
    """``line`` with each digit not at ``kept`` drawn again."""
    return "".join(rng.choice(_DIGITS_DRAWN) if char.isdigit() and at not in kept else char
                   for at, char in enumerate(line))


def _match(pattern: str, text: str) -> tuple[int, int] | None:
    found = re.match(pattern, text)
    return found.span() if found else None


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), form=st.sampled_from(_FORMS))
def test_lines_alike_where_the_stack_is_told_their_digits_are_matched_alike(seed: int, form: str) -> None:
    rng = random.Random(seed)
    line = _line(rng, form)
    told = digit_reads(PREFIX_STACK, line, [0])
    assert told is not None
    for _ in range(20):
        assert _match(PREFIX_STACK, _changed_but_at(rng, line, set(told))) == _match(PREFIX_STACK, line)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), form=st.sampled_from(_FORMS))
def test_with_any_digit_the_places_hold_for_every_line_of_the_shape(seed: int, form: str) -> None:
    rng = random.Random(seed)
    told = digit_reads(PREFIX_STACK, form.replace("#", "0"), [0], any_digit=True)
    assert told is not None
    for _ in range(20):
        line = _line(rng, form)
        other = _changed_but_at(rng, line, set(told))
        assert _match(PREFIX_STACK, other) == _match(PREFIX_STACK, line)
        assert set(told) >= set(digit_reads(PREFIX_STACK, line, [0]) or ())


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), form=st.sampled_from(_FORMS))
def test_a_search_told_where_it_stopped_finds_the_same_matches(seed: int, form: str) -> None:
    # replace_all's search (TIME_LEAD) and contains' (BODY_TIME_START): from where each search
    # starts to where it finds a match, and on after it.
    rng = random.Random(seed)
    line = _line(rng, form)
    for pattern, every in ((TIME_LEAD, True), (BODY_TIME_START, False)):
        found = list(re.finditer(pattern, line)) if every else [m for m in [re.search(pattern, line)] if m]
        tried: list[int] = []
        at = 0
        for match in found:
            tried.extend(range(at, match.start() + 1))
            at = match.end()
        if every or not found:
            tried.extend(range(at, len(line) + 1))
        told = digit_reads(pattern, line, tried)
        assert told is not None
        for _ in range(10):
            other = _changed_but_at(rng, line, set(told))
            again = list(re.finditer(pattern, other)) if every else [m for m in [re.search(pattern, other)] if m]
            assert [m.span() for m in again] == [m.span() for m in found]
