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
from logscope.model import Event, Severity
from logscope.parsers.lines import parse_chunk

COVERAGE_FLOOR = 1.0  # every entry is recorded as its event; README "Message catalogue" gives the figure


def recorded(message: Message) -> tuple[str | None, str | None]:
    result = parse_chunk(pl.DataFrame({"line": [1], "raw": [message.example]}), 2024, None)
    if result.events.height == 0:
        return None, None
    row = result.events.row(0, named=True)
    return row["event"], (row["fields"] or {}).get("key")


def recogniser_of(message: Message) -> str:
    """The id of the entry whose match recognises ``message``: its own, or the one it names."""
    return message.recognised_by or message.id


def is_recognised(message: Message) -> bool:
    event, key = recorded(message)
    return event == message.event.value and (message.event not in KEYED_EVENTS or key == recogniser_of(message))


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
        assert any(trigger in message.example for trigger in message.triggers), message.triggers


def test_ids_are_unique_and_coverage_holds() -> None:
    ids = [m.id for m in CATALOGUE]
    assert len(ids) == len(set(ids))
    covered = sum(m.gap is None for m in CATALOGUE) / len(CATALOGUE)
    assert covered >= COVERAGE_FLOOR, f"catalogue coverage {covered:.0%} fell below {COVERAGE_FLOOR:.0%}"


def test_catalogue_messages_are_found_wherever_they_stand() -> None:
    """After a prefix stack, quoted in an exception, glued behind a progress bar: a message that
    says something went wrong is that message wherever it stands (what an exception quotes is what
    failed). Informational lines, and the head of a C++ logger's error line, which wraps a message
    rather than being one, are left out."""
    matched = [m for m in CATALOGUE if m.match is not None and m.gap is None
               and m.severity != Severity.INFO and m.event != Event.FAILURE_LINE]
    assert matched
    for message in matched:
        body = message.example
        for line in (f"[rank3]: RuntimeError: {body}", f"  4%|▎  | 10/270 [07:16<2:55:33, 40.51s/it]{body}"):
            moved = Message(**{**message.__dict__, "example": line})
            assert is_recognised(moved), (message.id, line, recorded(moved))


def test_a_catalogue_id_given_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from logscope.knowledge import catalogue

    text = catalogue.resources.files("logscope.knowledge").joinpath("messages.toml").read_text(encoding="utf-8")
    starts = [m.start() for m in re.finditer(r"^\[\[message\]\]$", text, re.MULTILINE)]
    first = text[starts[0]:starts[1]]  # the first entry, whole

    class Twice:
        def joinpath(self, _name: str) -> Twice:
            return self

        def read_text(self, encoding: str) -> str:
            return text + "\n" + first

    monkeypatch.setattr(catalogue.resources, "files", lambda _package: Twice())
    with pytest.raises(ValueError, match="duplicate catalogue ids"):
        catalogue._load.__wrapped__()
