"""LS302 worker-restart: torchrun restarted the worker group, and whether the job recovered.

What it detects
    torchrun agents restarting their workers: after a failure (``[node02:] Worker group FAILED.
    1/1 attempts left; will restart worker group``, which counts against ``--max_restarts``) or
    because a node joined the rendezvous (``[node01:] Detected 1 new nodes from group_rank=0;
    will restart worker group``, which does not); and torchrun started again on a node after a
    failure there (a retry loop in the batch script). It tells whether the job recovered: every
    agent's last word after its restarts is ``worker group successfully finished``.

Why it matters
    A restart begins a new attempt, and torchrun's ChildFailedError summary and its "Root Cause"
    describe only the last one: the failure that caused the first restart sits in an earlier
    attempt's lines. A job that recovered still holds a whole crash in its logs; one that did not
    can fail differently after the restart and hide the first failure behind the second. In the
    lab (torch 2.13, gloo, two nodes) every restarted attempt failed to reconnect (``Gloo
    connectFullMesh failed ... Connection refused``), as pytorch/pytorch#167288 reports for
    NCCL.

Evidence
    The agents' restart lines (or, where one is missing, the first rendezvous result with
    ``restart_count`` > 0), a ``Starting elastic_operator`` block after a worker failure on the
    same node, ``attempt_N`` folders of a ``--log-dir`` tree when no agent line was collected,
    and each agent's last state line after them: ``worker group
    successfully finished`` (recovered) or a worker failure / ChildFailedError (failed again).

Example
    ::

        I1203 07:27:35.510000 21868 torch/distributed/elastic/agent/server/api.py:942] [node02:] Worker group FAILED. 1/1 attempts left; will restart worker group
        I1203 07:27:37.149000 21868 torch/distributed/elastic/agent/server/api.py:553]   restart_count=1

False positives
    Logs of several runs of one job (a requeue) read as one run: a later run's success can make
    an earlier run's failure look recovered, as a retry loop's does. Only agent lines count, so a job whose agents'
    output was not collected shows no restart at all.

Advice
    Fix the first failure (LS301 names it): a restart only helps with transient faults. If the
    restarted attempt could not connect, the restart itself is broken on this torch version:
    relaunch the job instead of relying on ``--max_restarts``.
"""

from __future__ import annotations

import bisect
import re
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any, ClassVar

import polars as pl

from logscope.detectors.base import (
    Detector,
    JobView,
    event_of,
    field_of,
    message_and_text,
    order_key,
    place_of,
    seen_at,
)
from logscope.model import Category, Event, Finding, Role, Severity
from logscope.parsers.filenames import describe
from logscope.textsafe import shortened

# An agent's own account of its worker group, in the order it logs them.
_AGENT_STATES = (Event.WORKER_RESTART, Event.WORKER_FAILED, Event.CHILD_FAILURE, Event.AGENT_FINISHED)
# What a restarted attempt failing to reconnect says (gloo, NCCL's socket layer).
_RECONNECT = "(?i)connectFullMesh failed|Connection refused"


_GLOG_HEAD = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ \S+\] ")
_SOURCE_REF = re.compile(r"\[[^\]\s]*\.(?:cc|cpp|h|py):\d+\] ")


def _said(row: dict[str, Any], limit: int = 160) -> str:
    """A line's message without the logger's head or C++ source references."""
    text = _SOURCE_REF.sub("", _GLOG_HEAD.sub("", str(row.get("text") or "")))
    return shortened(text, limit)


def _place(row: dict[str, Any]) -> str:
    """The node a row is about, else its file's name (a single-machine run names no node)."""
    return place_of(row) or Path(str(row.get("file"))).name


def last_states(job: JobView) -> dict[str, dict[str, Any]]:
    """Each node's last agent state line (restart, worker failure, ChildFailedError, finished),
    worked out once per view."""

    def compute() -> dict[str, dict[str, Any]]:
        last: dict[str, dict[str, Any]] = {}
        for row in job.rows_in_order(*_AGENT_STATES):
            last[_place(row)] = row
        return last

    found: dict[str, dict[str, Any]] = job.remember("last_states", compute)
    return found


def restarts(job: JobView) -> list[dict[str, Any]]:
    """The agents' restart lines, in order. A node whose restart line is missing (a log level
    above INFO for that logger, a rotated file) still shows the restart in its next rendezvous
    result: ``restart_count`` grows only after a failed worker group, so its first result with
    ``restart_count`` > 0 stands in. Worked out once per view (LS301, LS302 and the verdict ask)."""

    def compute() -> list[dict[str, Any]]:
        lines = job.rows(Event.WORKER_RESTART)
        have = {_place(r) for r in lines}
        counted: dict[str, dict[str, Any]] = {}
        for row in job.rows_in_order(Event.RENDEZVOUS):
            count = str(field_of(row, "key") or "")
            if field_of(row, "message") == "rendezvous result" and count.isdigit() and int(count) > 0 \
                    and _place(row) not in have:
                counted.setdefault(_place(row), row)
        return sorted([*lines, *counted.values(), *relaunches(job)], key=order_key)

    found: list[dict[str, Any]] = job.remember("restarts", compute)
    return found


