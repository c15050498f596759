"""Turn a chunk of raw log lines into event rows, with polars string expressions only.

Contract: :func:`parse_chunk` takes a frame of physical lines (``line``, ``raw``) and returns the
recognised events with every column of the timeline except ``file``/``node`` (the caller knows
them), plus the count of lines it recognised. Unknown lines are counted, never fatal; nothing
raises on odd bytes (the reader already decoded them lossily).

How one chunk is processed:

1. lines holding carriage returns (tqdm redraws, ``\\r``-glued output) are split into segments
   that keep their physical line number;
2. when the caller thins NCCL COLL lines (``coll_keep``), the COLL lines that the thinning would
   drop anyway are set aside before anything else (:func:`_coll_surplus`: substring searches and
   byte slices, checks per distinct value): they are counted as recognised, never classified.
   Most of a COLL-heavy log goes no further, and this step is most of what reading it costs;
3. launcher prefixes are split off (:mod:`logscope.parsers.prefixes`): one capture-free match per
   line, and what the prefixes say is worked out once per distinct prefix string;
4. a leading timestamp is parsed for every line that can start with one (a capture-free test
   picks them), so untimed events can take the time of the nearest timed line above them
   (``time_inferred``);
5. one Aho-Corasick pass finds which pattern triggers each remaining line contains; lines with
   none are unrecognised and dropped here;
6. each pattern's regex runs only on the lines holding its trigger; a line is the event of the
   first pattern, in table order, that matches it (:mod:`logscope.parsers.classify`).

Steps 1-5 are :func:`prepare_chunk`, per chunk; step 6 and the assembly of event rows are
:func:`finish_chunks`, for many chunks at once, since their cost is mostly a fixed ~10 ms a call
(a query per pattern). :func:`parse_chunk` is both for one chunk.

Every per-line step is a polars expression over the whole chunk; Python only loops over patterns
and distinct prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache

import polars as pl

from logscope.model import FIELD_SCHEMA, Event
from logscope.parsers.classify import classify
from logscope.parsers.patterns import PATTERNS, SUBJECT_IS_TARGET
from logscope.parsers.prefixes import prefix_fields, split_prefix
from logscope.parsers.timestamps import ANY_LEADING_TIME, leading_time, parse_event_time

MAX_TEXT = 4096  # characters of a line kept in the timeline; evidence never needs more

IDENTITY_GROUPS = ("host", "pid", "dev", "rank", "pg_rank", "local_rank")

# The COLL fast path (see _coll_surplus): a COLL line is cut at these literals, by byte offset.
_COLL_INFO = " NCCL INFO "
_COLL_TRIGGER = ": opCount "
_COLL_COMM = "comm "
_COLL_SLICE = 20  # bytes read after "opCount " and after "comm ": a 64-bit hex value and more
_COLL_OP_COUNT = r"^[A-Za-z]+: opCount [0-9a-fA-F]+ "
# What may stand before " NCCL INFO " once the launcher prefixes are off, given a trailing space:
# the NCCL_COLL pattern's head, its optional timestamp apart from the rest (the key).
_NCCL_STAMP = r"\[\d{4}-\d{2}-\d{2}[^\]]*\] "  # NCCL_DEBUG_TIMESTAMP_FORMAT's default, "[%F %T] "
_NCCL_HEAD = r"[^\s:\[\]]+:\d+:\d+ (?:\[\d+\] )?(?:[\w./-]+:\d+ )?"
_COLL_HEAD_BODY = r"^(?:" + _NCCL_STAMP + r")?(?P<key>" + _NCCL_HEAD + r")$"
# A COLL line with NCCL's own timestamp, and how many lines of a chunk are searched for one.
_STAMPED_COLL = _NCCL_STAMP + _NCCL_HEAD + r"NCCL INFO [A-Za-z]+: opCount "
_STAMP_SAMPLE = 4096
_COLL_POINTER = r"^(?:0x[0-9a-fA-F]+|\(nil\))"

# Columns of the frame parse_chunk returns, in order.
EVENT_COLUMNS: dict[str, pl.DataType] = {
    "line": pl.Int64(),
    "host": pl.String(),
    "pid": pl.Int64(),
    "local_rank": pl.Int64(),
    "rank": pl.Int64(),
    "task": pl.Int64(),
    "time": pl.Datetime("us"),
    "time_inferred": pl.Boolean(),
    "time_latest": pl.Datetime("us"),
    "source": pl.String(),
    "event": pl.String(),
    "severity": pl.String(),
    "fields": pl.Struct(FIELD_SCHEMA),
    "prefix": pl.String(),
    "text": pl.String(),
}


@dataclass
class ChunkResult:
    events: pl.DataFrame
    lines_recognised: int
    last_time: datetime | None  # the last timestamp seen in the chunk, carried into the next one


@cache
def _triggers() -> list[str]:
    return sorted({t for p in PATTERNS for t in p.triggers})


@dataclass
class PreparedChunk:
    """A chunk taken as far as it goes alone: its candidate lines, waiting to be classified
    together with other chunks' (see :func:`finish_chunks`)."""

    candidates: pl.DataFrame  # line, prefix, body, lead_time, near_time, next_time, kw (triggers held)
    set_aside: pl.Series  # line numbers of the COLL lines left out (recognised, never classified)
    was_split: bool  # some line was split at \r, so one line may be several rows
    last_time: datetime | None  # the last timestamp seen in the chunk, carried into the next one


