"""A file's events made ready to join its job's: control characters dropped, the file's own facts
filled in, torchrun's multi-line records folded.

Each step reads one file's rows alone, so it is done as the file's reading ends (in the read
worker for a file read there), for the files finished together in one pass: the main process then
holds one event per record, not its ~10 lines (a crash loop's files are a third record lines), and
folds none of them itself.

* Terminal escape sequences (a logger's colours, or hostile: clear the screen, set the title),
  other control characters and bidi controls in log text would reach the terminal as they are:
  they are dropped from the text and string fields of the events (a few rows, not the lines read).
* ``host``, ``pid`` and ``local_rank`` a line does not give are the file's, from its name
  (``SourceFile.info``: torchrun's ``--log-dir`` files name the worker).
* Records are folded per file, srun task and host (:mod:`logscope.parsers.records`), after the two
  steps above: the fold reads the host and the cleaned text.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from logscope.ingest.discovery import SourceFile
from logscope.model import FIELD_SCHEMA
from logscope.parsers.records import assemble_records
from logscope.textsafe import CONTROL_CHARACTER, CONTROLS

_FILE = "_file"  # which of the files finished together a row is of


def completed(frames: Sequence[pl.DataFrame], sources: Sequence[SourceFile]) -> list[pl.DataFrame]:
    """Each of ``frames`` (a file's events, EVENT_COLUMNS, thinned and timed) with its controls
    dropped, the file's facts of ``sources`` filled in and its records folded, in order."""
    if not frames:
        return []
    tagged = [frame.with_columns(
        pl.lit(n, dtype=pl.UInt32).alias(_FILE),
        pl.lit(source.info.host, dtype=pl.String).alias("_file_host"),
        pl.lit(source.info.pid, dtype=pl.Int64).alias("_file_pid"),
        pl.lit(source.info.local_rank, dtype=pl.Int64).alias("_file_local_rank"),
    ) for n, (frame, source) in enumerate(zip(frames, sources, strict=True))]
    events = _without_controls(pl.concat(tagged, how="vertical"))
    events = events.with_columns(
        pl.coalesce("host", "_file_host").alias("host"),
        pl.coalesce("pid", "_file_pid").alias("pid"),
        pl.coalesce("local_rank", "_file_local_rank").alias("local_rank"),
    ).drop("_file_host", "_file_pid", "_file_local_rank")
    events = assemble_records(events, apart=[_FILE])
    if len(frames) == 1:
        return [events.drop(_FILE)]
    by_file = events.partition_by(_FILE, as_dict=True, include_key=False, maintain_order=True)
    empty = events.clear().drop(_FILE)
    return [by_file.get((n,), empty) for n in range(len(frames))]


_ESCAPES = CONTROLS  # logscope.textsafe: escapes, control and bidi characters
_CONTROL_CHARACTER = CONTROL_CHARACTER  # one of the characters every match of _ESCAPES holds


def _without_controls(events: pl.DataFrame) -> pl.DataFrame:
    """``events`` with escape sequences, control and bidi characters dropped from ``text`` and the
    string fields (see the module docstring)."""
    strings = [name for name, dtype in FIELD_SCHEMA.items() if dtype == pl.String()]
    # Whether any text or string field holds one: every escape sequence holds a control character
    # (ESC), and the space that joins the texts is none, so one search of them joined answers
    # (half the cost of a search per field; most jobs have nothing to drop).
    joined = pl.concat_str([pl.col("text"), *[pl.col("fields").struct.field(name) for name in strings]],
                           separator=" ", ignore_nulls=True)
    if not events.select(joined.str.contains(_CONTROL_CHARACTER).any()).item():
        return events
    return events.with_columns(
        pl.col("text").str.replace_all(_ESCAPES, ""),
        pl.col("fields").struct.with_fields(*[pl.field(name).str.replace_all(_ESCAPES, "") for name in strings]),
    )


__all__ = ["completed"]
