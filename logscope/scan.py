"""Batch scans: find every job under a folder, analyse each, and write one table.

A *job* is the set of files that share a SLURM job id (``%j``/``%A`` in their names, e.g. the
per-node ``train-4242-node01.out`` files), or, for files whose names carry no job id, the folder
that holds them. Jobs are analysed in parallel worker processes; a job that cannot be read gets
a row with its ``error`` and the scan goes on.

The **cache** keeps each job's row with a signature of its files (path, size, mtime): a rescan
reads only jobs whose files are new or changed. It lives wherever ``--cache`` says (by default
beside the output table), never in the scanned folders.

**Sharding** (``--shard K/N``) keeps the jobs whose key hashes to K modulo N, so a SLURM job array
of N tasks splits a scan; ``merge`` joins the shards' tables.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import polars as pl

from logscope.accounting.saved import is_saved_record
from logscope.atomic import write_atomically
from logscope.choices import TableFormat
from logscope.errors import InputError, LogscopeError, OutputError, UsageError, printable
from logscope.ingest import is_not_a_log
from logscope.ingest.discovery import named_path
from logscope.parsers.filenames import DEFAULT_PATTERNS, describe
from logscope.scan_pool import ctrl_c_held, new_pool, single_threaded_workers, stop, worker_count
from logscope.walk import walk

if TYPE_CHECKING:
    from logscope.accounting.record import AccountingRecord
    from logscope.analysis import Analysis

SCAN_SCHEMA: dict[str, pl.DataType] = {
    "job_key": pl.String(),
    "job_id": pl.String(),
    "job_name": pl.String(),
    "location": pl.String(),  # the folder holding the job's files
    "files": pl.Int64(),
    "bytes": pl.Int64(),
    "newest_file": pl.Datetime("us"),
    "nodes": pl.Int64(),
    "node_list": pl.String(),
    "world_size": pl.Int64(),
    "category": pl.String(),
    "finding": pl.String(),
    "summary": pl.String(),
    "root_host": pl.String(),
    "root_node": pl.String(),
    "root_rank": pl.Int64(),
    "root_local_rank": pl.Int64(),
    "first_failure": pl.Datetime("us"),
    "root_evidence": pl.String(),
    "lines_read": pl.Int64(),
    "lines_unrecognised": pl.Int64(),
    "job_start": pl.Datetime("us"),  # the first and last times the logs hold
    "job_end": pl.Datetime("us"),
    "duration_s": pl.Float64(),
    "last_step": pl.Int64(),  # the highest training step a log line names
    "secondary_findings": pl.String(),  # the other findings' codes, comma-separated
    "error": pl.String(),
    # SLURM's record, where the job has one (scan --user/--state/--array, or saved beside its logs)
    "user": pl.String(),
    "state": pl.String(),  # the job's state in sacct: COMPLETED, FAILED, TIMEOUT, ...
    # its use of what it was given (logscope.accounting.efficiency; scan --user/--state/--array)
    "elapsed_s": pl.Int64(),
    "time_limit_s": pl.Int64(),
    "time_used": pl.Float64(),  # elapsed / time limit
    "alloc_cpus": pl.Int64(),
    "cpu_efficiency": pl.Float64(),  # TotalCPU / (elapsed x CPUs)
    "mem_requested": pl.Int64(),  # bytes
    "mem_peak": pl.Int64(),  # bytes, the job's tasks together
    "mem_used": pl.Float64(),  # peak / requested
    "gpus": pl.Int64(),
    "gpu_util": pl.Float64(),
    "gpu_mem_peak": pl.Int64(),
}
# Columns a table written by an older logscope lacks; merge reads such a table with them empty.
_LATER_COLUMNS = frozenset(("job_start", "job_end", "duration_s", "last_step", "secondary_findings", "user",
                            "state", "elapsed_s", "time_limit_s", "time_used", "alloc_cpus", "cpu_efficiency",
                            "mem_requested", "mem_peak", "mem_used", "gpus", "gpu_util", "gpu_mem_peak"))
_CACHE_VERSION = 2  # the rows of a cache of another version lack columns: it is not used


@dataclass(frozen=True)
class JobFiles:
    """The files of one job, found by the scan."""

    key: str  # stable id: "<folder>::<job id>" or "<folder>"
    job_id: str | None
    location: Path
    files: tuple[Path, ...]
    sizes: tuple[int, ...]
    mtimes: tuple[int, ...]  # st_mtime_ns
    inodes: tuple[tuple[int, int], ...] = ()  # (st_dev, st_ino): what no output may overwrite
    # SLURM's record saved in the job's folder (sacct/scontrol output, the batch script: README,
    # "Away from the cluster"), read with the logs as `logscope analyze` reads it: (path, size, mtime)
    records: tuple[tuple[Path, int, int], ...] = ()
    # SLURM's record of the job from sacct (scan --user/--state/--array: logscope.scan_slurm)
    record: AccountingRecord | None = None

    @property
    def signature(self) -> str:
        h = hashlib.sha1(usedforsecurity=False)
        for path, size, mtime in zip(self.files, self.sizes, self.mtimes, strict=True):
            h.update(f"{path}\0{size}\0{mtime}\n".encode("utf-8", "surrogateescape"))
        for path, size, mtime in self.records:  # a record saved (or changed) since makes another verdict
            h.update(f"record\0{path}\0{size}\0{mtime}\n".encode("utf-8", "surrogateescape"))
        if self.record is not None:  # a job that ended since it was scanned running has another verdict
            job = self.record.job
            h.update(f"sacct\0{job.state_text}\0{job.exit_text}\0{job.end}\n".encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    @property
    def newest(self) -> datetime:
        return datetime.fromtimestamp(max(self.mtimes) / 1e9)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)


@dataclass
class ScanResult:
    table: pl.DataFrame
    analysed: int = 0
    cached: int = 0
    failed: int = 0
    skipped_by_filter: int = 0
    messages: list[str] = field(default_factory=list)
    inputs: frozenset[tuple[int, int]] = frozenset()  # the scanned files: no output may land on one


def parse_shard(text: str) -> tuple[int, int]:
    """``"3/8"`` -> (3, 8); K counts from 0, as ``$SLURM_ARRAY_TASK_ID`` does with ``--array=0-7``."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise UsageError(f"--shard wants K/N with 0 <= K < N (got {text!r})")
    return int(m.group(1)), int(m.group(2))


