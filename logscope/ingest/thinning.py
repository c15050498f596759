"""Thinning: the events of a file kept in bounded memory, whatever its lines.

Detectors need where each process started and stopped, not every repetition in between: NCCL
COLL lines keep the first and last collectives of each communicator, progress lines the last
steps of each process and the file's sample of the whole run's (:func:`~logscope.limits.progress_sampled`),
channel lines one per (process, peer, transport), and any other line a
process repeats its first and last of each kind. Across processes, each kind of event keeps at
most :data:`KIND_KEEP` rows per file (its first and last halves), so a log of millions of
processes each printing one warning cannot grow memory either.

A file's parts are thinned as they come (logscope.ingest.reading) by the rules for each process,
communicator and channel alone (:func:`thin_within_processes`), which thinning the whole again
keeps exact: the bound across processes is applied once, to the whole. Only a file whose parts
still hold more than ``reading.PARTS_MAX_ROWS`` rows that way (millions of processes) has them
thinned across processes too, which bounds its memory but may keep other rows in the middle than
thinning it once would (the first and last rows of every process stay either way).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from logscope.limits import COLL_HEAD, COLL_TAIL, PROGRESS_TAIL, progress_sampled
from logscope.model import Event
from logscope.parsers.records import KV_EVENTS
from logscope.stacking import positions, stacked, unstacked

# NCCL COLL lines can be most of a multi-GB log; per (file, host, pid, comm) only the first
# COLL_HEAD and the last COLL_TAIL matter to the detectors (where a rank started and stopped).
# Progress lines: the first COLL_HEAD and the last PROGRESS_TAIL per process, and those at the
# file's sampled line numbers (logscope.limits).
# Other repeated lines: first and last kept per (process, kind of line); the lines of multi-line
# records (parsers.records.KV_EVENTS) more.
REPEAT_KEEP = 64
RECORD_KEEP = 4096
# Any kind of event, across all the processes of a file: the first and last KIND_KEEP // 2.
KIND_KEEP = 16384
# A line other than COLL, progress, channel and record lines, said by many processes of one rank
# (host, rank, local rank, srun task) in the same words (its text with numbers masked, see
# _WORDING): the rows of the first and last PROCESS_KEEP // 2 of those processes. A crash-restart
# loop says the same failures with other pids and times in every attempt: its first attempts and
# its last are kept, not the ~100,000 rows of the ones between. A job whose ranks ran once keeps
# all where its lines tell its processes' ranks or hosts apart; more than PROCESS_KEEP processes of
# one host whose lines name no rank count as one rank's. Four attempts at each end tell how a loop
# began and how it ended; each more is rows that every later step reads in Python (16 kept ~74,000
# rows of a 1 GB loop of 16 nodes and took 7.9 s, 8 keep half and take 5.7 s, the same findings).
PROCESS_KEEP = 8
# Before parsing, a big chunk's lines that a restart loop repeats (logscope.parsers.repeats): the
# first and last LOOP_KEEP of each wording stay, as PROCESS_KEEP keeps the first and last halves of
# the processes of a rank that said a line.
LOOP_KEEP = PROCESS_KEEP // 2
# Numbers (decimal, hex) in a line's text: what changes from one attempt of a loop to the next.
_WORDING = r"0x[0-9a-fA-F]+|[0-9]+"


def thin(events: pl.DataFrame) -> pl.DataFrame:
    """Keep the first/last COLL rows per communicator and the last progress rows per process."""
    if _nothing_to_drop(events):
        return events
    return events[_kept_rows(events, [])]


def thin_within_processes(events: pl.DataFrame) -> pl.DataFrame:
    """:func:`thin`'s rules for each process, communicator and channel, without the bound across
    processes (KIND_KEEP). Applied to a file's parts as they come, and :func:`thin` to the whole at
    the end, it gives what thinning the whole once gives."""
    if _nothing_to_drop(events):
        return events
    return events[_kept_rows(events, [], across_processes=False)]


def thin_parts(parts: Sequence[pl.DataFrame], max_rows: int) -> pl.DataFrame:
    """A file's consecutive parts (events in line order) as one frame thinned by
    :func:`thin_within_processes`, or by :func:`thin` when more than ``max_rows`` rows would be left
    that way (the same as thinning what is left: the rules for each process keep what they kept).
    The parts are not copied into one frame first: the rows kept are gathered from each part (a
    gather from a frame of many chunks copies them all, ~1 GB for 8 parts of a real log's blocks)."""
    events = pl.concat(parts, rechunk=False)
    if _nothing_to_drop(events):
        return events.rechunk()
    rows = _kept_rows(events, [], across_processes=False)
    if rows.len() > max_rows:
        rows = _kept_rows(events, [])
    if not rows.is_sorted():  # never seen: the rows of a file's parts come in line order
        return events[rows].rechunk()
    kept, start = [], 0
    for part in parts:
        mine = rows.filter((rows >= start) & (rows < start + part.height)) - start
        if mine.len():
            kept.append(part[mine])
        start += part.height
    return pl.concat(kept) if kept else events.clear()


def thin_each(files: Sequence[pl.DataFrame]) -> list[pl.DataFrame]:
    """``[thin(events) for events in files]`` in one query: a query's fixed cost (~1 ms) is paid
    once for a job's many small files, not once a file."""
    to_thin = [n for n, events in enumerate(files) if not _nothing_to_drop(events)]
    if len(to_thin) <= 1:
        return [thin(events) for events in files]
    joined = stacked([files[n] for n in to_thin], {_FILE: positions(len(to_thin))})
    thinned = dict(zip(to_thin, unstacked(joined[_kept_rows(joined, [_FILE])], _FILE, len(to_thin)), strict=True))
    return [thinned.get(n, events) for n, events in enumerate(files)]


_FILE = "_thinned_file"


def _nothing_to_drop(events: pl.DataFrame) -> bool:
    """No group of ``events`` can be over its limit (channel lines are made unique: never skipped)."""
    return events.height <= min(REPEAT_KEEP, COLL_HEAD + COLL_TAIL) and not (
        events["event"] == Event.NCCL_CHANNEL.value).any()


def _kept_rows(events: pl.DataFrame, by_file: list[str], *, across_processes: bool = True) -> pl.Series:
    """The positions of the rows of ``events`` the rules keep, in line order (the rows of one line,
    a line cut at carriage returns, as they came, as when nothing is to drop). ``by_file``: the
    column telling files apart when several are thinned at once (each group and each order is
    then within a file).

    Each rule keeps the first and last rows of groups: all the rules are one pair of windows over
    one key, made of the columns each rule groups by (the others null), on the few columns the
    rules read; the rows are gathered once. A plan of a window pair per rule, each over the whole
    rows (a struct of ~40 fields), cost ~3 ms even for a small file."""
    said = pl.col("fields").struct
    event = pl.col("event")
    rule = (pl.when(event == Event.NCCL_COLL.value).then(_COLL).when(event == Event.PROGRESS.value).then(_PROGRESS)
            .when(event == Event.NCCL_CHANNEL.value).then(_CHANNEL).otherwise(_REST).alias("_rule"))

    def when_rule(*rules: int, value: pl.Expr) -> pl.Expr:
        return pl.when(pl.col("_rule").is_in(rules)).then(value)

    # What each rule groups by: COLL lines by (host, pid, comm); progress lines by process; channel
    # lines by (host, pid, transport, peer), the first kept; any other line by (process, kind).
    # Columns of rules that no row follows would be null throughout: left out of the key, they
    # cost no hashing (a 1 GB COLL-heavy log thins ~10 million rows in parts).
    kinds = set(events["event"].unique().to_list())
    special = {Event.NCCL_COLL.value, Event.PROGRESS.value, Event.NCCL_CHANNEL.value}
    read: list[pl.Expr] = []
    grouped: list[pl.Expr] = []
    if kinds - special or Event.PROGRESS.value in kinds:
        read += [pl.col("rank"), pl.col("local_rank"), pl.col("task")]
        grouped += [when_rule(_REST, _PROGRESS, value=pl.col(name)).alias(f"_{name}")
                    for name in ("rank", "local_rank", "task")]
    if Event.NCCL_COLL.value in kinds:
        read.append(said.field("comm"))
        grouped.append(when_rule(_COLL, value=pl.col("comm")).alias("_comm"))
    if Event.NCCL_CHANNEL.value in kinds:
        read += [said.field("transport"), said.field("comm_rank"), said.field("value")]
        grouped += [when_rule(_CHANNEL, value=pl.col(name)).alias(alias)
                    for name, alias in (("transport", "_transport"), ("comm_rank", "_from"), ("value", "_to"))]
    key = [*by_file, "_rule", "host", "pid", "event", *(column.meta.output_name() for column in grouped)]
    first = (pl.when(pl.col("_rule") == _REST).then(pl.when(event.is_in(KV_EVENTS)).then(RECORD_KEEP)
                                                    .otherwise(REPEAT_KEEP))
             .when(pl.col("_rule") == _CHANNEL).then(1).otherwise(COLL_HEAD))
    last = (pl.when(pl.col("_rule") == _REST).then(first).when(pl.col("_rule") == _COLL).then(COLL_TAIL)
            .when(pl.col("_rule") == _PROGRESS).then(PROGRESS_TAIL).otherwise(0))
    by_wording = (across_processes and events.height > PROCESS_KEEP and bool(kinds - special - set(KV_EVENTS))
                  and events["pid"].n_unique() > PROCESS_KEEP)
    text = ["text"] if by_wording else []
    plan = (
        events.lazy()
        .select(*by_file, "line", "event", "host", "pid", *text, rule, *read,
                pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"))
        .select(*by_file, "line", "event", "host", "pid", *text, "_rule", "_row", *grouped)
        # (a progress line of the sample is kept whatever its place among its process's: a rule
        # of its line number alone, which thinning a file's parts and the whole agree on)
        .filter(_ends(key, first, last)
                | ((pl.col("_rule") == _PROGRESS) & progress_sampled(pl.col("line").cast(pl.Int64))))
        .sort(*by_file, "line", maintain_order=True)
    )
    if by_wording:
        # The processes of a rank that said a line in the same words, numbered as they came: the
        # rows of the first and last PROCESS_KEEP // 2 kept (the rows of the other rules are a group
        # each: kept).
        worded = (pl.col("_rule") == _REST) & ~event.is_in(KV_EVENTS)
        wording = (pl.when(worded).then(pl.col("text").str.replace_all(_WORDING, "#"))
                   .otherwise(pl.col("_row").cast(pl.String)).alias("_wording"))
        worded_by = [*by_file, "event", "host", *[f"_{name}" for name in ("rank", "local_rank", "task")], "_wording"]
        # The windows group by one 64-bit hash of that key (its strings hashed once, not in each of
        # three windows: a quarter of the cost); two keys merge only on a hash collision.
        plan = (plan.with_columns(wording).with_columns(pl.struct(worded_by).hash().alias("_worded"))
                .with_columns(pl.col("_row").min().over(["_worded", "pid"]).alias("_arrival"))
                .with_columns(pl.col("_arrival").rank("dense").over("_worded").cast(pl.Int64).alias("_nth"),
                              pl.col("_arrival").n_unique().over("_worded").cast(pl.Int64).alias("_processes"))
                .filter((pl.col("_nth") <= PROCESS_KEEP // 2)
                        | (pl.col("_nth") > pl.col("_processes") - PROCESS_KEEP // 2)))
    if across_processes and events.height > KIND_KEEP:
        # Any kind of event, across the processes of the file: its first and last KIND_KEEP // 2.
        plan = plan.filter(_ends([*by_file, "event"], KIND_KEEP // 2, KIND_KEEP // 2))
    return plan.select("_row").collect().to_series()


# The rules: each groups its own kind of line.
_REST, _COLL, _PROGRESS, _CHANNEL = range(4)


def _ends(key: list[str], first: int | pl.Expr, last: int | pl.Expr) -> pl.Expr:
    """The first ``first`` and last ``last`` rows of each ``key`` group."""
    position = pl.int_range(pl.len()).over(key)
    count = pl.len().over(key).cast(pl.Int64)  # UInt32 would wrap below zero
    return (position < first) | (position >= count - last)
