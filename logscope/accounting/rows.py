"""The accounting record as timeline rows: events of their own source beside the logs' events.

One row per job or step *and node* (a step on three nodes is three rows, each naming its node;
past MAX_ROWS rows in all, a step is one row naming none),
with ``event`` ``accounting``, ``source`` ``sacct`` or ``scontrol``, ``file`` the record's origin
(``sacct -j 12345 --json`` or the saved file) and ``line`` the record's position in it (1 the job,
2... its steps). ``time`` is when the step ended (when SLURM recorded the state), else when it
started; the state's severity comes from the state table (logscope/knowledge/slurm_states.toml).

The row's text is :func:`describe`'s: ``End=`` is in it only when the record has an end (else
``time`` is the start).

``fields``: ``job_id``, ``step_id`` (``batch``, ``0``; null for the job), ``key`` the state
(``CANCELLED``), ``value`` who cancelled it (a uid), ``exit_code`` and ``signal`` (ExitCode),
``reason`` (the job's Reason), ``event_time`` the start (ISO), ``message`` MaxRSS (``1017502364K on
gpu-node02`` with sacct's MaxRSSNode), ``peer`` the node
the record says caused a NODE_FAIL (FailedNode).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl

from logscope.accounting.clock import clock_shift, describe_shift, shifted
from logscope.accounting.record import AccountingRecord, StepRecord
from logscope.accounting.states import state_info
from logscope.errors import InputError
from logscope.model import FIELD_SCHEMA, TIMELINE_SCHEMA, Event
from logscope.timeline import Job

SOURCE_SACCT = "sacct"
# The most rows a record makes: a row per step and node up to here (every step of a job of 16,384
# nodes, beyond the biggest SLURM jobs run today), then a row per step. A row costs ~20 us and
# ~2 KB (100,000 of them took 2.2 s and most of 0.9 GB).
MAX_ROWS = 16_384
SOURCE_SCONTROL = "scontrol"


def origin(record: AccountingRecord) -> tuple[str, str]:
    """(file, source) the rows of ``record`` are attributed to."""
    file = record.sources[0] if record.sources else "sacct"
    return file, SOURCE_SCONTROL if "scontrol" in file.rsplit("/", 1)[-1] else SOURCE_SACCT


def accounting_rows(record: AccountingRecord) -> pl.DataFrame:
    """The record's timeline rows, in :data:`TIMELINE_SCHEMA`."""
    file, source = origin(record)
    rows: list[dict[str, Any]] = []
    left = MAX_ROWS
    for index, step in enumerate(record.records, start=1):
        # a row per node while the record's rows stay within MAX_ROWS; a step past that is one
        # row naming no node (its text still counts them): a record's size is not the timeline's
        nodes = step.nodes if len(step.nodes) <= left else ()
        left -= len(nodes)
        for node in nodes or (None,):
            rows.append(_row(step, node, file, index, source, record.failed_node))
    return pl.DataFrame(rows, schema=TIMELINE_SCHEMA, orient="row") if rows else pl.DataFrame(schema=TIMELINE_SCHEMA)


def describe(step: StepRecord) -> str:
    """A sacct-like line for a step: ``12345.0 FAILED ExitCode=1:0 Nodes=gpu01,gpu02 ...``."""
    parts = [step.step_id, step.state_text]
    if step.exit_text:
        parts.append(f"ExitCode={step.exit_text}")
    if step.reason and step.reason != "None":
        parts.append(f"Reason={step.reason}")
    if step.nodes:
        shown = ",".join(step.nodes[:8]) + (f",... ({len(step.nodes)} nodes)" if len(step.nodes) > 8 else "")
        parts.append(f"Nodes={shown}")
    if step.start:
        parts.append(f"Start={step.start.isoformat()}")
    if step.end:
        parts.append(f"End={step.end.isoformat()}")
    if step.max_rss:
        parts.append(f"MaxRSS={step.max_rss}" + (f"@{step.max_rss_node}" if step.max_rss_node else ""))
    return " ".join(parts)


def _row(step: StepRecord, node: str | None, file: str, line: int, source: str,
         failed_node: str | None) -> dict[str, Any]:
    fields: dict[str, Any] = dict.fromkeys(FIELD_SCHEMA)
    fields.update(job_id=step.job_id, step_id=step.step, key=step.state, value=step.cancelled_by,
                  exit_code=step.exit_code, signal=str(step.signal) if step.signal is not None else None,
                  reason=step.reason, event_time=step.start.isoformat() if step.start else None,
                  message=(f"{step.max_rss} on {step.max_rss_node}" if step.max_rss_node else step.max_rss)
                  if step.max_rss else None, peer=failed_node)
    when = step.end or step.start
    return {
        "file": file, "line": line, "node": node, "host": node, "pid": None, "local_rank": None, "rank": None,
        "task": None, "time": when, "time_inferred": False, "time_latest": when, "source": source,
        "event": Event.ACCOUNTING.value, "severity": state_info(step.state).severity, "fields": fields,
        "prefix": "", "text": describe(step),
    }




def add_to_job(job: Job, record: AccountingRecord) -> AccountingRecord:
    """Put ``record``'s rows into ``job``'s timeline (in time order, beside the logs' rows) and
    complete what the logs did not say: the job's id and name, and its nodes (a node whose log
    is silent, or missing, is still one of the job's nodes). Returns the record as it was put
    there: on the logs' clock (logscope.accounting.clock; the job's warnings say by how much).

    Raises InputError when the logs' file names say they belong to another job: one job's record
    beside another's logs would make one false story. (An array task's files may be named by its
    own numeric id, which the record of ``12345_7`` does not give: not checked then.)"""
    named = {i for i in (job.job_id or "").split(",") if i}
    if named and record.array_task_id is None and "_" not in record.job_id and named != {record.job_id}:
        origin_file = record.sources[0] if record.sources else "sacct"
        raise InputError(f"the logs are of job {', '.join(sorted(named))}, SLURM's record ({origin_file}) of job "
                         f"{record.job_id}: give the record of the same job")
    record = _on_the_logs_clock(job, record)
    rows = accounting_rows(record)
    job.timeline = pl.concat([job.timeline, rows], how="vertical").sort(
        ["time", "file", "line"], nulls_last=True, maintain_order=True)
    job.nodes = sorted(set(job.nodes) | set(record.job.nodes))
    job.job_id = job.job_id or record.job_id
    job.job_name = job.job_name or record.job.name
    return record


def _on_the_logs_clock(job: Job, record: AccountingRecord) -> AccountingRecord:
    """``record`` shifted onto the clock of the logs' timed lines, where their zones differ."""
    timed = job.timeline.filter(pl.col("time").is_not_null() & ~pl.col("time_inferred").fill_null(False))
    if timed.height == 0:
        return record
    span = timed.select(pl.col("time").min().alias("first"), pl.col("time").max().alias("last")).row(0)
    shift = clock_shift(record, span[0], span[1])
    if not shift:
        return record
    job.warnings.append(f"SLURM's record is {describe_shift(shift)} the logs' clock (another time zone?): its "
                        f"times were moved {'later' if shift > timedelta(0) else 'earlier'} to fit the logs' start "
                        "and end")
    return shifted(record, shift)


__all__ = ["SOURCE_SACCT", "SOURCE_SCONTROL", "accounting_rows", "add_to_job", "describe", "origin"]