def shard_of(key: str, shards: int) -> int:
    return int(hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8], 16) % shards


def find_jobs(roots: Sequence[Path], patterns: tuple[str, ...] = DEFAULT_PATTERNS) -> list[JobFiles]:
    """Group the log files under ``roots`` into jobs, in a stable order."""
    groups: dict[tuple[str, str | None], list[tuple[Path, int, int, tuple[int, int]]]] = {}
    records: dict[str, list[tuple[Path, int, int, tuple[int, int]]]] = {}  # by folder: its saved SLURM records
    for root in roots:
        if not root.exists():
            what = "broken or looping symbolic link" if root.is_symlink() else "no such file or directory"
            raise InputError(f"{root}: {what}")
        walker: Iterable[tuple[str, list[str], list[str]]]
        given_file = root.is_file()  # read alone, as `logscope analyze FILE` reads it: no record beside it
        walker = [(str(root.parent), [], [root.name])] if given_file else walk(root)
        for folder, dirs, files in walker:
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                if is_saved_record(path):
                    # SLURM's record saved beside the logs (sacct/scontrol output, the batch script)
                    # is no log: read as one, its lines would be unrecognised text of the job. It
                    # is the record of the folder's jobs, as `logscope analyze FOLDER` reads it.
                    if not given_file:
                        _add_if_regular(records.setdefault(folder, []), path)
                    continue
                if is_not_a_log(name):
                    continue
                try:
                    status = path.stat()
                except OSError:
                    continue
                info = describe(Path(printable(str(named_path(path)))), patterns)
                job_id = info.job_id
                if info.array_task is not None and job_id is not None:
                    job_id = f"{job_id}_{info.array_task}"
                # A torchrun --log-dir tree (<run>/attempt_N/<local_rank>/...) is one job: its run folder.
                home = str(path.parents[2]) if info.kind.startswith("torchrun") else folder
                groups.setdefault((home, job_id), []).append(
                    (path, status.st_size, status.st_mtime_ns, (status.st_dev, status.st_ino)))
    jobs = []
    for (folder, job_id), members in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        members.sort()
        saved = sorted(records.get(folder, []))
        key = printable(f"{folder}::{job_id}" if job_id else folder)
        jobs.append(JobFiles(key, job_id, Path(folder), tuple(m[0] for m in members),
                             tuple(m[1] for m in members), tuple(m[2] for m in members),
                             tuple(m[3] for m in [*members, *saved]), tuple((m[0], m[1], m[2]) for m in saved)))
    return jobs


