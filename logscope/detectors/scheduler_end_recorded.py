"""LS705 scheduler-end-recorded: SLURM's record says the scheduler ended the job (TIMEOUT, CANCELLED, PREEMPTED, DEADLINE, REQUEUED).

What it detects
    A job whose accounting state is ``TIMEOUT`` (its time limit), ``CANCELLED by UID`` (scancel by
    that user id, or an administrator), ``PREEMPTED``, ``DEADLINE`` (its ``--deadline``) or
    ``REQUEUED``; or a step cancelled by a user (``CANCELLED by UID``, not uid 0, SLURM itself)
    while the job went on. Reported with the category of the log-based detectors of the same
    event (LS701 time-limit, LS703 cancelled, LS702 preemption, LS704 requeue), for when the log
    lost SLURM's line, and with who cancelled, which no log says.

Why it matters
    After a time limit or a scancel every process dies with SIGTERM: the end of the log looks like
    a crash. Nothing failed; the scheduler stopped the job. The record says so even when the
    ``*** JOB ... CANCELLED ***`` line never reached the log (a step's output redirected, a log
    cut short).

Evidence
    ``accounting`` rows of those states (the job's first, else a step's), their End time and the
    cancelling uid (``fields.value``). A failure the logs show earlier stays the root: the
    scheduler's record only says how the job ended.

Example
    ::

        $ sacct -j 4242014 -P --format=JobID,State,ExitCode,End
        JobID|State|ExitCode|End
        4242014|CANCELLED by 1000|0:0|2026-11-03T15:35:54
        4242014.batch|CANCELLED|0:15|2026-11-03T15:35:55

False positives
    A job cancelled because it looked stuck is reported as cancelled; the hang, if the logs show
    one earlier, is the root.

Advice
    TIMEOUT: ask for more time (``--time``) or checkpoint and resubmit with ``--dependency``;
    CANCELLED: ``getent passwd UID`` says who, ask them (or the administrators) why; PREEMPTED /
    REQUEUED: use a partition or QOS that is not preemptible, or make the job resume from its
    checkpoint (``--requeue``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from logscope.detectors.accounting_facts import RecordedStep, recorded_steps, steps_title
from logscope.detectors.base import Detector, JobView, field_of, when
from logscope.model import Category, Event, Finding, Severity

# in the order one is reported when several are recorded
STATES = ("TIMEOUT", "PREEMPTED", "DEADLINE", "CANCELLED", "REQUEUED")


class SchedulerEndRecorded(Detector):
    code = "LS705"
    name = "scheduler-end-recorded"
    category = Category.SCHEDULER
    requires: ClassVar[frozenset[Event]] = frozenset({Event.ACCOUNTING})
    specificity = 45  # below LS701-LS704 (50): slurmstepd's own line about the same moment is the finer account

    def detect(self, job: JobView) -> list[Finding]:
        chosen = _chosen(recorded_steps(job, *STATES))
        if chosen is None:
            return []
        state = chosen.state
        uid = field_of(chosen.first, "value")
        by = f" by uid {uid}" if uid else ""
        # What the state says happened, and the advice, are data (logscope/knowledge/slurm_states.toml),
        # loaded only where SLURM's record was read.
        from logscope.accounting.states import state_info

        info = state_info(state)
        what, advice = info.happened, info.advice
        severity = Severity.ERROR  # a root as LS701-LS704 are: the scheduler ended this run
        finding = self.finding(
            title=f"SLURM recorded {state}{by}: {steps_title([chosen])} {what}{by} at {when(chosen.end)}",
            explanation=(f"SLURM's accounting record says {steps_title([chosen])} {what}{by} "
                         f"(state {state}, ended {when(chosen.end)}). The SIGTERMs and exits around that time "
                         "are the scheduler stopping the processes, not failures of their own."),
            advice=advice, rows=list(chosen.rows[:1]), severity=severity, hosts=[])
        return [dataclasses.replace(finding, window=(chosen.end, chosen.end))]


def _chosen(steps: list[RecordedStep]) -> RecordedStep | None:
    """The job's own record first; a step only when cancelled by a user (uid 0 is SLURM itself, as
    when srun's --kill-on-bad-exit or a node failure ends a step)."""
    jobs = [s for s in steps if s.is_job]
    users = [s for s in steps if not s.is_job and s.state == "CANCELLED"
             and field_of(s.first, "value") not in (None, "0")]
    for candidates in (jobs, users):
        if candidates:
            return min(candidates, key=lambda s: STATES.index(s.state))
    return None


__all__ = ["SchedulerEndRecorded"]