def relaunches(job: JobView) -> list[dict[str, Any]]:
    """torchrun started again on a node, with the same entrypoint, after the previous run's
    workers had failed there: a retry loop in the batch script (``for attempt in 1 2 3; do srun
    ... && break; done``) writing into the same per-node files. Each new run starts again from
    ``restart_count=0``. A different entrypoint (train, then evaluate) is another program."""
    # Each start is compared with the one before it on its node, and the node's failures are
    # searched by their order: a job that restarted thousands of times stays linear.
    failures_at: dict[str, list[tuple[datetime, str, int]]] = {}
    for failure in job.rows(Event.WORKER_FAILED, Event.CHILD_FAILURE):
        failures_at.setdefault(_place(failure), []).append(order_key(failure))
    for keys in failures_at.values():
        keys.sort()
    starts = sorted((r for r in job.rows(Event.LAUNCH_CONFIG) if field_of(r, "message") == "launch config"),
                    key=order_key)
    previous: dict[str, dict[str, Any]] = {}
    out = []
    for start in starts:
        place = _place(start)
        before = previous.get(place)
        previous[place] = start
        if before is None or field_of(before, "value") != field_of(start, "value"):
            continue
        keys = failures_at.get(place, [])
        after_before = bisect.bisect_right(keys, order_key(before))  # the first failure after it
        if after_before < len(keys) and keys[after_before] < order_key(start):
            out.append(start)
    return out


def log_dir_attempts(job: JobView) -> dict[int, list[str]]:
    """torchrun ``--log-dir`` files by attempt (``.../attempt_N/<local_rank>/stdout.log``): an
    ``attempt_1`` folder means the agent restarted its workers once, whatever it logged itself."""
    attempts: dict[int, list[str]] = {}
    for name in job.files:
        info = describe(PurePath(name))
        if info.attempt is not None:
            attempts.setdefault(info.attempt, []).append(name)
    return attempts


def _relaunch(row: dict[str, Any]) -> bool:
    return event_of(row) == Event.LAUNCH_CONFIG


def _after_failure(row: dict[str, Any]) -> bool:
    """Every restart but a membership change follows a failure (a relaunch, restart_count > 0)."""
    return event_of(row) != Event.WORKER_RESTART or field_of(row, "key") != "new nodes"


def job_recovered(job: JobView) -> bool:
    """True when torchrun restarted workers after a failure and every agent then finished."""
    if not any(_after_failure(r) for r in restarts(job)):
        return False
    states = last_states(job)
    return bool(states) and all(event_of(r) == Event.AGENT_FINISHED for r in states.values())


def recovered_until(job: JobView) -> datetime | None:
    """When a recovered job's last restart began (what failed before it, the job survived);
    None when the job did not recover from a restart or the restart line has no time."""
    if not job_recovered(job):
        return None
    return seen_at(restarts(job)[-1])


