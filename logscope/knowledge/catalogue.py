"""Load ``messages.toml`` (see the package docstring) into typed :class:`Message` entries.

The file is the one table of what a log line means and how it is recognised: its entries with a
``match``, in file order, are the recognisers the parser tries (:data:`RECOGNISERS`); the others
name the entry whose match recognises them (``recognised_by``) or are gaps.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from logscope.model import Category, Event, Severity

# tomli's wheels are compiled (mypyc): it parses the catalogue in 7 ms against 18 ms for the
# standard library's tomllib, paid by every process that starts (a command, a read worker, a scan
# worker). The standard library's parser serves where tomli is not installed.
try:
    import tomli as tomllib
except ImportError:  # pragma: no cover - an install without tomli
    import tomllib  # type: ignore[no-redef]

# Who a message blames. "self": the process that printed it failed there (a CUDA error on its
# GPU). "job": the job's configuration or environment, shared by every process (an interface filter
# that matches nothing): a root cause with no process to name. "none": it reports a consequence or a
# wait (a timeout, a peer gone), so the process that printed it is a witness, not the culprit.
# "named": the process the message names (its ``rank`` group) is at fault, not the one that printed
# it (NCCL's bootstrap root reporting that a rank checked in twice).
BLAMES = ("self", "job", "none", "named")
# Events whose ``fields.key`` holds the catalogue id of the message (the others keep their own key).
KEYED_EVENTS = frozenset({Event.KNOWN_MESSAGE, Event.CLEAN_END, Event.FAILURE_LINE})
# A fragment of the [fragments] table, named in a match: {{name}}.
_FRAGMENT = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Message:
    """One upstream message, what it means, and how a line holding it is recognised."""

    id: str
    project: str  # upstream repository, e.g. "NVIDIA/nccl"
    file: str  # where upstream prints it
    format: str  # the upstream format string (variable parts as printf/f-string holes)
    example: str  # one real-shaped log line holding it
    event: Event
    severity: Severity
    category: Category | None  # None: the message says nothing about what failed
    meaning: str
    source: str  # the timeline's ``source`` column: nccl | c10d | torchrun | slurm | python | cuda | kernel | app
    blame: str = "self"
    commit: str = ""
    # Recognised by this entry: the literals one of which a line must hold before ``match`` is tried,
    # and the regex (Rust syntax, unanchored, its fragments expanded): the message is found wherever it
    # stands in the line. Its named groups become the event's fields and identity.
    triggers: tuple[str, ...] = ()
    match: str | None = None
    # Recognised by another entry's match (one regex for the versions of a message).
    recognised_by: str | None = None
    # Set where logscope does not yet record the example as ``event`` (what it records instead):
    # the coverage test holds these to the list, which only shrinks.
    gap: str | None = None

    @property
    def key(self) -> str | None:
        """The constant ``fields.key`` of its events: its id, for the events that carry it."""
        return self.id if self.event in KEYED_EVENTS else None


def _expanded(text: str, fragments: dict[str, str], seen: tuple[str, ...] = ()) -> str:
    def one(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in fragments:
            raise ValueError(f"unknown fragment {{{{{name}}}}}")
        if name in seen:
            raise ValueError(f"fragment {{{{{name}}}}} names itself")
        return _expanded(fragments[name], fragments, (*seen, name))

    return _FRAGMENT.sub(one, text)


def _entry(raw: dict[str, Any], fragments: dict[str, str]) -> Message:
    category = raw.get("category", "none")
    blame = raw.get("blame", "self")
    if blame not in BLAMES:
        raise ValueError(f"{raw.get('id')}: blame must be one of {BLAMES}")
    if (raw.get("match") is None) != (raw.get("trigger") is None):
        raise ValueError(f"{raw.get('id')}: 'match' and 'trigger' come together")
    if raw.get("match") is not None and raw.get("recognised_by") is not None:
        raise ValueError(f"{raw.get('id')}: an entry has its own match or is recognised by another, not both")
    trigger = raw.get("trigger")
    triggers = () if trigger is None else (trigger,) if isinstance(trigger, str) else tuple(trigger)
    return Message(
        id=raw["id"], project=raw["project"], file=raw["file"], format=raw["format"], example=raw["example"],
        event=Event(raw["event"]), severity=Severity(raw["severity"]),
        category=None if category in ("none", "clean_end") else Category(category),
        meaning=raw["meaning"], source=raw["source"], blame=blame, commit=raw.get("commit", ""),
        triggers=triggers,
        match=None if raw.get("match") is None else _expanded(raw["match"], fragments),
        recognised_by=raw.get("recognised_by"), gap=raw.get("gap"),
    )


@cache
def _load() -> tuple[Message, ...]:
    text = resources.files("logscope.knowledge").joinpath("messages.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)
    fragments = {name: str(value) for name, value in table.get("fragments", {}).items()}
    entries = tuple(_entry(raw, fragments) for raw in table.get("message", []))
    duplicates = {i for i, n in Counter(m.id for m in entries).items() if n > 1}
    if duplicates:
        raise ValueError(f"duplicate catalogue ids: {sorted(duplicates)}")
    ids = {m.id for m in entries}
    unknown = sorted(m.recognised_by for m in entries if m.recognised_by and m.recognised_by not in ids)
    if unknown:
        raise ValueError(f"recognised_by names no entry: {unknown}")
    return entries


CATALOGUE: tuple[Message, ...] = _load()
# What the parser tries, in order: the entries with a match.
RECOGNISERS: tuple[Message, ...] = tuple(m for m in CATALOGUE if m.match is not None)
_BY_ID = {m.id: m for m in CATALOGUE}


def by_id(message_id: str | None) -> Message | None:
    return _BY_ID.get(message_id) if message_id else None


__all__ = ["BLAMES", "CATALOGUE", "KEYED_EVENTS", "RECOGNISERS", "Message", "by_id"]
