"""LS105 fail-slow: training slowed down for good from some step on, while the job went on.

What it detects
    A sustained change in the time one training step takes: from step N on, steps take at least
    1.2x as long as before, for at least three logged steps (a slow node, a degraded link, a GPU
    throttling, a storage stall that does not clear). The step times come from the progress
    lines (:mod:`logscope.detectors.step_times`: the trainer's own ``elapsed time per iteration``,
    else the spacing of the logged steps); the change point from binary segmentation of their
    logarithm, a split kept only when it explains more than the series' own jitter (its
    point-to-point noise, at least 1%). The finding names the first logged step after the change,
    the time per step before and after, and the events logged near its start (an IB port error,
    an Xid, a restart, a node's warnings).

Why it matters
    A job that gets slower fails nobody's health check, yet burns its allocation: a 1.4x slowdown
    on a 1000-GPU job costs 400 GPUs. It is also the early sign of what kills jobs later (a link
    flapping before it drops, a GPU heating up before an Xid), and in a synchronous job one slow
    rank slows every rank.

Evidence
    ``progress`` events (their step, their time, ``fields.iteration_time_s``: the first 2 and last
    256 of each process are kept, :data:`~logscope.limits.PROGRESS_TAIL`, and of each file the
    progress lines at a sample of line numbers spread over the whole run,
    :func:`~logscope.limits.progress_sampled`: a slowdown long before the last steps shows); the timeline's
    warning and error lines within a minute (or one logging interval) of the change. The finding is
    context: it never becomes the root and never changes the verdict of a job, failed or not. It
    names no rank and no host: every rank of a synchronous job slows with the slowest, so the step
    times do not say which one is slow; the events near the start are listed as what happened
    then, not as the culprit. Error lines near the start are named in the explanation, not cited
    as the finding's evidence (a cited line counts as explained, and this finding explains nothing
    of a failure).

Example
    ::

        2026-11-03 09:20:18,871 - INFO - iteration      500/    1000 | ... | elapsed time per iteration (ms): 850.2 | ...
        gpu-node02:46576:46701 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error
        2026-11-03 09:20:30,025 - INFO - iteration      510/    1000 | ... | elapsed time per iteration (ms): 1190.6 | ...

False positives
    A planned change of pace looks the same: a larger batch or sequence length from a step on
    (curriculum, batch-size ramp-up), evaluation or checkpointing counted inside the logged step
    times, a dataloader that outruns its cache. A speed-up is never reported. Fewer than eight
    logged steps in an attempt, or a slow phase of fewer than three, are not enough to tell.

Advice
    Look at what happened at the named step on each node: the events listed, ``nvidia-smi -q -d
    PERFORMANCE,TEMPERATURE`` (clocks throttled?), ``ibstat``/``perfquery`` (link errors), the
    storage. To find the slow rank, let the job say it: Megatron's straggler detector
    (``--log-straggler``), PyTorch's Flight Recorder (``TORCH_NCCL_TRACE_BUFFER_SIZE``), or a
    per-rank step-time log; then drain the node and compare with ``logscope diff`` against a run
    that kept its pace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from statistics import median
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import Detector, JobView, dicts, evidence_of
from logscope.detectors.step_times import change_points, noise, step_series
from logscope.model import Category, Event, Finding, Role, Severity

# A slowdown worth reporting: the slow phase's median step time over the fastest phase before it.
SLOWDOWN = 1.2
MIN_POINTS = 8  # logged steps with a time, in one attempt, before any change is looked for
MIN_PHASE = 3  # logged steps in a phase (before or after a change)
NOISE_FLOOR = 0.01  # the jitter assumed at least (1% of a step's time)
PENALTY = 4.0  # a split must lower the squared error by PENALTY x noise^2 x ln(points)
NEAR = timedelta(seconds=60)  # events this close to the change (or one logging interval) are listed
MAX_NEARBY = 5
_QUIET_EVENTS = (Event.PROGRESS.value, Event.ACCOUNTING.value)


@dataclass(frozen=True)
class Slowdown:
    """One sustained slowdown of an attempt: its first slow logged step and the phases around it."""

    attempt: int
    start_step: int  # the first step that can have been slow (after the last fast logged step)
    before_s: float  # median time per step of the fastest phase before it
    after_s: float  # median time per step of the slow phase
    last_fast: dict[str, Any]  # the step-series rows around the change
    first_slow: dict[str, Any]
    until_step: int | None  # the last slow logged step when a faster phase follows, else None
    points: int  # logged steps in the slow phase

    @property
    def ratio(self) -> float:
        return self.after_s / self.before_s


def slowdowns(view: JobView) -> list[Slowdown]:
    """Every attempt's first sustained slowdown (see the module docstring), in order."""
    series = step_series(view).filter(pl.col("step_time_s").is_not_null() & (pl.col("step_time_s") > 0))
    found: list[Slowdown] = []
    for (attempt,), rows in series.partition_by("attempt", as_dict=True, maintain_order=True).items():
        slow = _first_slowdown(int(str(attempt)), rows.to_dicts())
        if slow is not None:
            found.append(slow)
    return found


