"""LS103 progress-stall: training stopped making progress while the job stayed alive.

What it detects
    A silent hang: the last training-progress line (``iteration N/M``, ``step N ... loss``) is
    followed by a long stretch of time in which the job was demonstrably still running (periodic
    status lines, later timestamps, or a cancellation at the time limit) but no rank advanced,
    and no error explains it.

Why it matters
    Some hangs never time out: a deadlock in Python, a rank spinning in a kernel, a collective
    with an infinite timeout. The job burns its allocation until the time limit and the log
    only shows that nothing happened. The gap is the evidence.

Evidence
    Progress lines (their step and, when printed, the time per iteration) and every timed line
    after the last one: heartbeat/status lines, ``CANCELLED AT`` times. The stall threshold is
    ten times the time per iteration (from the progress lines or their spacing), at least 15
    minutes; 30 minutes when the iteration time is unknown. A job its time limit ended is measured
    against its own run instead: silent for ten iterations and for at least half of the time from
    its first progress line to the cancellation (:data:`STALLED_SHARE_OF_RUN`), it spent its
    allocation hung, whatever its length. No process stopped before the others,
    so the finding names no rank and no host: the hosts of these lines are witnesses.

Example
    ::

        [default7]: iteration    45000/  115311 | ... | elapsed time per iteration (s): 111.00 | ...
        [2022-05-01 03:56:11] PULSE: tr11-176B-ml is running for 1-07:27:33 ...
        [2022-05-01 05:56:18] PULSE: tr11-176B-ml is running for 1-09:27:40 ...

False positives
    A long phase that prints no progress (evaluation, checkpoint conversion) longer than the
    threshold looks like a stall. Untimed progress lines take the time of the next timed line, so
    the stall measured is a lower bound.

Advice
    Attach ``py-spy dump --pid`` to the ranks of a hung job to see where each one is. Make the
    training loop log a heartbeat with a timestamp, and set a finite NCCL timeout so a hang
    becomes an error with a rank attached (``TORCH_NCCL_ASYNC_ERROR_HANDLING=1``, the c10d
    ``timeout=`` argument).
"""

from __future__ import annotations

from datetime import timedelta
from statistics import median
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import LAST_IN_POLARS_FROM, Detector, JobView, last_in_order, last_of, when
from logscope.detectors.cancellation import cancelled_rows
from logscope.model import Category, Event, Finding, Severity
from logscope.textsafe import shortened

MIN_STALL = timedelta(minutes=15)
DEFAULT_STALL = timedelta(minutes=30)
ITERATIONS = 10
# A job cancelled at its time limit after this share of its run (first progress line to the
# cancellation) without a step hung rather than ran out of time: an evaluation or a checkpoint at
# the end of a run takes a small share of it, and a short job (a test allocation of minutes) can
# never reach MIN_STALL.
STALLED_SHARE_OF_RUN = 0.5


