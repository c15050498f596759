"""Whether a job's logs prove it ended cleanly: the facts behind a ``healthy`` verdict.

logscope calls a job healthy only on positive evidence of a normal end (an honest "incomplete"
is better than a confident "healthy" for a log that just stops). The evidence, any of:

* a catalogue clean-end line (``CLEAN_END``: MLPerf ``run_stop`` with status success, the
  Hugging Face Trainer's ``***** train metrics *****``, Lightning's ``Trainer.fit stopped``,
  Megatron's ``[after training is done]``; see logscope/knowledge/messages.toml);
* every torchrun agent's last word is "worker group successfully finished";
* the training loop logging its last step of a known total (``step 100/100``, ``iteration
  1000/1000``);
* SLURM's accounting record (``logscope analyze JOBID``, or sacct/scontrol output saved beside
  the logs): the job and every step COMPLETED with ExitCode 0:0. A batch script that swallows its
  ranks' exit codes also ends COMPLETED, so the logs win: it counts only when they show no failure.

Failures that come after the clean end still count (a crash in teardown, a time limit in the
shutdown); failures before it did not stop the run (a logged-and-ignored import error, a retried
launch), and the verdict keeps them as context.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import polars as pl

from logscope.detectors.accounting_facts import recorded_clean_end
from logscope.detectors.base import JobView, event_of, field_of, order_key, window_of
from logscope.detectors.worker_restart import last_states
from logscope.model import Event, Finding


def clean_end(job: JobView) -> dict[str, Any] | None:
    """The last line proving the run ended normally, or None. Worked out once per view."""

    def compute() -> dict[str, Any] | None:
        completed = run_completed(job)
        rows = [completed] if completed is not None else []
        states = last_states(job)
        if states and all(event_of(r) == Event.AGENT_FINISHED for r in states.values()):
            rows.extend(states.values())
        recorded = recorded_clean_end(job)
        if recorded is not None:
            # SLURM recorded the job and every step COMPLETED, ExitCode 0:0. A script that swallowed
            # its ranks' exit codes ends so too: this counts only where the logs show no failure
            # (the verdict asks for a clean end only then), and never makes earlier failures
            # context (that is run_completed's, which reads the logs alone).
            rows.append(recorded)
        return max(rows, key=order_key) if rows else None

    found: dict[str, Any] | None = job.remember("clean_end", compute)
    return found


def run_completed(job: JobView) -> dict[str, Any] | None:
    """The last line saying the training run itself completed (a catalogue clean-end line, the last
    step of a known total), or None. Unlike torchrun's agents finishing, which any program they ran
    can give (an evaluation launched after the training failed), it ends the run that failed before
    it: the verdict keeps what failed earlier as context."""

    def compute() -> dict[str, Any] | None:
        rows = _completion_lines(job)
        return max(rows, key=order_key) if rows else None

    found: dict[str, Any] | None = job.remember("run_completed", compute)
    return found


def _completion_lines(job: JobView) -> list[dict[str, Any]]:
    step = pl.col("fields").struct.field("step")
    total = pl.col("fields").struct.field("step_total")
    finished = job.of(Event.PROGRESS).filter((total > 0) & (step >= total)).to_dicts() if job.has(Event.PROGRESS) else []
    return [*job.rows(Event.CLEAN_END), *finished]


def before_clean_end(finding: Finding, end: dict[str, Any], job: JobView | None = None) -> bool:
    """Whether a finding's first evidence was written before the clean end ``end`` of the same
    program: certainly before by their times, or above it in the same file when either has no
    time; and no torchrun launch of another entrypoint came between them (``job`` given)."""
    if job is not None and _other_program_between(job, finding, end):
        return False
    low, high = finding.window
    file, line = finding.order_key or (None, 0)
    return _written_before(high or low or finding.first_seen, file, line, end)


def _other_program_between(job: JobView, finding: Finding, end: dict[str, Any]) -> bool:
    """A torchrun launch between the finding and the end whose entrypoint differs from the one
    running when the finding was written: the end belongs to another program (an evaluation run
    after the training failed)."""
    starts: list[dict[str, Any]] = job.remember("launch_starts", lambda: sorted(
        (r for r in job.rows(Event.LAUNCH_CONFIG) if field_of(r, "message") == "launch config"),
        key=order_key))
    if len(starts) < 2:
        return False
    at = (finding.first_seen or datetime.max, *(finding.order_key or ("", 0)))
    running = [field_of(r, "value") for r in starts if order_key(r) <= at]
    between = [field_of(r, "value") for r in starts if at < order_key(r) <= order_key(end)]
    return bool(running) and any(entry != running[-1] for entry in between)


def row_before_clean_end(row: dict[str, Any], end: dict[str, Any]) -> bool:
    """:func:`before_clean_end` for a timeline row."""
    low, high = window_of(row)
    return _written_before(high or low, row.get("file"), int(row.get("line") or 0), end)


def _written_before(latest: datetime | None, file: str | None, line: int, end: dict[str, Any]) -> bool:
    """Certainly before ``end`` by time (a line's latest moment is not after the end's earliest),
    or, when either has no time or both have the same (a clock of seconds, a wrapper that wrote one
    time on every line), above it in the same file."""
    end_low = window_of(end)[0]
    same_file = file is not None and file == end.get("file")
    if latest is not None and end_low is not None and (latest != end_low or not same_file):
        return latest <= end_low
    return same_file and line < int(end.get("line") or 0)


__all__ = ["before_clean_end", "clean_end", "row_before_clean_end", "run_completed"]