def parse_chunk(lines: pl.DataFrame, reference_year: int, carry_time: datetime | None,
                coll_keep: tuple[int, int] | None = None) -> ChunkResult:
    """Recognise the events in ``lines`` (columns ``line``: Int64, ``raw``: String).

    ``coll_keep=(head, tail)``: the caller keeps only the first ``head`` and last ``tail`` NCCL
    COLL events per (host, pid, comm) of a file; COLL events of this chunk that cannot be among
    those are then left out of ``events`` (still counted in ``lines_recognised``).
    """
    return finish_chunks([prepare_chunk(lines, reference_year, carry_time, coll_keep)])[0]


def prepare_chunk(lines: pl.DataFrame, reference_year: int, carry_time: datetime | None,
                  coll_keep: tuple[int, int] | None = None, *, carriage_returns: bool = True) -> PreparedChunk:
    """Steps 1-5 of the module's recipe for one chunk: what :func:`parse_chunk` does before it
    classifies. Every per-line step of a chunk is here; what is left costs a fixed ~10 ms a call,
    whatever the number of lines, and is paid once for many chunks by :func:`finish_chunks`.

    ``carriage_returns=False``: the caller knows no line holds ``\\r`` (a byte search of the
    block costs far less than a search of every line)."""
    lines = _join_hard_wraps(lines)
    segments = _split_carriage_returns(lines) if carriage_returns else lines
    was_split = segments is not lines
    surplus = _coll_surplus(segments, *coll_keep) if coll_keep is not None else None
    if surplus is not None:
        set_aside = segments["line"].gather(surplus)
        segments = segments.filter(pl.repeat(True, segments.height, eager=True).scatter(surplus, False))
    else:
        set_aside = segments["line"].clear()
    frame = split_prefix(segments.with_row_index("idx"), "raw").drop("raw")
    if frame.height == 0:
        return PreparedChunk(_empty_candidates(), set_aside, was_split, carry_time)
    prefixes = prefix_fields(frame["prefix"])
    frame = frame.with_columns(_leading_times(frame, prefixes, reference_year))
    # Forward-fill time over every line, so an untimed event gets its nearest timed neighbour.
    # (The lines set aside above hold no time: they cannot change this.)
    near = pl.col("lead_time").forward_fill()
    if carry_time is not None:
        near = near.fill_null(pl.lit(carry_time, dtype=pl.Datetime("us")))
    candidates = frame.select(
        "line", "prefix", "body", "lead_time",
        near.alias("near_time"),
        pl.col("lead_time").backward_fill().alias("next_time"),
        pl.col("body").str.extract_many(_triggers(), overlapping=True).alias("kw"),
    ).filter(pl.col("kw").list.len() > 0)
    timed = frame["lead_time"].drop_nulls()
    return PreparedChunk(candidates, set_aside, was_split, timed[-1] if timed.len() else carry_time)


