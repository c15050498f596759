"""A C++ ``terminate`` and the ``what()`` that says why, folded into one event.

libstdc++'s verbose terminate handler (libstdc++-v3/libsupc++/vterminate.cc) writes two lines for an
uncaught exception: ``terminate called after throwing an instance of 'T'``, then ``  what():  M``.
The first says only that the process died of a C++ exception; the second says what the exception
was about, and that decides what failed: the watchdog's ``[Rank 3] Watchdog caught collective
operation timeout`` is a rank that waited (a hang, the culprit elsewhere), ``CUDA error: an illegal
memory access`` a GPU fault, an unknown message a crash of that process. So:

* where the ``what()`` line is a message the catalogue knows (a watchdog timeout, a CUDA error, the
  watchdog's last word), that message is the event, and the terminate line adds only its C++ type;
* where it is no known message (the catalogue's generic ``what():`` form), the terminate line is the
  event, and carries the message as its own.

A terminate line whose ``what()`` never came (cut off) is the abort c10d announced on the line
above it, when there is one (``To avoid data inconsistency, we are taking the entire process
down``: ProcessGroupNCCL.cpp aborts the process with the watchdog's exception): that teardown is
the event, as its ``what()`` would have said; otherwise it stays as it is. Pairs are found per file and
writer (srun task, host), the ``what()`` within :data:`WHAT_WITHIN` lines below its terminate line,
as processes interleave their output in a shared file. Few rows: plain Python.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import polars as pl

from logscope.model import Event

WHAT_WITHIN = 3  # lines between a terminate line and its what()
_WHAT = r"\bwhat\(\):"
_ROW = "_termination_row"


def fold_terminations(events: pl.DataFrame, apart: Sequence[str] = ()) -> pl.DataFrame:
    """``events`` (one file's, or several files' with ``apart`` naming the file column) with each
    terminate line and its ``what()`` folded into one event (see the module docstring)."""
    terminate = pl.col("event") == Event.CPP_EXCEPTION.value
    if events.height == 0 or not events.select(terminate.any()).item():
        return events
    indexed = events.with_row_index(_ROW)
    keys = [*apart, "task", "host"]
    said = pl.col("fields").struct
    terminations = indexed.filter(terminate).select(_ROW, *keys, "line", said.field("error_type").alias("_type"))
    whats = (indexed.filter(pl.col("text").str.contains(_WHAT) & ~terminate)
             .select(_ROW, *keys, "line", "event", said.field("message").alias("_message")))
    teardowns = indexed.filter(pl.col("event") == Event.TEARDOWN.value).select(*keys, "line")
    by_writer: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for row in whats.to_dicts():
        by_writer.setdefault(tuple(row[k] for k in keys), []).append(row)
    announced: dict[tuple[object, ...], list[int]] = {}
    for row in teardowns.to_dicts():
        announced.setdefault(tuple(row[k] for k in keys), []).append(int(row["line"]))
    # Each writer's lines in line order, so that the few near a terminate line are found by
    # bisection (a crash loop has thousands of terminate lines per writer).
    for found in by_writer.values():
        found.sort(key=lambda w: int(w["line"]))
    what_lines = {writer: [int(w["line"]) for w in found] for writer, found in by_writer.items()}
    for lines in announced.values():
        lines.sort()
    drop: set[int] = set()
    messages: dict[int, str] = {}  # terminate row -> the message of its what()
    types: dict[int, str] = {}  # known message's row -> the C++ type thrown
    for row in terminations.to_dicts():
        line, writer = int(row["line"]), tuple(row[k] for k in keys)
        found, lines = by_writer.get(writer, []), what_lines.get(writer, [])
        # the first in row order, as the rows came (folded records follow the others)
        what = min((found[n] for n in range(bisect_right(lines, line), bisect_right(lines, line + WHAT_WITHIN))
                    if int(found[n][_ROW]) not in drop), key=lambda w: int(w[_ROW]), default=None)
        if what is None:
            above = announced.get(writer, [])
            if bisect_left(above, line - WHAT_WITHIN) < bisect_left(above, line):
                drop.add(int(row[_ROW]))
            continue
        if what["event"] == Event.EXCEPTION.value:  # no known message: the terminate line says it
            messages[int(row[_ROW])] = str(what["_message"] or "")
            drop.add(int(what[_ROW]))
        else:  # the message says what failed
            if row["_type"]:
                types[int(what[_ROW])] = str(row["_type"])
            drop.add(int(row[_ROW]))
    if not drop:
        return events
    message_of = pl.DataFrame({_ROW: list(messages), "_what": list(messages.values())},
                              schema={_ROW: pl.UInt32, "_what": pl.String})
    type_of = pl.DataFrame({_ROW: list(types), "_thrown": list(types.values())},
                           schema={_ROW: pl.UInt32, "_thrown": pl.String})
    return (
        indexed.filter(~pl.col(_ROW).is_in(sorted(drop)))
        .join(message_of, on=_ROW, how="left", maintain_order="left")
        .join(type_of, on=_ROW, how="left", maintain_order="left")
        .with_columns(pl.col("fields").struct.with_fields(
            pl.coalesce(pl.col("_what"), pl.field("message")).alias("message"),
            pl.coalesce(pl.field("error_type"), pl.col("_thrown")).alias("error_type"),
        ))
        .drop(_ROW, "_what", "_thrown")
    )


__all__ = ["WHAT_WITHIN", "fold_terminations"]
