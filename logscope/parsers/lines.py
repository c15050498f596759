"""Turn a chunk of raw log lines into event rows, with polars string expressions only.

Contract: :func:`parse_chunk` takes a frame of physical lines (``line``, ``raw``) and returns the
recognised events with every column of the timeline except ``file``/``node`` (the caller knows
them), plus the count of lines it recognised. Unknown lines are counted, never fatal; nothing
raises on odd bytes (the reader already decoded them lossily).

How one chunk is processed:

1. lines holding carriage returns (tqdm redraws, ``\\r``-glued output) are split into segments
   that keep their physical line number;
2. when the caller thins NCCL COLL lines (``coll_keep``), the COLL lines that the thinning would
   drop anyway are set aside before anything else (:mod:`logscope.parsers.coll_aside`: substring
   searches and byte slices, checks per distinct value): they are counted as recognised, never classified.
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
from datetime import datetime, timedelta
from functools import cache

import polars as pl

from logscope.knowledge import RECOGNISERS
from logscope.limits import WRAP_MAX_LINES
from logscope.model import FIELD_SCHEMA, SUBJECT_IS_TARGET, Event
from logscope.parsers.channel_aside import channel_surplus
from logscope.parsers.classify import classify
from logscope.parsers.coll_aside import coll_surplus
from logscope.parsers.envelopes import opened
from logscope.parsers.prefix_stack import PREFIX_STACK, TIME_TEXT
from logscope.parsers.prefixes import WRAPPER_SAMPLE, prefix_fields, split_prefix_of_files, timeless, times_of
from logscope.parsers.progress_aside import progress_surplus
from logscope.parsers.regex_ascii import ascii_classes
from logscope.parsers.repeats import Wordings, repeat_surplus
from logscope.parsers.time_forms import BODY_TIME_START
from logscope.parsers.timestamps import ANY_LEADING_TIME, YEARLESS_TIME, leading_time, leading_times, parse_event_time
from logscope.stacking import positions, stacked, unstacked

MAX_TEXT = 4096  # characters of a line kept in the timeline; evidence never needs more

IDENTITY_GROUPS = ("host", "pid", "dev", "rank", "pg_rank", "local_rank")


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
    # The first timestamp of the chunk's lines: the latest time of the untimed events at the end of
    # the file's chunks before it, which no line of their own chunk gives (reading._Reading.add).
    first_time: datetime | None = None


@cache
def message_triggers() -> list[str]:
    """Every trigger of the table: a line that holds none is no candidate (see _candidates)."""
    return sorted({t for m in RECOGNISERS for t in m.triggers})


@dataclass
class PreparedChunk:
    """A chunk taken as far as it goes alone: its candidate lines, waiting to be classified
    together with other chunks' (see :func:`finish_chunks`)."""

    candidates: pl.DataFrame  # line, prefix, who, body, raw, lead_time, near_time, next_time, kw (triggers held)
    set_aside: pl.Series  # line numbers of the COLL, progress and channel lines left out (recognised, never classified)
    was_split: bool  # some line was split at \r, so one line may be several rows
    last_time: datetime | None  # the last timestamp seen in the chunk, carried into the next one
    # COLL lines dropped before the chunk was framed (logscope.ingest.coll_prefilter): recognised.
    set_aside_before: int = 0
    first_time: datetime | None = None  # the first timestamp of its lines (see ChunkResult)
    # Lines a restart loop repeats, set aside before anything else (logscope.parsers.repeats.Repeats
    # .counted): for each line kept that some are counted against, its number and how many.
    repeated: pl.DataFrame | None = None


def parse_chunk(lines: pl.DataFrame, reference_year: int, carry_time: datetime | None,
                coll_keep: tuple[int, int] | None = None) -> ChunkResult:
    """Recognise the events in ``lines`` (columns ``line``: Int64, ``raw``: String).

    ``coll_keep=(head, tail)``: the caller keeps only the first ``head`` and last ``tail`` NCCL
    COLL events per (host, pid, comm) of a file; COLL events of this chunk that cannot be among
    those are then left out of ``events`` (still counted in ``lines_recognised``).
    """
    return finish_chunks([prepare_chunk(lines, reference_year, carry_time, coll_keep)])[0]