def finish_chunks(chunks: Sequence[PreparedChunk]) -> list[ChunkResult]:
    """Steps 6 on: classify the candidate lines of all ``chunks`` at once and build their events;
    one result per chunk, in order."""
    if not chunks:
        return []
    frame = pl.concat(
        [c.candidates.with_columns(pl.lit(n, dtype=pl.UInt32).alias("chunk")) for n, c in enumerate(chunks)]
    ).with_row_index("idx")
    events = _events(frame) if frame.height else None
    by_chunk = events.partition_by("chunk", as_dict=True) if events is not None and events.height else {}
    results = []
    for n, chunk in enumerate(chunks):
        found = by_chunk.get((n,))
        if found is None:
            results.append(ChunkResult(_empty_events(), chunk.set_aside.n_unique(), chunk.last_time))
            continue
        if not chunk.was_split:  # one row per line, and the two sets are disjoint
            recognised = found.height + chunk.set_aside.len()
        else:
            recognised = pl.concat([found["line"], chunk.set_aside]).n_unique()
        results.append(ChunkResult(found.select(list(EVENT_COLUMNS)), recognised, chunk.last_time))
    return results


def _events(frame: pl.DataFrame) -> pl.DataFrame | None:
    """The events of candidate rows (``idx``: row position, the PreparedChunk columns, ``chunk``),
    in row order, with the columns of EVENT_COLUMNS and ``chunk``; None when no row is one."""
    classified = classify(frame.select("idx", "body", "kw"))
    if classified.height == 0:
        return None
    # idx is the row position in frame: a gather, not a join.
    events = pl.concat([classified, frame[classified["idx"]].drop("idx", "kw")], how="horizontal")
    events = events.join(prefix_fields(events["prefix"]), on="prefix", how="left", maintain_order="left")
    events = events.with_columns(
        pl.coalesce("lead_time", _event_time()).alias("exact_time"),
    ).with_columns(
        pl.coalesce("exact_time", "near_time").alias("time"),
        pl.col("exact_time").is_null().alias("time_inferred"),
        pl.coalesce("exact_time", "next_time").alias("time_latest"),
        pl.coalesce("id_host", "p_host").alias("host"),
        pl.coalesce("id_pid", "p_pid").alias("pid"),
        pl.coalesce(
            "p_rank",
            "id_rank",
            pl.when(pl.col("fields").struct.field("pg").is_null() | pl.col("fields").struct.field("pg").is_in(
                ["0", "default_pg"])).then(pl.col("id_pg_rank")),
        ).alias("rank"),
        pl.coalesce("id_local_rank", "p_local_rank").alias("local_rank"),
        pl.col("p_task").alias("task"),
        pl.col("body").str.slice(0, MAX_TEXT).alias("text"),
    )
    # For "Sending process N closing signal" and "failed (exitcode..) local_rank: L (pid: P)" the
    # line is about the worker, not the agent that printed it.
    events = events.with_columns(
        pl.when(pl.col("event").is_in([e.value for e in SUBJECT_IS_TARGET]))
        .then(pl.col("fields").struct.field("target_pid"))
        .otherwise(pl.col("pid"))
        .alias("pid")
    )
    return events.sort("idx").select(*EVENT_COLUMNS, "chunk").cast(EVENT_COLUMNS)  # type: ignore[arg-type]


def _leading_times(frame: pl.DataFrame, prefixes: pl.DataFrame, reference_year: int) -> pl.Series:
    """``lead_time`` of every row of ``frame``: the time a line starts with (in its body, else in an
    app-time prefix), parsed only on the rows that can hold one."""
    lead = pl.repeat(None, frame.height, dtype=pl.Datetime("us"), eager=True).alias("lead_time")
    may = pl.col("body").str.contains(ANY_LEADING_TIME)
    app = prefixes.filter(pl.col("p_app_time").is_not_null()).select("prefix", "p_app_time")
    if app.height:
        may = may | pl.col("prefix").is_in(app["prefix"].to_list())
    rows = frame.select("idx", "body", "prefix").filter(may)
    if rows.height == 0:
        return lead
    if app.height:
        rows = rows.join(app, on="prefix", how="left", maintain_order="left")
        times = rows.select(
            pl.coalesce(_leading_time(reference_year, "body"), _leading_time(reference_year, "p_app_time"))
        )
    else:
        times = rows.select(_leading_time(reference_year, "body"))
    return lead.scatter(rows["idx"], times.to_series())


@cache
def _event_time() -> pl.Expr:
    return parse_event_time(pl.col("fields").struct.field("event_time").fill_null(""))


@cache
def _leading_time(reference_year: int, column: str) -> pl.Expr:
    return leading_time(pl.col(column).fill_null(""), reference_year)


