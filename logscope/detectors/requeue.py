"""LS704 requeue: the job was requeued (by SLURM, an administrator, or the job itself).

What it detects
    ``slurmstepd: error: *** JOB J ON NODE CANCELLED AT T DUE TO JOB REQUEUE ***`` (``scontrol
    requeue``, or preemption in requeue mode), a batch script requeueing itself (``+ scontrol
    requeue J`` under ``set -x``), and PyTorch Lightning's SLURM auto-requeue (``Handling
    auto-requeue signal: 10``, ``requeing job J...``, ``requeued exp J``).

Why it matters
    A requeued job stops here and starts again later from its last checkpoint, under the same job
    id: this log ends with SIGTERMs and launcher failures that are not a crash. What matters is
    whether the restart resumes from a recent checkpoint.

Evidence
    ``cancelled`` events with reason ``JOB REQUEUE`` and ``requeue`` events; the termination
    lines around them; the last ``progress`` event before the requeue.

Example
    ::

        Handling auto-requeue signal: 10
        requeing job 123456...
        slurmstepd: error: *** JOB 123456 ON gpu-node03 CANCELLED AT 2024-04-20T09:09:37 DUE TO JOB REQUEUE ***

False positives
    An environment dump that merely mentions a REQUEUE variable is ignored; a message of another
    tool that uses the same words would be reported.

Advice
    Check that the next run of this job id resumed from the latest checkpoint (``sacct -j JOB
    --duplicates`` lists every run). If you did not ask for it, ``scontrol show job JOB`` shows
    the requeue reason and count.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from logscope.detectors.base import Detector, JobView, field_of
from logscope.detectors.cancellation import cancellation_finding, cancelled_rows, failure_before
from logscope.model import Category, Event, Finding

_ASSIGNMENT = re.compile(r"REQUEUE\w*\s*=")


class Requeue(Detector):
    code = "LS704"
    name = "requeue"
    category = Category.SCHEDULER
    requires: ClassVar[frozenset[Event]] = frozenset({Event.CANCELLED, Event.REQUEUE})
    specificity = 50

    def detect(self, job: JobView) -> list[Finding]:
        requeues = [r for r in job.rows(Event.REQUEUE)
                    if not _ASSIGNMENT.search(str(r.get("text") or ""))
                    and "requeue failed" not in str(field_of(r, "message") or "")]
        rows: list[dict[str, Any]] = [*cancelled_rows(job, "JOB REQUEUE"), *requeues]
        return cancellation_finding(
            self, job, rows, earlier=failure_before(job, rows),
            what="was requeued",
            why="It stops here and will run again later under the same job id, from its last checkpoint.",
            advice=("Check that the next run resumed from the latest checkpoint (`sacct -j JOB --duplicates` lists "
                    "every run); `scontrol show job JOB` shows the requeue reason and count."),
        )


__all__ = ["Requeue"]