def prepare_chunk(lines: pl.DataFrame, reference_year: int, carry_time: datetime | None,
                  coll_keep: tuple[int, int] | None = None, *, carriage_returns: bool = True,
                  join_wraps: bool = True, set_aside_before: int = 0,
                  progress_keep: tuple[int, int] | None = None, channels_aside: bool = False,
                  repeat_keep: tuple[int, int] | None = None, wordings: Wordings | None = None,
                  repeated: pl.DataFrame | None = None) -> PreparedChunk:
    """Steps 1-5 of the module's recipe for one chunk: what :func:`parse_chunk` does before it
    classifies. Every per-line step of a chunk is here; what is left costs a fixed ~10 ms a call,
    whatever the number of lines, and is paid once for many chunks by :func:`finish_chunks`.

    ``carriage_returns=False``: the caller knows no line holds ``\\r`` (a byte search of the
    block costs far less than a search of every line). ``join_wraps=False``, ``set_aside_before``:
    ``lines`` are what is left of a block of more than WRAP_MAX_LINES lines once
    ``set_aside_before`` COLL lines were dropped (:mod:`logscope.ingest.coll_prefilter`); such a
    block is no paste, so its lines are not joined, whatever is left. ``progress_keep=(head, tail)``:
    as ``coll_keep``, for training-progress lines per process (:mod:`logscope.parsers.progress_aside`).
    ``channels_aside``: NCCL's channel lines the thinning drops are set aside
    (:mod:`logscope.parsers.channel_aside`).
    ``repeat_keep=(head, tail)``: the lines a restart loop repeats are set aside but the first
    ``head`` and last ``tail`` of each wording (:mod:`logscope.parsers.repeats`), in a chunk whose
    lines are one row each, their wordings read by ``wordings`` when given (the compiled
    scanner's), else by polars. ``repeated``: lines a restart loop repeats were set aside before
    the chunk was framed (:mod:`logscope.ingest.repeat_prefilter`): the lines kept they are counted
    against, and how many (as ``Repeats.counted``)."""
    if join_wraps:
        lines = _join_hard_wraps(lines)
    segments = _split_carriage_returns(lines) if carriage_returns else lines
    was_split = segments is not lines
    surplus = coll_surplus(segments, *coll_keep) if coll_keep is not None else None
    if surplus is not None:
        set_aside = segments["line"].gather(surplus)
        segments = _without_rows(segments, surplus)
    else:
        set_aside = segments["line"].clear()
    repeats = (repeat_surplus(segments, *repeat_keep, wordings=wordings) if repeat_keep is not None and not was_split
               else None)
    if repeats is not None:
        segments = _without_rows(segments, repeats.surplus)
    candidates, last_time, first_time = _candidates(segments, reference_year, carry_time)
    progress = progress_surplus(candidates, *progress_keep) if progress_keep is not None else None
    channels = channel_surplus(candidates) if channels_aside else None
    aside = [rows for rows in (progress, channels) if rows is not None]
    if aside:
        rows = pl.concat(aside) if len(aside) > 1 else aside[0]
        set_aside = pl.concat([set_aside, candidates["line"].gather(rows)])
        candidates = _without_rows(candidates, rows)
    counted = [c for c in (repeated, repeats.counted if repeats is not None else None) if c is not None]
    return PreparedChunk(candidates, set_aside, was_split, last_time, set_aside_before, first_time,
                         pl.concat(counted) if len(counted) > 1 else counted[0] if counted else None)


def _without_rows(frame: pl.DataFrame, positions: pl.Series) -> pl.DataFrame:
    """``frame`` without the rows at ``positions`` (the lines set aside)."""
    return frame.filter(pl.repeat(True, frame.height, eager=True).scatter(positions, False))


def prepare_files(files: Sequence[pl.DataFrame], set_aside_before: Sequence[int], reference_year: int, *,
                  carriage_returns: bool = True, join_wraps: Sequence[bool] | None = None,
                  repeated: Sequence[pl.DataFrame | None] | None = None) -> list[PreparedChunk]:
    """:func:`prepare_chunk` for several whole files at once, one PreparedChunk per file: a call's
    fixed cost paid once for many files. Each of ``files`` is every line a file has left once
    ``set_aside_before`` of its COLL lines were dropped (:mod:`logscope.ingest.coll_prefilter`, its
    blocks of more than WRAP_MAX_LINES lines: no paste to unwrap), or a small file whole (its
    ``join_wraps`` true: its hard-wrapped lines are joined, as prepare_chunk joins them), all in one
    ``reference_year``; each starts with no time carried, none has lines set aside (COLL or
    progress: prepare_chunk sets them aside in big chunks only; ``repeated``: per file, as
    prepare_chunk's). Times are taken within a file only."""
    if join_wraps is not None:
        files = _joined_hard_wraps(files, join_wraps)
    frame = stacked(files, {"_file": positions(len(files))})
    segments = _split_carriage_returns(frame, by="_file") if carriage_returns else frame
    # Each file is all its file (pooled whole: reading._Batch._take), so no chunk of its file comes
    # before or after it: it carries no time to a next chunk, nor a first time to earlier ones.
    candidates, _, _ = _candidates(segments, reference_year, None, by="_file")
    parts = unstacked(candidates, "_file", len(files))
    return [PreparedChunk(part if part.height else _empty_candidates(), pl.Series("line", [], dtype=pl.Int64),
                          segments is not frame, None, aside, repeated=counted)
            for part, aside, counted in zip(parts, set_aside_before, repeated or [None] * len(files), strict=True)]