class ProgressStall(Detector):
    code = "LS103"
    name = "progress-stall"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.PROGRESS})
    specificity = 55

    def detect(self, job: JobView) -> list[Finding]:
        last_progress = self._last_progress(job)
        if last_progress is None:
            return []
        progress_time = last_progress["time"]
        later = (pl.col("time").is_not_null() & ~pl.col("time_inferred") & (pl.col("time") > progress_time)).fill_null(
            False)
        # Anything that failed after the last step explains the silence better than a stall.
        failed = later & pl.col("severity").is_in(["error", "critical"]) & (pl.col("event") != Event.CANCELLED.value)
        # One pass over the timeline: most jobs stop here (no later line, a failure after the last
        # step, or a silence shorter than any threshold). The last line in order among later ones,
        # all timed by their own stamp, is one of those of the latest time.
        said = job.events.select(later.any().alias("later"), failed.any().alias("failed"),
                                 pl.col("time").filter(later).max().alias("latest")).row(0, named=True)
        if not said["later"] or said["failed"]:
            return []
        long_silence = said["latest"] - progress_time >= MIN_STALL
        limit = self._time_limit_after(job, progress_time)
        if not long_silence and limit is None:
            return []
        timed_progress = job.of(Event.PROGRESS).filter(pl.col("time").is_not_null())
        pace = self._pace(timed_progress)
        alive = last_in_order(job.events.filter(later)) if long_silence else None
        threshold = DEFAULT_STALL if pace is None else max(MIN_STALL, pace)
        at_limit = alive is None or alive["time"] - progress_time < threshold
        if at_limit:
            # Not silent for long: a job its time limit ended is measured against its own run
            # (STALLED_SHARE_OF_RUN), where its pace is known.
            if not pace or limit is None:
                return []
            alive = limit
            threshold = max(pace, (limit["time"] - timed_progress["time"].min()) * STALLED_SHARE_OF_RUN)
            if limit["time"] - progress_time < threshold:
                return []
        assert alive is not None
        gap = alive["time"] - progress_time
        last_said = self._last_said(job, last_progress, alive)
        return [self.finding(
            title=(f"Silent hang: no training progress for {_duration(gap)} after "
                   f"step {last_progress['fields'].get('step')}, while the job kept running"
                   + (" until its time limit" if at_limit else "")),
            explanation=(
                f"The last progress line is step {last_progress['fields'].get('step')} "
                f"(at or before {when(progress_time)}). The job was still alive at {when(alive['time'])} "
                f"({alive['event']} line) without any rank reporting progress or an error. That is more than "
                f"{_duration(threshold)}, the stall threshold for this job's pace"
                + (" and half of its run until the time limit." if at_limit else ".")
                + (f" The last line the job wrote before the silence: \"{shortened(str(last_said['text']), 160)}\" "
                   f"({last_said['file']}:{last_said['line']})." if last_said is not None else "")
            ),
            advice=("Take py-spy dumps of all ranks while such a job hangs; log a timestamped heartbeat from the "
                    "training loop; use finite collective timeouts so the hang turns into an error naming a rank."),
            rows=[last_progress, *([last_said] if last_said is not None else []), alive],
            severity=Severity.CRITICAL,
            # No process stopped before the others: the host of the last progress line (the rank that
            # prints it) or of a later status line is a witness, not where the hang is.
            ranks=[],
            hosts=[],
        )]

    @staticmethod
    def _last_progress(job: JobView) -> dict[str, Any] | None:
        """The last timed progress row in order (:func:`last_in_order`); a job's few are read
        from the dicts the view shares, many are sorted by polars."""
        progress = job.of(Event.PROGRESS)
        if progress.height < LAST_IN_POLARS_FROM:
            return last_of([row for row in job.rows(Event.PROGRESS) if row.get("time") is not None])
        return last_in_order(progress.filter(pl.col("time").is_not_null()))

    @staticmethod
    def _last_said(job: JobView, last_progress: dict[str, Any], alive: dict[str, Any]) -> dict[str, Any] | None:
        """The last line of the job's own work written after the last progress line and before the
        first line of the silence (a status line, the scheduler's, else the line that ended it): where
        the job was when it stopped (a 'saving checkpoint' with no 'saved' after it); None when the
        progress line was the last."""
        outside = [Event.HEARTBEAT.value, Event.CANCELLED.value, Event.ACCOUNTING.value]
        # Timed by its own stamp: an untimed line (srun's 'Job step aborted' as the limit struck)
        # only borrowed the time of the lines above it.
        after = job.events.filter(
            pl.col("time").is_not_null() & ~pl.col("time_inferred") & (pl.col("time") >= last_progress["time"])
            & ~((pl.col("file") == last_progress["file"]) & (pl.col("line") <= last_progress["line"])))
        ends = after.filter(pl.col("event").is_in(outside))["time"]
        end = min(ends.min(), alive["time"]) if ends.len() else alive["time"]
        return last_in_order(after.filter((pl.col("time") < end)
                                          & ~pl.col("event").is_in([*outside, Event.PROGRESS.value])))

    @staticmethod
    def _time_limit_after(job: JobView, progress_time: Any) -> dict[str, Any] | None:
        """The first cancellation at the time limit after the last progress line, timed by its own
        stamp; None when the job did not end so."""
        limits = [row for row in cancelled_rows(job, "TIME LIMIT")
                  if row.get("time") is not None and not row.get("time_inferred") and row["time"] > progress_time]
        return min(limits, key=lambda row: row["time"]) if limits else None

    @staticmethod
    def _pace(progress: pl.DataFrame) -> timedelta | None:
        """Ten iterations of the job's pace (from the time per iteration its progress lines print,
        else their spacing); None where the progress lines give no pace."""
        per_iter = progress.select(pl.col("fields").struct.field("iteration_time_s").drop_nulls()).to_series().to_list()
        if per_iter:
            seconds = median(per_iter)
            step_gap = progress.select(pl.col("fields").struct.field("step").diff().drop_nulls().median()).item()
            return timedelta(seconds=seconds * ITERATIONS * max(1.0, float(step_gap or 1)))
        # Every rank prints each step: the spacing is between steps (their first line), not between
        # the lines of one step, which are milliseconds apart.
        # Lines without a step number each count on their own.
        timed = progress.filter(~pl.col("time_inferred")).with_row_index("row")
        step = pl.col("fields").struct.field("step")
        exact = (timed.group_by(pl.when(step.is_not_null()).then(step.cast(pl.String))
                                .otherwise(pl.format("line-{}", pl.col("row"))).alias("key"))
                 .agg(pl.col("time").min()).sort("time"))
        if exact.height >= 3:
            spacing = exact.select(pl.col("time").diff().drop_nulls().median()).item()
            if isinstance(spacing, timedelta) and spacing:
                return spacing * ITERATIONS
        return None


def _duration(span: timedelta) -> str:
    """``2 h 5 min``, ``7 min``, ``48 s``: a stall in the unit a person reads it in."""
    seconds = int(span.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
