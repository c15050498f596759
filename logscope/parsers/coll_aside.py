"""NCCL COLL lines set aside before classification: the ones the thinning would drop anyway.

A COLL-heavy log (``NCCL_DEBUG_SUBSYS=COLL``) is mostly lines such as
``host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a ... comm 0x55d0c3a0 ...``; the timeline keeps
the first :data:`~logscope.limits.COLL_HEAD` and last :data:`~logscope.limits.COLL_TAIL`
of each (host, pid, comm) of a file. The lines of a chunk that cannot be among those are set aside
here, counted as recognised and never classified. Two ways, one rule:

* :func:`coll_surplus`, polars expressions over a chunk's frame of lines (the reference, and the
  path when the compiled scanner is not built);
* :func:`logscope.parsers.coll_groups.group_keys`, for the compiled scanner
  (:mod:`logscope.ingest.coll_prefilter`), which finds and groups the COLL lines of a block of
  bytes itself and asks which of its groups are valid and which process each is. A few groups of
  plain ASCII (a file's processes) are checked there by Python's ``re`` with the same regexes
  (defined there), the others here (:func:`polars_group_keys`).

Both group lines by (the text before " NCCL INFO ", the 20 bytes after "comm ") and check each
group's head and pointer once.
"""

from __future__ import annotations

from functools import cache

import polars as pl

from logscope.parsers.coll_groups import (
    COLL_COMM,
    COLL_HEAD_BODY,
    COLL_INFO,
    COLL_OP_COUNT,
    COLL_POINTER,
    COLL_SLICE,
    COLL_TRIGGER,
    NCCL_HEAD,
    NCCL_STAMP,
    STAMPED_COLL,
    text_of,
)
from logscope.parsers.prefixes import prefix_fields, split_prefix
from logscope.parsers.time_forms import ANY_LEADING_TIME
from logscope.parsers.timestamps import leading_time

# How many lines of a chunk are searched for a COLL line with NCCL's own timestamp.
_STAMP_SAMPLE = 4096


def coll_surplus(lines: pl.DataFrame, head: int, tail: int) -> pl.Series | None:
    """Row positions of the NCCL COLL lines of ``lines`` (column ``raw``) that are neither among
    the first ``head`` nor the last ``tail`` of their (host, pid, comm) in this chunk, so not among
    them in the file either: the thinning the caller applies later would drop them.

    This runs on every line of a COLL-heavy log before anything else, so each line pays only for
    three substring searches, three byte slices and one anchored regex on a short slice: it is
    cut at the first " NCCL INFO ", ": opCount " and "comm "; the operation and the op count
    between are checked on the line. The text before " NCCL INFO " (launcher prefixes, NCCL's
    optional timestamp, ``host:pid:tid [dev]``) and the bytes after "comm " are checked once per
    *distinct* value, a handful per chunk (a timestamp is split off first: see _keyed). A line
    passing every check is one the NCCL_COLL pattern (first in PATTERNS) matches, with that host,
    pid and comm.

    The key, (``host:pid:tid [dev]``, the bytes after "comm "), may split one (host, pid, comm) in
    two (two threads, a pid written with a leading zero) but never merges two, so it keeps a
    superset of what the caller keeps, and the caller's thinning of that superset gives the same
    rows. Lines with a leading time are set aside only where no other line needs that time (see
    _untimed_or_unneeded).
    """
    raw = pl.col("raw")
    data = raw.cast(pl.Binary)  # byte offsets (byte_find) need byte slices: lines may hold any UTF-8
    at_info, at_op, at_comm = pl.col("_info"), pl.col("_op"), pl.col("_comm")
    coll = (
        lines.lazy()
        .select(
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("idx"),
            raw,
            byte_find(raw, COLL_INFO).alias("_info"),
            byte_find(raw, COLL_TRIGGER).alias("_op"),
        )
        .filter(at_info < at_op)
        .with_columns(byte_find(raw, COLL_COMM).alias("_comm"))
        .filter(at_comm > at_op)
        .select(
            "idx",
            data.bin.slice(0, at_info).alias("head"),
            data.bin.slice(at_comm + len(COLL_COMM), COLL_SLICE).alias("comm"),
            # From the operation on, checked by an anchored regex (a regex search of the whole
            # line costs more). The slice starts and ends where characters do (after " NCCL INFO ",
            # at the line's end), so it is text: a slice that could cut a character in two cannot be
            # cast (polars 2 raises where it gave null before).
            data.bin.slice(at_info + len(COLL_INFO)).cast(pl.String).alias("_op_count"),
        )
        .filter(pl.col("_op_count").str.contains(COLL_OP_COUNT))
    )
    if lines.head(_STAMP_SAMPLE).select(raw.str.contains(STAMPED_COLL).any()).item():
        # NCCL's own timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS) changes line by line: the head is
        # split at it, so that the groups stay a handful. (A chunk whose first lines show none is
        # not split: what it holds is still checked per distinct head, only at a higher cost.)
        split = _split_at_stamp(coll).collect()
        unsure = split.filter(pl.col("_stamp").is_in(_unreadable(split["_stamp"]).implode()))["idx"]
        groups = split.group_by("head", "after", "comm").agg("idx")
    else:
        unsure = None
        groups = coll.group_by("head", "comm").agg("idx").collect().with_columns(
            pl.lit(None, dtype=pl.String).alias("after"))
    # A handful of groups: their heads and pointers are checked here, once each. A valid head
    # gets its key: the NCCL head without a timestamp in front (launcher prefixes dropped too:
    # the host and pid that follow name the process).
    groups = _keyed(groups).filter(pl.col("comm").is_in(_valid_pointers(groups["comm"]).implode()))
    if groups.height == 0:
        return None
    count = pl.col("idx").list.len().cast(pl.Int64)
    if not groups["timed"].any():
        # No line set aside has a time: a group is a key already, or a part of one.
        surplus = groups.select(pl.col("idx").list.slice(head, (count - head - tail).clip(0)).explode()).to_series()
    else:
        surplus = _untimed_or_unneeded(groups, head, tail, unsure)
    surplus = surplus.drop_nulls()
    return surplus if surplus.len() else None