def _coll_surplus(lines: pl.DataFrame, head: int, tail: int) -> pl.Series | None:
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
    data = raw.cast(pl.Binary)  # byte offsets (str.find) need byte slices: lines may hold any UTF-8
    at_info, at_op, at_comm, at = pl.col("_info"), pl.col("_op"), pl.col("_comm"), pl.col("_at")
    coll = (
        lines.lazy()
        .select(
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("idx"),
            raw,
            raw.str.find(_COLL_INFO, literal=True).alias("_info"),
            raw.str.find(_COLL_TRIGGER, literal=True).alias("_op"),
        )
        .filter(at_info < at_op)
        .with_columns(raw.str.find(_COLL_COMM, literal=True).alias("_comm"))
        .filter(at_comm > at_op)
        .select(
            "idx",
            data.bin.slice(0, at_info).alias("head"),
            data.bin.slice(at_comm + len(_COLL_COMM), _COLL_SLICE).alias("comm"),
            # From the operation to the op count and the space after it, checked by an anchored
            # regex on this short slice (a regex search of the whole line costs more).
            data.bin.slice(at_info + len(_COLL_INFO), at_op - at_info - len(_COLL_INFO) + len(_COLL_TRIGGER)
                           + _COLL_SLICE).cast(pl.String, strict=False).alias("_op_count"),
        )
        .filter(pl.col("_op_count").str.contains(_COLL_OP_COUNT))
    )
    if lines.head(_STAMP_SAMPLE).select(raw.str.contains(_STAMPED_COLL).any()).item():
        # NCCL's own timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS) changes line by line: the head is
        # split at it, so that the groups stay a handful. (A chunk whose first lines show none is
        # not split: what it holds is still checked per distinct head, only at a higher cost.)
        text = pl.col("head")
        coll = coll.with_columns(text.cast(pl.String, strict=False).str.find(_NCCL_STAMP).alias("_at")).with_columns(
            pl.when(at.is_null()).then(text).otherwise(text.bin.slice(0, at)),
            text.bin.slice(at + text.bin.slice(at).cast(pl.String, strict=False).str.find("] ", literal=True) + 2)
            .cast(pl.String, strict=False).alias("after"),
        )
        groups = coll.group_by("head", "after", "comm").agg("idx").collect()
    else:
        groups = coll.group_by("head", "comm").agg("idx").collect().with_columns(
            pl.lit(None, dtype=pl.String).alias("after"))
    # A handful of groups: their heads and pointers are checked here, once each. A valid head
    # gets its key: the NCCL head without a timestamp in front (launcher prefixes dropped too:
    # the host and pid that follow name the process).
    groups = _keyed(groups).filter(pl.col("comm").is_in(_valid_pointers(groups["comm"].unique()).implode()))
    if groups.height == 0:
        return None
    count = pl.col("idx").list.len().cast(pl.Int64)
    if not groups["timed"].any():
        # No line set aside has a time: a group is a key already, or a part of one.
        surplus = groups.select(pl.col("idx").list.slice(head, (count - head - tail).clip(0)).explode()).to_series()
    else:
        surplus = _untimed_or_unneeded(groups, head, tail)
    surplus = surplus.drop_nulls()
    return surplus if surplus.len() else None


def _untimed_or_unneeded(groups: pl.DataFrame, head: int, tail: int) -> pl.Series:
    """The surplus rows of COLL lines some of which carry a time (NCCL_DEBUG_TIMESTAMP_LEVELS):
    a group per (key, comm), the key leaving out the time, so lines of one second and the next
    are one group. Set aside, a timed line would take its time away from the lines around it
    (an untimed event takes its time from the nearest timed lines above and below, and a chunk
    hands its last time to the next). So in every run of lines set aside back to back, the
    first and the last timed one stay: those are the only ones any other line can take a time
    from. They become events the caller's thinning drops again."""
    rows = groups.select("key", "comm", "timed", "idx").explode("idx").sort("idx")
    key = [pl.col("key"), pl.col("comm")]
    position = pl.int_range(pl.len()).over(key)
    rows = rows.with_columns(
        ((position >= head) & (position < pl.len().over(key).cast(pl.Int64) - tail)).alias("surplus")
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
        (pl.col("after") + " ").str.contains("^" + _NCCL_HEAD + "$")
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
        (pl.col("text") + _COLL_INFO).alias("raw")))
    frame = frame.join(prefix_fields(frame["prefix"]), on="prefix", how="left")
    parts = pl.col("body").str.strip_suffix("NCCL INFO ").str.extract_groups(_COLL_HEAD_BODY)
    return (
        frame.with_columns(parts.struct.field("key").alias("key"))
        .filter(pl.col("key").is_not_null())
        .select(
            pl.col("text").cast(pl.Binary).alias("head"),
            "key",
            (pl.col("p_app_time").is_not_null() | pl.col("body").str.contains(ANY_LEADING_TIME)).alias("timed"),
        )
    )


