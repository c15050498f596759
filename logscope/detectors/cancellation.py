"""What LS701-LS704 share: a job ended by the scheduler (a helper module: it registers no detector).

slurmstepd prints ``*** JOB|STEP J ON NODE CANCELLED AT T [DUE TO REASON] ***`` once, on the step's
reporting node (req.c ``_handle_signal_container``). The reason selects the detector: ``TIME
LIMIT`` (LS701), ``PREEMPTION`` (LS702), none (LS703, a plain ``scancel``), ``JOB REQUEUE``
(LS704); ``NODE FAILURE`` belongs to LS604. Rules common to all four:

* the node in the line is where slurmstepd reported, not a culprit: findings name no host;
* the SIGTERMs, ``Killing subprocess``, ``Main process received SIGTERM`` and signal exits after
  the line are consequences, counted and cited, never roots;
* if a real failure (an exception, a non-signal exit, an OOM kill, a node failure) came before
  the cancellation, the job had already failed and the cancellation only ended it: the finding
  is then a consequence.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    event_of,
    field_of,
    last_in_order,
    order_key,
    when,
)
from logscope.detectors.exit_cascade import Victims
from logscope.detectors.job_facts import first_failure, happened_before
from logscope.model import Event, Finding, Role, Severity

REACTION = timedelta(seconds=60)
# Lines that are the launcher and srun reacting to the cancellation.
AFTERMATH = (Event.AGENT_SIGNAL, Event.CLOSING_SIGNAL, Event.STEP_ABORTED, Event.WORKER_FAILED,
             Event.CHILD_FAILURE, Event.SRUN_TASK_EXIT, Event.SRUN_ERROR, Event.EXCEPTION, Event.TEARDOWN)


def cancellation_finding(detector: Detector, job: JobView, rows: list[dict[str, Any]], *, what: str, why: str,
                         advice: str, earlier: dict[str, Any] | None) -> list[Finding]:
    """The finding for a scheduler ending: ``rows`` are the lines that say so (the first one wins).

    ``what`` completes "Job 12 <what> at <time>"; ``earlier`` is the real failure that came before
    the cancellation (then the finding is a consequence).
    """
    if not rows:
        return []
    rows = sorted(rows, key=order_key)
    cancel = rows[0]
    judge = Victims(job)
    aftermath = [r for r in job.rows_in_order(*AFTERMATH)
                 if (judge(r) or event_of(r) in (Event.STEP_ABORTED, Event.SRUN_ERROR))
                 and _around_or_after(r, cancel)]
    progress = _last_progress(job, cancel)
    at = field_of(cancel, "event_time") or (when(cancel["time"]) if cancel.get("time") else None)
    at_text = f" at {at}" if at else ""
    # What ended: the job when any line says so (slurmstepd prints the step's line first, then the
    # job's), else the step, named with its step id ("Step 4.0", never "Step 4").
    named = next((r for r in rows if field_of(r, "key") == "JOB"), cancel)
    scope = "step" if field_of(named, "key") == "STEP" else "job"
    job_id = field_of(named, "job_id") or next((field_of(r, "job_id") for r in rows if field_of(r, "job_id")), None)
    if scope == "step" and job_id and field_of(named, "step_id"):
        job_id = f"{job_id}.{field_of(named, 'step_id')}"
    title = f"{scope.capitalize()}{f' {job_id}' if job_id else ''} {what}{at_text}"
    explanation = (
        f"The {scope} {what}{at_text}. {why} "
        + (f"The last training progress before it was step {field_of(progress, 'step')}"
           + (f"/{field_of(progress, 'step_total')}" if field_of(progress, "step_total") else "")
           + (f" at {when(progress.get('time'))}" if progress.get("time") and not progress.get("time_inferred")
              else "") + ". " if progress else "")
        + (f"{len(aftermath)} termination line(s) go with it (SIGTERMs to workers, launchers exiting): "
           "consequences, not failures. " if aftermath else "")
        + (f"But the job had already failed before it ({str(earlier.get('text'))[:140]}): the cancellation only "
           "ended a job that was no longer working, see the root finding." if earlier is not None else "")
    )
    if earlier is not None:
        title = f"{title}, after the job had already failed"
    return [detector.finding(
        title=title,
        explanation=explanation.strip(),
        advice=advice,
        rows=[cancel, *rows[1:3], *aftermath[:3]],
        ordered=True,  # the CANCELLED line first: the SIGTERMs it caused can carry an earlier time
        role=Role.CONSEQUENCE if earlier is not None else Role.ROOT,
        severity=Severity.WARNING if earlier is not None else Severity.ERROR,
        culprit=None,
        hosts=[],  # the reporting node is not a culprit
        ranks=[],
    )]


def failure_before(job: JobView, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The real failure that came before the first of ``rows``, if any."""
    if not rows:
        return None
    return first_failure(job, before=min(rows, key=order_key))


def _around_or_after(row: dict[str, Any], cancel: dict[str, Any]) -> bool:
    """srun and the launchers react within seconds, sometimes printing before slurmstepd does."""
    if row.get("time") is None or cancel.get("time") is None:
        return not happened_before(row, cancel) or row.get("file") == cancel.get("file")
    return bool(row["time"] >= cancel["time"] - REACTION)


def _last_progress(job: JobView, cancel: dict[str, Any]) -> dict[str, Any] | None:
    progress = job.of(Event.PROGRESS)
    if progress.height == 0:
        return None
    if cancel.get("time") is not None:
        timed = progress.filter(pl.col("time").is_not_null() & (pl.col("time") <= cancel["time"]))
        if timed.height:
            progress = timed
    return last_in_order(progress)


def cancelled_rows(job: JobView, *reasons: str | None) -> list[dict[str, Any]]:
    """CANCELLED rows whose ``DUE TO`` reason starts with one of ``reasons`` (None: no reason)."""
    rows = job.rows(Event.CANCELLED)
    out = []
    for row in rows:
        reason = field_of(row, "reason")
        for wanted in reasons:
            if (wanted is None and not reason) or (wanted is not None and reason and str(reason).startswith(wanted)):
                out.append(row)
                break
    return out


__all__ = ["AFTERMATH", "cancellation_finding", "cancelled_rows", "failure_before"]
