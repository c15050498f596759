"""A job id as a user types it: ``12345``, ``12345_7`` (an array task), ``12345.2`` /
``12345.batch`` / ``12345.extern`` (a step), ``12345_7.0``."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from logscope.accounting.record import AccountingRecord
from logscope.errors import AccountingError

JOB_ID = re.compile(r"^(?P<job>\d+)(?:_(?P<task>\d+))?(?:\.(?P<step>\d+|batch|extern))?$")


@dataclass(frozen=True)
class JobRef:
    """A parsed job id."""

    job: str
    task: str | None = None
    step: str | None = None

    @property
    def job_id(self) -> str:
        """The job's id as sacct's JobID column spells it, without the step: ``12345``, ``12345_7``."""
        return f"{self.job}_{self.task}" if self.task is not None else self.job

    def __str__(self) -> str:
        return self.job_id + (f".{self.step}" if self.step is not None else "")


def parse_job_ref(text: str) -> JobRef | None:
    """The job id ``text`` names, or None when it is not one."""
    match = JOB_ID.match(text.strip())
    if match is None:
        return None
    return JobRef(match.group("job"), match.group("task"), match.group("step"))


def select_job(records: list[AccountingRecord], ref: JobRef | None, source: str) -> AccountingRecord:
    """The record of ``ref`` among ``records`` (sacct -j 12345 also lists its array tasks); with no
    ref, the only job there is. A step id keeps only that step."""
    if ref is None:
        ids = sorted({r.job_id for r in records})
        if len(ids) != 1:
            raise AccountingError(f"{source}: holds {len(ids)} jobs ({', '.join(ids[:5])}); "
                                  "name the one to analyse (logscope analyze JOBID)")
        return records[0]
    found = [r for r in records if r.job_id == ref.job_id
             or (ref.task is None and r.array_job_id is None and r.job_id.split("_")[0] == ref.job)]
    if not found:
        raise AccountingError(f"{source}: no job {ref.job_id} in SLURM's record (unknown job id)")
    if len({r.job_id for r in found}) > 1:
        tasks = sorted({r.job_id for r in found})
        raise AccountingError(f"job {ref.job} is an array of {len(tasks)} tasks ({', '.join(tasks[:4])}"
                              f"{' ...' if len(tasks) > 4 else ''}): analyse one task (logscope analyze {tasks[0]})")
    record = found[0]
    if ref.step is not None:
        steps = tuple(s for s in record.steps if s.step == ref.step)
        if not steps:
            raise AccountingError(f"{source}: job {ref.job_id} has no step {ref.step}")
        record = dataclasses.replace(record, steps=steps)
    return record


__all__ = ["JOB_ID", "JobRef", "parse_job_ref", "select_job"]
