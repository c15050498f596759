"""How every output writes a line's time: the timeline's one time model.

A line with its own timestamp has one time. A line without one lies between the timed lines
around it: ``time`` is the earliest it can have been written (the timed line above), and
``time_latest`` the latest (the timed line below). Outputs show that window, never one end of it
as if it were the line's own time.
"""

from __future__ import annotations

from datetime import datetime

from logscope.model import Culprit


def stamp(value: datetime, *, date: bool = True) -> str:
    """``2026-11-03 16:41:53.306`` (milliseconds only when there are any)."""
    text = value.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    return text + (f".{value.microsecond // 1000:03d}" if value.microsecond else "")


def window(earliest: datetime | None, latest: datetime | None, *, note: bool = True) -> str:
    """One time, or ``A – B`` for a line written somewhere between A and B."""
    if earliest is None and latest is None:
        return ""
    if earliest is None or latest is None or earliest == latest:
        return stamp(earliest or latest)  # type: ignore[arg-type]
    end = stamp(latest, date=latest.date() != earliest.date())
    return f"{stamp(earliest)} – {end}" + (" (no timestamp on the line)" if note else "")


def culprit_time(culprit: Culprit) -> str:
    """The root's time as the timeline knows it: its evidence line's time, or window when the
    line has no timestamp of its own."""
    evidence = culprit.evidence
    if evidence is not None and evidence.time is not None:
        return window(evidence.time, evidence.time_latest)
    return stamp(culprit.time) if culprit.time else ""