def _add_if_regular(found: list[tuple[Path, int, int, tuple[int, int]]], path: Path) -> None:
    """Add ``path`` (path, size, mtime, (device, inode)) when it is a regular file (through links)."""
    try:
        info = path.stat()
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        found.append((path, info.st_size, info.st_mtime_ns, (info.st_dev, info.st_ino)))


# Jobs of at most this many bytes are analysed in batches of up to BATCH_JOBS (or BATCH_BYTES in
# all), their files read together (logscope.analysis.analyze_jobs): reading a small job alone is
# mostly fixed costs (~30 ms of its ~75). A bigger job is analysed alone, as `analyze` would.
# (Sample jobs read 16 at a time took 10.8-12 ms each, 32 at a time 8.8-9.6 ms, 64 at a time
# 7.5-7.7 ms; a scan of 200 jobs with batches of up to 32 took 0.965x the time of batches of 16.)
SMALL_JOB_BYTES = 4 * 1024 * 1024
BATCH_JOBS = 32
BATCH_BYTES = 32 * 1024 * 1024


def analyse_batch(jobs: Sequence[JobFiles], patterns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The jobs' rows, their files read together. Runs in a worker process; never raises: should
    reading them together fail, each job is analysed alone (a bug on one job costs only its row).
    A job with SLURM's record saved in its folder is analysed alone, with it (analyse_one).
    The table has no column for the "next time" hints: they are not worked out (~2 ms a job)."""
    together = [n for n, job in enumerate(jobs) if not job.records and job.record is None]
    rows: dict[int, dict[str, Any]] = {n: analyse_one(job, patterns) for n, job in enumerate(jobs)
                                       if job.records or job.record is not None}
    if len(together) == 1:
        rows[together[0]] = analyse_one(jobs[together[0]], patterns)
    elif together:
        rows.update(zip(together, _analysed_together([jobs[n] for n in together], patterns), strict=True))
    return [rows[n] for n in range(len(jobs))]


def _analysed_together(jobs: Sequence[JobFiles], patterns: tuple[str, ...]) -> list[dict[str, Any]]:
    try:
        from logscope.analysis import analyze_jobs

        results = analyze_jobs([list(job.files) for job in jobs], patterns=patterns, hints=False)
    except Exception:
        return [analyse_one(job, patterns) for job in jobs]
    return [_row(job, result) for job, result in zip(jobs, results, strict=True)]


def analyse_one(job: JobFiles, patterns: tuple[str, ...]) -> dict[str, Any]:
    """One job's row, analysed alone (with SLURM's record saved in its folder, when it holds the
    job's). Runs in a worker process; never raises."""
    try:
        from logscope.analysis import analyze

        record = job.record or (_saved_record(job) if job.records else None)
        result: Analysis | Exception = analyze(list(job.files), patterns=patterns, hints=False, accounting=record)
    except Exception as error:
        result = error
    return _row(job, result)


def _saved_record(job: JobFiles) -> AccountingRecord | None:
    """SLURM's record of ``job`` among the files saved in its folder, read as ``logscope analyze
    JOBID FOLDER`` reads them (``logscope analyze FOLDER`` for a job whose file names give no id).
    None when they are the record of other jobs only (one sacct listing beside the logs of many
    jobs) or, for a job with no id, of several. Raises AccountingError where analyze refuses: a
    saved file that is no record, or cannot be read; a batch script alone."""
    # The readers load only where a record was saved, as for analyze.
    from logscope.accounting.gather import knows, record_of
    from logscope.accounting.jobid import parse_job_ref
    from logscope.accounting.saved import read_saved

    files = [path for path, _, _ in job.records]
    saved = read_saved(files)
    held = {r.job_id for r in saved.sacct + saved.scontrol}
    ref = parse_job_ref(job.job_id) if job.job_id else None
    if held and (not knows(saved, ref) if ref is not None else len(held) > 1):
        return None
    return record_of(saved, files, job.job_id if ref is not None else None)


def _row(job: JobFiles, result: Analysis | Exception) -> dict[str, Any]:
    """A job's row: its analysis, or why it has none. Never raises."""
    try:
        return _row_of(job, result)
    except Exception as error:  # a bug on one job must not stop a scan of thousands
        return _row_of(job, error)


def _row_of(job: JobFiles, result: Analysis | Exception) -> dict[str, Any]:
    if isinstance(result, LogscopeError):
        return _failed_row(job, str(result))
    if isinstance(result, Exception):  # a bug on one job must not stop a scan of thousands
        return _failed_row(job, f"internal error: {type(result).__name__}: {result}")
    row = _job_row(job)
    verdict = result.verdict
    root = verdict.root_cause
    evidence = root.evidence if root else None
    row.update(
        job_id=job.record.job_id if job.record is not None else (result.job.job_id or job.job_id),
        job_name=result.job.job_name,
        nodes=len(result.job.nodes),
        node_list=",".join(result.job.nodes),
        world_size=result.view.world_size,
        category=verdict.category.value,
        finding=verdict.finding,
        summary=verdict.summary,
        root_host=root.host if root else None,
        root_node=root.node if root else None,
        root_rank=root.rank if root else None,
        root_local_rank=root.local_rank if root else None,
        first_failure=(root.time if root and root.time else
                       (result.findings[0].first_seen if result.findings else None)),
        root_evidence=f"{evidence.file}:{evidence.line}" if evidence else None,
        lines_read=result.job.lines_read,
        lines_unrecognised=result.job.lines_unrecognised,
        secondary_findings=",".join(dict.fromkeys(f.code for f in result.findings if f.code != verdict.finding))
        or None,
    )
    if result.accounting is not None:
        row.update(user=result.accounting.user, state=result.accounting.job.state)
    events = result.view.events
    if events.height:
        span = events.select(pl.col("time").min().alias("start"), pl.col("time").max().alias("end"),
                             pl.col("fields").struct.field("step").max().alias("step")).row(0, named=True)
        row.update(job_start=span["start"], job_end=span["end"], last_step=span["step"],
                   duration_s=(span["end"] - span["start"]).total_seconds() if span["start"] and span["end"] else None)
    return row


def scan(roots: Sequence[Path], *, patterns: tuple[str, ...] = DEFAULT_PATTERNS, workers: int | None = None,
         since: datetime | None = None, shard: tuple[int, int] | None = None, cache_path: Path | None = None,
         on_total: Callable[[int], None] | None = None,
         on_done: Callable[[dict[str, Any]], None] | None = None, jobs: Sequence[JobFiles] | None = None) -> ScanResult:
    """Analyse every job under ``roots`` (or the ``jobs`` given: logscope.scan_slurm); see the module
    docstring."""
    jobs = list(jobs) if jobs is not None else find_jobs(roots, patterns)
    if not jobs:
        raise InputError(f"no log files found in {', '.join(str(r) for r in roots)}")
    result = ScanResult(pl.DataFrame(schema=SCAN_SCHEMA), inputs=frozenset(i for j in jobs for i in j.inodes))
    if shard is not None:
        jobs = [j for j in jobs if shard_of(j.key, shard[1]) == shard[0]]
    if since is not None:
        kept = [j for j in jobs if j.newest >= since]
        result.skipped_by_filter = len(jobs) - len(kept)
        jobs = kept
    cache = _load_cache(cache_path)
    rows: list[dict[str, Any]] = []
    todo: list[JobFiles] = []
    for job in jobs:
        hit = cache.get(job.key)
        row = _from_json_row(hit["row"]) if hit is not None and hit["signature"] == job.signature else None
        if row is not None:
            rows.append(row)
            result.cached += 1
        else:
            todo.append(job)
    if on_total is not None:
        on_total(len(jobs))
    for row in rows:
        if on_done is not None:
            on_done(row)
    fresh = _run(todo, patterns, workers, on_done, result.messages)
    rows.extend(fresh)
    result.analysed = len(fresh)
    result.failed = sum(1 for r in rows if r.get("error"))
    for job, row in zip(todo, fresh, strict=True):
        if not str(row.get("error") or "").startswith("worker failed"):  # a crashed worker may work next time
            cache[job.key] = {"signature": job.signature, "row": _to_json_row(row)}
    if cache_path is not None:
        _save_cache(cache_path, cache, result.inputs)
    table = pl.DataFrame(rows, schema=SCAN_SCHEMA) if rows else pl.DataFrame(schema=SCAN_SCHEMA)
    result.table = table.sort("location", "job_id", nulls_last=True)
    return result


class WorkersUnavailable(Exception):
    """No worker process could be made here (the pool's queues need /dev/shm, which a container may
    lack; no process may be left to start)."""


def _run(jobs: list[JobFiles], patterns: tuple[str, ...], workers: int | None,
         on_done: Callable[[dict[str, Any]], None] | None, messages: list[str]) -> list[dict[str, Any]]:
    """Each job's row, in order: in ``workers`` processes (this one alone for one), or in this one
    when none can be made (``messages`` says so)."""
    if not jobs:
        return []
    count = worker_count(workers or 0)
    results: dict[int, dict[str, Any]] = {}
    if count == 1 or len(jobs) == 1:
        _analyse_here(jobs, patterns, _batches(jobs, range(len(jobs)), count), results, on_done)
        return [results[i] for i in range(len(jobs))]
    waiting = deque(_batches(jobs, range(len(jobs)), count))
    alone: deque[int] = deque()  # jobs that were running when a worker died: each is run alone
    try:
        while waiting or alone:
            if alone:
                index = alone.popleft()
                try:
                    in_pool = _pool_round(jobs, patterns, 1, deque([[index]]), results, on_done)
                except WorkersUnavailable:
                    alone.appendleft(index)
                    raise
                if in_pool:  # its worker died again: this job kills it
                    row = _failed_row(jobs[index], "worker failed: the process analysing this job died "
                                                   "(killed, e.g. for memory)")
                    results[index] = row
                    if on_done is not None:
                        on_done(row)
            else:
                alone.extend(_pool_round(jobs, patterns, count, waiting, results, on_done))
    except WorkersUnavailable as error:
        messages.append(f"worker processes could not start ({error}): the jobs left were analysed one after "
                        "another in this process")
        _analyse_here(jobs, patterns, waiting, results, on_done)
        for index in alone:  # one of them may kill its process (for memory): not this one
            results[index] = row = _failed_row(jobs[index], "worker failed: a process analysing this job died, "
                                                            "and none could start to try it alone")
            if on_done is not None:
                on_done(row)
    return [results[i] for i in range(len(jobs))]


def _analyse_here(jobs: list[JobFiles], patterns: tuple[str, ...], batches: Iterable[list[int]],
                  results: dict[int, dict[str, Any]], on_done: Callable[[dict[str, Any]], None] | None) -> None:
    """The jobs of ``batches`` analysed one batch after another in this process, their rows into
    ``results`` by index."""
    for batch in batches:
        for index, row in zip(batch, analyse_batch([jobs[i] for i in batch], patterns), strict=True):
            results[index] = row
            if on_done is not None:
                on_done(row)


def _batches(jobs: Sequence[JobFiles], indexes: Sequence[int], workers: int) -> list[list[int]]:
    """The jobs (by index, in order) in batches analysed together (see SMALL_JOB_BYTES): small
    jobs up to BATCH_JOBS or BATCH_BYTES a batch, and at least a few batches for each worker, so
    that the cores stay busy to the end; a big job alone."""
    small = [i for i in indexes if jobs[i].total_bytes <= SMALL_JOB_BYTES]
    size = max(1, min(BATCH_JOBS, math.ceil(len(small) / (4 * workers))))
    out: list[list[int]] = []
    batch: list[int] = []
    held = 0
    for i in indexes:
        job_bytes = jobs[i].total_bytes
        if job_bytes > SMALL_JOB_BYTES:
            out.append([i])
            continue
        if batch and (len(batch) >= size or held + job_bytes > BATCH_BYTES):
            out.append(batch)
            batch, held = [], 0
        batch.append(i)
        held += job_bytes
    if batch:
        out.append(batch)
    return out


def _pool_round(jobs: list[JobFiles], patterns: tuple[str, ...], count: int, waiting: deque[list[int]],
                results: dict[int, dict[str, Any]], on_done: Callable[[dict[str, Any]], None] | None) -> list[int]:
    """Analyse the batches of jobs of ``waiting`` in a pool of ``count`` workers, ``count`` at a
    time (so that when a worker dies, only the jobs then running are in doubt); return those jobs,
    if one died, with the batches not started left in ``waiting``."""
    with single_threaded_workers():  # new workers start with the first submissions
        try:
            pool = new_pool(min(count, len(waiting)))
        except OSError as error:
            raise WorkersUnavailable(f"{type(error).__name__}: {error}") from error
        running: dict[Future[list[dict[str, Any]]], list[int]] = {}

        def submit() -> None:
            batch = waiting.popleft()
            try:
                future = pool.submit(analyse_batch, [jobs[i] for i in batch], patterns)
            except OSError as error:  # its worker could not start
                waiting.appendleft(batch)
                raise WorkersUnavailable(f"{type(error).__name__}: {error}") from error
            running[future] = batch

        try:
            with ctrl_c_held():  # see new_pool
                while waiting and len(running) < count:
                    submit()
            while waiting or running:
                while waiting and len(running) < count:
                    submit()
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = running.pop(future)
                    try:
                        rows = future.result()
                    except BrokenProcessPool:  # a worker died (killed for memory): which job did it?
                        return [*batch, *(i for other in running.values() for i in other)]
                    except Exception as error:
                        rows = [_failed_row(jobs[i], f"worker failed: {type(error).__name__}: {error}") for i in batch]
                    for index, row in zip(batch, rows, strict=True):
                        results[index] = row
                        if on_done is not None:
                            on_done(row)
            return []
        except BaseException as error:  # Ctrl-C: stop the workers now rather than wait for their jobs
            stop(pool)
            if isinstance(error, WorkersUnavailable):  # what they were doing is done again, elsewhere
                waiting.extendleft(reversed(list(running.values())))
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _job_row(job: JobFiles) -> dict[str, Any]:
    """A job's row with what the scan knows of it before any analysis: where, which files."""
    row: dict[str, Any] = dict.fromkeys(SCAN_SCHEMA)
    row.update(job_key=job.key, job_id=job.job_id, location=printable(str(job.location)), files=len(job.files),
               bytes=job.total_bytes, newest_file=job.newest)
    return row


def _failed_row(job: JobFiles, error: str) -> dict[str, Any]:
    row = _job_row(job)
    row.update(category="unreadable", error=error)
    return row


# ---------------------------------------------------------------------------------------------
# cache and output files


def _to_json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}


