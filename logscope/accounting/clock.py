"""SLURM's record and the logs on one clock.

SLURM prints its times in the time zone of the machine that runs ``sacct``/``scontrol`` (text), or
as UNIX epochs that logscope turns into the local time of the machine it runs on (``--json``);
the logs carry whatever their writers printed, often UTC in a container, local time elsewhere. A
record a few hours behind the logs puts the step's FAILED before the CUDA OOM that caused it.

So the record is matched to the logs' own account of the job: when the logs' timed lines do not
fit within the record's start and end (give or take :data:`SLACK`), the shift by a whole number
of quarter hours (time zones differ by those) that makes them fit, within :data:`MAX_SHIFT`, is
applied to every time of the record, and the analysis says so. A shift that makes them fit is
looked for from the logs' first line (against the record's start) and from their last (against
its end); when neither does (logs of an earlier run in the same file, a job requeued), the record
is left as it is.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from logscope.accounting.record import AccountingRecord, StepRecord

QUARTER_HOUR = timedelta(minutes=15)
MAX_SHIFT = timedelta(hours=26)  # UTC-12 to UTC+14
SLACK = timedelta(minutes=5)  # nodes' clocks and SLURM's differ by seconds; its end is the step's teardown


def clock_shift(record: AccountingRecord, first: datetime | None, last: datetime | None) -> timedelta:
    """How much later the record's times must be to fit the logs' first and last timed lines
    (zero when they fit already, or when no quarter-hour shift within MAX_SHIFT makes them fit)."""
    start, end = _span(record)
    if start is None or first is None or last is None:
        return timedelta(0)
    if _fits(start, end, first, last):
        return timedelta(0)
    guesses = [first - start] + ([last - end] if end is not None else [])
    for guess in guesses:
        shift = QUARTER_HOUR * round(guess / QUARTER_HOUR)
        if shift and abs(shift) <= MAX_SHIFT and _fits(start + shift, end + shift if end else None, first, last):
            return shift
    return timedelta(0)


def shifted(record: AccountingRecord, shift: timedelta) -> AccountingRecord:
    """``record`` with every time ``shift`` later."""
    if not shift:
        return record

    def moved(step: StepRecord) -> StepRecord:
        return dataclasses.replace(step, start=step.start + shift if step.start else None,
                                   end=step.end + shift if step.end else None)

    return dataclasses.replace(record, job=moved(record.job), steps=tuple(moved(s) for s in record.steps))


def describe_shift(shift: timedelta) -> str:
    """``5:00 behind`` / ``1:30 ahead of`` (hours and minutes)."""
    minutes = int(abs(shift) / timedelta(minutes=1))
    return f"{minutes // 60}:{minutes % 60:02d} " + ("behind" if shift > timedelta(0) else "ahead of")


def _span(record: AccountingRecord) -> tuple[datetime | None, datetime | None]:
    starts = [s.start for s in record.records if s.start is not None]
    ends = [s.end for s in record.records if s.end is not None]
    return (min(starts) if starts else None), (max(ends) if ends else None)


def _fits(start: datetime, end: datetime | None, first: datetime, last: datetime) -> bool:
    return first >= start - SLACK and (end is None or last <= end + SLACK)


__all__ = ["MAX_SHIFT", "clock_shift", "describe_shift", "shifted"]
