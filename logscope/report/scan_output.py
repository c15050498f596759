"""What ``logscope scan`` prints beside its table: the JSON document (the summary, and the jobs' rows
when the table goes to standard output), the columns ``--columns`` keeps, and the per-job table on a
terminal (a job a line, its verdict beside its efficiency, as ``reportseff`` prints it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from logscope.errors import UsageError, printable
from logscope.scan import SCAN_SCHEMA

if TYPE_CHECKING:
    from rich.console import Console

    from logscope.scan import ScanResult

# The per-job table on a terminal, when --columns does not say
DEFAULT_COLUMNS = ("job_id", "job_name", "state", "category", "finding", "elapsed_s", "time_used", "cpu_efficiency",
                   "mem_used", "gpu_util", "root_host")
_FRACTIONS = frozenset(("time_used", "cpu_efficiency", "mem_used", "gpu_util"))
_BYTES = frozenset(("bytes", "mem_requested", "mem_peak", "gpu_mem_peak"))
_SECONDS = frozenset(("elapsed_s", "time_limit_s", "duration_s"))
# Short headings of the terminal table (the table's own column names elsewhere)
_HEADINGS = {"elapsed_s": "elapsed", "time_limit_s": "limit", "time_used": "time", "cpu_efficiency": "cpu",
             "mem_used": "mem", "mem_requested": "mem req", "mem_peak": "mem peak", "gpu_util": "gpu",
             "gpu_mem_peak": "gpu mem", "duration_s": "duration"}


def columns(given: Sequence[str] | None) -> list[str] | None:
    """The columns ``--columns`` names (repeatable or comma-separated), checked; None for all."""
    names = [c.strip() for value in given or [] for c in value.split(",") if c.strip()]
    if not names:
        return None
    unknown = [name for name in names if name not in SCAN_SCHEMA]
    if unknown:
        raise UsageError(f"unknown column {unknown[0]!r}: use some of {', '.join(SCAN_SCHEMA)}")
    return list(dict.fromkeys(names))


def json_document(summary: dict[str, Any], result: ScanResult, output: str | None,
                  jobs: pl.DataFrame | None = None) -> dict[str, Any]:
    """The scan's JSON: its summary and counts, and the jobs' rows when ``jobs`` is given."""
    document: dict[str, Any] = {"summary": summary, "analysed": result.analysed, "cached": result.cached,
                                "unreadable": result.failed, "output": output, "warnings": result.messages}
    if jobs is not None:
        document["jobs"] = [{key: value.isoformat() if isinstance(value, datetime) else value
                             for key, value in row.items()} for row in jobs.to_dicts()]
    return document


def print_jobs(table: pl.DataFrame, console: Console, chosen: Sequence[str] | None = None) -> None:
    """A line per job: ``chosen`` columns (DEFAULT_COLUMNS), fractions as percents, sizes in GiB."""
    from rich.table import Table

    names = list(chosen or DEFAULT_COLUMNS)
    if chosen is None:  # the efficiency columns only where some job has them (a scan of folders has none)
        names = [n for n in names if n not in _FRACTIONS | _SECONDS or table[n].is_not_null().any()]
    shown = Table()
    for name in names:
        right = name in _FRACTIONS | _BYTES | _SECONDS or SCAN_SCHEMA[name].is_numeric()
        shown.add_column(_HEADINGS.get(name, name), justify="right" if right else "left")
    for row in table.select(names).iter_rows(named=True):
        shown.add_row(*(_cell(name, row[name]) for name in names))
    console.print(shown)


def _cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if name in _FRACTIONS:
        return f"{value:.0%}"
    if name in _BYTES:
        return f"{value / (1 << 30):.1f}G"
    if name in _SECONDS:
        seconds = int(value)
        return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return printable(str(value))


__all__ = ["DEFAULT_COLUMNS", "columns", "json_document", "print_jobs"]