def _candidates(segments: pl.DataFrame, reference_year: int, carry_time: datetime | None,
                by: str | None = None) -> tuple[pl.DataFrame, datetime | None, datetime | None]:
    """Steps 3-5: the candidate lines of ``segments`` (``line``, ``raw``, and ``by`` when given:
    the file each line is of, times then taken within a file), and the last and the first time
    seen (of one chunk: with ``by``, None)."""
    frame = split_prefix_of_files(opened(segments, "raw", by).with_row_index("idx"), "raw", by)
    if frame.height == 0:
        return (_empty_candidates() if by is None else segments.select(by).clear().hstack(_empty_candidates()),
                carry_time, None)
    frame = frame.with_columns(timeless(pl.col("prefix")).alias("who"))
    frame = frame.with_columns(_leading_times(frame, reference_year, by))
    # Forward-fill time over every line, so an untimed event gets its nearest timed neighbour
    # (within its file). The lines set aside above hold no time: they cannot change this.
    near = pl.col("lead_time").forward_fill()
    later = pl.col("lead_time").backward_fill()
    if by is not None:
        near, later = near.over(by), later.over(by)
    if carry_time is not None:
        near = near.fill_null(pl.lit(carry_time, dtype=pl.Datetime("us")))
    # A message is looked for in the whole line (its wrappers and launcher prefixes included: a
    # message no wrapper can hide); the prefixes only say who wrote it and when. A line that only
    # quotes (a traceback's source lines, the traceback torchrun reprints) says nothing itself.
    frame = _without_quoted(frame, by)
    # The lines holding no trigger go first (a boolean pass), before the triggers of the others
    # are listed (a list of strings a line: ~15x the cost); each line's neighbours' times are
    # taken before either.
    candidates = frame.select(
        *([by] if by is not None else []), "line", "prefix", "who", "body", "raw", "lead_time",
        near.alias("near_time"),
        later.alias("next_time"),
    ).filter(pl.col("raw").str.contains_any(message_triggers())).with_columns(
        pl.col("raw").str.extract_many(message_triggers(), overlapping=True).alias("kw"))
    if by is not None:
        return candidates, None, None
    timed = frame["lead_time"].drop_nulls()
    return candidates, timed[-1] if timed.len() else carry_time, timed[0] if timed.len() else None


def described(lines: pl.DataFrame, reference_year: int) -> pl.DataFrame:
    """The candidate lines of ``lines`` (``line``, ``raw``: one chunk, no time carried into it) as a
    chunk's are read before they are classified: ``line``, ``prefix``, ``who``, ``body``, ``raw``
    (its envelope opened), ``lead_time`` and ``kw`` (the triggers each holds). A line that only
    quotes, or holds no trigger, has no row. What :mod:`logscope.ingest.progress_prefilter` asks
    of one line of each shape of a block."""
    return _candidates(lines, reference_year, None)[0]


# A traceback's frame line (CPython's traceback.c / traceback.py: '  File "%s", line %d, in %s'):
# the lines its process writes after it, up to the next frame or the exception, are source code.
_FRAME_LINE = ascii_classes(r'\bFile "[^"]*", line \d+, in ')
# torchrun's ChildFailedError report (torch/distributed/elastic/multiprocessing/errors/__init__.py)
# prints each failure's error-file traceback under "traceback :", up to the report's closing line
# of "=" (or the "-" line before its next entry): a copy of what the worker printed, which the record
# itself stands for.
# The head c10's and torch.distributed.elastic's loggers write on every line of a multi-line message.
_LOGGER_HEAD = ascii_classes(r"^\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)?(?: +\d+)? [\w./-]+:\d+\] ?")
_REPRINT_START = ascii_classes(r"\btraceback\s*: Traceback \(most recent call last\)")
_REPORT_END = ascii_classes(r"^\s*(?:={20,}|-{20,})\s*$")


def _without_quoted(frame: pl.DataFrame, by: str | None) -> pl.DataFrame:
    """``frame`` (``raw``, ``body``, ``prefix``, ``who``, in file order) without the lines that only
    quote text that says nothing of their own: the source line under a traceback's frame line (its
    process's next line, indented deeper than the frame), and the traceback torchrun reprints in
    its ChildFailedError report (see above). Such a line may hold any message (``raise
    RendezvousClosedError``, a comment): it is not one. Each test is made only where its literal
    is in the frame, and a line's indent only beside a frame line: most chunks hold neither."""
    raw = frame["raw"]
    frames = bool(raw.str.contains('File "', literal=True).any())
    reprints = bool(raw.str.contains("Traceback (most recent call last)", literal=True).any())
    if not frames and not reprints:
        return frame
    quoted = pl.lit(False)
    if frames:
        quoted = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(_under_frame_rows(frame, by).implode())
    if reprints:
        quoted = quoted | _inside_reprint(by)
    return frame.filter(~quoted)


def _under_frame_rows(frame: pl.DataFrame, by: str | None) -> pl.Series:
    """Row positions of the source lines under a traceback's frame lines (see _without_quoted): its
    test is made on the frame lines and the lines after them only, each beside the one before."""
    frame_line = pl.col("raw").str.contains(_FRAME_LINE)
    after_frame = frame_line.shift(1)
    if by is not None:
        after_frame = after_frame.over(by)
    near = (frame.lazy().with_row_index("_row").filter(frame_line.fill_null(False) | after_frame.fill_null(False))
            .collect())
    writer = pl.col("who").fill_null("").str.replace_all(r"\s", "")
    # How far the text is indented once its launcher prefixes and a C++ logger's head are off.
    prefix = pl.col("prefix").fill_null("")
    text = pl.col("body").str.replace(_LOGGER_HEAD, "")
    indent = (prefix.str.len_chars() - prefix.str.strip_chars_end().str.len_chars()
              + text.str.len_chars() - text.str.strip_chars_start().str.len_chars())
    # A line's predecessor among these rows is the line before it in its file when that one is a
    # frame line: the only rows the test can hold for.
    under_frame = (frame_line.shift(1).fill_null(False) & (writer == writer.shift(1)) & ~frame_line
                   & (indent > indent.shift(1)))
    if by is not None:
        under_frame = under_frame.over(by)
    return near.filter(under_frame)["_row"]


