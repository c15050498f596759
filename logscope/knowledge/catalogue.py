"""Load ``messages.toml`` (see the package docstring) into typed :class:`Message` entries."""

from __future__ import annotations

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
BLAMES = ("self", "job", "none")
# Events whose ``fields.key`` holds the catalogue id of the message (the others keep their own key).
KEYED_EVENTS = frozenset({Event.KNOWN_MESSAGE, Event.CLEAN_END, Event.FAILURE_LINE})


@dataclass(frozen=True)
class Message:
    """One upstream message and what it means."""

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
    # Recognised from the catalogue itself: the literal that must occur, and the regex (Rust
    # syntax, unanchored: the message is found wherever it stands in the line).
    trigger: str | None = None
    match: str | None = None
    # Set where logscope does not yet record the example as ``event`` (what it records instead):
    # the coverage test holds these to the list, which only shrinks.
    gap: str | None = None
    # Recognised before the specific patterns of logscope/parsers/patterns.py (which it refines: an
    # NCCL "Cuda failure" in NVLS code is a node fault, not any CUDA failure); the others only
    # before the generic catch-alls (any NCCL WARN, any error line of a C++ logger).
    override: bool = False


def _entry(raw: dict[str, Any]) -> Message:
    category = raw.get("category", "none")
    blame = raw.get("blame", "self")
    if blame not in BLAMES:
        raise ValueError(f"{raw.get('id')}: blame must be one of {BLAMES}")
    if (raw.get("match") is None) != (raw.get("trigger") is None):
        raise ValueError(f"{raw.get('id')}: 'match' and 'trigger' come together")
    return Message(
        id=raw["id"], project=raw["project"], file=raw["file"], format=raw["format"], example=raw["example"],
        event=Event(raw["event"]), severity=Severity(raw["severity"]),
        category=None if category in ("none", "clean_end") else Category(category),
        meaning=raw["meaning"], source=raw["source"], blame=blame, commit=raw.get("commit", ""),
        trigger=raw.get("trigger"), match=raw.get("match"), gap=raw.get("gap"),
        override=bool(raw.get("override", False)),
    )


@cache
def _load() -> tuple[Message, ...]:
    text = resources.files("logscope.knowledge").joinpath("messages.toml").read_text(encoding="utf-8")
    entries = tuple(_entry(raw) for raw in tomllib.loads(text).get("message", []))
    duplicates = {i for i, n in Counter(m.id for m in entries).items() if n > 1}
    if duplicates:
        raise ValueError(f"duplicate catalogue ids: {sorted(duplicates)}")
    return entries


CATALOGUE: tuple[Message, ...] = _load()
_BY_ID = {m.id: m for m in CATALOGUE}


def by_id(message_id: str | None) -> Message | None:
    return _BY_ID.get(message_id) if message_id else None


def catalogue_patterns(*, override: bool) -> list[tuple[Event, str, Severity, str, str, str | None]]:
    """(event, source, severity, trigger, regex, key) for each entry recognised from the catalogue
    whose ``override`` is as asked, in file order; ``key`` is the entry's id for the events that
    carry it."""
    return [
        (m.event, m.source, m.severity, m.trigger, m.match, m.id if m.event in KEYED_EVENTS else None)
        for m in CATALOGUE
        if m.match is not None and m.trigger is not None and m.override == override
    ]
