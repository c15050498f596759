"""``--against auto``: the last healthy run of the same job name, from a ``logscope scan`` table.

The table (Parquet, CSV or JSON lines, as ``scan -o`` wrote it) or the scan's cache file (JSON,
beside the table) lists each job it analysed with its name, verdict, folder and time span. The
baseline of a run is the table's most recent job of the same name whose verdict is ``healthy`` and
which ended before the run began (the latest healthy one when the run's logs hold no time), other
than the run itself. Its files are found again where the scan found them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from logscope.analysis import Analysis
from logscope.errors import InputError
from logscope.parsers.filenames import DEFAULT_PATTERNS


@dataclass(frozen=True)
class Baseline:
    """The run chosen as GOOD: its files and the table's row about it."""

    paths: tuple[Path, ...]
    job_key: str
    job_id: str | None
    ended: datetime | None
    table: Path

    def describe(self) -> str:
        ident = f"job {self.job_id}" if self.job_id else self.job_key
        ended = f", ended {self.ended:%Y-%m-%d %H:%M:%S}" if self.ended else ""
        return f"{ident} (healthy{ended}), the last healthy run of this job in {self.table}"


def read_runs(table: Path) -> pl.DataFrame:
    """A scan table, or the rows of a scan cache."""
    from logscope import scan

    if table.suffix.lower() == ".json" and _is_cache(table):
        return scan.read_cache_table(table)
    return scan.read_table(table)


def _is_cache(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    return head.lstrip().startswith(b"{")


def last_healthy(table: Path, bad: Analysis, patterns: tuple[str, ...] = DEFAULT_PATTERNS) -> Baseline:
    """The baseline of ``bad`` in ``table`` (see the module docstring); InputError when there is none."""
    name = bad.job.job_name
    if not name:
        raise InputError("--against auto needs the job's name, and these logs' file names give none: "
                         "name the run to compare with (--against PATH or JOBID)")
    runs = read_runs(table).filter((pl.col("job_name") == name) & (pl.col("category") == "healthy")
                                   & pl.col("error").is_null())
    if bad.job.job_id:
        runs = runs.filter(pl.col("job_id").is_null() | (pl.col("job_id") != bad.job.job_id))
    folders = {str(f.path.parent) for f in bad.job.files}
    runs = runs.filter(~(pl.col("job_id").is_null() & pl.col("location").is_in(sorted(folders))))
    began = bad.view.events.select(pl.col("time").min()).item() if bad.view.events.height else None
    ended = pl.coalesce("job_end", "newest_file")
    if isinstance(began, datetime):
        before = runs.filter(ended < began)
        runs = before if before.height else runs.filter(pl.lit(False))
    if runs.height == 0:
        when = f" that ended before this run began ({began:%Y-%m-%d %H:%M:%S})" if isinstance(began, datetime) else ""
        raise InputError(f"no healthy run of job {name!r}{when} in {table}: give one with --against PATH")
    row = runs.sort(ended, nulls_last=False).row(-1, named=True)
    return Baseline(_files_of(row, patterns), str(row["job_key"]), row["job_id"], row["job_end"] or row["newest_file"],
                    table)


def _files_of(row: dict[str, object], patterns: tuple[str, ...]) -> tuple[Path, ...]:
    """The files of the table's job, found again in its folder."""
    from logscope.scan import find_jobs

    location = Path(str(row["location"]))
    if not location.is_dir():
        raise InputError(f"the last healthy run {row['job_key']} was in {location}, which is no longer there")
    for job in find_jobs([location], patterns):
        if job.key == row["job_key"]:
            return job.files
    raise InputError(f"the last healthy run {row['job_key']} has no log files left in {location}")


__all__ = ["Baseline", "last_healthy", "read_runs"]