def _untimed_or_unneeded(groups: pl.DataFrame, head: int, tail: int, unsure: pl.Series | None) -> pl.Series:
    """The surplus rows of COLL lines some of which carry a time (NCCL_DEBUG_TIMESTAMP_LEVELS):
    a group per (key, comm), the key leaving out the time, so lines of one second and the next
    are one group. Set aside, a timed line would take its time away from the lines around it
    (an untimed event takes its time from the nearest timed lines above and below, and a chunk
    hands its last time to the next). So in every run of lines set aside back to back, the
    first and the last timed one stay: those are the only ones any other line can take a time
    from. They become events the caller's thinning drops again.

    ``unsure``: the rows whose stamp does not read as a time (a byte lost or changed in it; the
    grouping leaves the stamp out). Such a line is of a timed group, but has no time: it is never
    set aside, lest it stand first or last of a run in place of a line that has one."""
    rows = groups.select("key", "comm", "timed", "idx").explode("idx").sort("idx")
    key = [pl.col("key"), pl.col("comm")]
    position = pl.int_range(pl.len()).over(key)
    kept_anyway = pl.col("idx").is_in(unsure.implode()) if unsure is not None and unsure.len() else pl.lit(False)
    rows = rows.with_columns(
        ((position >= head) & (position < pl.len().over(key).cast(pl.Int64) - tail) & ~kept_anyway).alias("surplus")
    )
    # A run: rows set aside with consecutive positions in the chunk (any other line between them,
    # or a line that stays, ends it).
    follows = (pl.col("idx").cast(pl.Int64) - pl.col("idx").shift().cast(pl.Int64) == 1).fill_null(False)
    rows = rows.with_columns((~(pl.col("surplus") & follows & pl.col("surplus").shift().fill_null(False)))
                             .cum_sum().alias("run"))
    timed = rows.filter(pl.col("surplus") & pl.col("timed"))
    needed = pl.concat([timed.unique("run", keep="first")["idx"], timed.unique("run", keep="last")["idx"]])
    return rows.filter(pl.col("surplus") & ~pl.col("idx").is_in(needed.implode()))["idx"]


def _keyed(groups: pl.DataFrame) -> pl.DataFrame:
    """Groups of COLL lines (``head``: the text before their NCCL timestamp, or before " NCCL
    INFO " when there is none; ``after``: the text between the timestamp and " NCCL INFO ", null
    when there is none; ``comm``; ``idx``) with their ``key`` and ``timed`` (see _head_keys); the
    groups that are not valid are left out.

    With a timestamp, what comes before it must be launcher prefixes and nothing else (so that
    the timestamp stands where the NCCL_COLL pattern reads it) and what follows it an NCCL
    ``host:pid:tid [dev]`` head, the key; each distinct part is checked once. Such a line is
    ``timed``."""
    plain = groups.filter(pl.col("after").is_null()).drop("after")
    plain = plain.join(_head_keys(plain["head"].unique()), on="head")
    stamped = groups.filter(pl.col("after").is_not_null())
    if stamped.height == 0:
        return plain
    befores = split_prefix(stamped["head"].unique().cast(pl.String, strict=False).to_frame("raw")).filter(
        pl.col("raw").is_not_null() & (pl.col("body") == ""))
    afters = stamped["after"].unique().to_frame("after").filter(
        (pl.col("after") + " ").str.contains("^" + NCCL_HEAD + "$")
        & ~pl.col("after").str.contains(ANY_LEADING_TIME)
    )
    stamped = stamped.filter(
        pl.col("head").is_in(befores["raw"].cast(pl.Binary).implode())
        & pl.col("after").is_in(afters["after"].implode())
    ).select("head", "comm", "idx", pl.col("after").alias("key"), pl.lit(True).alias("timed"))
    return pl.concat([plain.select("head", "comm", "idx", "key", "timed"), stamped])


