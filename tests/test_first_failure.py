"""job_facts.first_failure with ``before``: polars picks the rows that can have come before it, and
the answer is the one of walking every failure row in order (the rule it replaced)."""

from __future__ import annotations

from typing import Any

import pytest
from corpus_support import corpus_views, fresh

from logscope.detectors.base import JobView
from logscope.detectors.exit_cascade import Victims
from logscope.detectors.job_facts import FAILURE_EVENTS, first_failure, happened_before
from logscope.model import Event

# Up to this many rows of a job are asked as ``before`` (the first ones in failure order, then
# every few after): each is one walk of the job's failure rows.
BEFORES = 40


def _walked(job: JobView, before: dict[str, Any], events: tuple[Event, ...]) -> dict[str, Any] | None:
    judge = Victims(job)
    for row in job.rows_in_order(*events):
        if row["event"] != Event.CANCELLED.value and judge(row):
            continue
        if happened_before(row, before):
            return row
    return None


def _place(row: dict[str, Any] | None) -> tuple[Any, ...] | None:
    return None if row is None else (row["file"], row["line"], row["event"])


@pytest.mark.parametrize("events", [FAILURE_EVENTS, (*FAILURE_EVENTS, Event.CANCELLED)], ids=["failures", "cancelled"])
def test_first_failure_before_a_row_is_that_of_the_walk_over_every_failure_row(events: tuple[Event, ...]) -> None:
    views = corpus_views()
    asked = 0
    for _, view in views:
        job, asking = fresh(view), fresh(view)
        rows = job.rows_in_order(*FAILURE_EVENTS, Event.NCCL_SOCKET_ERROR, Event.EXCEPTION, Event.CANCELLED)
        step = max(1, len(rows) // BEFORES)
        for before in rows[:BEFORES // 2] + rows[BEFORES // 2::step]:
            # a row as the detectors hand it: a copy of a shared one, or one made apart
            picked = first_failure(asking, before=dict(before), events=events)
            assert _place(picked) == _place(_walked(job, before, events)), (before["file"], before["line"])
            asked += 1
    assert asked > 100 or len(views) < 10