def _from_json_row(row: dict[str, Any]) -> dict[str, Any] | None:
    """A cached row as the table holds it; None when it does not fit the table (a damaged or
    edited cache: the job is analysed again)."""
    # a cache written by an older version may hold a file name's undecodable bytes
    out = {key: printable(value) if isinstance(value, str) else value for key, value in row.items()
           if key in SCAN_SCHEMA}
    try:
        for key, dtype in SCAN_SCHEMA.items():
            if isinstance(dtype, pl.Datetime) and isinstance(out.get(key), str):
                out[key] = datetime.fromisoformat(out[key]).replace(tzinfo=None)
        pl.DataFrame([out], schema=SCAN_SCHEMA)  # the types fit the table
    except Exception:  # whatever the cache holds, it costs a rescan, not the scan
        return None
    return out


def check_cache_path(path: Path) -> None:
    """Refuse a cache path that is not a regular file (a FIFO would hang the scan, a device or a
    folder cannot hold it)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(f"--cache {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"--cache {path} is not a regular file")


def _load_cache(path: Path | None) -> dict[str, Any]:
    """The cached jobs, keeping only well-formed entries: a damaged cache costs a rescan of the
    jobs it cannot vouch for, never the scan."""
    if path is None or not path.exists():
        return {}
    check_cache_path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        return {}
    jobs = data.get("jobs") if isinstance(data, dict) and data.get("version") == _CACHE_VERSION else None
    if not isinstance(jobs, dict):
        return {}
    return {key: entry for key, entry in jobs.items()
            if isinstance(entry, dict) and isinstance(entry.get("signature"), str)
            and isinstance(entry.get("row"), dict)}


def _save_cache(path: Path, jobs: dict[str, Any], inputs: frozenset[tuple[int, int]]) -> None:
    text = json.dumps({"version": _CACHE_VERSION, "jobs": jobs})
    def write(target: Path) -> None:
        target.write_text(text)

    write_output(path, write, inputs, "the scan cache")


def write_table(table: pl.DataFrame, path: Path, fmt: str | None = None,
                inputs: frozenset[tuple[int, int]] = frozenset()) -> str:
    """Write the scan table as parquet (default), csv or jsonl; return the format used."""
    kind = fmt or {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}.get(
        path.suffix.lower(), "parquet")
    _check_format(kind)
    write_output(path, lambda target: _write_as(table, target, kind), inputs, "the table")
    return kind


TABLE_FORMATS = tuple(kind.value for kind in TableFormat)  # the values --table-format offers


def write_table_to(table: pl.DataFrame, stream: BinaryIO, kind: str) -> None:
    """Write the scan table to an open binary stream (standard output for ``-o -``)."""
    _check_format(kind)
    _write_as(table, stream, kind)
    stream.flush()


def _check_format(kind: str) -> None:
    if kind not in TABLE_FORMATS:
        raise UsageError(f"unknown table format {kind!r}: use parquet, csv or jsonl")


def _write_as(table: pl.DataFrame, target: Path | BinaryIO, kind: str) -> None:
    """The table in one of TABLE_FORMATS, to a file or a stream."""
    if kind == "parquet":
        table.write_parquet(target)
    elif kind == "csv":
        table.write_csv(target)
    else:
        table.write_ndjson(target)


def write_output(path: Path, write: Callable[[Path], None], inputs: frozenset[tuple[int, int]], what: str) -> None:
    """Write an output file without ever changing another file: its real target (links
    followed) must not be one of ``inputs`` (the logs read, by device and inode: a hard link is
    caught too), and a regular file is written to a new temporary file beside it, then renamed
    over it (a rename replaces the name, never the content of a file linked to it). A device or
    a FIFO (``/dev/stdout``, ``/dev/full``) is written directly."""
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as error:
        raise OutputError(f"cannot write {what} {path}: {error.strerror or error}") from None
    if st is not None and (st.st_dev, st.st_ino) in inputs:
        raise OutputError(f"{path} is one of the log files being read (through a link); write {what} elsewhere "
                          "(logscope never writes into the logs it reads)")
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise UsageError(f"{path} is a folder; give a file name to write to")
            write(target)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, write)  # 0666 less the umask, as a plain write would make it
    except OSError as error:
        raise OutputError(f"cannot write {what} {path}: {error.strerror or error}") from None
    except pl.exceptions.PolarsError as error:  # polars' writers report a failed write (a full disk) so
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise OutputError(f"cannot write {what} {path}: {reason}") from None


def read_table(path: Path) -> pl.DataFrame:
    """Read a scan table written by :func:`write_table` (any of its formats)."""
    try:
        suffix = path.suffix.lower()
        if suffix == ".csv":
            # by name, not position: a table of an older logscope lacks the later columns
            frame = pl.read_csv(path, schema_overrides=SCAN_SCHEMA, try_parse_dates=True)
        elif suffix in (".jsonl", ".ndjson", ".json"):
            frame = pl.read_ndjson(path, schema=SCAN_SCHEMA)
        else:
            frame = pl.read_parquet(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except Exception as error:
        raise InputError(f"{path}: not a logscope scan table ({type(error).__name__})") from None
    missing = set(SCAN_SCHEMA) - set(frame.columns)
    if missing and missing <= _LATER_COLUMNS:  # a table of an older logscope
        frame = frame.with_columns(pl.lit(None, dtype=SCAN_SCHEMA[name]).alias(name) for name in sorted(missing))
        missing = set()
    if missing:
        raise InputError(f"{path}: not a logscope scan table (missing {', '.join(sorted(missing))})")
    for name, dtype in SCAN_SCHEMA.items():
        try:
            frame = frame.with_columns(pl.col(name).cast(dtype))
        except Exception:  # polars raises several kinds for a cast that cannot be done
            raise InputError(f"{path}: not a logscope scan table (column {name} holds {frame.schema[name]}, "
                             f"not {dtype})") from None
    return frame.select(list(SCAN_SCHEMA))


def read_cache_table(path: Path) -> pl.DataFrame:
    """The rows a scan cache holds, as a scan table (``logscope diff --against auto`` reads either);
    InputError when the file is no cache of this version."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    cache = _load_cache(path)
    if not cache:
        raise InputError(f"{path}: not a logscope scan table or cache")
    rows = [row for row in (_from_json_row(entry["row"]) for entry in cache.values()) if row is not None]
    return pl.DataFrame(rows, schema=SCAN_SCHEMA)


