"""``sacct --parsable2`` (``-P``) and ``sacct --batch-script`` (``-B``) text.

``-P`` prints a header of field names and one line per job and step, fields separated by ``|``
(``--parsable`` adds a trailing ``|``); SchedMD/slurm src/sacct/sacct.c lists the fields and
src/sacct/print.c prints them: ``State`` as ``CANCELLED by 1000`` (``"%s by %u"``), ``ExitCode``
as ``return:signal``, ``NodeList`` as a hostlist, times as ``2026-11-03T14:05:00`` or ``Unknown``.
The JobID column is ``12345``, ``12345.batch``, ``12345.extern``, ``12345.0``, ``12345_7``,
``12345_7.0`` (arrays) or ``12345+0`` (heterogeneous components). The header is required: without
it (``--noheader``) the columns cannot be known.

``-B`` prints ``Batch Script for 12345``, a line of 80 dashes, then the script as submitted
(src/sacct/options.c ``_print_script``; ``NONE`` when the database holds none).
"""

from __future__ import annotations

import re

from logscope.accounting.hostlist import NodeNames
from logscope.accounting.record import AccountingRecord, StepRecord
from logscope.accounting.values import exit_text, state_of, text_time
from logscope.errors import AccountingError

REQUIRED = ("JobID", "State")
_JOB_ID = re.compile(r"^(?P<job>\d+(?:_\d+|_\[[^\]]*\])?(?:\+\d+)?)(?:\.(?P<step>[\w-]+))?$")
_SCRIPT_HEADER = re.compile(r"^Batch Script for (?P<job>\S+)\n-{20,}\n", re.MULTILINE)


def parse_sacct_parsable(text: str, source: str) -> list[AccountingRecord]:
    """The jobs in ``sacct -P`` output (one record per job, its steps attached)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise AccountingError(f"{source}: empty sacct output")
    header = [name.strip() for name in lines[0].rstrip("|").split("|")]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise AccountingError(f"{source}: not sacct -P output with a header (no {', '.join(missing)} column; "
                              "save it with `sacct -j JOB -P --format=...` without --noheader)")
    jobs: dict[str, list[StepRecord]] = {}
    names = NodeNames(source)
    extra: dict[str, dict[str, str]] = {}
    for number, line in enumerate(lines[1:], start=2):
        values = line.split("|")
        if len(values) == len(header) + 1 and values[-1] == "":
            values = values[:-1]  # --parsable's trailing delimiter
        if len(values) != len(header):
            raise AccountingError(f"{source}:{number}: {len(values)} fields where the header has {len(header)} "
                                  "(truncated, or a field holding '|')")
        row = dict(zip(header, values, strict=True))
        match = _JOB_ID.match(row["JobID"].strip())
        if match is None:
            raise AccountingError(f"{source}:{number}: {row['JobID'][:40]!r} is not a SLURM job id")
        job_id, step = match.group("job"), match.group("step")
        jobs.setdefault(job_id, []).append(_step(row, job_id, step, source, number, names))
        if step is None:
            extra[job_id] = row
    records = []
    for job_id, rows in jobs.items():
        job_rows = [r for r in rows if r.step is None]
        if not job_rows:
            raise AccountingError(f"{source}: steps of job {job_id} without the job's own line")
        row = extra[job_id]
        records.append(AccountingRecord(
            job=job_rows[0], steps=tuple(r for r in rows if r.step is not None),
            user=row.get("User") or None, work_dir=row.get("WorkDir") or None,
            stdout=row.get("StdOut") or None, stderr=row.get("StdErr") or None,
            failed_node=row.get("FailedNode") or None, sources=(source,)))
    return records


def _step(row: dict[str, str], job_id: str, step: str | None, source: str, number: int,
          names: NodeNames) -> StepRecord:
    try:
        state, by = state_of(row["State"])
    except AccountingError as error:
        raise AccountingError(f"{source}:{number}: {error}") from None
    code, sig = exit_text(row.get("ExitCode"))
    return StepRecord(
        job_id=job_id, step=step, state=state, name=row.get("JobName") or None, cancelled_by=by,
        exit_code=code, signal=sig, reason=(row.get("Reason") or None) if step is None else None,
        nodes=names.expand(row.get("NodeList", "")),
        start=text_time(row.get("Start")), end=text_time(row.get("End")),
        max_rss=row.get("MaxRSS") or None, max_rss_node=row.get("MaxRSSNode") or None)


def parse_batch_script(text: str) -> dict[str, str]:
    """The scripts of ``sacct -B`` output, by job id (``NONE`` means none was stored). A file
    without the header is taken as one script of an unknown job (key ``""``)."""
    headers = list(_SCRIPT_HEADER.finditer(text))
    if not headers:
        return {"": text} if text.strip() and text.strip() != "NONE" else {}
    scripts = {}
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.end():end]
        if body.strip() != "NONE":
            scripts[header.group("job")] = body
    return scripts


__all__ = ["parse_batch_script", "parse_sacct_parsable"]