def _first_slowdown(attempt: int, rows: list[dict[str, Any]]) -> Slowdown | None:
    if len(rows) < MIN_POINTS:
        return None
    values = [math.log(float(r["step_time_s"])) for r in rows]
    sigma = max(noise(values), NOISE_FLOOR)
    bounds = [0, *change_points(values, MIN_PHASE, PENALTY * sigma * sigma * math.log(len(values))), len(values)]
    phases = list(pairwise(bounds))
    levels = [median(float(r["step_time_s"]) for r in rows[a:b]) for a, b in phases]
    for i in range(1, len(phases)):
        fastest = min(levels[:i])
        if levels[i] < SLOWDOWN * fastest:
            continue
        start, end = phases[i]
        faster_after = next((j for j in range(i + 1, len(phases)) if levels[j] < SLOWDOWN * fastest), None)
        last = phases[faster_after - 1][1] if faster_after is not None else end
        last_fast = rows[start - 1]
        return Slowdown(attempt, int(last_fast["step"]) + 1, fastest, levels[i], last_fast, rows[start],
                        int(rows[last - 1]["step"]) if faster_after is not None else None, last - start)
    return None


class FailSlow(Detector):
    code = "LS105"
    name = "fail-slow"
    category = Category.HANG
    requires: ClassVar[frozenset[Event]] = frozenset({Event.PROGRESS})

    def detect(self, job: JobView) -> list[Finding]:
        return [self._finding(job, slow) for slow in slowdowns(job)]

    def _finding(self, job: JobView, slow: Slowdown) -> Finding:
        progress = _progress_rows(job, [slow.last_fast, slow.first_slow])
        nearby = nearby_events(job, slow)
        quiet = [r for r in nearby if r.get("severity") not in ("error", "critical")]
        loud = [r for r in nearby if r.get("severity") in ("error", "critical")]
        attempt = f" (attempt {slow.attempt + 1} of the training loop)" if slow.attempt else ""
        near = ""
        if nearby:
            first = nearby[0]
            place = first.get("node") or first.get("host")
            near = f"; near its start: {_short(first)}" + (f" (logged on {place})" if place else "")
        until = f" until step {slow.until_step}" if slow.until_step is not None else ", to the end of the log"
        lines = [f"  {e.file}:{e.line}  {e.text}" for e in (evidence_of(r) for r in nearby)]
        explanation = (
            f"Up to step {slow.last_fast['step']} a step took {_seconds(slow.before_s)} (median); from step "
            f"{slow.start_step} on it took {_seconds(slow.after_s)}, {slow.ratio:.2f}x as long, for "
            f"{slow.points} logged steps{until}{attempt}. "
            + ("Logged near the change:\n" + "\n".join(lines) + "\n" if lines else
               "No warning or error was logged near the change. ")
            + "The step times are the whole job's: in a synchronous job every rank waits for the slowest, "
            "so they do not say which rank or node is slow, and this finding names none."
            + (" The error lines above are listed as what happened then; the verdict weighs them on its own."
               if loud else ""))
        return self.finding(
            title=(f"Training slowed down {slow.ratio:.2f}x from step {slow.start_step} "
                   f"({_seconds(slow.before_s)} -> {_seconds(slow.after_s)} per step){near}"),
            explanation=explanation,
            advice=("Check what happened at that step on each node (the events above, GPU clocks and "
                    "temperatures, IB link counters, storage); make the job name its slow rank next time "
                    "(Megatron --log-straggler, Flight Recorder, per-rank step times) and compare with "
                    "`logscope diff` against a run that kept its pace."),
            rows=[*progress, *quiet],
            ordered=True,
            role=Role.CONTEXT,
            severity=Severity.WARNING,
            ranks=[],
            hosts=[],
        )


def nearby_events(job: JobView, slow: Slowdown) -> list[dict[str, Any]]:
    """The warning and error lines logged near a slowdown's start, closest first."""
    before, after = slow.last_fast.get("time"), slow.first_slow.get("time")
    if not isinstance(before, datetime) or not isinstance(after, datetime):
        return []
    margin = max(NEAR, after - before)
    seen = (pl.when(pl.col("time_inferred").fill_null(False)).then(pl.coalesce("time_latest", "time"))
            .otherwise(pl.col("time")))
    rows = job.events.filter(
        pl.col("severity").is_in(["warning", "error", "critical"]) & ~pl.col("event").is_in(_QUIET_EVENTS)
        & seen.is_between(before - margin, after + margin)).with_columns(
        (seen - before).abs().alias("_distance")).sort("_distance", "file", "line").head(MAX_NEARBY)
    return dicts(rows.drop("_distance"))


def _progress_rows(job: JobView, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timeline's progress rows of the series' rows (their first lines), in that order."""
    wanted = [(str(r["file"]), int(r["line"])) for r in steps]
    rows = job.of(Event.PROGRESS).filter(pl.struct("file", "line").is_in(
        [{"file": f, "line": n} for f, n in wanted]))
    by_place = {(str(r["file"]), int(r["line"])): r for r in dicts(rows)}
    return [by_place[place] for place in wanted if place in by_place]


def _short(row: dict[str, Any]) -> str:
    """What a nearby line says: its message where the pattern took one (an NCCL WARN's), else its text."""
    text = str((row.get("fields") or {}).get("message") or row.get("text") or "").strip()
    return text if len(text) <= 100 else text[:97] + "..."


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 100 else f"{value:.0f} s"


__all__ = ["FailSlow", "Slowdown", "nearby_events", "slowdowns"]
