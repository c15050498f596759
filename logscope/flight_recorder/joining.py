"""Join a job's Flight Recorder dumps to its timeline: find, read, align, add (one call).

:func:`find_dumps` runs before the logs are read (the dumps among the job's files are left out of
them); :func:`add_to_job` after, when the logs' rank map and times are known. A job of dumps alone
(no log at all) is a job too: :func:`dumps_only_job`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from logscope.flight_recorder.finding import (
    Found,
    find_given,
    find_in_folders,
    find_named,
    find_prefixed,
    prefixes_in_script,
)
from logscope.ingest import discover
from logscope.model import Event, empty_timeline
from logscope.timeline import Job, ProgressHook, load_job

_WATCHDOG = [e.value for e in (Event.WATCHDOG_TIMEOUT, Event.WATCHDOG_STATUS, Event.DESYNC_REPORT, Event.TEARDOWN)]


def find_dumps(inputs: Sequence[Path], fr: Sequence[Path] = (), script: str | None = None) -> Found:
    """The dumps among ``inputs``, at each ``--fr`` path (UsageError for an ``--fr`` path that is
    no dump, folder or prefix) and at the prefix the batch ``script`` sets."""
    found = Found()
    for path in find_in_folders(inputs):
        found.add(path)
    find_given(fr, found)
    if script:
        find_prefixed(prefixes_in_script(script), found)
    return found


def load_job_with_dumps(inputs: Sequence[Path], patterns: tuple[str, ...], on_progress: ProgressHook | None,
                        exclude: Sequence[Path], fr: Sequence[Path], script: str | None = None) -> Job:
    """:func:`logscope.timeline.load_job` of ``inputs``, their dumps left out of the logs and put
    on the timeline (:func:`add_to_job`); inputs holding dumps and no log make a job of the dumps
    alone. ``script``: the job's batch script (SLURM's record), whose dump prefix is read too."""
    found = find_dumps(inputs, fr, script)
    left_out = [*exclude, *found.dumps]
    if found.dumps and not discover(inputs, patterns, left_out)[0]:
        job = dumps_only_job(inputs)
    else:
        job = load_job(inputs, patterns, on_progress, left_out)
    add_to_job(job, found)
    return job


def _named_in(job: Job) -> list[tuple[Path, str | None, str]]:
    """The dumps and dump prefixes the job's logs name (its ``fr_dump_named`` rows): each with its
    log file, the variable a prefix is set by (None for a dump) and the path or prefix."""
    said = pl.col("fields").struct
    rows = job.timeline.filter(pl.col("event") == Event.FR_DUMP_NAMED.value).select(
        "file", said.field("key").alias("variable"), said.field("value").alias("value")).drop_nulls("value")
    logs = {f.display: f.path for f in job.files}
    return [(logs[file], variable, value) for file, variable, value in rows.iter_rows() if file in logs]


def has_dumps(job: Job) -> bool:
    """Whether Flight Recorder rows are on ``job``'s timeline."""
    return bool(job.timeline.height) and bool((job.timeline["source"] == "fr").any())


def add_to_job(job: Job, found: Found) -> None:
    """Read ``found``'s dumps (and those the job's logs name, when its logs show c10d's watchdog
    at work: the lines naming dumps come with it) and put them on ``job``'s timeline; the dumps
    skipped go to ``job.skipped`` with their reasons."""
    if job.files and job.timeline.height and job.timeline["event"].is_in(_WATCHDOG).any():
        find_named(_named_in(job), found)
    job.skipped.extend(found.skipped)
    for named in found.named_elsewhere[:8]:
        job.warnings.append(f"the logs say a Flight Recorder dump was written to {named}, which is not here (a node's "
                            "own disk?): copy it beside the logs, or give its folder with --fr")
    if not found.dumps:
        return
    # the reader and the rows' module are imported only for a job with dumps
    from logscope.flight_recorder.reading import read_dumps
    from logscope.flight_recorder.rows import align, entry_frame, group_rows, rank_places, timeline_rows

    read, skipped = read_dumps(found.dumps, entry_frame)
    job.skipped.extend(skipped)
    if not read:
        return
    dumps = [dump for dump, _ in read]
    frames = [frame for _, frame in read]
    groups = group_rows(dumps, frames)
    alignment = align(job.timeline, pl.concat(frames, how="vertical"))
    rows = timeline_rows(dumps, frames, groups, alignment, rank_places(job.timeline))
    job.timeline = pl.concat([job.timeline, rows], how="vertical").sort(
        ["time", "file", "line"], nulls_last=True, maintain_order=True)


def dumps_only_job(inputs: Sequence[Path]) -> Job:
    """An empty job for inputs that hold dumps and no log."""
    return Job(timeline=empty_timeline(), files=[])


__all__ = ["add_to_job", "dumps_only_job", "find_dumps", "has_dumps", "load_job_with_dumps"]
