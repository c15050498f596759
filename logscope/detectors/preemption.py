"""LS702 preemption: SLURM preempted the job for a higher-priority one.

What it detects
    ``slurmstepd: error: *** JOB|STEP J ON NODE CANCELLED AT T DUE TO PREEMPTION ***``. The
    termination lines around it (SIGTERMs, launcher exits) are listed as consequences.

Why it matters
    On preemptible partitions/QOS, SLURM cancels (or requeues) running jobs when a higher-priority
    job needs the nodes. The job itself did nothing wrong; its processes die with SIGTERM and the
    launchers print failures that look like a crash.

Evidence
    ``cancelled`` events with reason ``PREEMPTION``; termination lines around them; the last
    ``progress`` event before the cancellation.

Example
    ::

        slurmstepd: error: *** JOB 494583 ON gpu-node07 CANCELLED AT 2024-04-20T09:09:37 DUE TO PREEMPTION ***

False positives
    None known.

Advice
    Checkpoint often enough to lose little, submit with ``--requeue`` so the job restarts
    automatically, and handle SIGTERM to save a last checkpoint. Use a non-preemptible partition or
    QOS for runs that cannot tolerate it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from logscope.detectors.base import Detector, JobView
from logscope.detectors.cancellation import cancellation_finding, cancelled_rows, failure_before
from logscope.model import Category, Event, Finding


class Preemption(Detector):
    code = "LS702"
    name = "preemption"
    category = Category.SCHEDULER
    requires: ClassVar[frozenset[Event]] = frozenset({Event.CANCELLED})
    specificity = 50

    def detect(self, job: JobView) -> list[Finding]:
        rows: list[dict[str, Any]] = cancelled_rows(job, "PREEMPT")
        return cancellation_finding(
            self, job, rows, earlier=failure_before(job, rows),
            what="was preempted by SLURM",
            why="A higher-priority job needed the nodes; SLURM sent SIGTERM to every process of the job.",
            advice=("Checkpoint often, submit with --requeue so the job restarts, handle SIGTERM to save a last "
                    "checkpoint, or use a non-preemptible partition/QOS."),
        )


__all__ = ["Preemption"]