def merge_tables(paths: Sequence[Path]) -> pl.DataFrame:
    """Join shard tables; a job scanned twice keeps its newest row."""
    if not paths:
        raise UsageError("merge needs at least one table")
    frames = [read_table(p) for p in paths]
    table = pl.concat(frames, how="vertical")
    return (table.sort("newest_file", nulls_last=True)
            .unique(subset=["job_key"], keep="last", maintain_order=True)
            .sort("location", "job_id", nulls_last=True))


# Root causes that can lie with the machine rather than the job.
SUSPECT_CATEGORIES = ("hardware", "network", "unknown")
SUSPECT_MIN_ROOTS = 3  # fewer is never evidence
SUSPECT_P = 0.01  # how unlikely the count must be if roots fell on hosts by their share of the jobs


def summarise(table: pl.DataFrame) -> dict[str, Any]:
    """Counts per category, and per host: the jobs it ran, the jobs it was at the root of and the
    rate, by category. A host is a hardware suspect when its hardware, network and unknown roots
    are well above its share of the jobs: at least SUSPECT_MIN_ROOTS, and a count that roots spread
    over the hosts by the jobs each ran would reach with a probability below SUSPECT_P (Poisson)."""
    per_category = (table.group_by("category").agg(pl.len().alias("jobs"))
                    .sort(["jobs", "category"], descending=[True, False]).to_dicts()) if table.height else []
    ran = (table.select("job_key", pl.col("node_list").str.split(",").alias("host"))
           .explode("host").filter(pl.col("host").is_not_null() & (pl.col("host") != "")))
    rooted = table.filter(pl.col("root_host").is_not_null()).select("job_key", "category",
                                                                    pl.col("root_host").alias("host"))
    # A host at the root of a job ran it, whatever the node list says.
    runs = pl.concat([ran, rooted.select("job_key", "host")]).unique().group_by("host").len("jobs_run")
    roots = rooted.group_by("host").agg(pl.len().alias("root_jobs"),
                                        pl.col("category").is_in(SUSPECT_CATEGORIES).sum().alias("machine_roots"),
                                        pl.col("category").value_counts(sort=True).alias("by_category"))
    hosts = roots.join(runs, on="host", how="left").with_columns(pl.col("jobs_run").fill_null(0))
    total_runs = int(runs["jobs_run"].sum() or 0)
    total_machine = int(hosts["machine_roots"].sum() or 0)
    out = []
    for row in hosts.sort(["root_jobs", "host"], descending=[True, False]).to_dicts():
        expected = total_machine * row["jobs_run"] / total_runs if total_runs else 0.0
        observed = row["machine_roots"]
        suspect = observed >= SUSPECT_MIN_ROOTS and _poisson_at_least(observed, expected) < SUSPECT_P
        by_category = {item["category"]: item["count"] for item in row["by_category"]}
        out.append({
            "root_host": row["host"], "jobs_run": row["jobs_run"], "jobs": row["root_jobs"],
            "rate": row["root_jobs"] / row["jobs_run"] if row["jobs_run"] else None,
            "by_category": dict(sorted(by_category.items())), "categories": sorted(by_category),
            "machine_roots": observed, "expected_machine_roots": round(expected, 3), "suspect": suspect,
        })
    return {"jobs": table.height, "per_category": per_category, "top_root_hosts": out[:10], "hosts": out}


