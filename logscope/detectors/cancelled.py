"""LS703 cancelled: the job was cancelled with scancel (by its user or an administrator).

What it detects
    ``slurmstepd: error: *** JOB|STEP J ON NODE CANCELLED AT T ***`` with no ``DUE TO`` reason:
    what slurmstepd prints for a plain ``scancel`` (SIGTERM/SIGKILL sent by a user or an admin).
    A STEP cancellation that srun itself caused after a task failed (``--kill-on-bad-exit``:
    ``srun: error: HOST: task N: Exited with exit code 1``, ``srun: Terminating job step``) is a
    consequence of that failure, not a cancellation by anyone.

Why it matters
    After a scancel every process dies with SIGTERM, torchrun prints failures and srun reports
    terminated tasks: the end of the log looks like a crash. Nothing failed; someone stopped the
    job. Must not be confused with a time limit (``DUE TO TIME LIMIT``, LS701).

Evidence
    ``cancelled`` events without a reason; the termination lines around them; the last
    ``progress`` event before it; earlier task failures or ``srun: Terminating`` lines, which turn
    it into a consequence.

Example
    ::

        srun: Job step aborted: Waiting up to 62 seconds for job step to finish.
        slurmstepd: error: *** STEP 1809577.0 ON r6i5n1 CANCELLED AT 2021-05-23T08:46:02 ***
        slurmstepd: error: *** JOB 1809577 ON r6i5n1 CANCELLED AT 2021-05-23T08:46:02 ***

False positives
    Who cancelled is not in the job log. An admin cancelling a job of a failing node looks the
    same as a user's scancel.

Advice
    ``sacct -j JOB --format=JobID,State,End`` shows ``CANCELLED by <uid>``; if it was not you,
    ask the administrators why. If the job was cancelled because it looked stuck, see the
    progress and hang findings.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, order_key
from logscope.detectors.cancellation import cancellation_finding, cancelled_rows, failure_before
from logscope.detectors.job_facts import happened_before
from logscope.model import Category, Event, Finding


class Cancelled(Detector):
    code = "LS703"
    name = "cancelled"
    category = Category.SCHEDULER
    requires: ClassVar[frozenset[Event]] = frozenset({Event.CANCELLED})
    specificity = 50

    def detect(self, job: JobView) -> list[Finding]:
        rows: list[dict[str, Any]] = cancelled_rows(job, None)
        earlier = self._ended_by_failure(job, rows)
        return cancellation_finding(
            self, job, rows, earlier=earlier,
            what="was cancelled (scancel, no reason given)" if earlier is None else "was cancelled (no reason given)",
            why=("A user or an administrator cancelled it; SLURM sent SIGTERM to every process." if earlier is None
                 else "srun ends the whole step when a task or a node fails (--kill-on-bad-exit), with the same "
                 "line as a scancel."),
            advice=("`sacct -j JOB --format=JobID,State,End` shows 'CANCELLED by <uid>'. If it was not you, ask the "
                    "administrators why; if it was cancelled because it looked stuck, see the progress/hang findings."),
        )

    @staticmethod
    def _ended_by_failure(job: JobView, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """A task failure, or srun terminating the step, before it: kill-on-bad-exit, not scancel."""
        failure = failure_before(job, rows)
        if failure is not None or not rows:
            return failure
        cancel = min(rows, key=order_key)
        terminating = job.of(Event.SRUN_ERROR).filter(
            pl.col("fields").struct.field("message").str.contains(r"^Terminating (?:job step|StepId)"))
        return next((r for r in terminating.to_dicts() if happened_before(r, cancel)), None)


__all__ = ["Cancelled"]