def _valid_pointers(slices: pl.Series) -> pl.Series:
    """The distinct slices after "comm " that start with the whole pointer the pattern reads: it
    ends inside the slice, or the line does."""
    text = slices.cast(pl.String, strict=False)
    pointer = text.str.extract(_COLL_POINTER, 0)
    whole = pointer.str.len_bytes() < text.str.len_bytes()
    return slices.filter((pointer.is_not_null() & (whole | (slices.bin.size() < _COLL_SLICE))).fill_null(False))


# A paste hard-wrapped at a fixed width (a terminal, a browser): a line of exactly the widest length
# continues on the next one, unless that one starts a record of its own. Only a chunk that shows the
# cut is joined: at least WRAP_MIN_CUT distinct lines of exactly that width, at least two of them
# continued. Pastes are small; a chunk of a job's own log is never looked at (its longest lines
# can share a length: NCCL's COLL lines). Elsewhere a line means the same alone or among others.
WRAP_MAX_LINES = 5000
WRAP_WIDTHS = (60, 400)
WRAP_MIN_CUT = 4
_RECORD_START = r"^(?:\[|\(|[A-Z]|\S+:\d+:\d+ |\d{1,6}: |\d{4}-\d\d-\d\d|[IWEF]\d{4} )"


def _join_hard_wraps(lines: pl.DataFrame) -> pl.DataFrame:
    """``lines`` with each hard-wrapped line joined to its continuation (the joined row keeps the
    first line's number; the continuation's row goes). A line is cut when it has the paste's width,
    does not end in a space (a padded paste pads every line to the width) and the next line starts
    no record."""
    if lines.height < 3 or lines.height > WRAP_MAX_LINES:
        return lines
    length = pl.col("raw").str.len_chars()
    width = lines.select(length.max()).item()
    if width is None or not WRAP_WIDTHS[0] <= width <= WRAP_WIDTHS[1]:
        return lines
    if lines.filter(length == width)["raw"].n_unique() < WRAP_MIN_CUT:
        return lines
    cut = ((length == width) & ~pl.col("raw").str.ends_with(" ")
           & ~pl.col("raw").shift(-1).fill_null("[").str.contains(_RECORD_START))
    if lines.select(cut.sum()).item() < 2:
        return lines
    for _ in range(3):  # a record wrapped over up to four lines
        marked = lines.with_columns(cut.alias("_wraps"))
        # a continuation that is cut again is joined on the next pass
        marked = marked.with_columns(pl.col("_wraps") & ~pl.col("_wraps").shift(1).fill_null(False))
        if not marked["_wraps"].any():
            break
        lines = marked.with_columns(
            pl.when(pl.col("_wraps")).then(pl.col("raw") + pl.col("raw").shift(-1)).otherwise(pl.col("raw"))
            .alias("raw")
        ).filter(~(pl.col("_wraps").shift(1).fill_null(False))).drop("_wraps")
    return lines


def _split_carriage_returns(lines: pl.DataFrame) -> pl.DataFrame:
    """Rows with ``\\r`` become one row per non-empty segment, keeping the line number; ``lines``
    itself when there is none."""
    has_cr = pl.col("raw").str.contains("\r", literal=True).fill_null(False)
    if not lines.select(has_cr.any()).item():
        return lines
    split = (
        lines.filter(has_cr)
        .with_columns(pl.col("raw").str.split("\r"))
        .explode("raw")
        .filter(pl.col("raw").str.strip_chars() != "")
    )
    return pl.concat([lines.filter(~has_cr), split]).sort("line", maintain_order=True)


def _empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENT_COLUMNS)


def _empty_candidates() -> pl.DataFrame:
    return pl.DataFrame(schema={"line": pl.Int64, "prefix": pl.String, "body": pl.String,
                                "lead_time": pl.Datetime("us"), "near_time": pl.Datetime("us"),
                                "next_time": pl.Datetime("us"), "kw": pl.List(pl.String)})


__all__ = ["EVENT_COLUMNS", "ChunkResult", "Event", "PreparedChunk", "finish_chunks", "parse_chunk", "prepare_chunk"]