def _poisson_at_least(k: int, mean: float) -> float:
    """P(X >= k) for X ~ Poisson(mean)."""
    if mean <= 0:
        return 0.0 if k > 0 else 1.0
    term = math.exp(-mean)
    below = 0.0
    for i in range(k):
        below += term
        term *= mean / (i + 1)
    return max(0.0, 1.0 - below)


def sbatch_script(roots: Sequence[Path], shards: int, output_prefix: str, cpus: int,
                  extra: Sequence[str] = ()) -> str:
    """A SLURM job-array script that splits a scan into ``shards`` tasks, and the merge to run after."""
    if shards < 1:
        raise UsageError("--print-sbatch needs --shards N with N >= 1")
    roots_text = " ".join(_quote(str(r)) for r in roots)
    extra_text = (" " + " ".join(_quote(e) for e in extra)) if extra else ""
    return f"""#!/bin/bash
#SBATCH --job-name=logscope-scan
#SBATCH --array=0-{shards - 1}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task={cpus}
#SBATCH --output=logscope-scan-%A_%a.out
# Each array task scans one shard of the jobs; afterwards join the shards with:
#   logscope merge {output_prefix}-*.parquet -o {output_prefix}.parquet
set -euo pipefail
shard="${{SLURM_ARRAY_TASK_ID}}"
logscope scan {roots_text} --shard "$shard/{shards}" --jobs "${{SLURM_CPUS_PER_TASK}}" \\
    -o "{output_prefix}-$shard.parquet" --cache "{output_prefix}-$shard.cache.json"{extra_text}
"""


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


__all__ = ["SCAN_SCHEMA", "JobFiles", "ScanResult", "find_jobs", "merge_tables", "parse_shard", "read_table",
           "sbatch_script", "scan", "summarise", "write_table"]