def _inside_reprint(by: str | None) -> pl.Expr:
    """Whether a line is inside the traceback torchrun reprints (see _without_quoted)."""
    reprint: pl.Expr = (pl.when(pl.col("raw").str.contains(_REPRINT_START)).then(True)
                        .when(pl.col("body").str.contains(_REPORT_END)).then(False))
    if by is not None:
        reprint = reprint.over(by)
    return reprint.forward_fill().fill_null(False) & ~pl.col("raw").str.contains(_REPRINT_START)


def finish_chunks(chunks: Sequence[PreparedChunk]) -> list[ChunkResult]:
    """Steps 6 on: classify the candidate lines of all ``chunks`` at once and build their events;
    one result per chunk, in order."""
    if not chunks:
        return []
    frame = stacked([c.candidates for c in chunks], {"chunk": positions(len(chunks))}).with_row_index("idx")
    events = _events(frame) if frame.height else None
    parts = unstacked(events, "chunk", len(chunks)) if events is not None and events.height else None
    results = []
    for n, chunk in enumerate(chunks):
        found = parts[n] if parts is not None and parts[n].height else _empty_events()
        if not chunk.was_split:  # one row per line, and the two sets are disjoint
            recognised = found.height + chunk.set_aside.len()
        else:
            recognised = pl.concat([found["line"], chunk.set_aside]).n_unique()
        recognised += chunk.set_aside_before  # lines of their own: none holds \r (see coll_prefilter)
        if chunk.repeated is not None:
            # As the line kept at their place in their key's first group is: classified, or set
            # aside as certain (a channel line another one of its process said before).
            said = pl.concat([found["line"], chunk.set_aside])
            recognised += int(chunk.repeated.filter(pl.col("line").is_in(said.implode()))["count"].sum())
        results.append(ChunkResult(found, recognised, chunk.last_time, chunk.first_time))  # EVENT_COLUMNS
    return results


def printer(column: str) -> pl.Expr:
    """A prefix's identity of the process that printed a line: null where the line is about the
    process it names (the catalogue's blame "named")."""
    return pl.when(~pl.col("named")).then(pl.col(column))