def _head_keys(heads: pl.Series) -> pl.DataFrame:
    """For each distinct text before " NCCL INFO " that is launcher prefixes, an optional NCCL
    timestamp and an NCCL ``host:pid:tid [dev] [file:line]`` head: ``head``, its ``key`` (the
    head without prefixes or timestamp) and whether the line has a leading time (``timed``, as
    :func:`_leading_times` would find it). Other texts are left out."""
    frame = split_prefix(heads.cast(pl.String, strict=False).to_frame("text").with_columns(
        (pl.col("text") + COLL_INFO).alias("raw")))
    frame = frame.join(prefix_fields(frame["prefix"]), on="prefix", how="left")
    parts = pl.col("body").str.strip_suffix("NCCL INFO ").str.extract_groups(COLL_HEAD_BODY)
    return (
        frame.with_columns(parts.struct.field("key").alias("key"))
        .filter(pl.col("key").is_not_null())
        .select(
            pl.col("text").cast(pl.Binary).alias("head"),
            "key",
            (pl.col("p_time").is_not_null() | pl.col("body").str.contains(ANY_LEADING_TIME)).alias("timed"),
        )
    )


def _valid_pointers(slices: pl.Series) -> pl.Series:
    """The distinct values of ``slices`` (the bytes after "comm ") that start with the whole pointer
    the pattern reads: it ends inside the slice, or the line does. (A slice that cut a character in
    two is not text, and not valid: its pointer, if any, does not end inside it.)"""
    distinct = slices.unique()
    text = pl.Series([text_of(value) for value in distinct], dtype=pl.String)  # a handful of values
    pointer = text.str.extract(COLL_POINTER, 0)
    whole = pointer.str.len_bytes() < text.str.len_bytes()
    return distinct.filter((pointer.is_not_null() & (whole | (distinct.bin.size() < COLL_SLICE))).fill_null(False))


def polars_group_keys(heads: list[bytes], comms: list[bytes]) -> list[tuple[str, bool] | None]:
    """:func:`logscope.parsers.coll_groups.group_keys` by the polars path, whatever the groups
    (the reference)."""
    kept = [n for n, (head, comm) in enumerate(zip(heads, comms, strict=True))
            if comm.isascii() and text_of(head) is not None]
    groups = pl.DataFrame(
        {"head": [heads[n] for n in kept], "comm": [comms[n] for n in kept], "idx": kept},
        schema={"head": pl.Binary, "comm": pl.Binary, "idx": pl.UInt32},
    )
    groups = _split_at_stamp(groups.lazy()).collect()
    valid = _keyed(groups).filter(pl.col("comm").is_in(_valid_pointers(groups["comm"]).implode()))
    keys: list[tuple[str, bool] | None] = [None] * len(heads)
    for idx, key, timed in valid.select("idx", "key", "timed").iter_rows():
        keys[idx] = (key, timed)
    return keys


def _split_at_stamp(groups: pl.LazyFrame) -> pl.LazyFrame:
    """Groups (``head``: the bytes before " NCCL INFO ") with ``head`` cut at NCCL's own timestamp,
    when it holds one: ``head`` the text before it, ``after`` the text after it (null without one).
    NCCL's timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS) changes line by line: split off, it leaves the
    groups a handful."""
    text, at = pl.col("head"), pl.col("_at")
    stamp_end = byte_find(text.bin.slice(at).cast(pl.String, strict=False), "] ") + 2
    return groups.with_columns(
        byte_find(text.cast(pl.String, strict=False), NCCL_STAMP, literal=False).alias("_at")
    ).with_columns(
        pl.when(at.is_null()).then(text).otherwise(text.bin.slice(0, at)),
        text.bin.slice(at + stamp_end).cast(pl.String, strict=False).alias("after"),
        text.bin.slice(at, stamp_end).cast(pl.String, strict=False).alias("_stamp"),
    ).drop("_at")


def byte_find(text: pl.Expr, pattern: str, *, literal: bool = True) -> pl.Expr:
    """Where ``pattern`` first starts in ``text``, in bytes (null where it does not): what
    ``str.find`` gives up to polars 2.1, which from 2.2 counts characters (``bin.slice`` counts
    bytes either way)."""
    found = text.str.find(pattern, literal=literal)
    if not _find_counts_characters():
        return found
    return pl.when(found.is_not_null()).then(text.str.slice(0, found).str.len_bytes())


@cache
def _find_counts_characters() -> bool:
    return bool(pl.Series(["\u00e9;"]).str.find(";", literal=True).item() == 1)


def _unreadable(stamps: pl.Series) -> pl.Series:
    """The distinct ``stamps`` (a chunk's NCCL timestamps, with their "] ") that do not read as a
    time the way a line's leading time is read (a byte lost or changed in a crash); a handful of
    values, one per second, each read once."""
    distinct = stamps.drop_nulls().unique()
    readable = distinct.to_frame("stamp").select(leading_time(pl.col("stamp"), _ANY_YEAR).is_not_null()).to_series()
    return distinct.filter(~readable)


_ANY_YEAR = 2000  # an NCCL stamp holds its year: the reference year is never read
