"""``logscope scan`` driven by SLURM's record: the jobs ``sacct`` lists for ``--user``, ``--since``,
``--state`` and ``--array`` (:mod:`logscope.accounting.listing`), each job's logs found where its
record says its output went, as ``logscope analyze JOBID`` finds them
(:func:`logscope.accounting.gather.files_of`: its patterns, confined to the job's own files), each
analysed with its record beside it, and its efficiency (:mod:`logscope.accounting.efficiency`)
beside the verdict.

A job whose logs are not where its record says (deleted, moved, written elsewhere by a wrapper)
gets a row of its own: its state and efficiency, and in ``error`` where its logs were looked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from logscope.accounting.efficiency import Efficiency
from logscope.accounting.gather import files_of
from logscope.accounting.listing import Listing
from logscope.accounting.record import AccountingRecord
from logscope.errors import printable
from logscope.parsers.filenames import DEFAULT_PATTERNS
from logscope.scan import SCAN_SCHEMA, JobFiles, ScanResult, scan

_RELATIVE = re.compile(r"^\s*(\d+)\s*(m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_S = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_time(text: str, now: datetime | None = None) -> datetime | None:
    """A relative ``--since`` (``30m``, ``12h``, ``7d``, ``2w``: that long before ``now``) as a naive
    local time; None when ``text`` is not one (it is then a date)."""
    match = _RELATIVE.match(text)
    if match is None:
        return None
    now = now or datetime.now()
    return now - timedelta(seconds=int(match.group(1)) * _UNIT_S[match.group(2).lower()])


def jobs_of(listing: Listing) -> tuple[list[JobFiles], list[dict[str, Any]], list[str]]:
    """The listed jobs with logs (to analyse, their record with them), the rows of those without
    (why, where they were looked for), and messages."""
    jobs: list[JobFiles] = []
    missing: list[dict[str, Any]] = []
    messages: list[str] = []
    for record in listing.records:
        gathered = files_of(record)
        files = []
        stats = []
        for path in gathered.logs:
            try:
                info = path.stat()
            except OSError:
                continue
            files.append(path)
            stats.append(info)
        if not files:
            looked = ", ".join(printable(p) for p in gathered.patterns[:3]) or "no pattern"
            refused = "; ".join(f"{s.display}: {s.reason}" for s in gathered.refused[:2])
            location = printable(record.work_dir or "")
            row: dict[str, Any] = dict.fromkeys(SCAN_SCHEMA)
            row.update(job_key=_key(Path(location), record.job_id), job_id=record.job_id, job_name=record.job.name,
                       location=location, files=0, bytes=0, nodes=len(record.job.nodes),
                       node_list=",".join(record.job.nodes), category="no-logs",
                       error=f"no log file where SLURM says its output went ({looked}"
                             + (f"; {refused}" if refused else "") + ")")
            missing.append(row)
            continue
        folder = files[0].parent
        jobs.append(JobFiles(_key(folder, record.job_id), record.job_id, folder, tuple(files),
                             tuple(s.st_size for s in stats), tuple(s.st_mtime_ns for s in stats),
                             tuple((s.st_dev, s.st_ino) for s in stats), record=record))
    if listing.not_started:
        messages.append(f"{listing.not_started} job(s) had not started: not in the table")
    return jobs, missing, messages


def _key(folder: Path, job_id: str) -> str:
    """The job's key, as a scan of its folder gives it (logscope.scan.find_jobs)."""
    return printable(f"{folder}::{job_id}")


def scan_listing(listing: Listing, *, patterns: tuple[str, ...] = DEFAULT_PATTERNS, workers: int | None = None,
                 cache_path: Path | None = None, on_total: Callable[[int], None] | None = None,
                 on_done: Callable[[dict[str, Any]], None] | None = None) -> ScanResult:
    """Analyse the jobs of ``listing`` with their records; their efficiency and state beside each
    verdict."""
    jobs, missing, messages = jobs_of(listing)
    if jobs:
        result = scan([], patterns=patterns, workers=workers, cache_path=cache_path, on_total=on_total,
                      on_done=on_done, jobs=jobs)
    else:
        result = ScanResult(pl.DataFrame(schema=SCAN_SCHEMA))
    result.messages[:0] = [*listing.messages, *messages]
    rows = result.table.to_dicts() + missing
    result.failed += len(missing)
    by_id = {record.job_id: record for record in listing.records}
    for row in rows:
        record = by_id.get(row["job_id"] or "")
        if record is None:
            continue
        row.update(_record_columns(record, listing.efficiency.get(record.job_id, Efficiency())))
    table = pl.DataFrame(rows, schema=SCAN_SCHEMA) if rows else pl.DataFrame(schema=SCAN_SCHEMA)
    result.table = table.sort("job_id", "location", nulls_last=True)
    return result


def _record_columns(record: AccountingRecord, efficiency: Efficiency) -> dict[str, Any]:
    return {"user": record.user, "state": record.job.state, **efficiency.to_row()}


__all__ = ["jobs_of", "scan_listing", "since_time"]

