"""A file's events made ready to join its job's: untimed events timed, control characters dropped,
the file's own facts filled in, torchrun's multi-line records folded.

Each step reads one file's rows alone, so it is done as the file's reading ends (in the read
worker for a file read there), for the files finished together in one pass: the main process then
holds one event per record, not its ~10 lines (a crash loop's files are a third record lines), and
folds none of them itself.

* An untimed event takes its time from the lines around it (:func:`_timed`).
* Terminal escape sequences (a logger's colours, or hostile: clear the screen, set the title),
  other control characters and bidi controls in log text would reach the terminal as they are:
  they are dropped from the text and string fields of the events (a few rows, not the lines read).
* ``host``, ``pid`` and ``local_rank`` a line does not give are the file's, from its name
  (``SourceFile.info``: torchrun's ``--log-dir`` files name the worker).
* Records are folded per file, srun task and host (:mod:`logscope.parsers.records`), after the two
  steps above: the fold reads the host and the cleaned text; so is a C++ terminate with the
  ``what()`` that says why (:mod:`logscope.parsers.terminations`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from logscope.ingest.discovery import SourceFile
from logscope.model import FIELD_SCHEMA
from logscope.parsers.records import assemble_records
from logscope.parsers.terminations import fold_terminations
from logscope.stacking import positions, stacked, unstacked
from logscope.textsafe import CONTROL_CHARACTER, CONTROLS

_FILE = "_file"  # which of the files finished together a row is of


def completed(frames: Sequence[pl.DataFrame], sources: Sequence[SourceFile]) -> list[pl.DataFrame]:
    """Each of ``frames`` (a file's events, EVENT_COLUMNS, thinned) with its untimed events timed,
    its controls dropped, the file's facts of ``sources`` filled in and its records folded, in
    order."""
    if not frames:
        return []
    events = _without_controls(_timed(stacked(frames, {
        _FILE: positions(len(frames)),
        "_file_host": pl.Series([source.info.host for source in sources], dtype=pl.String),
        "_file_pid": pl.Series([source.info.pid for source in sources], dtype=pl.Int64),
        "_file_local_rank": pl.Series([source.info.local_rank for source in sources], dtype=pl.Int64),
    })))
    events = events.with_columns(
        pl.coalesce("host", "_file_host").alias("host"),
        pl.coalesce("pid", "_file_pid").alias("pid"),
        pl.coalesce("local_rank", "_file_local_rank").alias("local_rank"),
    ).drop("_file_host", "_file_pid", "_file_local_rank")
    events = fold_terminations(assemble_records(events, apart=[_FILE]), apart=[_FILE])
    if len(frames) == 1:
        return [events.drop(_FILE)]
    return unstacked(events, _FILE, len(frames))  # the folded records follow the others: sorted by file


def _timed(events: pl.DataFrame) -> pl.DataFrame:
    """Untimed events before a file's first timestamp take that first timestamp (inferred); an
    untimed event with no timed line below it takes the next event's time as its latest (the
    events of the files finished together, each file's taken alone: one query for all of them).
    (The first timed line of a file's next chunk was given to the events at a chunk's end as it
    was read: reading._Reading.add.)

    An untimed event lies between the timed lines around it, earliest ``time``, latest
    ``time_latest``. Processes writing to one file do not keep its times in order (a rank's
    buffered output lands after the agent's later lines), so the line below can be older than
    the one above: the window is then the span between the two, whichever comes first."""
    earliest = pl.col("time").backward_fill().over(_FILE)
    latest = pl.col("time_latest").backward_fill().over(_FILE)
    return events.with_columns(pl.min_horizontal(earliest, latest).alias("time"),
                               pl.max_horizontal(earliest, latest).alias("time_latest"))


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
