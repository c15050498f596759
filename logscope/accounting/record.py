"""The accounting record of one job: what SLURM says happened to the job and each of its steps.

Every reader (``sacct --json`` of any data_parser version, ``sacct --parsable2``, ``scontrol show
job`` plain or ``--json``) produces these, and everything downstream (timeline rows, detectors,
the report's table, the saved bundle) reads only these. Nothing here reads files or runs commands.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class StepRecord:
    """One line of ``sacct``: the job allocation itself (``step`` None) or one of its steps."""

    job_id: str  # "12345", or "12345_7" for an array task
    step: str | None  # None for the job, else "batch", "extern", "interactive", "0", "1", ...
    state: str  # base state name: COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...
    name: str | None = None
    cancelled_by: str | None = None  # the uid (or user name) of "CANCELLED by 1000"
    exit_code: int | None = None  # ExitCode's return code (the part before ':')
    signal: int | None = None  # ExitCode's signal (the part after ':'), 0 for none
    reason: str | None = None  # the job's Reason (None, NonZeroExitCode, TimeLimit, ...)
    nodes: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    max_rss: str | None = None  # sacct's MaxRSS as printed (e.g. "51200K")
    max_rss_node: str | None = None

    @property
    def step_id(self) -> str:
        """``12345`` / ``12345.batch`` / ``12345_7.0``: how sacct's JobID column spells it."""
        return self.job_id if self.step is None else f"{self.job_id}.{self.step}"

    @property
    def exit_text(self) -> str:
        """ExitCode as sacct prints it: ``return:signal`` (``0:0``, ``1:0``, ``0:9``); empty if unknown."""
        if self.exit_code is None and self.signal is None:
            return ""
        return f"{self.exit_code or 0}:{self.signal or 0}"

    @property
    def state_text(self) -> str:
        """The state as sacct prints it (``CANCELLED by 1000``)."""
        return f"{self.state} by {self.cancelled_by}" if self.cancelled_by else self.state

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.step_id,
            "step": self.step,
            "name": self.name,
            "state": self.state,
            "cancelled_by": self.cancelled_by,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "reason": self.reason,
            "nodes": list(self.nodes),
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "max_rss": self.max_rss,
            "max_rss_node": self.max_rss_node,
        }


@dataclass(frozen=True)
class AccountingRecord:
    """A job's record: the job line, its steps, where its output went and its batch script."""

    job: StepRecord
    steps: tuple[StepRecord, ...] = ()
    user: str | None = None
    uid: int | None = None  # the user's uid, where the record says it (scontrol's UserId=alice(1000))
    work_dir: str | None = None
    stdout: str | None = None  # the --output pattern (or its expansion) as SLURM reports it
    stderr: str | None = None
    batch_host: str | None = None
    failed_node: str | None = None  # the node that caused a NODE_FAIL (sacct's FailedNode, 23.02+)
    array_job_id: str | None = None
    array_task_id: str | None = None
    script: str | None = None  # the batch script (sacct -B, or the "script" key of sacct --json)
    # where the record came from: "sacct -j 12345 --json", a saved file's path, ...
    sources: tuple[str, ...] = field(default_factory=tuple)

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def records(self) -> tuple[StepRecord, ...]:
        """The job line, then its steps."""
        return (self.job, *self.steps)

    def to_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "name": self.job.name,
            "state": self.job.state,
            "cancelled_by": self.job.cancelled_by,
            "exit_code": self.job.exit_text or None,
            "reason": self.job.reason,
            "user": self.user,
            "nodes": list(self.job.nodes),
            "start": self.job.start.isoformat() if self.job.start else None,
            "end": self.job.end.isoformat() if self.job.end else None,
            "failed_node": self.failed_node,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "work_dir": self.work_dir,
            "steps": [s.to_json() for s in self.records],
            "script": self.script is not None,
            "sources": list(self.sources),
        }


def merged(first: AccountingRecord, second: AccountingRecord) -> AccountingRecord:
    """``first`` completed from ``second`` (sacct's record with what only scontrol knows, ``sacct -P``'s
    with what only ``--json`` says): a field ``first`` lacks is taken from ``second``, for the job and
    for each step of the same id; steps come from whichever has them (scontrol lists none)."""
    job = _filled(first.job, second.job)
    values: dict[str, Any] = {}
    for item in dataclasses.fields(AccountingRecord):
        if item.name in ("job", "steps", "sources"):
            continue
        mine = getattr(first, item.name)
        values[item.name] = mine if mine not in (None, "") else getattr(second, item.name)  # uid 0 is one
    others = {s.step: s for s in second.steps}
    steps = tuple(_filled(s, others[s.step]) if s.step in others else s for s in first.steps) or second.steps
    return AccountingRecord(job=job, steps=steps,
                            sources=tuple(dict.fromkeys((*first.sources, *second.sources))), **values)


def _filled(first: StepRecord, second: StepRecord) -> StepRecord:
    changes = {item.name: getattr(second, item.name) for item in dataclasses.fields(StepRecord)
               if getattr(first, item.name) in (None, ()) and getattr(second, item.name) not in (None, ())}
    return dataclasses.replace(first, **changes) if changes else first


__all__ = ["AccountingRecord", "StepRecord", "merged"]
