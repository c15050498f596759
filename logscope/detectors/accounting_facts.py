"""What detectors ask of SLURM's accounting record in the timeline (``accounting`` rows, one per job
or step and node; see logscope/accounting/rows.py): the rows of some states, grouped per job or
step, and whether the record proves a clean end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from logscope.accounting.hostlist import MAX_HOSTS, hosts_named
from logscope.detectors.base import JobView, field_of
from logscope.model import Event


@dataclass(frozen=True)
class RecordedStep:
    """One job or step of the record, with its rows (one per node)."""

    step_id: str  # "12345", "12345.0", "12345.batch"
    state: str
    rows: tuple[dict[str, Any], ...]

    @property
    def nodes(self) -> list[str]:
        return [str(r["node"]) for r in self.rows if r.get("node")]

    @property
    def first(self) -> dict[str, Any]:
        return self.rows[0]

    @property
    def is_job(self) -> bool:
        return field_of(self.first, "step_id") is None

    @property
    def exit_code(self) -> int | None:
        value = field_of(self.first, "exit_code")
        return int(value) if value is not None else None

    @property
    def signal(self) -> int | None:
        value = field_of(self.first, "signal")
        return int(value) if value is not None and str(value).isdigit() else None

    @property
    def start(self) -> datetime | None:
        value = field_of(self.first, "event_time")
        return datetime.fromisoformat(value) if value else None

    @property
    def end(self) -> datetime | None:
        """When SLURM recorded the step's end. A row's time is its step's start where the record
        has no end (logscope/accounting/rows.py): that is no end."""
        value = self.first.get("time")
        if not isinstance(value, datetime) or " End=" not in str(self.first.get("text") or ""):
            return None
        return value


def recorded_steps(job: JobView, *states: str) -> list[RecordedStep]:
    """The record's jobs and steps in one of ``states`` (all when none given), in record order."""

    def compute() -> list[RecordedStep]:
        rows = job.of(Event.ACCOUNTING).sort("file", "line", maintain_order=True).to_dicts()
        grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for row in rows:
            grouped.setdefault((str(row["file"]), int(row["line"])), []).append(row)
        out = []
        for group in grouped.values():
            first = group[0]
            step = field_of(first, "step_id")
            step_id = str(field_of(first, "job_id")) + (f".{step}" if step is not None else "")
            out.append(RecordedStep(step_id, str(field_of(first, "key")), tuple(group)))
        return out

    every: list[RecordedStep] = job.remember("recorded_steps", compute)
    return [s for s in every if not states or s.state in states]


def recorded_clean_end(job: JobView) -> dict[str, Any] | None:
    """The job's accounting row when SLURM recorded a clean end: the job and every step COMPLETED
    with ExitCode 0:0. (A script that swallowed its processes' exit codes also ends COMPLETED:
    this is evidence of a clean end only where the logs show no failure, which the verdict checks.)"""
    steps = recorded_steps(job)
    if not steps or not any(s.is_job for s in steps):
        return None
    clean = all(s.state == "COMPLETED" and (s.exit_code or 0) == 0 and (s.signal or 0) == 0 for s in steps)
    if not clean:
        return None
    return next(s.first for s in steps if s.is_job)


def reported_failed_node(job: JobView) -> str | None:
    """The node the record says caused the failure (FailedNode), if any."""
    rows = job.of(Event.ACCOUNTING).filter(pl.col("fields").struct.field("peer").is_not_null())
    if rows.height == 0:
        return None
    return str(rows.select(pl.col("fields").struct.field("peer")).to_series()[0])


def recorded_failed_node(job: JobView) -> str | None:
    """The node SLURM's record says failed (NODE_FAIL, BOOT_FAIL): its FailedNode (sacct 23.02+,
    scontrol), else the one node of the job srun's ``Node failure on HOST`` names (22.05 records no
    FailedNode: the lab's node-lost job), else the one node of the job whose log is silent."""
    steps = recorded_steps(job, "NODE_FAIL", "BOOT_FAIL")
    if not steps:
        return None
    named = reported_failed_node(job)
    if named is not None:
        return named
    nodes = list(dict.fromkeys(n for s in steps for n in s.nodes))
    lost = _srun_failed_nodes(job) & set(nodes)
    if len(lost) == 1:
        return next(iter(lost))
    silent = [n for n in nodes if own_rows(job, n).height == 0]
    return silent[0] if len(silent) == 1 and len(nodes) > 1 else None


def _srun_failed_nodes(job: JobView) -> set[str]:
    return {host for _, hosts in srun_lost_hosts(job) for host in hosts}


def srun_lost_hosts(job: JobView) -> list[tuple[dict[str, Any], list[str]]]:
    """srun's ``Node failure on HOSTLIST`` rows, in order, each with the hosts it names.

    Each line's hostlist is expanded once for every detector that asks (LS604, the failed nodes
    of the network detectors, the node a NODE_FAIL record means), and the job's lines together
    make at most MAX_HOSTS names: a line whose list would go past that names nobody (its size is
    known from its ranges before any name is made, logscope.accounting.hostlist)."""

    def compute() -> list[tuple[dict[str, Any], list[str]]]:
        out: list[tuple[dict[str, Any], list[str]]] = []
        left = MAX_HOSTS
        for row in job.rows_in_order(Event.NODE_FAILURE):
            hosts = hosts_named(str(row.get("node") or row.get("host") or ""), limit=left) if left > 0 else []
            left -= len(hosts)
            out.append((row, hosts))
        return out

    found: list[tuple[dict[str, Any], list[str]]] = job.remember("srun lost hosts", compute)
    return found


def recorded_failure_rows(job: JobView) -> list[dict[str, Any]]:
    """The accounting rows of the failed node (:func:`recorded_failed_node`), job first."""
    node = recorded_failed_node(job)
    if node is None:
        return []
    return [r for s in recorded_steps(job, "NODE_FAIL", "BOOT_FAIL") for r in s.rows if r.get("node") == node]


def own_rows(job: JobView, node: str) -> pl.DataFrame:
    """The log rows of ``node`` (not SLURM's record of it)."""
    return job.events.filter((pl.col("node") == node) & (pl.col("event") != Event.ACCOUNTING.value))


def steps_title(steps: list[RecordedStep]) -> str:
    """``step 12345.0`` / ``job 12345`` / ``steps 12345.0, 12345.batch``."""
    names = [s.step_id for s in steps]
    if len(names) == 1:
        return ("job " if steps[0].is_job else "step ") + names[0]
    return "steps " + ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")


__all__ = ["RecordedStep", "own_rows", "recorded_clean_end", "recorded_failed_node", "recorded_failure_rows",
           "recorded_steps", "reported_failed_node", "steps_title"]