class WorkerRestart(Detector):
    code = "LS302"
    name = "worker-restart"
    category = Category.CRASH
    # none: it also reads the attempt_N folders of a --log-dir tree, which no event names
    requires: ClassVar[frozenset[Event]] = frozenset()
    specificity = 10

    def detect(self, job: JobView) -> list[Finding]:
        rows = restarts(job)
        if not rows:
            return self._from_log_dir(job)
        after_failure = [r for r in rows if _after_failure(r)]
        nodes = sorted({_place(r) for r in rows})
        first = after_failure[0] if after_failure else rows[0]
        states = last_states(job)
        recovered = job_recovered(job)
        left = next((field_of(r, "value") for r in after_failure if event_of(r) == Event.WORKER_RESTART), None)
        why = (f"after a failure on {', '.join(sorted({_place(r) for r in after_failure}))}"
               + (f" ({left} attempts left)" if left else "") if after_failure
               else "because a node joined the rendezvous")
        title = (f"torchrun was started again {why}, by the batch script" if after_failure and all(
            _relaunch(r) for r in after_failure) else f"torchrun restarted the worker group {why}")
        if recovered:
            title += ", and every agent then finished: the job recovered"
            outcome = ("Every agent's last word after the restart is `worker group successfully finished`: the "
                       "job recovered. The failure before the restart is still in the logs (LS301 names it).")
        else:
            failed_after = [r for n, r in sorted(states.items()) if event_of(r) != Event.AGENT_FINISHED]
            again = self._reconnect_failure(job, first)
            title += ", and the restarted attempt failed too" if failed_after else ""
            outcome = (
                ("The restarted attempt failed too"
                 + (f" ({_place(failed_after[0])}'s agent: {_said(failed_after[0])})"
                    if failed_after else "") + ". ")
                if failed_after else "No agent reported the restarted attempt's end. "
            ) + (
                f"It could not connect ({_said(again)}): its workers could not "
                "reach each other, a known problem of torchrun restarts on several nodes "
                "(pytorch/pytorch#167288). " if again is not None else ""
            ) + ("torchrun's ChildFailedError summary covers only the last attempt; the failure that "
                 "started the restarts is earlier (LS301 names the first one).")
        only_counted = [r for r in rows if event_of(r) == Event.RENDEZVOUS]
        relaunched = [r for r in rows if _relaunch(r)]
        by_agent = [r for r in after_failure if not _relaunch(r)]
        explanation = (
            f"{len(rows)} restart(s) on {', '.join(nodes)}: "
            f"{len(by_agent)} by torchrun after a failed worker group (counted against --max_restarts), "
            f"{len(rows) - len(after_failure)} because a node joined the rendezvous"
            + (f", {len(relaunched)} new torchrun launch(es) after a failure (a retry in the batch script; "
               "each starts again from restart_count=0)" if relaunched else "")
            + (f"; on {', '.join(sorted({_place(r) for r in only_counted}))} only the rendezvous result's "
               "restart_count shows it" if only_counted else "") + ". " + outcome
        )
        evidence = [first, *[r for r in rows if r is not first][:3], *list(states.values())[:2]]
        return self._note(title, explanation,
                          "Fix the first failure: a restart only helps with a transient fault. If the restarted "
                          "attempt could not connect, relaunch the job rather than rely on --max_restarts.", evidence)

    def _note(self, title: str, explanation: str, advice: str, rows: list[dict[str, Any]]) -> list[Finding]:
        """A restart is context for the verdict, never its root."""
        return [self.finding(title=title, explanation=explanation, advice=advice, rows=rows, role=Role.CONTEXT,
                             severity=Severity.WARNING, ordered=True)]

    def _from_log_dir(self, job: JobView) -> list[Finding]:
        """Restarts seen only as ``attempt_N`` folders of a ``--log-dir`` tree (the agent's own
        lines were not collected). Whether the job then finished is the agent's to say."""
        attempts = log_dir_attempts(job)
        if not attempts or max(attempts) == 0:
            return []
        last = max(attempts)
        in_last = set(attempts[last])
        last_rows = job.events.filter(pl.col("file").is_in(sorted(in_last)))
        failed_last = last_rows.filter(pl.col("severity").is_in([Severity.ERROR.value, Severity.CRITICAL.value]))
        earlier = job.events.filter(pl.col("file").is_in(sorted({f for n, fs in attempts.items() if n < last
                                                                  for f in fs}))
                                    & pl.col("severity").is_in([Severity.ERROR.value, Severity.CRITICAL.value]))
        rows = [*earlier.head(2).to_dicts(), *(failed_last if failed_last.height else last_rows).head(2).to_dicts()]
        if not rows:
            return []
        outcome = (f"The last attempt's workers logged errors too ({_said(failed_last.row(0, named=True))})."
                   if failed_last.height else
                   "The last attempt's workers logged no error: the job may have recovered. The agent's own "
                   "output (the job's stdout: `worker group successfully finished`) would say.")
        return self._note(
            f"torchrun restarted the workers {last} time(s): its --log-dir holds attempt_0 to attempt_{last}",
            f"torchrun's --log-dir tree has {len(attempts)} attempt folder(s); each restart of the worker group "
            "writes a new one, so the failure that caused the first restart is in attempt_0. " + outcome,
            "Collect the job's stdout with the --log-dir tree: the agent's lines tell why each restart happened "
            "and whether the last attempt finished. Fix the first failure (LS301).", rows)

    @staticmethod
    def _reconnect_failure(job: JobView, restart: dict[str, Any]) -> dict[str, Any] | None:
        """The first line after a restart saying a worker could not connect."""
        rows = job.of(Event.EXCEPTION, Event.DIST_ERROR).filter(message_and_text().str.contains(_RECONNECT)).to_dicts()
        later = [r for r in rows if order_key(r) > order_key(restart)]
        return min(later, key=order_key) if later else None


__all__ = ["WorkerRestart", "job_recovered", "last_states", "log_dir_attempts", "recovered_until", "relaunches",
           "restarts"]
