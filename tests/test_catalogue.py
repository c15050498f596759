"""The message catalogue (logscope/knowledge/messages.toml) against the parser.

Every entry is an upstream message with the file it is printed from and a real-shaped example line.
An entry without ``gap`` must be recorded as its event (for catalogue messages, with its id, which
carries its category); an entry with ``gap`` must not be yet (strict: a gap that closes is taken off
the file, so the list only shrinks). The share of entries recognised is the catalogue's coverage,
reported in the README.
"""

from __future__ import annotations

import re

import polars as pl
import pytest

from logscope.knowledge import CATALOGUE, Message
from logscope.knowledge.catalogue import KEYED_EVENTS
from logscope.parsers.lines import parse_chunk

COVERAGE_FLOOR = 0.6  # raise it as gaps close; README "Message catalogue" gives the figure


def recorded(message: Message) -> tuple[str | None, str | None]:
    result = parse_chunk(pl.DataFrame({"line": [1], "raw": [message.example]}), 2024, None)
    if result.events.height == 0:
        return None, None
    row = result.events.row(0, named=True)
    return row["event"], (row["fields"] or {}).get("key")


def is_recognised(message: Message) -> bool:
    event, key = recorded(message)
    return event == message.event.value and (message.event not in KEYED_EVENTS or key == message.id)


@pytest.mark.parametrize("message", CATALOGUE, ids=[m.id for m in CATALOGUE])
def test_example_is_recorded_as_its_event(message: Message) -> None:
    if message.gap is None:
        assert is_recognised(message), f"{message.id}: {message.example!r} -> {recorded(message)}"
    else:
        assert not is_recognised(message), f"{message.id} is recognised now: take its gap off"


@pytest.mark.parametrize("message", CATALOGUE, ids=[m.id for m in CATALOGUE])
def test_entry_cites_its_upstream_source(message: Message) -> None:
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", message.project), message.project
    assert message.file and not message.file.startswith("/"), message.file
    assert message.format.strip() and message.meaning.strip()
    if message.match is not None:
        assert message.trigger is not None and message.trigger in message.example


def test_ids_are_unique_and_coverage_holds() -> None:
    ids = [m.id for m in CATALOGUE]
    assert len(ids) == len(set(ids))
    covered = sum(m.gap is None for m in CATALOGUE) / len(CATALOGUE)
    assert covered >= COVERAGE_FLOOR, f"catalogue coverage {covered:.0%} fell below {COVERAGE_FLOOR:.0%}"


def test_catalogue_messages_are_found_wherever_they_stand() -> None:
    """After a prefix stack, quoted in an exception, glued behind a progress bar."""
    matched = [m for m in CATALOGUE if m.match is not None and m.gap is None]
    assert matched
    for message in matched:
        body = message.example
        for line in (f"[rank3]: RuntimeError: {body}", f"  4%|▎  | 10/270 [07:16<2:55:33, 40.51s/it]{body}"):
            event, key = recorded(Message(**{**message.__dict__, "example": line}))
            assert (event, key) == (message.event.value, message.id), (message.id, line, event, key)
