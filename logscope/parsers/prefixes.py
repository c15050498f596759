"""Launcher prefixes: strip them from each line and keep what they say about the line's origin.

Which prefixes launchers stack in front of what a process printed, and the regexes that read them,
are in :mod:`logscope.parsers.prefix_stack` (no polars there: a read worker's byte pass tests
heads with them too). Here, in polars: every line pays only for one anchored, capture-free match
of the whole stack (:data:`PREFIX_STACK`) and a slice; the peeling that records what each prefix
says runs once per *distinct* prefix string (:func:`prefix_fields`), and a job has a handful of
them (``[default0]:`` ... ``[default7]:``), not one per line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from logscope.parsers.prefix_stack import (
    HEAD_BEFORE_OWN_OUTPUT,
    HEAD_BEFORE_TASK_LABEL,
    LINE_NUMBER,
    MAX_PREFIXES,
    ONE_PREFIX,
    PREFIX_STACK,
    STARTS_WITH_OWN_OUTPUT,
    TIME_LEAD,
    TIME_TEXT,
    WORDS_ONLY,
)

PREFIX_COLUMNS: dict[str, pl.DataType] = {
    "p_task": pl.Int64(),
    "p_pid": pl.Int64(),
    "p_local_rank": pl.Int64(),
    "p_rank": pl.Int64(),
    "p_host": pl.String(),
    "p_time": pl.String(),  # the text of the innermost time the stack holds
    "p_outer_time": pl.String(),  # the text of its outermost time (the same when it holds one)
    "prefix": pl.String(),
}


def split_prefix(frame: pl.DataFrame, column: str = "raw") -> pl.DataFrame:
    """Add ``prefix`` (the stacked launcher prefixes, null when none) and ``body`` (the rest of the
    line) to ``frame``."""
    frame = frame.with_columns(pl.col(column).fill_null("").str.extract(PREFIX_STACK, 0).alias("prefix"))
    return frame.with_columns(
        pl.col(column).fill_null("").str.slice(pl.col("prefix").str.len_chars().fill_null(0)).alias("body")
    )


# A file's own wrapper is learned from its first lines: a head found in front of a process's own
# output (HEAD_BEFORE_OWN_OUTPUT) on at least WRAPPER_MIN_LINES of them and standing in front of
# WRAPPER_SHARE of all of them: a tool put it on every line. A message's own words in front of a
# tag are not a wrapper: they differ from line to line. Wrappers may nest (a file name, then a
# line number: `grep -rn`), up to MAX_WRAPPERS.
WRAPPER_SAMPLE = 256
WRAPPER_MIN_LINES = 3
WRAPPER_SHARE = 0.8
MAX_WRAPPERS = 3
NUMBERED_MIN_LINES = 5
# Above this many distinct heads in one frame (files of a scan, each wrapped its own way), each
# row's head is matched by the regex its file's row holds rather than by one pass a head.
DISTINCT_HEADS_MAX = 8
_REGEX_SPECIAL = r"[.^$*+?()\[\]{}|\\]"
_NUMBER_HEAD = r"[ \t]*\d{1,9}[:\t-]"


def split_prefix_of_files(frame: pl.DataFrame, column: str = "raw", by: str | None = None) -> pl.DataFrame:
    """:func:`split_prefix`, and where a tool wrapped every line of a file (``by``: the column of
    the file each line is of; None: ``frame`` is one file's chunk) in a head the prefix stack does
    not know, that head is taken off and the stack read behind it: a line number or a ``grep -n``
    file name cannot hide a launcher's tag or a time. The head is part of neither ``prefix`` nor
    ``body`` (as a terminal's colours are not); messages are looked for in the whole line anyway."""
    return _split_learning(frame, column, by)[0]


@dataclass(frozen=True)
class Learned:
    """What :func:`split_prefix_of_files` learned from one file's first lines (regexes, none of
    which tells one digit from another): the line-number head it takes off each line first (None:
    none), then, round by round, the head it takes off what follows the prefixes read so far and
    the line number behind that head (None: none), before it reads the prefix stack again."""

    numbered: str | None
    rounds: tuple[tuple[str, str | None], ...]


def split_prefix_learning(frame: pl.DataFrame, column: str = "raw") -> tuple[pl.DataFrame, Learned]:
    """:func:`split_prefix_of_files` of one file's lines, and what it learned from them."""
    split, numbered, rounds = _split_learning(frame, column, None)

    def head(heads: pl.DataFrame) -> str | None:
        return str(heads["_head"][0]) if heads.height else None

    return split, Learned(head(numbered), tuple((str(head(h)), head(n)) for h, n in rounds))


def _split_learning(frame: pl.DataFrame, column: str,
                    by: str | None) -> tuple[pl.DataFrame, pl.DataFrame, list[tuple[pl.DataFrame, pl.DataFrame]]]:
    """:func:`split_prefix_of_files`, with the line-number heads it took off first and each
    round's heads and line-number heads (``key`` -> ``_head`` frames)."""
    key = by or "_whole"
    keyed = frame if by is not None else frame.with_columns(pl.lit(0, dtype=pl.UInt32).alias(key))
    numbered = _numbered(keyed, key, column)
    if numbered.height:
        split = split_prefix(_without_head(keyed, numbered, key, column, "_numbered"), "_numbered").drop("_numbered")
    else:
        split = split_prefix(keyed, column)
    rounds: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    return _behind_learned_heads(split, key, rounds).select(*frame.columns, "prefix", "body"), numbered, rounds


def _without_head(frame: pl.DataFrame, heads: pl.DataFrame, key: str, column: str, into: str) -> pl.DataFrame:
    """``frame`` with ``into``: ``column`` without the head its file's lines start with (``heads``:
    ``key`` -> ``_head``, a regex; a file without one keeps its text)."""
    text = pl.col(column).fill_null("")
    by_head = heads.group_by("_head").agg(pl.col(key))
    if by_head.height > DISTINCT_HEADS_MAX:
        head = text.str.extract(pl.lit("^(") + pl.col("_head") + pl.lit(")"), 1).fill_null("")
        return (frame.join(heads, on=key, how="left", maintain_order="left")
                .with_columns(text.str.slice(head.str.len_chars()).alias(into)).drop("_head"))
    # One regex a head, each run as a constant: a regex read from a column is compiled for every
    # row (40 times the cost, on a file whose every line carries the head).
    head = pl.lit(None, dtype=pl.String)
    for pattern, keys in by_head.iter_rows():
        head = pl.when(pl.col(key).is_in(keys)).then(text.str.extract(f"^({pattern})", 1)).otherwise(head)
    return frame.with_columns(text.str.slice(head.fill_null("").str.len_chars()).alias(into))


def _behind_learned_heads(work: pl.DataFrame, key: str,
                          rounds: list[tuple[pl.DataFrame, pl.DataFrame]]) -> pl.DataFrame:
    """``work`` (with ``prefix`` and ``body``) read again behind each head its files' lines share
    (each round's heads and line-number heads put in ``rounds``)."""
    for _ in range(MAX_WRAPPERS):
        heads = _wrapper_heads(work, key)
        if heads.height == 0:
            break
        marked = _without_head(work, heads, key, "body", "_behind")
        numbered = _numbered(marked, key, "_behind")  # `grep -rn`: a file name, then a line number
        rounds.append((heads, numbered))
        if numbered.height:
            marked = _without_head(marked, numbered, key, "_behind", "_behind")
        marked = marked.with_columns(pl.col("_behind").str.extract(PREFIX_STACK, 0).alias("_stack"))
        prefix = pl.concat_str([pl.col("prefix"), pl.col("_stack")], ignore_nulls=True)
        work = marked.with_columns(
            pl.when(prefix != "").then(prefix).alias("prefix"),
            pl.col("_behind").str.slice(pl.col("_stack").str.len_chars().fill_null(0)).alias("body"),
        ).drop("_behind", "_stack")
    return work


def _wrapper_heads(frame: pl.DataFrame, key: str) -> pl.DataFrame:
    """The head (as a regex: digits as ``\\d+``, blanks as ``[ \\t]+``) the first lines of each
    ``key`` share in front of a process's own output, as ``key`` -> ``_head``; no row for a file
    with none. Of the heads seen in front of an output on WRAPPER_MIN_LINES lines or more (the
    five seen most), the shortest that stands in front of WRAPPER_SHARE of all the lines: the
    tool's wrapper, not the wrapper and a launcher's tag that most lines also carry."""
    sample = (frame.group_by(key, maintain_order=True).head(WRAPPER_SAMPLE).select(key, "body")
              .filter(pl.col("body").str.len_chars() > 0))
    return _by_sample(_heads_of, sample, key)


def _by_sample(learn: Callable[[pl.DataFrame, str], pl.DataFrame], sample: pl.DataFrame,
               key: str) -> pl.DataFrame:
    """``learn(sample, key)``, remembered by the sample's keys and lines (the last 64 samples): what
    a file's first lines say follows from them alone, and a big block's first lines are asked about
    up to four times (the progress pass describes its shapes, checks them and reads its lines behind
    those first lines, then the block's kept lines are prepared behind them): ~6 ms of regexes each
    time for the wrapper heads, ~3 ms for the line numbers, the same answer. Only a sample no
    bigger than one file's (WRAPPER_SAMPLE lines) and of at most _LEARNED_BYTES is remembered (a
    scan's batch frames many files at once, each batch its own: remembered, 64 of them would hold
    ~200 MB and never be asked again)."""
    keys, lines = sample.get_columns()
    if sample.height > WRAPPER_SAMPLE or (lines.str.len_bytes().sum() or 0) > _LEARNED_BYTES:
        return learn(sample, key)
    memo = (learn, key, str(keys.dtype), tuple(keys.to_list()), tuple(lines.to_list()))
    known = _LEARNED.get(memo)
    if known is None:
        known = learn(sample, key)
        if len(_LEARNED) >= _LEARNED_MAX:
            _LEARNED.clear()
        _LEARNED[memo] = known
    return known.clone()


_LEARNED: dict[tuple[object, ...], pl.DataFrame] = {}
_LEARNED_MAX = 64
_LEARNED_BYTES = 256 * 1024


def _heads_of(sample: pl.DataFrame, key: str) -> pl.DataFrame:
    """:func:`_wrapper_heads` of its sample (``key``, ``body``: each file's first non-empty lines)."""
    before_task = pl.col("body").str.extract(HEAD_BEFORE_TASK_LABEL, 1)
    seen_head = pl.when(~pl.col("body").str.contains(STARTS_WITH_OWN_OUTPUT)).then(
        pl.coalesce(pl.col("body").str.extract(HEAD_BEFORE_OWN_OUTPUT, 1),
                    pl.when(~before_task.str.contains(WORDS_ONLY)).then(before_task)))
    shapes = sample.select(key, seen_head.str.replace_all(_REGEX_SPECIAL, r"\$0").str.replace_all(r"[0-9]+", r"\d+")
                           .str.replace_all(r"[ \t]+", r"[ \t]+").alias("_head")).drop_nulls("_head")
    seen = (shapes.group_by(key, "_head").agg(pl.len().alias("_n")).filter(pl.col("_n") >= WRAPPER_MIN_LINES)
            .sort([key, "_n", "_head"], descending=[False, True, False]).group_by(key, maintain_order=True).head(5)
            .select(key, "_head"))
    if seen.height == 0:
        return seen
    lines = sample.group_by(key).agg(pl.len().alias("_lines"))
    leading = (sample.join(seen, on=key)
               .group_by(key, "_head")
               .agg(pl.col("body").str.contains(pl.lit("^") + pl.col("_head")).sum().alias("_leading"))
               .join(lines, on=key)
               .filter(pl.col("_leading") >= WRAPPER_SHARE * pl.col("_lines")))
    return (leading.sort([key, pl.col("_head").str.len_chars(), "_head"])
            .group_by(key, maintain_order=True).first().select(key, "_head"))


def _numbered(frame: pl.DataFrame, key: str, column: str) -> pl.DataFrame:
    """``key`` -> the line-number head, for the files whose first lines (NUMBERED_MIN_LINES or more)
    nearly all start with a number that only grows (``grep -n``, ``cat -n``, an editor's numbers;
    srun's task labels repeat, a counter of one task stays)."""
    sample = (frame.group_by(key, maintain_order=True).head(WRAPPER_SAMPLE).select(key, column)
              .filter(pl.col(column).str.len_chars() > 0))
    return _by_sample(_numbers_of, sample, key)


def _numbers_of(sample: pl.DataFrame, key: str) -> pl.DataFrame:
    """:func:`_numbered` of its sample (``key`` and each file's first non-empty lines)."""
    column = sample.columns[1]
    number = pl.col(column).str.extract(LINE_NUMBER, 1).cast(pl.Int64, strict=False)
    steps = sample.with_columns(number.alias("_number")).with_columns(
        (pl.col("_number") - pl.col("_number").shift(1).over(key)).alias("_step"))
    numbered = steps.group_by(key).agg(
        (pl.col("_number").is_not_null().sum() >= WRAPPER_SHARE * pl.len()).alias("_most"),
        (pl.col("_step").min() >= 1).alias("_growing"),
        (pl.col("_number").is_not_null().sum() >= NUMBERED_MIN_LINES).alias("_enough"))
    return numbered.filter(pl.col("_most") & pl.col("_growing") & pl.col("_enough")).select(
        key, pl.lit(_NUMBER_HEAD).alias("_head"))


def timeless(prefix: pl.Expr) -> pl.Expr:
    """A stack of prefixes without its times: who wrote the line (a process's lines share it
    whatever their times), the key :func:`prefix_fields` is asked of for a chunk's lines."""
    return prefix.str.replace_all(TIME_LEAD, "")


def times_of(prefix: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The text of the outermost and of the innermost time a stack of prefixes holds (null when
    it holds none; the same text when it holds one)."""
    found = prefix.str.extract_all(TIME_TEXT)
    return found.list.first(), found.list.last()


def prefix_fields(prefixes: pl.Series) -> pl.DataFrame:
    """What each distinct prefix string says: ``prefix`` and the ``p_*`` columns, one row per value."""
    distinct = prefixes.drop_nulls().unique()
    if distinct.len() > 64:  # e.g. a timestamp in every prefix: nothing to remember
        return _peel(distinct)
    # Usually the same few values chunk after chunk and file after file: peel each value once.
    values = distinct.to_list()
    rows = prefix_rows(values)
    if rows is None:  # forgotten meanwhile (another thread cleared the memo)
        return _peel(distinct)
    return pl.DataFrame(list(rows.values()), schema=PREFIX_COLUMNS, orient="row")


def prefix_rows(values: list[str]) -> dict[str, tuple[object, ...]] | None:
    """:func:`prefix_fields`' row (the ``p_*`` columns in PREFIX_COLUMNS' order, then ``prefix``)
    of each distinct value, remembered across calls: a polars query only for values not seen
    before. None when another thread cleared the memo meanwhile."""
    missing = [v for v in dict.fromkeys(values) if v not in _KNOWN]
    if missing:
        if len(_KNOWN) > 4096:
            _KNOWN.clear()
        _KNOWN.update((row[-1], row) for row in _peel(pl.Series(missing, dtype=pl.String)).iter_rows())
    rows = {v: _KNOWN.get(v) for v in values}
    if any(row is None for row in rows.values()):
        return None
    return rows  # type: ignore[return-value]


_KNOWN: dict[str, tuple[object, ...]] = {}  # prefix -> its row of prefix_fields


def _peel(distinct: pl.Series) -> pl.DataFrame:
    state = (
        distinct.to_frame("body")
        .with_columns(
            [pl.lit(None, dtype=t).alias(c) for c, t in PREFIX_COLUMNS.items() if c != "prefix"]
            + [pl.col("body").alias("prefix")]
        )
    )
    columns = state.columns
    settled: list[pl.DataFrame] = []
    for _ in range(MAX_PREFIXES):
        if state.height == 0:
            break
        groups = state.with_columns(pl.col("body").str.extract_groups(ONE_PREFIX).alias("_g")).unnest("_g")
        has_prefix = pl.col("whole").is_not_null() & (pl.col("whole") != "")
        settled.append(groups.filter(~has_prefix).select(columns))
        # Innermost wins for each kind: what the process itself printed (its "[rank11]:") says more
        # than a wrapper around it (an Open MPI tag, a shipper's time).
        state = groups.filter(has_prefix).with_columns(
            # Open MPI's "[job,rank]<stderr>:" numbers the processes mpirun started, as srun's label
            # numbers its tasks: the training rank only where mpirun started the training processes
            # themselves (not a per-node launcher), which the tag does not say.
            pl.coalesce(_int("task"), _int("task_b"), _int("mpi_rank"), "p_task").alias("p_task"),
            pl.coalesce(_int("ray_pid"), _int("ucx_pid"), "p_pid").alias("p_pid"),
            pl.coalesce(_int("tee_local"), _int("role_local_c"), _int("role_local_b"), _int("role_local"),
                        "p_local_rank").alias("p_local_rank"),
            pl.coalesce(_int("rank"), "p_rank").alias("p_rank"),
            pl.coalesce("pdsh", "ship_host", "ucx_host", _ray_host(), _role_host(), "p_host").alias("p_host"),
            pl.coalesce("time", "ship_time", "p_time").alias("p_time"),
            pl.coalesce("p_outer_time", "time", "ship_time").alias("p_outer_time"),
            pl.col("body").str.slice(pl.col("whole").str.len_chars()).alias("body"),
        ).select(columns)
    settled.append(state)
    return pl.concat(settled, how="vertical").select(list(PREFIX_COLUMNS))


def strip_prefixes(frame: pl.DataFrame, column: str = "raw") -> pl.DataFrame:
    """Add ``body`` (the line without launcher prefixes) and the ``p_*`` and ``prefix`` columns."""
    frame = split_prefix(frame, column)
    return frame.join(prefix_fields(frame["prefix"]), on="prefix", how="left",
                      maintain_order="left")


def _int(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Int64, strict=False)


def _ray_host() -> pl.Expr:
    """Ray's ``(Actor pid=N, ip=10.0.1.75)`` names the node by its address."""
    return pl.col("ray_ip").str.strip_chars()


def _role_host() -> pl.Expr:
    """``[host1:3]:`` names a host in the role (``--role $(hostname -s):``); ``[worker:3]`` names a
    role, not a host, and ``[node-0]`` without the colon is a tag whose digits may belong to the name."""
    role = pl.col("role")
    return pl.when(role.str.contains(r"[\d.-]") & pl.col("role_colon").is_not_null()).then(role).otherwise(None)


__all__ = ["ONE_PREFIX", "PREFIX_COLUMNS", "PREFIX_STACK", "Learned", "prefix_fields", "prefix_rows", "split_prefix",
           "split_prefix_learning", "split_prefix_of_files", "strip_prefixes", "timeless", "times_of"]