def _events(frame: pl.DataFrame) -> pl.DataFrame | None:
    """The events of candidate rows (``idx``: row position, the PreparedChunk columns, ``chunk``),
    in row order, with the columns of EVENT_COLUMNS and ``chunk``; None when no row is one."""
    classified = classify(frame.select("idx", pl.col("raw").alias("body"), "kw"))
    if classified.height == 0:
        return None
    # idx is the row position in frame: a gather, not a join.
    events = pl.concat([classified, frame[classified["idx"]].drop("idx", "kw", "raw")], how="horizontal")
    events = events.join(prefix_fields(events["who"]).drop("p_time", "p_outer_time").rename({"prefix": "who"}),
                         on="who", how="left", maintain_order="left")
    events = events.with_columns(
        pl.coalesce("lead_time", _event_time()).alias("exact_time"),
    ).with_columns(
        pl.coalesce("exact_time", "near_time").alias("time"),
        pl.col("exact_time").is_null().alias("time_inferred"),
        pl.coalesce("exact_time", "next_time").alias("time_latest"),
        # A message about the process it names (NCCL's root naming a rank that checked in twice)
        # is that process's: its identity is what the message says, the printer's prefixes say
        # nothing of it.
        pl.coalesce("id_host", printer("p_host")).alias("host"),
        pl.coalesce("id_pid", printer("p_pid")).alias("pid"),
        pl.when(pl.col("named")).then(pl.col("id_rank")).otherwise(pl.coalesce(
            "p_rank",
            "id_rank",
            pl.when(pl.col("fields").struct.field("pg").is_null() | pl.col("fields").struct.field("pg").is_in(
                ["0", "default_pg"])).then(pl.col("id_pg_rank")),
        )).alias("rank"),
        pl.coalesce("id_local_rank", printer("p_local_rank")).alias("local_rank"),
        printer("p_task").alias("task"),
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


# Two clocks in one file (a shipper's or a wrapper's time in front of the time the process
# logged) are one clock when they agree up to a constant offset (a time zone, the shipping delay)
# within this spread, over the lines that carry both.
CLOCKS_AGREE = timedelta(seconds=60)
# Lines at one and the same time, from which on a file's outer clock is taken as frozen.
FROZEN_CLOCK_LINES = 3


def _leading_times(frame: pl.DataFrame, reference_year: int, by: str | None = None) -> pl.Series:
    """``lead_time`` of every row of ``frame`` (``body``, ``prefix`` and ``who``, its prefix
    without times): the time the line was written.

    A line's own time is its innermost one: a time its body starts with (glog's), else the
    innermost time of its stack of prefixes (a logger's, NCCL's). A time in front of that one (a
    log shipper's, a wrapper's) is a second clock: where the lines that carry both show the two
    clocks agreeing up to a constant offset (:data:`CLOCKS_AGREE`), a line that carries only the
    outer time gets it, moved by that offset; where they do not (a clock of another machine), or
    where the outer time never changes (a wrapper that wrote one time in front of every line:
    :data:`FROZEN_CLOCK_LINES`), the outer clock is no clock of the processes, and such a line gets
    no time of its own (its neighbours' then). ``by``: the file each row is of (each file has its
    own clocks); else the frame is one file's chunk. Times are parsed only on the rows that can
    hold one."""
    none = pl.lit(None, dtype=pl.Datetime("us"))
    no_times = pl.repeat(None, frame.height, dtype=pl.Datetime("us"), eager=True).alias("lead_time")
    stamped = pl.col("prefix") != pl.col("who")  # a time was taken out of its prefix
    rows = frame.select("idx", "body", "prefix", "who", *([by] if by else [])).filter(
        stamped.fill_null(False) | pl.col("body").str.contains(ANY_LEADING_TIME))
    if rows.height == 0:
        return no_times
    outer_text, inner_text = times_of(pl.col("prefix"))
    rows = rows.with_columns(
        pl.when(stamped).then(outer_text).alias("p_outer_time"),
        pl.when(stamped).then(inner_text).alias("p_time"),
    )
    inner, outer_time = _each_parsed_once([rows["p_time"], rows["p_outer_time"]], reference_year)
    rows = rows.with_columns(
        _body_times(rows["body"], reference_year).alias("_body_time"),
        inner.alias("_inner"),
        outer_time.alias("_outer"),
    ).with_columns(
        pl.coalesce("_body_time", "_inner").alias("_own"),
        # A line carries two clocks when its body's time or its inner prefix time stands behind an
        # outer prefix time of other text.
        (pl.col("_outer").is_not_null()
         & (pl.col("_body_time").is_not_null() | (pl.col("p_time") != pl.col("p_outer_time")))).alias("_two"),
    )
    offset = pl.when(pl.col("_two")).then(pl.col("_own") - pl.col("_outer"))
    spread, shift = offset.max() - offset.min(), offset.median()
    # An outer time that never changes over the file's lines (one time written in front of every
    # line) orders nothing: it is no clock either.
    outer = pl.col("_outer").drop_nulls()
    frozen = (outer.n_unique() == 1) & (outer.len() >= FROZEN_CLOCK_LINES)
    if by is not None:
        spread, shift, frozen = spread.over(by), shift.over(by), frozen.over(by)
    agree = (spread.is_null() | (spread <= CLOCKS_AGREE)) & ~frozen
    # A line with one time is on the outer clock when its time has the outer clock's form (its
    # text, digits aside, as the outer times of the lines with two); another form is its own time.
    # Most files carry one clock: no line has two, and no form is the outer clock's.
    on_outer_clock = pl.lit(False)
    if rows["_two"].any():
        shape = pl.col("p_outer_time").str.replace_all(r"[0-9]", "0").alias("_shape")
        rows = rows.with_columns(shape)
        outer_forms = rows.filter(pl.col("_two")).select(*([by] if by else []), "_shape").unique().with_columns(
            pl.lit(True).alias("_outer_form"))
        rows = rows.join(outer_forms, on=[*([by] if by else []), "_shape"], how="left", maintain_order="left")
        on_outer_clock = pl.col("_outer_form").fill_null(False)
    rows = rows.with_columns(
        pl.when(pl.col("_two")).then(pl.col("_own"))
        .when(pl.col("_body_time").is_not_null()).then(pl.col("_body_time"))
        .when(on_outer_clock & agree).then(pl.col("_outer") + shift.fill_null(timedelta(0)))
        .when(~on_outer_clock & ~frozen).then(pl.col("_outer"))
        .otherwise(none).alias("lead_time"),
        pl.when(pl.col("_body_time").is_not_null()).then(pl.col("body"))
        .when(pl.col("_two") | (on_outer_clock & agree) | (~on_outer_clock & ~frozen)).then(pl.col("p_time"))
        .alias("_text"),
    )
    rows = rows.with_columns(pl.col("_text").str.contains(YEARLESS_TIME).fill_null(False).alias("_yearless"))
    times = (rows.select(_in_the_files_year(pl.col("lead_time"), pl.col("_yearless"), by)).to_series()
             if rows["_yearless"].any() else rows["lead_time"])
    return no_times.scatter(rows["idx"], times)


def _in_the_files_year(time: pl.Expr, yearless: pl.Expr, by: str | None) -> pl.Expr:
    """``time``, where its form carries no year (``yearless``: glog, syslog; the reference year was
    given), moved into the year that puts it nearest the median of the file's times that carry
    their year: a file whose first date is a wrapper's of another year, or that has none where it
    starts, still dates its glog lines by its own clock."""
    anchor = pl.when(~yearless).then(time).median()
    if by is not None:
        anchor = anchor.over(by)
    years = (anchor.dt.year() - time.dt.year()).cast(pl.String)
    moved = time.dt.offset_by(years + "y")
    nearest = pl.min_horizontal(*[(moved.dt.offset_by(step) - anchor).abs() for step in ("-1y", "0y", "1y")])
    best = (pl.when((moved.dt.offset_by("-1y") - anchor).abs() == nearest).then(moved.dt.offset_by("-1y"))
            .when((moved - anchor).abs() == nearest).then(moved)
            .otherwise(moved.dt.offset_by("1y")))
    return pl.when(yearless & anchor.is_not_null() & time.is_not_null()).then(best).otherwise(time).alias("lead_time")


@cache
def _event_time() -> pl.Expr:
    return parse_event_time(pl.col("fields").struct.field("event_time").fill_null(""))


def _each_parsed_once(columns: Sequence[pl.Series], reference_year: int) -> list[pl.Series]:
    """The time at the start of each text of ``columns`` (null: none), each distinct text of them
    all parsed once: the lines of one second (every rank's step) share their prefix's time text,
    and a line's inner and outer time are one text when it carries one."""
    distinct = pl.concat([texts.drop_nulls() for texts in columns]).unique()
    parsed = pl.DataFrame({"_text": distinct, "_time": leading_times(distinct, reference_year)})
    return [texts.to_frame("_text").join(parsed, on="_text", how="left", maintain_order="left")["_time"]
            for texts in columns]


def _body_times(bodies: pl.Series, reference_year: int) -> pl.Series:
    """The time each of ``bodies`` starts with (null: none), parsed only where one of its forms
    starts it (most lines whose prefix holds their time hold none in their body)."""
    none = pl.repeat(None, bodies.len(), dtype=pl.Datetime("us"), eager=True)
    starts = bodies.str.contains(BODY_TIME_START).fill_null(False)
    if not starts.any():
        return none
    timed = bodies.filter(starts).to_frame("_text").select(leading_time(pl.col("_text"), reference_year)).to_series()
    return none.scatter(starts.arg_true(), timed)


# A paste hard-wrapped at a fixed width (a terminal, a browser): a line of exactly the widest length
# continues on the next one, unless that one starts a record of its own. Only a chunk that shows the
# cut is joined: at least WRAP_MIN_CUT distinct lines of exactly that width, at least two of them
# continued. Pastes are small; a chunk of a job's own log is never looked at (its longest lines
# can share a length: NCCL's COLL lines). Elsewhere a line means the same alone or among others.
# WRAP_MAX_LINES (logscope.limits): the byte pass of a read worker must know it too.
WRAP_WIDTHS = (60, 400)
WRAP_MIN_CUT = 4
WRAPPER_MAX = 48  # the longest wrapper a hard-wrapped paste repeats on its continuations
# Characters behind a shared wrapper that, the same on the next line (digits aside), make it a
# record said again rather than the rest of a cut line (_with_continuation).
_SAID_AGAIN = 16
# How much a tool's head on each line may vary in width (line numbers of 1 to 3 digits, more than
# a few escapes in a JSON record): the cut lines' own widths then lie within it of the widest.
WRAPPER_SPREAD = 8
# A capital starts a record when a word follows it ("Traceback (", "RuntimeError:", "NCCL WARN"):
# a bare fragment ("GTERM", the rest of a "SIGTERM" cut at the width) continues the line above.
_RECORD_START = ascii_classes(
    r"^(?:\[|\(|[A-Z][\w.]*(?:[:(\[,]| \S)|\S+:\d+:\d+ |\d{1,6}: |\d{4}-\d\d-\d\d|[IWEF]\d{4} )")


def _join_hard_wraps(lines: pl.DataFrame) -> pl.DataFrame:
    """``lines`` with each hard-wrapped line joined to its continuation (the joined row keeps the
    first line's number; the continuation's row goes). A line is cut when its text (trailing blanks
    aside: a padded paste pads every line to the width) has the paste's width and the next line
    starts no record."""
    return _joined_hard_wraps([lines], [True])[0]


def _joined(lines: pl.DataFrame, width: int, shows: bool, wrapped: bool) -> pl.DataFrame:
    """``lines`` joined as their facts say (_cut_facts: ``width``, ``shows``; _wrapped_each:
    ``wrapped``). A wrapper a tool put on each physical line is taken off first: joined with it, a
    record's halves would keep the continuation's wrapper between them."""
    if wrapped:
        return _joined_behind_wrappers(lines)
    return _joined_at(lines, width) if shows else lines


def _joined_at(lines: pl.DataFrame, width: int) -> pl.DataFrame:
    """``lines`` with each line cut at ``width`` joined to its continuation (_join_hard_wraps)."""
    for _ in range(3):  # a record wrapped over up to four lines
        marked = _with_continuation(lines.lazy().with_columns(pl.col("raw").shift(-1).alias("_next"))).with_columns(
            ((_length() == width) & _continues()).alias("_wraps")).collect()
        # a continuation that is cut again is joined on the next pass
        marked = marked.with_columns(pl.col("_wraps") & ~pl.col("_wraps").shift(1).fill_null(False))
        if not marked["_wraps"].any():
            break
        lines = marked.with_columns(
            pl.when(pl.col("_wraps")).then(_stripped() + pl.col("_continuation")).otherwise(pl.col("raw"))
            .alias("raw")
        ).filter(~(pl.col("_wraps").shift(1).fill_null(False))).drop("_wraps", "_next", "_continuation")
    return lines


def _joined_behind_wrappers(lines: pl.DataFrame) -> pl.DataFrame:
    """``lines`` of a paste that a tool wrapped after it was hard-wrapped (each physical line in a
    head of its own: a line number, a file name, a pod's or a journal's head, an envelope), joined
    as :func:`_join_hard_wraps` joins them, where the text without those heads shows the cut. The
    heads are the ones the file's reading takes off anyway (envelopes.opened, and
    prefixes.split_prefix_of_files' learned heads): a joined line keeps its text without them, the
    others their own. A head of varying width (numbers of 1 to 3 digits, a JSON record's escapes)
    hides the cut from the line's own width. ``lines`` as they are where the text without the
    heads shows no cut: their own widths say nothing, as the stack cannot see past those heads."""
    text = _unwrapped(lines)
    unwrapped = lines.with_columns(text.alias("raw"), text.alias("_unwrapped"), pl.col("raw").alias("_own"))
    facts = _cut_facts(unwrapped.select(pl.lit(0, dtype=pl.UInt32).alias("_file"), "raw"))
    width, shows = facts.row(0)[1:3] if facts.height else (0, False)
    if not shows:
        return lines
    joined = _joined_at(unwrapped, width)
    return joined.with_columns(
        pl.when(pl.col("raw") != pl.col("_unwrapped")).then(pl.col("raw")).otherwise(pl.col("_own")).alias("raw")
    ).drop("_unwrapped", "_own")


def _unwrapped(lines: pl.DataFrame, by: str | None = None) -> pl.Series:
    """``raw`` of one file's ``lines`` (``by``: of each file, the column saying which) opened
    (envelopes.opened) and without the heads a tool put on every line (prefixes.split_prefix_of_files)."""
    columns = ["raw", *([by] if by else [])]
    inner = split_prefix_of_files(opened(lines.select(columns), "raw", by), "raw", by)
    return inner.select(pl.concat_str([pl.col("prefix").fill_null(""), pl.col("body")]).alias("raw")).to_series()


def _wrapped_each(files: Sequence[pl.DataFrame]) -> list[bool]:
    """Whether each of ``files`` has an envelope or a head a tool put on every line, as its reading
    finds them: from its first WRAPPER_SAMPLE lines (a file's envelope and heads are learned from
    those), for all the files in one pass."""
    samples = stacked([lines.select("raw").head(WRAPPER_SAMPLE) for lines in files], {"_file": positions(len(files))})
    differs = samples.select("_file", (_unwrapped(samples, "_file") != pl.col("raw")).alias("_differs"))
    found = set(differs.filter("_differs")["_file"].to_list())
    return [n in found for n in range(len(files))]


def _cut_facts(lines: pl.DataFrame) -> pl.DataFrame:
    """Of each file of ``lines`` (``_file``: which; ``raw``), the widest width (``_width``), whether
    it shows a paste's cut (``_shows``: the widest is WRAP_WIDTHS wide, at least WRAP_MIN_CUT
    distinct lines have that width, and at least two of them are cut: continued by a line that
    starts no record), and whether it may show one behind a head a tool put on each line
    (``_behind``: at least WRAP_MIN_CUT distinct lines within WRAPPER_SPREAD of a widest at most
    WRAPPER_MAX wider than a paste; such a file is read for its heads, _joined_behind_wrappers).
    One row per file that has a line, in no order. By windows over the files, and the continuation
    of the widest lines alone: a group_by's aggregate evaluated its string operations group by
    group, and on every line (a scan of small jobs spent most of its time there)."""
    rows = lines.lazy().select(
        "_file", "raw", _length().alias("_len"), pl.col("raw").shift(-1).over("_file").alias("_next"),
    ).with_columns(pl.col("_len").max().over("_file").alias("_width"))
    widest = (_with_continuation(rows.filter(pl.col("_len") == pl.col("_width")))
              .group_by("_file").agg(pl.col("_width").first(), pl.col("raw").n_unique().alias("_distinct"),
                                     _continues().sum().alias("_continued")))
    near = (rows.filter(pl.col("_len") >= pl.col("_width") - WRAPPER_SPREAD)
            .group_by("_file").agg(pl.col("raw").n_unique().alias("_near")))
    return widest.join(near, on="_file", how="left").select(
        "_file", "_width",
        (pl.col("_width").is_between(*WRAP_WIDTHS) & (pl.col("_distinct") >= WRAP_MIN_CUT)
         & (pl.col("_continued") >= 2)).fill_null(False).alias("_shows"),
        (pl.col("_width").is_between(WRAP_WIDTHS[0], WRAP_WIDTHS[1] + WRAPPER_MAX)
         & (pl.col("_near") >= WRAP_MIN_CUT)).fill_null(False).alias("_behind"),
    ).collect()


def _length() -> pl.Expr:
    """A line's width without trailing blanks: a terminal's copy pads short lines with spaces, an
    editor or a tool may add some to every line; the cut is where the text stops."""
    return _stripped().str.len_chars()


def _stripped() -> pl.Expr:
    return pl.col("raw").str.strip_chars_end(" \t")


def _with_continuation(lines: pl.LazyFrame) -> pl.LazyFrame:
    """``lines`` (``raw``, and ``_next``: the next line, null on the last) with ``_continuation``:
    the next line without the wrapper that this line starts with too. A tool that quoted,
    indented, tagged or time-stamped a hard-wrapped paste put its wrapper in front of every
    physical line, continuations included (``> `` twice, one time on every line). A wrapper is
    the same when its text is, digits aside, and the prefix stack reads it on the next line; it
    may run on into what the stack also peels of the continuation (": 541332)" after "> ")."""
    mine, theirs = _digits_masked(pl.col("raw")), _digits_masked(pl.col("_next"))
    lines = lines.with_columns(pl.col("_next").str.extract(PREFIX_STACK, 0).fill_null("").alias("_lead"),
                               pl.lit(0, dtype=pl.UInt32).alias("_common"))
    # The longest common start, up to WRAPPER_MAX, found by halving steps: a start of k characters
    # shared means every shorter one is (six steps, not a comparison for each k).
    for step in (32, 16, 8, 4, 2, 1):
        longer = pl.col("_common") + step
        same = (longer <= WRAPPER_MAX) & (mine.str.slice(0, longer) == theirs.str.slice(0, longer)).fill_null(False)
        lines = lines.with_columns(pl.when(same).then(longer).otherwise(pl.col("_common")).alias("_common"))
    shared = pl.min_horizontal(pl.col("_common"), pl.col("_lead").str.len_chars())
    # A next line stamped at another time than this one is a record of its own: a tool stamps the
    # physical lines of one record at once, a logger each record when it is written (Megatron's
    # progress lines, all of one width, were joined in pairs as if cut). Its innermost stamp is its
    # logger's (an outer one may be a wrapper's, the same on every line).
    stamp = pl.col("_lead").str.extract_all(TIME_TEXT).list.last()
    own_record = stamp.is_not_null() & ~pl.col("raw").str.contains(stamp.fill_null(""), literal=True).fill_null(False)
    # A next line that says again, behind the wrapper both carry, what this one says behind it is
    # a record of its own too: another writer's copy at the same moment (every rank of a trainer
    # printing one progress line at one second, their labels alike but for the rank's digit). The
    # rest of a cut line does not start as the line does.
    again = (shared > 0) & (mine.str.slice(shared, _SAID_AGAIN)
                            == theirs.str.slice(shared, _SAID_AGAIN)).fill_null(False)
    own_record = own_record | again
    return lines.with_columns(
        pl.col("_next").str.slice(pl.when(own_record).then(0).otherwise(shared)).alias("_continuation")
    ).drop("_lead", "_common")


def _continues() -> pl.Expr:
    """Whether a line's ``_continuation`` (see _with_continuation) continues it: it starts no
    record (the last line, with none, is continued by nothing)."""
    return ~pl.col("_continuation").fill_null("[").str.contains(_RECORD_START)


def _digits_masked(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(r"[0-9]", "0")


def _joined_hard_wraps(files: Sequence[pl.DataFrame], join_wraps: Sequence[bool]) -> list[pl.DataFrame]:
    """Each of ``files`` whose ``join_wraps`` is true with its hard wraps joined (see
    :func:`_join_hard_wraps`, which asks it of one file); whether a file shows the cut, or may show
    it behind wrappers (:func:`_cut_facts`), asked of all of them in one query: most are no paste,
    and a query a file cost ~0.1-0.2 ms."""
    files = list(files)
    maybe = [n for n, (lines, join) in enumerate(zip(files, join_wraps, strict=True))
             if join and 3 <= lines.height <= WRAP_MAX_LINES]
    if not maybe:
        return files
    # A file with no line of any width (every raw null) has no row of facts: it is left as it is.
    facts = _cut_facts(stacked([files[n].select("raw") for n in maybe], {"_file": positions(len(maybe))}))
    of = {int(row[0]): row[1:] for row in facts.filter(pl.col("_shows") | pl.col("_behind")).iter_rows()}
    behind = [position for position in sorted(of) if of[position][2]]
    wrapped = dict(zip(behind, _wrapped_each([files[maybe[p]] for p in behind]), strict=True)) if behind else {}
    for position, (width, shows, _) in of.items():
        n = maybe[position]
        files[n] = _joined(files[n], width, shows, wrapped.get(position, False))
    return files


def _split_carriage_returns(lines: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """Rows with ``\\r`` become one row per non-empty segment, keeping the line number; ``lines``
    itself when there is none. ``by``: the column of the file each line is of (line numbers are a
    file's own)."""
    has_cr = pl.col("raw").str.contains("\r", literal=True).fill_null(False)
    if not lines.select(has_cr.any()).item():
        return lines
    split = (
        lines.filter(has_cr)
        .with_columns(pl.col("raw").str.split("\r"))
        .explode("raw")
        .filter(pl.col("raw").str.strip_chars() != "")
    )
    return pl.concat([lines.filter(~has_cr), split]).sort([by, "line"] if by else "line", maintain_order=True)


def _empty_events() -> pl.DataFrame:
    return pl.DataFrame(schema=EVENT_COLUMNS)


def _empty_candidates() -> pl.DataFrame:
    return pl.DataFrame(schema={"line": pl.Int64, "prefix": pl.String, "who": pl.String, "body": pl.String,
                                "raw": pl.String,
                                "lead_time": pl.Datetime("us"), "near_time": pl.Datetime("us"),
                                "next_time": pl.Datetime("us"), "kw": pl.List(pl.String)})


__all__ = ["EVENT_COLUMNS", "ChunkResult", "Event", "PreparedChunk", "described", "finish_chunks",
           "message_triggers", "parse_chunk", "prepare_chunk", "prepare_files"]
