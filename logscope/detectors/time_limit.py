"""LS701 time-limit: SLURM killed the job because it reached its time limit.

What it detects
    ``slurmstepd: error: *** JOB|STEP J ON NODE CANCELLED AT T DUE TO TIME LIMIT ***`` (and the
    older layouts without ``ON NODE``). The workers' SIGTERMs, ``Killing subprocess``, ``Main
    process received SIGTERM``, ``srun: Job step aborted`` and signal exits around it are listed as
    consequences. It reports the last training progress before the kill.

Why it matters
    A job killed at its time limit prints hundreds of termination lines that look like a crash
    cascade. None of them is a failure: the job simply ran out of time. If training had already
    stopped progressing long before (a silent hang), LS103 reports that instead; if something
    crashed before, that crash is the root and this finding a consequence.

Evidence
    ``cancelled`` events with reason ``TIME LIMIT``; the termination lines around them; the last
    ``progress`` event before the cancellation. The node in the line is where slurmstepd reported,
    not a culprit.

Example
    ::

        srun: Job step aborted: Waiting up to 62 seconds for job step to finish.
        slurmstepd: error: *** STEP 1809655.0 ON r6i4n3 CANCELLED AT 2021-05-24T09:50:34 DUE TO TIME LIMIT ***
        Killing subprocess 43950

False positives
    None known: the line is only printed for the time limit.

Advice
    Request more time (``--time``), or make the job resumable: checkpoint periodically and ask
    SLURM for a warning signal before the kill (``#SBATCH --signal=USR1@300``) to save a last
    checkpoint and requeue. Check that the throughput is what you expect for this time budget.
"""

from __future__ import annotations

from typing import Any, ClassVar

from logscope.detectors.base import Detector, JobView
from logscope.detectors.cancellation import cancellation_finding, cancelled_rows, failure_before
from logscope.model import Category, Event, Finding


class TimeLimit(Detector):
    code = "LS701"
    name = "time-limit"
    category = Category.SCHEDULER
    requires: ClassVar[frozenset[Event]] = frozenset({Event.CANCELLED})
    specificity = 50

    def detect(self, job: JobView) -> list[Finding]:
        rows: list[dict[str, Any]] = cancelled_rows(job, "TIME LIMIT")
        return cancellation_finding(
            self, job, rows, earlier=failure_before(job, rows),
            what="reached its time limit",
            why="SLURM sent SIGTERM (then SIGKILL) to every process of the job.",
            advice=("Request more time (--time) or make the job resumable: checkpoint periodically and use "
                    "#SBATCH --signal=USR1@300 to save a last checkpoint and requeue before the kill."),
        )


__all__ = ["TimeLimit"]
